# shellcheck shell=bash
# scripts/citus.sh: build Citus from ../shared/vendor once per machine into a
# cache outside the repository, and copy the build into a PostgreSQL
# installation.  Citus is a test dependency only (test/t/070_citus.pl skips
# when it is not installed); nothing of it enters the repository.
#
# Source it (after scripts/lib.sh, or alone) and call:
#   hwm_citus_build PG_CONFIG      build the Citus release for that
#                                  PostgreSQL (hwm_citus_version) into
#                                  $HWM_CACHE/citus-<version>-pg<major>
#                                  (no-op when its stamp file exists); prints
#                                  the cache directory.  Logs, and writes
#                                  into the stamp, the release and what it
#                                  patched for that server (_hwm_citus_patch)
#   hwm_citus_install PG_CONFIG    build if needed, then copy citus*.so and
#                                  the extension files into the PostgreSQL of
#                                  PG_CONFIG (as root when needed)
# Or run it: scripts/citus.sh [PG_CONFIG]   (build + install)
#
# The cache holds a staging tree independent of where PostgreSQL lives
# (lib/ = pkglibdir, extension/ = sharedir/extension), so one build serves
# the system PostgreSQL (CI) and a relocated private copy (developers) of the
# same major version.  The stamp file is written only after a successful
# build; a failed or interrupted build is redone from scratch next time.

HWM_CITUS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HWM_CITUS_VENDOR=${HWM_VENDOR:-$HWM_CITUS_REPO/../shared/vendor}
# logging, root and apt helpers (when run alone, or sourced before lib.sh)
# shellcheck source=scripts/lib.sh
declare -F hwm_apt_install >/dev/null || source "$HWM_CITUS_REPO/scripts/lib.sh"

# Which Citus release to build for this PostgreSQL major version (each is
# tested with hwm on the majors README's version table lists: 13.2.2 on 15
# and 17, 14.0.1 on 18).  HWM_CITUS_VERSION=14.0.1 picks another release
# from ../shared/vendor (Citus 13 supports PostgreSQL 15 to 17, Citus 14
# supports 16 to 18); the cache keeps one build per release and major.
hwm_citus_version() {
    if [[ -n ${HWM_CITUS_VERSION:-} ]]; then
        echo "$HWM_CITUS_VERSION"
        return 0
    fi
    case $1 in
    15 | 16 | 17) echo 13.2.2 ;;
    18) echo 14.0.1 ;;
    *) return 1 ;;
    esac
}

# Debian packages Citus's configure and build need.
HWM_CITUS_DEPS=(libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev
    libselinux1-dev libpam0g-dev autoconf build-essential)

_hwm_citus_deps() { hwm_apt_install "${HWM_CITUS_DEPS[@]}"; }

