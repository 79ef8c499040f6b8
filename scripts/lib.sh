# shellcheck shell=bash
# scripts/lib.sh: helpers shared by scripts/demo.sh and scripts/test.sh.
# Source it; do not run it.  Callers set `set -euo pipefail` themselves.
#
#   hwm_use_pg N        provide PostgreSQL major N (scripts/pg.sh: the
#                       system's, or a build cached outside the repository)
#                       and point PGBIN and PG_CONFIG at it
#   hwm_install_deps    apt-get the build/test packages that are missing
#   hwm_apt_install P.. apt-get those of packages P.. that are missing
#   hwm_build_install [DIR]
#                       make && make install in DIR (default: the
#                       repository) for PG_CONFIG (COPT=-Werror under CI)
#   hwm_test_module_install [DIR]
#                       the same for the tests' own module (make
#                       install-test-module: test/modules/hwm_test), which
#                       hwm's make install never installs
#   hwm_start_cluster   throwaway cluster of PGBIN with hwm preloaded,
#                       stopped and deleted when the calling script exits
#   hwm_psql ARGS...    psql against that cluster, stopping at the first error
#   hwm_on_exit CMD     run CMD (a string) when the calling script exits
#
# The version: HWM_PG (a major version, default 15) and HWM_PGBIN (its bin
# dir, when already known) set PGBIN and PG_CONFIG when this file is
# sourced, so that a script run from another one (test/dbt/run.sh from
# scripts/test.sh) uses the same server; hwm_use_pg changes them.

HWM_PG=${HWM_PG:-15}
PGBIN=${HWM_PGBIN:-/usr/lib/postgresql/$HWM_PG/bin}
PG_CONFIG=$PGBIN/pg_config
# Repository root: the parent of the folder that holds this file.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Log lines name the version when HWM_LOG_TAG is set (scripts/test.sh:
# "pg17").
hwm_log() { printf '==> %s%s\n' "${HWM_LOG_TAG:+[$HWM_LOG_TAG] }" "$*" >&2; }

# Run a command as root (sudo when we are not root).
hwm_as_root() {
    if [[ $EUID -eq 0 ]]; then "$@"; else sudo -- "$@"; fi
}

