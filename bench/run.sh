#!/usr/bin/env bash
# bench/run.sh [--quick]: hwm's benchmarks, one command from a fresh machine.
#
# Installs what is missing (apt: PostgreSQL 15 and build tools; PyPI, into
# bench/work/venv: dbt-core and dbt-postgres), builds and installs hwm,
# starts a throwaway cluster tuned for a 2-core, 24 GiB machine, builds the
# data, runs the six benchmarks (each figure several times, alternating hwm
# and the bare SQL), and writes bench/RESULTS.md.  Raw figures, the server
# log and dbt's logs stay in bench/work/ (not committed).
#
# Benchmarks 2, 3, 4 and 6 run first; then the loads of 1, 5 and 5b, in
# order of importance, none started that would end (judged by the longest
# so far) more than LIMIT seconds after the start (870 s: the whole run
# within 15 minutes); what is left out is listed in RESULTS.md.
#
#   --quick   smoke run: tiny sizes, one repetition, about a minute; writes
#             bench/work/RESULTS-quick.md instead of bench/RESULTS.md.
#
# Run it as root or as a user with sudo (PostgreSQL runs as `postgres`).  On
# a shared machine run it inside a private mount namespace, since it does
# `make install` (see bench/README.md).
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
source "$BENCH/../scripts/lib.sh"

QUICK=0
for arg in "$@"; do
    case $arg in
        --quick) QUICK=1 ;;
        *) echo "usage: bash bench/run.sh [--quick]" >&2; exit 2 ;;
    esac
done
COMMAND="bash bench/run.sh${*:+ $*}"

# --- sizes -------------------------------------------------------------------
if ((QUICK)); then
    N=100000 NEW=5000 EVERY=20 REPS1=3 REPS5=2 REPS5B=1 LIMIT=600
    SMALL2=10000 REPS2=5
    N3SMALL=10000 SLICE3=1000 REPS3=1
    DAYS4=30 PERDAY4=1000 REPS4=1
    SCHED_N=50 SCHED_SECS=5 LAT_N=2
else
    N=10000000 NEW=500000 EVERY=20 REPS1=5 REPS5=2 REPS5B=1 LIMIT=870
    SMALL2=10000 REPS2=100
    N3SMALL=100000 SLICE3=10000 REPS3=5
    DAYS4=30 PERDAY4=50000 REPS4=3
    SCHED_N=1000 SCHED_SECS=60 LAT_N=10
fi

WORK=$BENCH/work
mkdir -p "$WORK"
RAW=$WORK/raw.tsv          # bench, variant, repetition, value, unit
META=$WORK/meta.tsv        # key, value
NOTES=$WORK/notes.tsv      # bench, free text
LOG=$WORK/run.log
: >"$RAW"
: >"$META"
: >"$NOTES"
: >"$LOG"
# figures of an earlier run must not reach this run's report
rm -f "$WORK"/explain-*.txt "$WORK"/pgss-*.txt
if ((QUICK)); then OUT=$WORK/RESULTS-quick.md; else OUT=$BENCH/RESULTS.md; fi
T_START=$(date +%s)

meta() { printf '%s\t%s\n' "$1" "$2" >>"$META"; }
note() { printf '%s\t%s\n' "$1" "$2" >>"$NOTES"; hwm_log "$1: $2"; }
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RAW"; }

# psql with the benchmark's session defaults; stderr (NOTICEs) to the log.
q() { hwm_psql -q -At "$@" 2>>"$LOG"; }

# timed: run the SQL on stdin in one session.  Each measured item starts
# with `\echo MARK name`; statements after `\timing on` are timed, and the
# output is one line per item: name and the sum of its statements' times (ms,
# as psql's \timing measures them: the client's view, round trip included).
timed() {
    hwm_psql -q -f - 2>>"$LOG" | awk '
        /^MARK /  { if (n != "") printf "%s %.3f\n", n, s; n = $2; s = 0; next }
        /^Time: / { s += $2 }
        END       { if (n != "") printf "%s %.3f\n", n, s }'
}

# --- dependencies, build, cluster -----------------------------------------
hwm_log "benchmark: $COMMAND (log: $LOG)"
hwm_install_deps
hwm_build_install >>"$LOG" 2>&1

# Settings for a 2-core, 24 GiB machine.  The benchmark creates its
# pipelines as the superuser postgres, which hwm refuses by default
# (hwm.allow_superuser_pipelines).  pg_stat_statements is loaded for the
# WAL and buffer figures of benchmark 3 only: it tracks nothing unless a
# session sets pg_stat_statements.track = all.  wal_level = minimal makes the
# resets between repetitions (TRUNCATE + INSERT of 10M rows) skip the WAL;
# the timed statements write WAL as usual.  autovacuum is off so that it
# never runs during a measurement: every repetition starts after an
# explicit VACUUM (ANALYZE) and CHECKPOINT instead.  JIT is off because it
# adds a compile time that varies from run to run.
SETTINGS=(
    "shared_buffers = '6GB'"
    "effective_cache_size = '16GB'"
    "work_mem = '64MB'"
    "maintenance_work_mem = '1GB'"
    "max_wal_size = '32GB'"
    "min_wal_size = '2GB'"
    "checkpoint_timeout = '1h'"
    "wal_level = 'minimal'"
    "max_wal_senders = 0"
    "autovacuum = off"
    "jit = off"
    "random_page_cost = 1.1"
    "effective_io_concurrency = 200"
    "track_io_timing = on"
    "max_parallel_workers_per_gather = 2"
    "hwm.database = 'bench'"
    "hwm.allow_superuser_pipelines = on"
    "shared_preload_libraries = 'hwm,pg_stat_statements'"
    "pg_stat_statements.track = 'none'"
)
hwm_start_cluster >>"$LOG" 2>&1
printf '%s\n' "" "# bench/run.sh" "${SETTINGS[@]}" |
    hwm_as_postgres tee -a "$HWM_CLUSTER_DIR/data/postgresql.conf" >/dev/null