# hwm_citus_dir PG_CONFIG: the cache directory for that PostgreSQL's major.
hwm_citus_dir() {
    local major version
    major=$("$1" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    version=$(hwm_citus_version "$major") || {
        echo "no Citus release known for PostgreSQL $major" >&2
        return 1
    }
    echo "${HWM_CACHE:-/var/cache/hwm}/citus-$version-pg$major"
}

# _hwm_citus_patch PG_CONFIG SRC: patch the Citus source in SRC for what it
# lacks on that server (each patch only when its clash is found), and list
# what was patched in SRC/patches (empty: nothing).
#
# have_createdb_privilege: Citus 13.x defines its own static copy for
# PostgreSQL 15 (pg_version_compat.h), older 15.x not having it; 15.20's
# commands/dbcommands.h declares PostgreSQL's, and the two clash.  Citus 14
# and Citus 13 on 16 and later use PostgreSQL's (renaming there would leave
# the calls without a definition).  The copy counts only when the header,
# preprocessed against this server, still defines it.
_hwm_citus_patch() {
    local pgc=$1 src=$2 inc
    : >"$src/patches"
    inc=$("$pgc" --includedir-server)
    if grep -qE '\<have_createdb_privilege[[:space:]]*\(' "$inc/commands/dbcommands.h" 2>/dev/null &&
        _hwm_citus_defines "$pgc" "$src" have_createdb_privilege; then
        grep -rlw 'have_createdb_privilege' "$src/src" | xargs -r sed -i \
            's/\bhave_createdb_privilege\b/citus_have_createdb_privilege/g'
        echo "renamed Citus's static have_createdb_privilege (PostgreSQL's dbcommands.h declares it too)" >>"$src/patches"
    fi
}

# _hwm_citus_defines PG_CONFIG SRC NAME: whether Citus's pg_version_compat.h,
# preprocessed against that server's headers, defines a function NAME(void).
_hwm_citus_defines() {
    local pgc=$1 src=$2 name=$3 cppflags
    read -r -a cppflags <<<"$("$pgc" --cppflags)"
    printf '#include "postgres.h"\n#include "pg_version_compat.h"\n' |
        gcc -E -P "${cppflags[@]}" -I"$src/src/include" -I"$("$pgc" --includedir-server)" -x c - 2>/dev/null |
        awk -v name="$name" '
            $0 ~ "^[[:space:]]*" name "[[:space:]]*\\([[:space:]]*void[[:space:]]*\\)[[:space:]]*$" { f = 1; next }
            f && /^[[:space:]]*\{/ { found = 1 }
            { f = 0 }
            END { exit !found }'
}

# _hwm_citus_compile PG_CONFIG VERSION SRC STAGE: configure, make, and
# install into the DESTDIR STAGE.
_hwm_citus_compile() {
    local pgc=$1 version=$2 src=$3 stage=$4
    mkdir -p "$src" "$stage"
    tar -C "$src" --strip-components=1 -xzf "$HWM_CITUS_VENDOR/citus-$version.tar.gz"
    _hwm_citus_patch "$pgc" "$src" || return 1
    (cd "$src" && ./configure PG_CONFIG="$pgc" --without-libcurl >"$src/configure.out" 2>&1) || {
        tail -n 30 "$src/configure.out" >&2
        return 1
    }
    # with_llvm=no: no JIT bitcode, which would double the build time
    make -C "$src" -j"$(nproc)" -s with_llvm=no >"$src/make.out" 2>&1 || {
        grep -E 'error|Error' "$src/make.out" | head -n 30 >&2
        return 1
    }
    make -C "$src" -s install with_llvm=no DESTDIR="$stage" >"$src/install.out" 2>&1 || {
        tail -n 30 "$src/install.out" >&2
        return 1
    }
}

# hwm_citus_build PG_CONFIG: build once into the cache; print its directory.
# One build per cache directory at a time: a second caller (another
# checkout's test run) waits for the first, then finds its stamp.
hwm_citus_build() {
    local pgc=$1 dir lock_fd rc=0
    dir=$(hwm_citus_dir "$pgc") || return 1
    if [[ -f $dir/stamp ]]; then
        echo "$dir"
        return 0
    fi
    hwm_as_root mkdir -p "$(dirname "$dir")"
    # (the braces keep 2>/dev/null off the shell's own stderr)
    if { exec {lock_fd}>>"$dir.lock"; } 2>/dev/null; then
        flock "$lock_fd" || { exec {lock_fd}>&-; return 1; }
    else
        lock_fd=
    fi
    [[ -f $dir/stamp ]] || _hwm_citus_build_locked "$pgc" "$dir" || rc=$?
    [[ -z $lock_fd ]] || exec {lock_fd}>&-
    ((rc == 0)) || return "$rc"
    echo "$dir"
}

_hwm_citus_build_locked() {
    local pgc=$1 dir=$2 version tmp start patched
    version=${dir##*/citus-}
    version=${version%-pg*}
    (cd "$HWM_CITUS_VENDOR" && grep " citus-$version.tar.gz\$" SHA256SUMS | sha256sum -c --quiet -) || {
        echo "checksum of citus-$version.tar.gz does not match SHA256SUMS" >&2
        return 1
    }
    _hwm_citus_deps || return 1
    hwm_as_root rm -rf "$dir"
    tmp=$(mktemp -d /tmp/citus-build.XXXXXX)
    start=$SECONDS
    hwm_log "building Citus $version against $("$pgc" --version) ($pgc) in $tmp"
    if ! _hwm_citus_compile "$pgc" "$version" "$tmp/src" "$tmp/stage" >&2 ||
        ! _hwm_citus_stage "$pgc" "$tmp" >&2; then
        echo "Citus $version build failed; logs in $tmp/src/*.out" >&2
        return 1
    fi
    patched=$(paste -sd ';' "$tmp/src/patches")
    hwm_as_root mv "$tmp/cache" "$dir"
    echo "citus $version for $("$pgc" --version) pg_config=$pgc built in $((SECONDS - start))s; patched: ${patched:-nothing}" |
        hwm_as_root tee "$dir/stamp" >/dev/null
    rm -rf "$tmp"
    hwm_log "Citus $version built in $((SECONDS - start))s into $dir; patched: ${patched:-nothing}"
}

# _hwm_citus_stage PG_CONFIG TMP: move what `make install` put under the
# DESTDIR into the location-independent tree TMP/cache/{lib,extension}.
_hwm_citus_stage() {
    local pgc=$1 tmp=$2
    mkdir -p "$tmp/cache/lib" "$tmp/cache/extension"
    cp -a "$tmp/stage$("$pgc" --pkglibdir)/." "$tmp/cache/lib/"
    cp -a "$tmp/stage$("$pgc" --sharedir)/extension/." "$tmp/cache/extension/"
    ls "$tmp/cache/lib/citus.so" >/dev/null
}

# hwm_citus_install PG_CONFIG: build if needed, copy into that PostgreSQL.
hwm_citus_install() {
    local pgc=$1 dir lib ext run=()
    dir=$(hwm_citus_build "$pgc") || return 1
    lib=$("$pgc" --pkglibdir)
    ext=$("$pgc" --sharedir)/extension
    [[ -w $lib && -w $ext ]] || run=(hwm_as_root)
    "${run[@]}" cp -a "$dir/lib/." "$lib/"
    "${run[@]}" cp -a "$dir/extension/." "$ext/"
    hwm_log "Citus ${dir##*/citus-} installed into $lib ($(cut -d';' -f2- "$dir/stamp" | sed 's/^ *//'))"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    hwm_citus_install "${1:-/usr/lib/postgresql/15/bin/pg_config}"
fi
