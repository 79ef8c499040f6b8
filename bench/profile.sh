#!/usr/bin/env bash
# bench/profile.sh: where a run with nothing new spends its time (issue 24).
# The set-up of bench/noop.sh (a 10,000-row source with an index on the
# watermark column, the pipeline caught up), pgbench running hwm.run with one
# client, and perf recording that backend for 4 s with DWARF call graphs;
# prints the share of samples under each of hwm's and PostgreSQL's main
# steps (inclusive: a step's share contains its callees').  Needs perf
# (Debian: linux-perf) and perf_event_paranoid <= 2.
#
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/profile.sh
#   PROFILE_SETTINGS="fsync = off" bash bench/profile.sh   # extra server settings
#
# PROFILE_SETTINGS: settings appended to the cluster's postgresql.conf, one
# per line, as bench/noop.sh's NOOP_SETTINGS.
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v perf >/dev/null || hwm_apt_install linux-perf
extra=()
if [[ -n ${PROFILE_SETTINGS:-} ]]; then
    mapfile -t extra <<<"$PROFILE_SETTINGS"
fi
bench_cluster profile "autovacuum = off" "${extra[@]}"
hwm_psql -q <<'SQL' >>"$LOG" 2>&1
CREATE EXTENSION hwm;
CREATE ROLE bench LOGIN;
GRANT CREATE ON SCHEMA public TO bench;
SET ROLE bench;
CREATE TABLE src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, v text, n int);
CREATE INDEX ON src (updated_at);
INSERT INTO src SELECT g, '2026-01-01'::timestamptz + g * interval '1 second', 'v' || g, g
  FROM generate_series(1, 10000) g;
CREATE TABLE tgt (LIKE src INCLUDING ALL);
INSERT INTO tgt SELECT * FROM src;
SELECT hwm.create_pipeline('p', 'src', 'tgt', '{id}', 'updated_at',
                           initial_watermark => (SELECT max(updated_at)::text FROM src));
SQL
printf '%s\n' "SELECT * FROM hwm.run('p');" | hwm_as_postgres tee "$HWM_CLUSTER_DIR/hwm.sql" >/dev/null
hwm_as_postgres "$PGBIN/pgbench" -n -c 1 -T 12 -M simple -f "$HWM_CLUSTER_DIR/hwm.sql" \
    -h "$PGHOST" -p "$PGPORT" -U bench postgres >"$WORK/profile-pgbench.txt" 2>/dev/null &
sleep 3
pid=$(hwm_psql -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'")
perf record -p "$pid" --call-graph dwarf,16384 -F 499 -o "$WORK/profile.data" -- sleep 4 >/dev/null 2>&1
wait
grep "latency average" "$WORK/profile-pgbench.txt"
perf report -i "$WORK/profile.data" --children --sort symbol --stdio 2>/dev/null |
    grep -E "^ +[0-9]" >"$WORK/profile.txt"
for s in exec_simple_query hwm_run hwm_pipeline_fetch_extended hwm_plan_cached hwm_plan_build hwm_record_run \
    hwm_prune_runs hwm_update_state_after_run raw_parser parse_analyze_fixedparams \
    pg_plan_queries standard_planner CommitTransaction SPI_execute_with_args SPI_execute_plan; do
    printf '%-32s %s\n' "$s" "$(grep -E " \[.\] $s( |$)" "$WORK/profile.txt" | awk '{print $1}' | head -n 1)"
done