hwm_as_postgres "$PGBIN/pg_ctl" -D "$HWM_CLUSTER_DIR/data" -l "$HWM_CLUSTER_DIR/server.log" \
    -m fast -w -t 120 restart >>"$LOG" 2>&1
hwm_on_exit "cp '$HWM_CLUSTER_DIR/server.log' '$WORK/server.log' 2>/dev/null"
for s in "${SETTINGS[@]}"; do meta setting "$s"; done

meta command "$COMMAND"
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta nproc "$(nproc)"
meta memory "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
meta cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
meta kernel "$(uname -r)"
meta postgres "$(q -c 'SELECT version()')"
meta hwm_commit "$(git -C "$BENCH/.." rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$BENCH/.." diff --quiet HEAD -- src hwm--1.0.sql 2>/dev/null || echo ' (with local changes)')"
meta quick "$QUICK"
meta load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
meta sched_n "$SCHED_N"

WM0='2020-12-31 00:00:00+00'   # below every slice row, above every old row
hwm_log "building the data (n=$N)"
t0=$(date +%s)
q -c "CREATE DATABASE b1tmpl" >>"$LOG"
export PGDATABASE=b1tmpl
q -f - <"$BENCH/sql/data1.sql" >>"$LOG"
# the source and the target are generated in parallel (two cores)
q -v n="$N" -v new="$NEW" -v every="$EVERY" -f - <"$BENCH/sql/data1-src.sql" >>"$LOG" &
pid_src=$!
q -v n="$N" -f - <"$BENCH/sql/data1-tgt.sql" >>"$LOG"
wait "$pid_src"
q -v wm0="$WM0" -f - <"$BENCH/sql/data1-end.sql" >>"$LOG"
meta size_b1tmpl "$(q -c "SELECT pg_size_pretty(pg_database_size('b1tmpl'))")"
# benchmarks 2, 3, 4 and 6 run in the database bench, a copy of b1tmpl
PGDATABASE=postgres q -c "CREATE DATABASE bench TEMPLATE b1tmpl STRATEGY FILE_COPY" >>"$LOG"
export PGDATABASE=bench
q -v small2="$SMALL2" -v n3small="$N3SMALL" -v days4="$DAYS4" -v perday4="$PERDAY4" \
    -f - <"$BENCH/sql/data2.sql" >>"$LOG"
meta data_build_seconds "$(($(date +%s) - t0))"
meta phase_build_done_seconds "$(($(date +%s) - T_START))"
meta size_bench "$(q -c "SELECT pg_size_pretty(pg_database_size('bench'))")"

COLS="id, updated_at, customer_id, amount, status, note"
SETS="updated_at = EXCLUDED.updated_at, customer_id = EXCLUDED.customer_id, amount = EXCLUDED.amount, status = EXCLUDED.status, note = EXCLUDED.note"
DIFF="(t.updated_at, t.customer_id, t.amount, t.status, t.note) IS DISTINCT FROM (EXCLUDED.updated_at, EXCLUDED.customer_id, EXCLUDED.amount, EXCLUDED.status, EXCLUDED.note)"

# The hand-written incremental load of target from source: read the
# watermark, INSERT ... SELECT the rows above it ON CONFLICT DO UPDATE (only
# rows that changed, like hwm), store the new watermark; one transaction.
# The watermark goes in as a literal so the planner sees its value, as it
# sees hwm's $1.
bare_load_sql() {
    local name=$1 src=$2 tgt=$3
    cat <<SQL
BEGIN;
SELECT wm AS old_wm FROM bench.bare_wm WHERE pipeline = '$name' \gset
INSERT INTO $tgt AS t ($COLS)
SELECT s.id, s.updated_at, s.customer_id, s.amount, s.status, s.note
  FROM $src AS s WHERE s.updated_at > :'old_wm'
    ON CONFLICT (id) DO UPDATE SET $SETS WHERE $DIFF;
UPDATE bench.bare_wm SET wm = (SELECT max(updated_at) FROM $src) WHERE pipeline = '$name';
COMMIT;
SQL
}


# =============================================================================
# 2: a run with nothing new, sources of 10k and 10M rows
# =============================================================================
hwm_log "benchmark 2: nothing new, $REPS2 repetitions"
PGDATABASE=postgres q -c "DROP DATABASE IF EXISTS b1" >>"$LOG"
wm_small=$(q -c "SELECT max(updated_at) FROM bench.src2small")
wm_big=$(q -c "SELECT max(updated_at) FROM bench.src")
meta rows_src2small "$(q -c 'SELECT count(*) FROM bench.src2small')"
meta rows_src "$(q -c 'SELECT count(*) FROM bench.src')"
q >>"$LOG" <<SQL
SELECT hwm.create_pipeline('p2small', 'bench.src2small', 'bench.tgt2small', '{id}', 'updated_at', initial_watermark => '$wm_small');
SELECT hwm.create_pipeline('p2big', 'bench.src', 'bench.tgt2big', '{id}', 'updated_at', initial_watermark => '$wm_big');
INSERT INTO bench.bare_wm VALUES ('p2small', '$wm_small'), ('p2big', '$wm_big');
CHECKPOINT;
SQL
{
    echo "SET client_min_messages = warning;"
    for i in 1 2 3; do
        echo "SELECT * FROM hwm.run('p2small');"
        echo "SELECT * FROM hwm.run('p2big');"
        bare_load_sql p2small bench.src2small bench.tgt2small
        bare_load_sql p2big bench.src bench.tgt2big
    done
    echo '\timing on'
    for ((i = 1; i <= REPS2; i++)); do
        items=("hwm small" "hwm big" "bare small" "bare big")
        ((i % 2 == 0)) && items=("bare big" "bare small" "hwm big" "hwm small")
        for it in "${items[@]}"; do
            read -r kind size <<<"$it"
            echo "\\echo MARK ${kind}_$size"
            if [[ $kind == hwm ]]; then
                echo "SELECT * FROM hwm.run('p2$size');"
            elif [[ $size == small ]]; then
                bare_load_sql p2small bench.src2small bench.tgt2small
            else
                bare_load_sql p2big bench.src bench.tgt2big
            fi
        done
    done
} | timed | awk '{c[$1]++; print $1, c[$1], $2}' |
    while read -r v r ms; do record 2 "$v" "$r" "$ms" ms; done
