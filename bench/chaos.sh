#!/usr/bin/env bash
# bench/chaos.sh: the chaos test of test/t/090_chaos.pl for longer (issue
# 28), on a throwaway cluster: four clients issue random schedule,
# unschedule, pause, resume, set_timeout, drop and create of copy, command and
# interval pipelines, hwm.run, CALL hwm.catch_up, CALL hwm.rerun_intervals,
# inserts, CREATE/DROP DATABASE with hwm and pg_terminate_backend of workers,
# dispatchers and clients, over 48 pipelines due every second in two
# databases, with a kill -9 of an hwm worker about every two minutes.  Then
# checks the server log for crashes (a signal other than those kills, TRAP:,
# PANIC:), that every pipeline scheduled and not paused runs again, and that
# no scheduled run started after its pipeline's pause committed; writes what
# ran and what it found into bench/RESULTS.md.  Exit status 1 when it found
# something.
#
#   SECONDS_=600 bash bench/chaos.sh             # ten minutes (the default)
#   SECONDS_=1800 SEED=42 bash bench/chaos.sh    # half an hour, replaying seed 42
#   FILLER=0 bash bench/chaos.sh                 # without the 50,000 unscheduled rows (see HwmChaos.pm)
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/chaos.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
DURATION=${SECONDS_:-600}
FILLER=${FILLER:-50000}

SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
bench_cluster chaos "hwm.max_workers = 4" "max_worker_processes = 16" "max_connections = 60" \
    "restart_after_crash = on" "log_min_messages = warning"
# A crashing process leaves a core in the data directory (with the kernel's
# core_pattern "core"): its backtrace goes into bench/work/chaos-core-*.txt.
# runuser resets the core size limit to 0: raised again as postgres.
hwm_as_postgres bash -c 'ulimit -c unlimited; exec "$0" -D "$1" -l "$2" -m fast -w -t 60 restart' \
    "$PGBIN/pg_ctl" "$HWM_CLUSTER_DIR/data" "$HWM_CLUSTER_DIR/server.log" >>"$LOG" 2>&1
version=$(hwm_psql -At -c "SHOW server_version")
hwm_log "chaos for $DURATION s on PostgreSQL $version, seed $SEED (replay: SEED=$SEED)"

set +e
REPORT=$(PATH=$PGBIN:$PATH perl -I "$BENCH/../test/perl" "$BENCH/chaos.pl" "$DURATION" "$SEED" \
    "$HWM_CLUSTER_DIR/server.log" "$FILLER")
status=$?
set -e
cp "$HWM_CLUSTER_DIR/server.log" "$WORK/chaos-server.log"
rm -f "$WORK"/chaos-core-*.txt
n=0
for core in "$HWM_CLUSTER_DIR"/data/core*; do
    [[ -f $core ]] || continue
    n=$((n + 1))
    if command -v gdb >/dev/null; then
        gdb -batch -ex 'bt full' "$PGBIN/postgres" "$core" >"$WORK/chaos-core-$n.txt" 2>&1 || true
        hwm_log "a core: backtrace in bench/work/chaos-core-$n.txt"
        REPORT+=$'\n\n'"Backtrace of core $n (\`gdb -batch -ex bt\`):"$'\n\n```\n'"$(gdb -batch -ex bt "$PGBIN/postgres" "$core" 2>/dev/null | grep -E '^#' | head -n 15)"$'\n```'
    fi
done
printf '%s\n' "$REPORT"

SECTION=$(printf '%s\n' "<!-- chaos:start -->" "## Chaos (issue 28)" "" \
    "Command: \`SECONDS_=$DURATION SEED=$SEED bash bench/chaos.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$BENCH/.." rev-parse --short HEAD 2>/dev/null || echo unknown), PostgreSQL $version, load average before: $(cut -d' ' -f1-3 /proc/loadavg)." "" \
    "$REPORT" "<!-- chaos:end -->")
python3 - "$BENCH/RESULTS.md" "$SECTION" <<'PY'
import sys, re
path, section = sys.argv[1], sys.argv[2]
text = open(path).read()
pat = re.compile(r"<!-- chaos:start -->.*?<!-- chaos:end -->", re.S)
text = pat.sub(lambda m: section, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
hwm_log "wrote the chaos section of bench/RESULTS.md (server log: bench/work/chaos-server.log)"
exit "$status"
