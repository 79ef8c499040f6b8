# shellcheck shell=bash
# scripts/peers.sh: the peer that hwm is measured against in
# test/t/064_pg_incremental.pl: pg_incremental 1.3.0 (Crunchy Data), built
# from ../shared/vendor, with the pg_cron it needs from Debian.  A test
# dependency only; nothing of it enters the repository.
#
# Source it after scripts/lib.sh and call:
#   hwm_peers_install PG_CONFIG MAJOR   install pg_cron (Debian's package,
#                                       for the system PostgreSQL MAJOR) and
#                                       build and install pg_incremental
#                                       into the PostgreSQL of PG_CONFIG
# The test skips when either is missing, so a PostgreSQL without a Debian
# pg_cron package (17 and 18 built from source) simply goes without.

HWM_PEERS_VENDOR=${HWM_VENDOR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/vendor}

hwm_peers_install() {
    local pg_config=$1 major=$2 archive build
    archive=$HWM_PEERS_VENDOR/pg_incremental-1.3.0.tar.gz
    if [[ ! -f $archive ]]; then
        hwm_log "pg_incremental: no $archive, skipped"
        return 0
    fi
    if [[ $("$pg_config" --pkglibdir) != "/usr/lib/postgresql/$major/lib" ]]; then
        hwm_log "pg_incremental: pg_cron comes from Debian for its own PostgreSQL only, skipped"
        return 0
    fi
    hwm_apt_install "postgresql-$major-cron"
    if [[ -f $HWM_PEERS_VENDOR/SHA256SUMS ]]; then
        (cd "$HWM_PEERS_VENDOR" && grep ' pg_incremental-1.3.0.tar.gz$' SHA256SUMS | sha256sum -c --quiet -)
    fi
    build=$(mktemp -d)
    tar -C "$build" -xzf "$archive"
    make -C "$build/pg_incremental-1.3.0" -s PG_CONFIG="$pg_config" with_llvm=no >/dev/null
    hwm_as_root make -C "$build/pg_incremental-1.3.0" -s PG_CONFIG="$pg_config" with_llvm=no install >/dev/null
    rm -rf "$build"
}
