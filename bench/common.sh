# shellcheck shell=bash
# bench/common.sh: what the single-purpose benchmarks (longxact.sh, noop.sh,
# scheduled.sh) share.  Source it after setting `set -euo pipefail`:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
#   bench_cluster NAME "setting = value" ...
#
# bench_cluster installs what is missing, builds and installs hwm, starts a
# throwaway cluster (scripts/lib.sh) with the settings given, and sets LOG
# (bench/work/NAME.log, emptied) and WORK.  HWM_BENCH_PGBIN=DIR runs the
# benchmark on another installation of PostgreSQL (a copy, on a shared
# machine; installations are relocatable).  HWM_BENCH_SRC=DIR builds and
# installs hwm from another checkout (an older commit, to compare; the
# scripts name its commit as BENCH_COMMIT).

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
source "$BENCH/../scripts/lib.sh"
if [[ -n ${HWM_BENCH_PGBIN:-} ]]; then
    PGBIN=$HWM_BENCH_PGBIN
    PG_CONFIG=$PGBIN/pg_config
fi
WORK=$BENCH/work
mkdir -p "$WORK"
BENCH_SRC=${HWM_BENCH_SRC:-$REPO}
BENCH_COMMIT=$(git -C "$BENCH_SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)

bench_cluster() {
    local name=$1
    shift
    LOG=$WORK/$name.log
    : >"$LOG"
    hwm_install_deps
    hwm_build_install "$BENCH_SRC" >>"$LOG" 2>&1
    hwm_start_cluster >>"$LOG" 2>&1
    printf '%s\n' "" "# bench/$name.sh" "$@" |
        hwm_as_postgres tee -a "$HWM_CLUSTER_DIR/data/postgresql.conf" >/dev/null
    hwm_as_postgres "$PGBIN/pg_ctl" -D "$HWM_CLUSTER_DIR/data" -l "$HWM_CLUSTER_DIR/server.log" \
        -m fast -w -t 60 restart >>"$LOG" 2>&1
}