q -c "SELECT count(*) FROM bench.tgt2small" | { read -r c; [[ $c == 0 ]] || note 2 "tgt2small has $c rows: something was loaded"; }

meta phase_2_done_seconds "$(($(date +%s) - T_START))"

# =============================================================================
# 1c: the change test alone, the one per-row difference between hwm's upsert
# and the bare one
# =============================================================================
# The conflicting rows of benchmark 1's slice (stored row and incoming row
# side by side, 500k pairs), scanned with each change test in the WHERE
# clause; the scan without a test is the baseline.  Short runs, interleaved,
# so that the machine's drift (which is larger than these differences in a
# 15 s load) hits every variant alike.
hwm_log "benchmark 1c: the change test alone"
q >>"$LOG" <<SQL
SET max_parallel_workers_per_gather = 0;
CREATE UNLOGGED TABLE bench.pairs AS
SELECT t.updated_at AS a1, t.customer_id AS a2, t.amount AS a3, t.status AS a4, t.note AS a5,
       s.updated_at AS b1, s.customer_id AS b2, s.amount AS b3, s.status AS b4, s.note AS b5
  FROM bench.src AS s JOIN bench.tgt AS t USING (id) WHERE s.updated_at > '$WM0';
VACUUM (ANALYZE) bench.pairs;
SQL
meta rows_pairs "$(q -c 'SELECT count(*) FROM bench.pairs')"
declare -A TEST1C=(
    [none]="a1 IS NOT NULL"
    [bare]="(a1, a2, a3, a4, a5) IS DISTINCT FROM (b1, b2, b3, b4, b5)"
    [hwm]="hwm.changed(a1, a2, a3, a4, a5, b1, b2, b3, b4, b5)"
    [record_image_ne]="pg_catalog.record_image_ne(ROW(a1, a2, a3, a4, a5), ROW(b1, b2, b3, b4, b5))"
)
{
    echo "SET max_parallel_workers_per_gather = 0;"
    echo "SELECT count(*) FROM bench.pairs;"
    echo '\timing on'
    for ((i = 1; i <= 7; i++)); do
        items=(none bare hwm record_image_ne)
        ((i % 2 == 0)) && items=(record_image_ne hwm bare none)
        for v in "${items[@]}"; do
            echo "\\echo MARK $v"
            echo "SELECT count(*) FROM bench.pairs WHERE ${TEST1C[$v]};"
        done
    done
} | timed | awk '{c[$1]++; print $1, c[$1], $2}' |
    while read -r v r ms; do record 1c "$v" "$r" "$ms" ms; done
