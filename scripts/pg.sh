# shellcheck shell=bash
# scripts/pg.sh: provide PostgreSQL major version N for building and testing
# hwm.  Sourced by scripts/lib.sh; also runnable on its own:
#
#   bash scripts/pg.sh 17      # provide PostgreSQL 17, print its bin dir
#
#   hwm_pg_provide N    print the bin dir of PostgreSQL N, installing or
#                       building it first when needed (logs go to stderr)
#
# Where N comes from, first that applies:
#  1. the system's install, /usr/lib/postgresql/N (Debian's packages, or the
#     PostgreSQL apt repository's); the server and its -dev package are
#     apt-get installed when missing when N is Debian's own major (15) or the
#     server is there without its headers;
#  2. a build from source, from $HWM_PG_SOURCE_N (an unpacked source tree or
#     a postgresql-*.tar.bz2/.tar.gz archive) or else the newest
#     ../shared/vendor/postgresql-N.*.tar.bz2 next to the repository.  It is
#     checked against SHA256SUMS in the archive's folder when that lists it,
#     built with `make -j$(nproc)` and installed into
#     ${HWM_CACHE:-/var/cache/hwm}/pg-N-VERSION[-cassert], once per machine:
#     a stamp file is written only after a complete install, and a prefix
#     without it (a build that was interrupted) is deleted and built again.
#     Set HWM_PG_SYSTEM=0 to build from source even when a system install
#     exists.
#
# Built with --enable-tap-tests --enable-debug, plus --enable-cassert for the
# majors listed in HWM_PG_CASSERT (default "18": CI runs the suite under
# assertions on one version; set HWM_PG_CASSERT= for none, "17 18" for both).
# Installed besides the core: contrib postgres_fdw, auto_explain,
# pgstattuple, amcheck, citext (a case-insensitive key type for the key
# tests); pg_isolation_regress and the TAP Perl modules where
# PGXS's installcheck and prove_installcheck look for them.

HWM_PG_DEBIAN_MAJOR=15
HWM_PG_CONTRIB=(postgres_fdw auto_explain pgstattuple amcheck citext)
# Debian packages a source build needs.
HWM_PG_BUILD_DEPS=(build-essential bison flex perl libreadline-dev zlib1g-dev
    libicu-dev pkg-config libipc-run-perl bzip2)

# hwm_pg_source N: print the source (a folder or an archive) of major N.
_hwm_pg_source() {
    local n=$1 var="HWM_PG_SOURCE_$1" repo
    if [[ -n ${!var:-} ]]; then
        if [[ ! -e ${!var} ]]; then
            echo "$var=${!var}: no such file or folder" >&2
            return 1
        fi
        echo "${!var}"
        return 0
    fi
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local found
    found=$(find "$repo/../shared/vendor" -maxdepth 1 -name "postgresql-$n.*.tar.bz2" 2>/dev/null |
        sort -V | tail -n 1)
    if [[ -z $found ]]; then
        echo "PostgreSQL $n: not installed in /usr/lib/postgresql/$n and no" \
            "postgresql-$n.*.tar.bz2 in $repo/../shared/vendor (or set $var)" >&2
        return 1
    fi
    (cd "$(dirname "$found")" && echo "$PWD/${found##*/}")
}