# Run a command as the postgres OS user: initdb/postgres refuse to run as
# root.  It runs from / so that it never starts in a folder postgres may not
# read.  Note that sudo (the non-root case) drops the environment, so pass
# anything the command needs as arguments.
hwm_as_postgres() {
    if [[ $(id -un) == postgres ]]; then
        (cd / && "$@")
    elif [[ $EUID -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && sudo -u postgres -- "$@")
    fi
}

# --- cleanup on exit -------------------------------------------------------
# One EXIT trap runs every registered command, newest first.  INT and TERM
# just exit, which fires the EXIT trap, so cleanup runs exactly once.
_HWM_ON_EXIT=()
_hwm_run_on_exit() {
    local i
    for ((i = ${#_HWM_ON_EXIT[@]} - 1; i >= 0; i--)); do
        eval "${_HWM_ON_EXIT[i]}" || true
    done
    _HWM_ON_EXIT=()
}
hwm_on_exit() {
    _HWM_ON_EXIT+=("$1")
    trap _hwm_run_on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# --- dependencies ----------------------------------------------------------
# PostgreSQL itself comes from hwm_use_pg (scripts/pg.sh).
HWM_DEPS=(libipc-run-perl build-essential gcc make locales)

hwm_pkg_installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == *"ok installed" ]]
}

# Install those of the given packages that are not installed yet.
hwm_apt_install() {
    local pkg missing=()
    for pkg in "$@"; do
        hwm_pkg_installed "$pkg" || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return 0
    hwm_log "installing: ${missing[*]}"
    # -qq keeps apt quiet; errors still reach stderr.
    hwm_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    hwm_as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

hwm_install_deps() { hwm_apt_install "${HWM_DEPS[@]}"; }

# --- build -----------------------------------------------------------------
# Incremental (no `make clean`).  Under CI=true or HWM_WERROR=1 warnings are
# errors; only files that get recompiled are checked, which in CI's fresh
# clone is all of them.
# Objects built for one PostgreSQL version must not be linked for another,
# and make cannot tell: DIR/.hwm-build-pg records the pg_config the objects
# were built with, and a build for another one starts with `make clean`.
# (scripts/test.sh builds each version in its own copy anyway.)
hwm_build_install() {
    local dir=${1:-$REPO} stamp built_for=
    local args=(PG_CONFIG="$PG_CONFIG")
    if [[ ${CI:-} == true || ${HWM_WERROR:-} == 1 ]]; then
        args+=(COPT=-Werror)
    fi
    stamp="$PG_CONFIG $("$PG_CONFIG" --version)"
    [[ -f $dir/.hwm-build-pg ]] && built_for=$(<"$dir/.hwm-build-pg")
    if [[ $built_for != "$stamp" ]]; then
        make -C "$dir" -s "${args[@]}" clean
        echo "$stamp" >"$dir/.hwm-build-pg"
    fi
    hwm_log "building hwm for $("$PG_CONFIG" --version) in $dir"
    make -C "$dir" -j"$(nproc)" "${args[@]}"
    hwm_log "installing hwm into $("$PG_CONFIG" --pkglibdir)"
    hwm_as_root make -C "$dir" "${args[@]}" install
}

# The tests' own module (test/modules/hwm_test: C that hwm.so must not
# ship), built and installed as hwm_build_install does hwm, after it (whose
# `make clean` for another PostgreSQL cleans the module too).
hwm_test_module_install() {
    local dir=${1:-$REPO}
    local args=(PG_CONFIG="$PG_CONFIG")
    if [[ ${CI:-} == true || ${HWM_WERROR:-} == 1 ]]; then
        args+=(COPT=-Werror)
    fi
    hwm_log "building and installing the tests' module (test/modules/hwm_test) in $dir"
    make -C "$dir" "${args[@]}" test-module
    hwm_as_root make -C "$dir" "${args[@]}" install-test-module
}

# hwm_use_pg N: provide PostgreSQL major N and use it from now on.
hwm_use_pg() {
    local bin
    bin=$(hwm_pg_provide "$1") || return 1
    HWM_PG=$1 PGBIN=$bin PG_CONFIG=$bin/pg_config
    export HWM_PG HWM_PGBIN=$bin
}

# --- throwaway cluster -----------------------------------------------------
# Pick a free TCP port on 127.0.0.1: random tries in 20000-60000 until
# nothing answers there.
hwm_free_port() {
    local port try
    for try in $(seq 1 100); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40001))
        # A successful connect means something listens: try another.
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    echo "no free port found after $try tries" >&2
    return 1
}

# Start a cluster of PGBIN in a new temp dir (short path under /tmp: the Unix socket
# lives there and socket paths are limited to about 100 bytes).  Exports
# HWM_CLUSTER_DIR, PGHOST, PGPORT, PGUSER, PGDATABASE.
hwm_start_cluster() {
    HWM_CLUSTER_DIR=$(mktemp -d /tmp/hwm.XXXXXX)
    export HWM_CLUSTER_DIR
    hwm_on_exit _hwm_stop_cluster
    chown postgres: "$HWM_CLUSTER_DIR" 2>/dev/null || hwm_as_root chown postgres: "$HWM_CLUSTER_DIR"

    local data=$HWM_CLUSTER_DIR/data log=$HWM_CLUSTER_DIR/server.log
    hwm_log "initdb in $data"
    if ! hwm_as_postgres "$PGBIN/initdb" -D "$data" -A trust -U postgres \
        -E UTF8 --locale=C --no-sync --no-instructions >"$HWM_CLUSTER_DIR/initdb.log" 2>&1; then
        cat "$HWM_CLUSTER_DIR/initdb.log" >&2
        return 1
    fi

    PGPORT=$(hwm_free_port)
    hwm_as_postgres tee -a "$data/postgresql.conf" >/dev/null <<EOF

# Added by scripts/lib.sh (hwm_start_cluster)
shared_preload_libraries = 'hwm'
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$HWM_CLUSTER_DIR'
max_prepared_transactions = 10
EOF

    hwm_log "starting PostgreSQL on 127.0.0.1:$PGPORT (log: $log)"
    if ! hwm_as_postgres "$PGBIN/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null; then
        echo "PostgreSQL failed to start; end of $log:" >&2
        tail -n 40 "$log" >&2 || true
        return 1
    fi
    export PGHOST=$HWM_CLUSTER_DIR PGPORT PGUSER=postgres PGDATABASE=postgres
}

# Registered by hwm_start_cluster: fast stop, then delete everything (but
# the server log, with HWM_KEEP_SERVER_LOG).
_hwm_stop_cluster() {
    [[ -n ${HWM_CLUSTER_DIR:-} && -d $HWM_CLUSTER_DIR ]] || return 0
    local data=$HWM_CLUSTER_DIR/data
    if hwm_as_postgres "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        hwm_log "stopping PostgreSQL"
        hwm_as_postgres "$PGBIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null || true
    fi
    # HWM_KEEP_SERVER_LOG=FILE: keep the server log (scripts/test.sh's log
    # guard reads the dbt run's)
    if [[ -n ${HWM_KEEP_SERVER_LOG:-} && -f $HWM_CLUSTER_DIR/server.log ]]; then
        cp "$HWM_CLUSTER_DIR/server.log" "$HWM_KEEP_SERVER_LOG" || true
    fi
    rm -rf "$HWM_CLUSTER_DIR" 2>/dev/null || hwm_as_root rm -rf "$HWM_CLUSTER_DIR"
}

# psql as postgres against the cluster of hwm_start_cluster; connection
# settings are passed as options since sudo would drop PG* variables.
hwm_psql() {
    hwm_as_postgres "$PGBIN/psql" -X -v ON_ERROR_STOP=1 \
        -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d "$PGDATABASE" "$@"
}

# --- PostgreSQL versions ---------------------------------------------------
# shellcheck source=scripts/pg.sh
source "$REPO/scripts/pg.sh"