q -c "DROP TABLE bench.pairs" >>"$LOG"
meta phase_1c_done_seconds "$(($(date +%s) - T_START))"
# =============================================================================
# 3: a 10k-row slice into targets of 100k and 10M rows
# =============================================================================
# Two shapes of slice, both half updates and half new rows:
#   spread  the updates are spread evenly over the whole target (every
#           (target rows / 5,000)-th id): on the big target each lands on a
#           different heap page and primary-key leaf page;
#   newest  the updates hit the newest rows of the target, the rows that the
#           previous slice inserted (the usual pattern of late updates).
# Each run also records the WAL it wrote (pg_current_wal_insert_lsn() before
# and after, in the same session) and, through pg_stat_statements (tracking
# nested statements in that session only), the upsert statement's buffers
# and WAL: full-page images (wal_fpi) are what the spread slice is suspected
# of paying for on the big target after the CHECKPOINT before every run.
hwm_log "benchmark 3: slice of $SLICE3 rows, targets $N3SMALL and $N rows, $REPS3 repetitions"
WM3='2021-12-31 00:00:00+00'
q >>"$LOG" <<SQL
CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public;
SELECT hwm.create_pipeline('p3small', 'bench.src3small', 'bench.tgt3small', '{id}', 'updated_at', initial_watermark => '$WM3');
SELECT hwm.create_pipeline('p3big', 'bench.src3big', 'bench.tgt', '{id}', 'updated_at', initial_watermark => '$WM3');
INSERT INTO bench.bare_wm VALUES ('p3small', '$WM3'), ('p3big', '$WM3');
SQL
k=0
declare -A LASTK=()
half=$((SLICE3 / 2))
# slice3 KIND SIZE SHAPE TIMED: append slice k to the size's source, load it, record
slice3() {
    local kind=$1 size=$2 shape=$3 rec=$4 tsize tgt upd day sql out ms name
    if [[ $size == small ]]; then tsize=$N3SMALL; tgt=bench.tgt3small; else tsize=$N; tgt=bench.tgt; fi
    if [[ $shape == spread ]]; then
        upd="g.j * ($tsize / $half) + $k + 1"
    else
        upd="50000000 + ${LASTK[$size]} * $SLICE3 + g.j"
    fi
    day="'2022-01-01'::timestamptz + $k * interval '1 day'"
    q >>"$LOG" <<SQL
INSERT INTO bench.src3$size
SELECT r.* FROM generate_series(0, $half - 1) AS g(j),
       LATERAL (SELECT * FROM bench.row_of($upd, $k + 2, $day + 2 * g.j * interval '1 ms')
                UNION ALL
                SELECT * FROM bench.row_of(50000000 + $k * $SLICE3 + g.j, $k + 2, $day + (2 * g.j + 1) * interval '1 ms')) AS r;
ANALYZE bench.src3$size;
SELECT hwm.set_watermark('p3$size', ($day - interval '1 second')::text);
UPDATE bench.bare_wm SET wm = $day - interval '1 second' WHERE pipeline = 'p3$size';
CHECKPOINT;
SQL
    if [[ $kind == hwm ]]; then
        sql="SELECT * FROM hwm.run('p3$size');"
    else
        sql=$(bare_load_sql "p3$size" "bench.src3$size" "$tgt")
    fi
    out=$(printf '%s\n' "SET client_min_messages = warning;" "SET pg_stat_statements.track = 'all';" \
              "SELECT public.pg_stat_statements_reset() \\g /dev/null" \
              "SELECT pg_current_wal_insert_lsn() AS lsn0 \\gset" '\timing on' "$sql" '\timing off' \
              "SELECT 'STATS', pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'lsn0'), coalesce(sum(wal_bytes), 0), coalesce(sum(wal_fpi), 0),
                      coalesce(sum(wal_records), 0), coalesce(sum(shared_blks_hit), 0), coalesce(sum(shared_blks_read), 0),
                      coalesce(sum(shared_blks_dirtied), 0), coalesce(sum(shared_blks_written), 0)
                 FROM public.pg_stat_statements
                WHERE query LIKE 'INSERT INTO $tgt AS t %' AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database());" |
          hwm_psql -q -At -f - 2>>"$LOG")
    LASTK[$size]=$k
    k=$((k + 1))
    ((rec)) || return 0
    name=${kind}_$size
    [[ $shape == newest ]] && name+=_newest
    ms=$(awk '/^Time: / { s += $2 } END { printf "%.3f", s }' <<<"$out")
    record 3 "$name" "$rep" "$ms" ms
    read -r wal uwal fpi recs hit rd dirt wr < <(awk -F'|' '$1 == "STATS" { print $2, $3, $4, $5, $6, $7, $8, $9 }' <<<"$out")
    record 3 "${name}_wal" "$rep" "$wal" bytes
    record 3 "${name}_upsert_wal" "$rep" "$uwal" bytes
    record 3 "${name}_fpi" "$rep" "$fpi" pages
    record 3 "${name}_walrec" "$rep" "$recs" records
    record 3 "${name}_hit" "$rep" "$hit" pages
    record 3 "${name}_read" "$rep" "$rd" pages
    record 3 "${name}_dirtied" "$rep" "$dirt" pages
    record 3 "${name}_written" "$rep" "$wr" pages
}
# untimed warm-up: one spread slice per target, which also gives the first
# newest slice its previous slice
rep=0
slice3 bare small spread 0
slice3 bare big spread 0
for ((rep = 1; rep <= REPS3; rep++)); do
    items=("hwm small spread" "bare small spread" "hwm big spread" "bare big spread"
           "hwm small newest" "bare small newest" "hwm big newest" "bare big newest")
    ((rep % 2 == 0)) && items=("bare big newest" "hwm big newest" "bare small newest" "hwm small newest"
                               "bare big spread" "hwm big spread" "bare small spread" "hwm small spread")
    for it in "${items[@]}"; do
        read -r kind size shape <<<"$it"
        slice3 "$kind" "$size" "$shape" 1
    done
done
meta rows_tgt3small "$(q -c 'SELECT count(*) FROM bench.tgt3small')"
meta rows_tgt_bench3 "$(q -c 'SELECT count(*) FROM bench.tgt')"
note 3 "last slice: $(q -c "SELECT rows_upserted FROM hwm.runs WHERE pipeline = 'p3big' AND kind = 'load' ORDER BY run_id DESC LIMIT 1") rows upserted by the last hwm run into the big target"
meta phase_3_done_seconds "$(($(date +%s) - T_START))"
# =============================================================================
# 4: overwrite one day of a 30-day table
# =============================================================================
hwm_log "benchmark 4: overwrite one day of $DAYS4 x $PERDAY4 rows, $REPS4 repetitions"
D="2020-01-15"
q >>"$LOG" <<SQL
SELECT hwm.create_pipeline('p4', 'bench.src4', 'bench.tgt4', '{id}', 'updated_at', partition_column => 'day');
SELECT hwm.create_pipeline('p4p', 'bench.src4', 'bench.tgt4p', '{id,day}', 'updated_at', partition_column => 'day');
SQL
part_id() {
    q -c "SELECT c.oid || '/' || c.relfilenode FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'bench.tgt4p'::regclass AND pg_get_expr(c.relpartbound, c.oid) LIKE '%$D%'"
}
reset4() {
    q >>"$LOG" <<SQL
BEGIN;
DELETE FROM $1 WHERE day = '$D';
INSERT INTO $1 SELECT * FROM bench.tgt4_day15;
COMMIT;
VACUUM (ANALYZE) $1;
VACUUM (ANALYZE) bench.src4;
CHECKPOINT;
SQL
}
exchange_seen=0
for ((rep = 1; rep <= REPS4; rep++)); do
    variants=(hwm_plain bare_plain hwm_partitioned bare_partitioned bare_exchange)
    ((rep % 2 == 0)) && variants=(bare_exchange bare_partitioned hwm_partitioned bare_plain hwm_plain)
    for v in "${variants[@]}"; do
        if [[ $v == *plain ]]; then tgt=bench.tgt4; else tgt=bench.tgt4p; fi
        reset4 "$tgt"
        before=$(part_id)
        case $v in
            hwm_plain) sql="SELECT * FROM hwm.overwrite('p4', '$D', '$D');" ;;
            hwm_partitioned) sql="SELECT * FROM hwm.overwrite('p4p', '$D', '$D');" ;;
            bare_plain | bare_partitioned)
                sql="BEGIN;