# _hwm_pg_version SOURCE: the full version (17.11) of a source folder or
# archive.
_hwm_pg_version() {
    local src=$1 v
    if [[ -d $src ]]; then
        v=$(sed -n "s/^PACKAGE_VERSION='\(.*\)'$/\1/p" "$src/configure")
    else
        v=${src##*/postgresql-}
        v=${v%%.tar.*}
    fi
    [[ -n $v ]] || { echo "cannot tell the version of $src" >&2; return 1; }
    echo "$v"
}

# _hwm_pg_verify ARCHIVE: check its SHA-256 against SHA256SUMS next to it,
# when that file lists it.
_hwm_pg_verify() {
    local archive=$1 dir name sums line
    dir=$(dirname "$archive") name=${archive##*/} sums=$dir/SHA256SUMS
    [[ -f $sums ]] || { hwm_log "no SHA256SUMS next to $name: not verified"; return 0; }
    line=$(awk -v f="$name" '$2 == f || $2 == "*" f' "$sums")
    [[ -n $line ]] || { hwm_log "$name is not in $sums: not verified"; return 0; }
    (cd "$dir" && sha256sum --quiet -c - <<<"$line") || {
        echo "$archive does not match its SHA256SUMS line" >&2
        return 1
    }
}

_hwm_pg_cassert() {
    local m
    for m in ${HWM_PG_CASSERT-18}; do
        [[ $m == "$1" ]] && return 0
    done
    return 1
}

# _hwm_pg_build N SOURCE PREFIX: configure, build and install into PREFIX.
_hwm_pg_build() {
    local n=$1 src=$2 prefix=$3 build start rc=0
    # Callers run this under `||` or `if`, where `set -e` does nothing:
    # every step checks its own status.
    hwm_apt_install "${HWM_PG_BUILD_DEPS[@]}" || return 1
    build=$(mktemp -d "${TMPDIR:-/tmp}/hwm-pg$n-build.XXXXXX") || return 1
    _hwm_pg_build_in "$n" "$src" "$prefix" "$build" || rc=$?
    rm -rf "$build"
    return "$rc"
}

_hwm_pg_build_in() {
    local n=$1 src=$2 prefix=$3 build=$4 start c f
    if [[ -d $src ]]; then
        # a tree that may hold an in-place build: build in a copy
        cp -a "$src/." "$build/" || return 1
    else
        _hwm_pg_verify "$src" || return 1
        tar -C "$build" --strip-components=1 -xf "$src" || return 1
    fi
    local conf=(--prefix="$prefix" --enable-tap-tests --enable-debug)
    _hwm_pg_cassert "$n" && conf+=(--enable-cassert)
    start=$SECONDS
    hwm_log "building PostgreSQL $n from ${src##*/} into $prefix (${conf[*]:1})"
    rm -rf "$prefix"
    (
        set -e
        umask 022 # the postgres user must read and run the install
        cd "$build"
        ./configure "${conf[@]}" >configure.log 2>&1 || { tail -n 30 configure.log >&2; exit 1; }
        make -s -j"$(nproc)" >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
        # `make install` covers the core, pg_regress, pg_isolation_regress,
        # isolationtester and the TAP Perl modules (src/test/perl), each in
        # the place PGXS looks (lib/pgxs/src/test/...).
        make -s install >>make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
        for c in "${HWM_PG_CONTRIB[@]}"; do
            make -s -C "contrib/$c" -j"$(nproc)" install >>make.log 2>&1 ||
                { tail -n 40 make.log >&2; exit 1; }
        done
        # these are not part of `make install` on every version: install
        # them explicitly (a no-op where they already are)
        make -s -C src/test/isolation install >>make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
        make -s -C src/test/perl install >>make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
    ) || { rm -rf "$prefix"; return 1; }
    local pgxs # .../lib/pgxs, from .../lib/pgxs/src/makefiles/pgxs.mk
    pgxs=$(dirname "$(dirname "$(dirname "$("$prefix/bin/pg_config" --pgxs)")")")
    for f in "$prefix/bin/postgres" "$prefix/bin/pg_config" "$pgxs/src/test/isolation/pg_isolation_regress" \
        "$pgxs/src/test/regress/pg_regress" "$pgxs/src/test/perl/PostgreSQL/Test/Cluster.pm"; do
        [[ -e $f ]] || { echo "PostgreSQL $n build: $f is missing" >&2; rm -rf "$prefix"; return 1; }
    done
    echo "PostgreSQL $(_hwm_pg_version "$src") from ${src##*/}, configure ${conf[*]:1}, built $(date -u +%FT%TZ) in $((SECONDS - start)) s" \
        >"$prefix/.hwm-complete" || return 1
    hwm_log "PostgreSQL $n built and installed in $((SECONDS - start)) s"
}

# hwm_pg_provide N: print the bin dir of PostgreSQL major N.
hwm_pg_provide() {
    local n=$1
    [[ $n =~ ^[0-9]+$ ]] || { echo "hwm_pg_provide: not a major version: $n" >&2; return 1; }
    local sys=/usr/lib/postgresql/$n
    if [[ ${HWM_PG_SYSTEM:-1} != 0 ]]; then
        if [[ $n == "$HWM_PG_DEBIAN_MAJOR" ]]; then
            # postgresql-N (initdb, postgres, pg_regress) is listed too:
            # postgresql-server-dev-N does not pull it in.
            hwm_apt_install "postgresql-$n" "postgresql-server-dev-$n" libipc-run-perl || return 1
        elif [[ -x $sys/bin/postgres && ! -x $sys/bin/pg_config ]]; then
            hwm_apt_install "postgresql-server-dev-$n" libipc-run-perl || return 1
        fi
        if [[ -x $sys/bin/postgres && -x $sys/bin/pg_config ]]; then
            echo "$sys/bin"
            return 0
        fi
    fi

    local src version prefix cache=${HWM_CACHE:-/var/cache/hwm}
    src=$(_hwm_pg_source "$n") || return 1
    version=$(_hwm_pg_version "$src") || return 1
    [[ $version == "$n".* || $version == "$n" ]] ||
        { echo "$src is PostgreSQL $version, not $n" >&2; return 1; }
    prefix=$cache/pg-$n-$version
    _hwm_pg_cassert "$n" && prefix+=-cassert
    # a cached build made before a contrib module joined the list is made
    # again (each module leaves NAME.so in the package library folder)
    local c
    for c in "${HWM_PG_CONTRIB[@]}"; do
        if [[ -f $prefix/.hwm-complete && ! -f $("$prefix/bin/pg_config" --pkglibdir)/$c.so ]]; then
            hwm_log "$prefix has no contrib $c: building it again"
            rm -f "$prefix/.hwm-complete"
        fi
    done
    if [[ ! -f $prefix/.hwm-complete ]]; then
        mkdir -p "$cache" || return 1
        chmod 755 "$cache" 2>/dev/null || true
        # One build at a time per prefix: a second run waits for the first,
        # then finds the stamp and reuses its install.
        local lock=$prefix.lock
        exec {_hwm_pg_lock_fd}>"$lock" || return 1
        flock "$_hwm_pg_lock_fd" || return 1
        if [[ ! -f $prefix/.hwm-complete ]]; then
            _hwm_pg_build "$n" "$src" "$prefix" || { exec {_hwm_pg_lock_fd}>&-; return 1; }
        fi
        exec {_hwm_pg_lock_fd}>&-
    fi
    echo "$prefix/bin"
}

# Run as a script: source lib.sh (for hwm_log, hwm_apt_install; it sources
# this file again, which only redefines the functions) and provide $1.
if [[ ${BASH_SOURCE[0]} == "$0" && -z ${_HWM_PG_SH_MAIN:-} ]]; then
    set -euo pipefail
    _HWM_PG_SH_MAIN=1
    # shellcheck source=scripts/lib.sh
    source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
    if (($# != 1)); then
        echo "usage: bash scripts/pg.sh MAJOR   (prints the bin dir of PostgreSQL MAJOR)" >&2
        exit 2
    fi
    hwm_pg_provide "$1"
fi
