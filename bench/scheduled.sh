#!/usr/bin/env bash
# bench/scheduled.sh: scheduled runs per second (issue 24), one command from
# a fresh machine.  N one-second copy pipelines of one owner (each with
# nothing new, so a run is the scheduler's fixed cost), hwm.max_workers = 4;
# after WARMUP seconds, the succeeded runs recorded in WINDOW seconds give
# the rate, and /proc/stat the CPU the machine used meanwhile.  For each N in
# COUNTS (default "300 600 1000") prints runs/s, the share of the N due
# runs that ran, and CPU, and appends them to bench/work/scheduled.tsv.
#
#   COUNTS="300 600 1000" WINDOW=20 bash bench/scheduled.sh
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/scheduled.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
read -r -a COUNTS <<<"${COUNTS:-300 600 1000}"
WARMUP=${WARMUP:-10}
WINDOW=${WINDOW:-20}
bench_cluster scheduled "hwm.max_workers = 4" "max_worker_processes = 16"

q() { hwm_psql -q -At "$@" 2>>"$LOG"; }
q -c "CREATE EXTENSION hwm" -c "CREATE ROLE bench LOGIN" -c "GRANT CREATE ON SCHEMA public TO bench"

# busy and total jiffies of the whole machine
cpu() { awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }

for n in "${COUNTS[@]}"; do
    q <<SQL
SELECT hwm.drop_pipeline(pipeline) FROM hwm.state;
TRUNCATE hwm.runs;
DROP TABLE IF EXISTS src CASCADE;
SET ROLE bench;
CREATE TABLE src (id bigint PRIMARY KEY, v text);
INSERT INTO src VALUES (1, 'a');
DO \$\$
BEGIN
  FOR i IN 1..$n LOOP
    EXECUTE format('DROP TABLE IF EXISTS tgt_%s', i);
    EXECUTE format('CREATE TABLE tgt_%s (id bigint PRIMARY KEY, v text)', i);
    PERFORM hwm.create_pipeline('p' || i, 'src', format('tgt_%s', i)::regclass, '{id}', 'id',
                                schedule => '1 second');
  END LOOP;
END \$\$;
SQL
    sleep "$WARMUP"
    read -r b0 t0 < <(cpu)
    start=$(q -c "SELECT now()")
    sleep "$WINDOW"
    read -r b1 t1 < <(cpu)
    runs=$(q -c "SELECT count(*) FROM hwm.runs WHERE status = 'succeeded' AND started_at >= '$start' AND started_at < '$start'::timestamptz + interval '$WINDOW seconds'")
    failed=$(q -c "SELECT count(*) FROM hwm.runs WHERE status NOT IN ('succeeded', 'running')")
    rate=$(awk -v r="$runs" -v w="$WINDOW" 'BEGIN {printf "%.0f", r / w}')
    share=$(awk -v r="$runs" -v w="$WINDOW" -v n="$n" 'BEGIN {printf "%.2f", r / w / n}')
    busy=$(awk -v b0="$b0" -v b1="$b1" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.0f", 100 * (b1 - b0) / (t1 - t0)}')
    hwm_log "$n one-second pipelines due: $rate succeeded runs/s ($share of what is due), CPU ${busy}% of $(nproc) cores, $failed not succeeded"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$n" "$rate" "$share" "$busy" "$failed" \
        "$(git -C "$BENCH/.." rev-parse --short HEAD)" >>"$WORK/scheduled.tsv"
done