DELETE FROM $tgt WHERE day = '$D';
INSERT INTO $tgt SELECT * FROM bench.src4 WHERE day = '$D';
COMMIT;" ;;
            bare_exchange)
                sql="BEGIN;
CREATE TABLE bench.tgt4p_new (LIKE bench.tgt4p);
INSERT INTO bench.tgt4p_new SELECT * FROM bench.src4 WHERE day = '$D';
ALTER TABLE bench.tgt4p_new ADD PRIMARY KEY (id, day),
    ADD CONSTRAINT tgt4p_new_day CHECK (day >= '$D' AND day < date '$D' + 1);
ALTER TABLE bench.tgt4p DETACH PARTITION bench.tgt4p_${D//-/};
DROP TABLE bench.tgt4p_${D//-/};
ALTER TABLE bench.tgt4p ATTACH PARTITION bench.tgt4p_new FOR VALUES FROM ('$D') TO (date '$D' + 1);
ALTER TABLE bench.tgt4p_new DROP CONSTRAINT tgt4p_new_day;
ALTER TABLE bench.tgt4p_new RENAME TO tgt4p_${D//-/};
COMMIT;" ;;
        esac
        ms=$(printf '%s\n' "SET client_min_messages = warning;" "SELECT 1;" '\timing on' '\echo MARK x' "$sql" | timed | awk '{print $2}')
        record 4 "$v" "$rep" "$ms" ms
        if [[ $v == *plain ]]; then rel=bench.tgt4; else rel=bench.tgt4p_${D//-/}; fi
        record 4 "${v}_dead" "$rep" "$(q -c "SELECT dead_tuple_count FROM pgstattuple('$rel')")" tuples
        if [[ $v == hwm_partitioned && $(part_id) != "$before" ]]; then exchange_seen=1; fi
        if [[ $v == hwm_* ]]; then
            # how hwm rewrote the day: exchange (whole partition) or diff
            if [[ $v == hwm_plain ]]; then pl=p4; else pl=p4p; fi
            method=$(q -c "SELECT coalesce(method, 'NULL') FROM hwm.runs WHERE pipeline = '$pl' ORDER BY run_id DESC LIMIT 1" | head -1)
            meta "method4_$v" "$method"
        fi
        if ((rep == 1)); then
            note check "bench 4 $v: $(q -c "SELECT count(*) || ' rows, sum(amount) ' || sum(amount) FROM $tgt WHERE day = '$D'")"
        fi
    done
done
meta rows_tgt4 "$(q -c 'SELECT count(*) FROM bench.tgt4')"
meta exchange_seen "$exchange_seen"

meta phase_4_done_seconds "$(($(date +%s) - T_START))"
# =============================================================================
# 6: scheduler overhead
# =============================================================================
has_sched=$(q -c "SELECT count(*) FROM pg_proc WHERE proname = 'schedule' AND pronamespace = 'hwm'::regnamespace")
if ((has_sched == 0)); then
    note 6 "pending: no scheduler in this build (no function hwm.schedule)"
else
    hwm_log "benchmark 6: $SCHED_N idle scheduled pipelines, ${SCHED_SECS}s"
    bench6() {
        # where hwm.schedule takes a start time, the first runs are an hour
        # away: the launcher has nothing to do from the start
        local start_at=""
        if (($(q -c "SELECT max(pronargs) FROM pg_proc WHERE proname = 'schedule' AND pronamespace = 'hwm'::regnamespace") >= 3)); then
            start_at=", now() + interval '1 hour'"
        fi
        q >>"$LOG" <<SQL
SELECT hwm.create_pipeline(format('idle%s', i), 'bench.src2small', 'bench.tgt2small', '{id}', 'updated_at',
                           initial_watermark => '$wm_small')
  FROM generate_series(1, $SCHED_N) AS i;
SELECT hwm.schedule(format('idle%s', i), interval '1 hour'$start_at) FROM generate_series(1, $SCHED_N) AS i;
SQL
        # wait (at most 5 minutes) until every pipeline's first run is done
        # and none is due during the measurement
        local i due
        for ((i = 0; i < 600; i++)); do
            due=$(q -c "SELECT count(*) FROM hwm.state WHERE pipeline LIKE 'idle%'
                           AND (next_run_at IS NULL OR next_run_at < now() + interval '$((SCHED_SECS + 30)) seconds')")
            ((due == 0)) && break
            sleep 0.5
        done
        note 6 "after $((i / 2)) s, $due of $SCHED_N pipelines still due soon"
        # the launcher starts (again) once the database hwm.database exists,
        # after the server's restart interval of 10 s: wait for it
        local pids
        for ((i = 0; i < 120; i++)); do
            pids=$(q -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE backend_type ILIKE '%hwm%'")
            [[ -n $pids ]] && break
            sleep 0.5
        done
        [[ -n $pids ]] || { note 6 "no hwm background worker in pg_stat_activity"; return 0; }
        note 6 "hwm workers: $(q -c "SELECT string_agg(pid || ' ' || backend_type, ', ') FROM pg_stat_activity WHERE backend_type ILIKE '%hwm%'")"
        cpu_ticks() { local p s=0; for p in $pids; do
            [[ -r /proc/$p/stat ]] && s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $s; }
        local c0 c1 t0 t1
        c0=$(cpu_ticks); t0=$(date +%s%N)
        sleep "$SCHED_SECS"
        c1=$(cpu_ticks); t1=$(date +%s%N)
        record 6 idle_cpu_seconds 1 "$(awk -v c=$((c1 - c0)) -v h="$(getconf CLK_TCK)" 'BEGIN{printf "%.3f", c / h}')" "s CPU"
        record 6 idle_cpu_percent 1 "$(awk -v c=$((c1 - c0)) -v h="$(getconf CLK_TCK)" -v t=$((t1 - t0)) 'BEGIN{printf "%.4f", 100 * c / h / (t / 1e9)}')" "% of one core"

        # delay from due time to run start: a pipeline due every 2 seconds;
        # every due time it shows in hwm.state.next_run_at is collected
        q >>"$LOG" <<SQL
SELECT hwm.create_pipeline('lat', 'bench.src2small', 'bench.tgt2small', '{id}', 'updated_at', initial_watermark => '$wm_small');
SELECT hwm.schedule('lat', interval '2 seconds');
SQL
        local dues=() last="" d
        for ((i = 0; i < (LAT_N + 3) * 40 && ${#dues[@]} <= LAT_N; i++)); do
            d=$(q -c "SELECT next_run_at FROM hwm.state WHERE pipeline = 'lat'")
            if [[ -n $d && $d != "$last" ]]; then dues+=("$d"); last=$d; fi
            sleep 0.05
        done
        local list
        list=$(printf "'%s'," "${dues[@]}")
        q -c "SELECT round(extract(epoch FROM (SELECT min(r.started_at) FROM hwm.runs AS r
                                                  WHERE r.pipeline = 'lat' AND r.started_at >= d) - d) * 1000, 1)
                FROM unnest(ARRAY[${list%,}]::timestamptz[]) AS d" |
            { i=0; while read -r ms; do
                  # the last due time may not have come yet: no run, no figure
                  if [[ -n $ms ]]; then i=$((i + 1)); record 6 due_to_start_delay "$i" "$ms" ms; fi
              done; }
    }
    if ! (set -e; bench6); then note 6 "the scheduler benchmark failed; see bench/work/run.log"; fi
    # nothing scheduled any more, so that the launcher stays idle and writes
    # nothing during benchmarks 1 and 5 (which read the WAL position)
    q -c "SELECT count(hwm.unschedule(pipeline)) FROM hwm.state WHERE schedule IS NOT NULL" >>"$LOG"
fi
meta phase_6_done_seconds "$(($(date +%s) - T_START))"

# =============================================================================
# 1 and 5: a 1M-row slice (half updates, half new rows) into a 10M-row target
# =============================================================================
# Every run of benchmarks 1 and 5 starts in b1, a fresh file copy of the
# template b1tmpl: the same rows in the same physical order, the same
# statistics, no dead tuples, the watermarks before the slice; then the
# tables and indexes are read into shared buffers (pg_prewarm) and a
# CHECKPOINT taken, so that every run starts warm and with nothing dirty.
reset_tgt() {
    local tmpl=${1:-b1tmpl}
    PGDATABASE=postgres q >>"$LOG" <<SQL
DROP DATABASE IF EXISTS b1;
CREATE DATABASE b1 TEMPLATE $tmpl STRATEGY FILE_COPY;
SQL
    PGDATABASE=b1 q >>"$LOG" <<SQL
SELECT pg_prewarm(c.oid) FROM pg_class AS c
 WHERE c.relnamespace = 'bench'::regnamespace AND c.relkind IN ('r', 'i');
CHECKPOINT;
SQL
}

# The state every contender must leave: counted once per contender.
tgt_check() {
    PGDATABASE=b1 q -c "SELECT count(*) || ' rows, ' || count(*) FILTER (WHERE status = 'updated') || ' updated, sum(amount) ' || sum(amount) FROM bench.tgt"
}

# --- dbt: a venv with dbt-core and dbt-postgres, and a profile for the cluster
VENV=$WORK/venv
DBT_OK=0
DBT_PROFILES=$WORK/dbt
mkdir -p "$DBT_PROFILES"
setup_dbt() {
    # dbt-core >= 1.10 depends on dbt-core-experimental-parser, whose build
    # downloads a wheel from github.com; 1.9 installs from PyPI alone.
    local spec=("dbt-core~=1.9.0" "dbt-postgres~=1.9.0")
    if [[ ! -x $VENV/bin/dbt ]]; then
        if ! python3 -m venv "$VENV" >>"$LOG" 2>&1; then
            hwm_apt_install python3 python3-venv
            rm -rf "$VENV"
            python3 -m venv "$VENV"
        fi
        "$VENV/bin/pip" install -q --disable-pip-version-check "${spec[@]}" >>"$WORK/pip.log" 2>&1 || return 1
    fi
    cat >"$DBT_PROFILES/profiles.yml" <<YML
hwm_bench:
  target: bench
  outputs:
    bench:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: postgres
      password: unused
      dbname: b1
      schema: bench
      threads: 1
YML
    dbt_cmd parse >>"$LOG" 2>&1
}
dbt_cmd() {
    DBT_SEND_ANONYMOUS_USAGE_STATS=false "$VENV/bin/dbt" --no-use-colors "$@" \
        --project-dir "$BENCH/dbt" --profiles-dir "$DBT_PROFILES" \
        --target-path "$WORK/dbt/target" --log-path "$WORK/dbt/logs"
}
if setup_dbt; then
    DBT_OK=1
    meta dbt "$("$VENV/bin/python" -c 'import importlib.metadata as m; print("dbt-core", m.version("dbt-core") + ", dbt-postgres", m.version("dbt-postgres"))')"
else
    note 5 "dbt could not be installed or run here: $(tail -n 3 "$WORK/pip.log" "$LOG" 2>/dev/null | tr '\n' ' ')"
fi

# run_contender NAME REP [5b]: reset, then one timed incremental load.
# With 5b, the load starts from b5tmpl (half of the slice already loaded,
# see below), is recorded under benchmark 5 as NAME_5b, and dbt runs with
# a lookback window.
run_contender() {
    local name=$1 rep=$2 v5b=${3:-} ms t0 t1 tmpl=b1tmpl suffix="" vars b=1
    if [[ -n $v5b ]]; then tmpl=b5tmpl suffix=_5b b=5; fi
    reset_tgt "$tmpl"
    # what the load writes and touches: WAL between two readings of the
    # insert position (nothing else runs meanwhile), and pg_stat_statements
    # of every statement of the load (tracked in the load's session only)
    local lsn0
    lsn0=$(PGDATABASE=b1 q -c "SELECT public.pg_stat_statements_reset()" -c "SELECT pg_current_wal_insert_lsn()" | tail -1)
    case $name in
        hwm)
            ms=$({ echo "SET pg_stat_statements.track = 'all';"; echo '\timing on'; echo '\echo MARK hwm'
                   echo "SELECT * FROM hwm.run('p1');"; } | PGDATABASE=b1 timed | awk '{print $2}')
            record "$b" "hwm$suffix" "$rep" "$ms" ms ;;
        bare)
            ms=$({ echo "SET pg_stat_statements.track = 'all';"; echo '\timing on'; echo '\echo MARK bare'
                   bare_load_sql p1 bench.src bench.tgt; } | PGDATABASE=b1 timed | awk '{print $2}')
            record "$b" "bare$suffix" "$rep" "$ms" ms ;;
        dbt_merge | dbt_delete_insert)
            local strategy=${name#dbt_}
            [[ $strategy == delete_insert ]] && strategy=delete+insert
            vars="{strategy: '$strategy'}"
            [[ -n $v5b ]] && vars="{strategy: '$strategy', lookback: '1 day'}"
            t0=$(date +%s%N)
            PGOPTIONS="-c pg_stat_statements.track=all" dbt_cmd run --select tgt --vars "$vars" >>"$LOG" 2>&1
            t1=$(date +%s%N)
            record 5 "${name}${suffix}_wall" "$rep" "$(((t1 - t0) / 1000000))" ms
            ms=$("$VENV/bin/python" -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(round(sum(x["execution_time"] for x in r) * 1000, 3))' "$WORK/dbt/target/run_results.json")
            record 5 "$name$suffix" "$rep" "$ms" ms ;;
    esac
    local st
    st=$(PGDATABASE=b1 q -F ' ' -c "
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0'), sum(wal_fpi), sum(wal_records),
       sum(shared_blks_hit), sum(shared_blks_read), sum(shared_blks_dirtied), sum(shared_blks_written),
       sum(temp_blks_written)
  FROM public.pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'b1')
   AND NOT (toplevel AND query LIKE '%hwm.run(%')")
    local wal fpi recs hit rd dirt wr tmp
    read -r wal fpi recs hit rd dirt wr tmp <<<"$st"
    # the upsert's own execution time (the same statement for hwm and the
    # bare SQL), and for hwm the whole call: the difference is what hwm
    # does around the statement
    local ins top
    read -r ins top <<<"$(PGDATABASE=b1 q -F ' ' -c "
SELECT coalesce(round(sum(total_exec_time) FILTER (WHERE query LIKE 'INSERT INTO bench.tgt AS t %')::numeric, 3)::text, '-'),
       coalesce(round(sum(total_exec_time) FILTER (WHERE toplevel AND query LIKE '%hwm.run(%')::numeric, 3)::text, '-')
  FROM public.pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'b1')")"
    [[ $ins != - ]] && record "$b" "${name}${suffix}_insert" "$rep" "$ins" ms
    [[ $top != - && $ins != - ]] && record "$b" "${name}${suffix}_around" "$rep" "$(awk -v a="$top" -v b="$ins" 'BEGIN{printf "%.3f", a - b}')" ms
    record s "$name${suffix}_wal" "$rep" "$wal" bytes
    record s "$name${suffix}_fpi" "$rep" "$fpi" pages
    record s "$name${suffix}_walrec" "$rep" "$recs" records
    record s "$name${suffix}_hit" "$rep" "$hit" pages
    record s "$name${suffix}_read" "$rep" "$rd" pages
    record s "$name${suffix}_dirtied" "$rep" "$dirt" pages
    record s "$name${suffix}_written" "$rep" "$wr" pages
    record s "$name${suffix}_temp" "$rep" "$tmp" pages
    if ((rep == 1)); then
        PGDATABASE=b1 hwm_psql -q -c "SELECT toplevel, calls, wal_records, wal_fpi, wal_bytes, shared_blks_hit, shared_blks_dirtied, left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS query
  FROM public.pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'b1')
 ORDER BY wal_records DESC, shared_blks_hit DESC LIMIT 12" >"$WORK/pgss-$name$suffix.txt" 2>&1
        # what the load wrote: row versions (pg_stat_user_tables of the
        # fresh copy b1 counts only this load) and the final state
        note check "bench.tgt after $name$suffix: $(tgt_check); this load: $(PGDATABASE=b1 q -c "SELECT n_tup_ins || ' inserted, ' || n_tup_upd || ' updated (' || n_tup_hot_upd || ' HOT), ' || n_tup_del || ' deleted row versions' FROM pg_stat_user_tables WHERE relid = 'bench.tgt'::regclass")"
    fi
    hwm_log "1/5 rep $rep $name$suffix: $ms ms"
}

# 5b: the same 1M-row slice, but half of it re-arrives unchanged.  b5tmpl
# is b1tmpl with the first half of the slice (in updated_at order) already
# upserted into bench.tgt, vacuumed and analyzed, as a previous load would
# have left it; hwm's watermark (and dbt's lookback window of one day below
# the target's newest row) still reads the whole slice, as a lookback window
# or an upstream re-send does.  So of the slice's 1M rows, 500k are exactly
# what the target holds, 250k are updates and 250k new rows.
build_5b() {
    hwm_log "benchmark 5b: building b5tmpl (half of the slice already loaded)"
    PGDATABASE=postgres q >>"$LOG" <<SQL
DROP DATABASE IF EXISTS b5tmpl;
CREATE DATABASE b5tmpl TEMPLATE b1tmpl STRATEGY FILE_COPY;
SQL
    PGDATABASE=b5tmpl q >>"$LOG" <<SQL
SELECT updated_at AS tmid FROM bench.src WHERE updated_at > '$WM0'
 ORDER BY updated_at OFFSET (SELECT count(*) / 2 FROM bench.src WHERE updated_at > '$WM0') - 1 LIMIT 1 \\gset
INSERT INTO bench.tgt AS t ($COLS)
SELECT s.id, s.updated_at, s.customer_id, s.amount, s.status, s.note
  FROM bench.src AS s WHERE s.updated_at > '$WM0' AND s.updated_at <= :'tmid'
    ON CONFLICT (id) DO UPDATE SET $SETS WHERE $DIFF;
VACUUM (ANALYZE) bench.tgt;
CHECKPOINT;
SQL
    meta rows_5b_slice "$(PGDATABASE=b5tmpl q -c "SELECT count(*) FROM bench.src WHERE updated_at > '$WM0'")"
    meta rows_5b_preloaded "$(PGDATABASE=b5tmpl q -c "SELECT count(*) FROM bench.tgt AS t JOIN bench.src AS s USING (id) WHERE s.updated_at > '$WM0' AND (t.*) = (s.*)")"
}

# The plans: hwm.run's statements through auto_explain (nested statements),
# and the bare upsert through EXPLAIN; each after a reset, not timed.
plans() {
    reset_tgt
    PGDATABASE=b1 hwm_psql -q -At >"$WORK/explain-hwm.txt" 2>&1 <<'SQL'
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
SET client_min_messages = notice;
SELECT * FROM hwm.run('p1');
SQL
    reset_tgt
    { echo "EXPLAIN (ANALYZE, BUFFERS)"; bare_load_sql p1 bench.src bench.tgt | sed -n '/^INSERT/,/ON CONFLICT/p'; } |
        sed "s/:'old_wm'/'$WM0'/" | PGDATABASE=b1 hwm_psql -q -At >"$WORK/explain-bare.txt" 2>&1
}

# The loads, in order of importance, so that the time limit (see
# within_limit) cuts the least important: the first REPS5 repetitions of
# benchmark 1 each with its repetition of 5a (dbt), then one more of
# benchmark 1, then 5b, then the rest of benchmark 1, the plans last.
# Benchmark 1 gets the most repetitions because its goal (1.05) is within
# the machine's run-to-run spread; its two contenders run back to back, in
# alternating order, so that each pair shares the machine's state.
jobs=()
c5b=(hwm dbt_merge dbt_delete_insert)
rep_jobs() {
    local rep=$1
    if ((rep % 2)); then jobs+=("pair $rep hwm bare"); else jobs+=("pair $rep bare hwm"); fi
    if ((DBT_OK && rep <= REPS5)); then jobs+=("dbt_merge $rep" "dbt_delete_insert $rep"); fi
}
for ((rep = 1; rep <= REPS1; rep++)); do
    rep_jobs "$rep"
    if ((DBT_OK && rep == REPS5 + 1 && REPS5B > 0)); then
        jobs+=(build_5b)
        for ((r = 1; r <= REPS5B; r++)); do
            for ((i = 0; i < 3; i++)); do jobs+=("${c5b[$(((i + r - 1) % 3))]} $r 5b"); done
        done
    fi
done
jobs+=(plans)

# within_limit N: whether N more loads (each as long as the longest so far,
# reset included) still end within LIMIT seconds of the start of the run
LONGEST=0
within_limit() { (($(date +%s) - T_START + ${1:-1} * LONGEST <= LIMIT)); }

hwm_log "benchmarks 1, 5 and 5b: ${#jobs[@]} jobs, none started that would end after ${LIMIT}s"
# warm-up, not recorded: the first load after the build also creates the WAL
# segments that later runs recycle
reset_tgt
bare_load_sql p1 bench.src bench.tgt | PGDATABASE=b1 q >>"$LOG"
for job in "${jobs[@]}"; do
    read -r name rep v5b c2 <<<"$job"
    # the two contenders of benchmark 1 run as a pair, or not at all; the
    # plans are two loads too
    n=1
    [[ $name == pair || $name == plans ]] && n=2
    if ! within_limit "$n"; then
        note limit "not run, so that the whole run stays within $LIMIT s: $job"
        continue
    fi
    j0=$(date +%s)
    case $name in
        build_5b) build_5b ;;
        plans) plans ;;
        pair) run_contender "$v5b" "$rep"; run_contender "$c2" "$rep" ;;
        *) run_contender "$name" "$rep" $v5b ;;
    esac
    d=$((($(date +%s) - j0) / n))
    ((d > LONGEST)) && LONGEST=$d
done
PGDATABASE=postgres q -c "DROP DATABASE IF EXISTS b5tmpl" >>"$LOG"
meta phase_1_5_done_seconds "$(($(date +%s) - T_START))"

meta load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
meta total_seconds "$(($(date +%s) - T_START))"
hwm_log "writing $OUT"
python3 "$BENCH/report.py" "$WORK" "$BENCH/FINDINGS.md" >"$OUT"
hwm_log "done in $(($(date +%s) - T_START)) s"
