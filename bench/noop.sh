#!/usr/bin/env bash
# bench/noop.sh: the fixed cost of a run (issue 24), one command from a
# fresh machine.  A run with nothing new, by hand, against the same
# statements written by hand, in the same run, each measured by pgbench with
# one client for DURATION seconds, ROUNDS times, alternating:
#
#   hwm    SELECT * FROM hwm.run('p')
#   bare   the same work in one statement (one round trip, as hwm.run): read
#          the watermark (FOR UPDATE), upsert the slice above it (INSERT ...
#          SELECT ... ON CONFLICT DO UPDATE, empty), move the watermark
#   script the same as a script of five statements (BEGIN; SELECT ... FOR
#          UPDATE; INSERT ...; UPDATE ...; COMMIT), as a loader script sends it
#
# over a 10,000-row source with an index on the watermark column.  Both use
# pgbench's simple protocol (each statement parsed on every call, as a
# script or an orchestrator sends it).  Prints the median latency of each and
# the ratios hwm / bare and hwm / script, and appends them to
# bench/work/noop.tsv.
#
#   DURATION=10 ROUNDS=3 bash bench/noop.sh
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/noop.sh    # another PostgreSQL
#   NOOP_SETTINGS="fsync = off" bash bench/noop.sh       # extra server settings
#
# NOOP_SETTINGS: settings appended to the cluster's postgresql.conf, one per
# line (e.g. "fsync = off" to measure the CPU alone: with fsync on, a commit's
# flush of the WAL dominates both sides).
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
extra=()
if [[ -n ${NOOP_SETTINGS:-} ]]; then
    mapfile -t extra <<<"$NOOP_SETTINGS"
fi
bench_cluster noop "autovacuum = off" "hwm.allow_superuser_pipelines = on" "${extra[@]}"

hwm_psql -q <<'SQL' >>"$LOG" 2>&1
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, v text, n int);
CREATE INDEX ON src (updated_at);
INSERT INTO src SELECT g, '2026-01-01'::timestamptz + g * interval '1 second', 'v' || g, g
  FROM generate_series(1, 10000) g;
CREATE TABLE tgt (LIKE src INCLUDING ALL);
CREATE TABLE tgt_bare (LIKE src INCLUDING ALL);
INSERT INTO tgt SELECT * FROM src;
INSERT INTO tgt_bare SELECT * FROM src;
SELECT hwm.create_pipeline('p', 'src', 'tgt', '{id}', 'updated_at',
                           initial_watermark => (SELECT max(updated_at)::text FROM src));
CREATE TABLE bench_wm (name text PRIMARY KEY, w timestamptz NOT NULL);
INSERT INTO bench_wm SELECT 'p', max(updated_at) FROM src;
VACUUM ANALYZE;
SELECT * FROM hwm.run('p');
SQL

printf '%s\n' "SELECT * FROM hwm.run('p');" | hwm_as_postgres tee "$HWM_CLUSTER_DIR/hwm.sql" >/dev/null
hwm_as_postgres tee "$HWM_CLUSTER_DIR/bare.sql" >/dev/null <<'SQL'
WITH w AS (SELECT w FROM bench_wm WHERE name = 'p' FOR UPDATE),
up AS (INSERT INTO tgt_bare AS t SELECT s.id, s.updated_at, s.v, s.n FROM src AS s, w WHERE s.updated_at > w.w ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, v = EXCLUDED.v, n = EXCLUDED.n WHERE (t.updated_at, t.v, t.n) IS DISTINCT FROM (EXCLUDED.updated_at, EXCLUDED.v, EXCLUDED.n) RETURNING t.updated_at)
UPDATE bench_wm SET w = COALESCE((SELECT max(updated_at) FROM up), bench_wm.w) WHERE name = 'p';
SQL
hwm_as_postgres tee "$HWM_CLUSTER_DIR/script.sql" >/dev/null <<'SQL'
BEGIN;
SELECT w::text AS w FROM bench_wm WHERE name = 'p' FOR UPDATE \gset
INSERT INTO tgt_bare AS t SELECT s.id, s.updated_at, s.v, s.n FROM src AS s WHERE s.updated_at > ':w'::timestamptz ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, v = EXCLUDED.v, n = EXCLUDED.n WHERE (t.updated_at, t.v, t.n) IS DISTINCT FROM (EXCLUDED.updated_at, EXCLUDED.v, EXCLUDED.n);
UPDATE bench_wm SET w = COALESCE((SELECT max(s.updated_at) FROM src AS s WHERE s.updated_at > ':w'::timestamptz), w) WHERE name = 'p';
COMMIT;
SQL

# latency in ms of one pgbench of script $1
measure() {
    hwm_as_postgres "$PGBIN/pgbench" -n -c 1 -T "$DURATION" -M simple -f "$HWM_CLUSTER_DIR/$1.sql" \
        -h "$PGHOST" -p "$PGPORT" -U postgres postgres 2>>"$LOG" |
        sed -nE 's/^latency average = ([0-9.]+) ms$/\1/p'
}

declare -a H B S
for ((i = 0; i < ROUNDS; i++)); do
    H+=("$(measure hwm)")
    B+=("$(measure bare)")
    S+=("$(measure script)")
    hwm_log "round $((i + 1)): hwm.run ${H[-1]} ms, bare statement ${B[-1]} ms, script ${S[-1]} ms"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
h=$(median "${H[@]}")
b=$(median "${B[@]}")
sc=$(median "${S[@]}")
ratio=$(awk -v h="$h" -v b="$b" 'BEGIN {printf "%.2f", h / b}')
ratio_s=$(awk -v h="$h" -v b="$sc" 'BEGIN {printf "%.2f", h / b}')
version=$("$PGBIN/postgres" --version | awk '{print $3}')
hwm_log "no-op run, median of $ROUNDS x ${DURATION}s: hwm.run $h ms, bare statement $b ms (ratio $ratio), script $sc ms (ratio $ratio_s) (PostgreSQL $version${NOOP_SETTINGS:+, $NOOP_SETTINGS})"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$version" "$h" "$b" "$ratio" "$sc" "$ratio_s" \
    "$(git -C "$BENCH/.." rev-parse --short HEAD)" >>"$WORK/noop.tsv"
