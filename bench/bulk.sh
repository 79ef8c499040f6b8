#!/usr/bin/env bash
# bench/bulk.sh: a big slice loaded without speculative insertion (issue 31,
# "new keys without speculative insertion"), one command from a fresh
# machine.  A target of N rows (keys 1..N, a primary key, five columns) and
# three slices of N rows each, every contender in the same run, ROUNDS
# rounds, the order of the contenders rotated every round:
#
#   new      every key of the slice is new (keys N+1..2N): a backlog
#   half     half the slice re-sent unchanged (keys N/2+1..N), half new
#   changed  half the slice changed (keys N/2+1..N, column b), half new
#   first    a first load: the empty target t0 gets a source of N rows
#            (contenders bare, ctas, upsert, hwm only; CASES=first)
#   halfnk   half, from a source without a unique index on the key: hwm
#            then looks for a key twice in the slice after its MERGE (a
#            GROUP BY of the slice's keys; CASES=halfnk)
#
# Contenders, each over the same slice (WHERE updated_at > the watermark):
#
#   bare     INSERT ... SELECT of the slice's new keys only (known by
#            construction: the floor, what no loader can beat)
#   upsert   INSERT ... SELECT ... ON CONFLICT (id) DO UPDATE SET ... WHERE
#            hwm.changed(...): the statement hwm.run runs today
#   hwm      SELECT hwm.run(...) (the upsert, plus the run's bookkeeping)
#   split    one statement, one snapshot: WITH u AS (UPDATE t SET ... FROM
#            slice WHERE key matches AND hwm.changed(...)) INSERT INTO t
#            SELECT ... FROM slice WHERE NOT EXISTS (the key in t): new keys
#            by a plain insert, changed rows updated, unchanged untouched
#   split_oc as split, the INSERT with ON CONFLICT (id) DO UPDATE ... as a
#            fallback for keys a concurrent writer takes (speculative
#            insertion for every new row again)
#   merge    MERGE INTO t USING slice ON key WHEN MATCHED AND hwm.changed
#            THEN UPDATE WHEN NOT MATCHED THEN INSERT (PostgreSQL 15+)
#   merge_nl, split_nl  merge, split planned with nested loops (index probes)
#   merge_wm as merge with work_mem = 256MB (its hash join in memory)
#   ctas     (first only) CREATE TABLE AS the slice + ADD PRIMARY KEY
#   dbt_merge, dbt_di  what dbt-postgres's incremental strategies run: MERGE
#            updating every matched row; DELETE ... USING slice + INSERT
#
# Each contender runs as BEGIN; statement; ROLLBACK (psql \timing of the
# statement alone; the commit's WAL flush is not in it, the same for all),
# then VACUUM (not timed) so that the next starts from the same table.
# Prints the median of each and its ratio to bare (and hwm / split), and
# appends the medians to bench/work/bulk.tsv.
#
#   N=500000 ROUNDS=3 bash bench/bulk.sh
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/bulk.sh    # another PostgreSQL
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
N=${N:-500000}
ROUNDS=${ROUNDS:-3}
CASES=${CASES:-new half changed}
BATCH=${BATCH:-50000}
CONTENDERS=${CONTENDERS:-bare upsert hwm split split_oc merge dbt_merge dbt_di}
bench_cluster bulk "autovacuum = off" "hwm.allow_superuser_pipelines = on" \
    "shared_buffers = 1GB" "max_wal_size = 8GB" "checkpoint_timeout = 1h"

half=$((N / 2))
hwm_psql -q -v n="$N" -v half="$half" -v batch="$BATCH" <<'SQL' >>"$LOG" 2>&1
CREATE EXTENSION hwm;
-- the target: keys 1..N
CREATE TABLE t (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, a int, b text, c numeric);
INSERT INTO t SELECT g, '2026-01-01'::timestamptz + g * interval '1 second', g % 1000,
  'value ' || g, g * 1.5 FROM generate_series(1, :n) g;
-- the sources: 1..2N as t would have them (new: the slice is N+1..2N)
CREATE TABLE src_new (LIKE t INCLUDING ALL);
CREATE INDEX ON src_new (updated_at);
INSERT INTO src_new SELECT g, '2026-01-01'::timestamptz + g * interval '1 second', g % 1000,
  'value ' || g, g * 1.5 FROM generate_series(1, 2 * :n) g;
-- half: 1..N+N/2, the slice N/2+1..N+N/2 (its first half as in t)
CREATE TABLE src_half (LIKE t INCLUDING ALL);
CREATE INDEX ON src_half (updated_at);
INSERT INTO src_half SELECT * FROM src_new WHERE id <= :n + :half;
-- halfnk: half without the primary key (a key may be there twice)
CREATE TABLE src_halfnk (LIKE t);
CREATE INDEX ON src_halfnk (updated_at);
INSERT INTO src_halfnk SELECT * FROM src_half;
-- changed: as half, b changed in the slice's first half
CREATE TABLE src_changed (LIKE t INCLUDING ALL);
CREATE INDEX ON src_changed (updated_at);
INSERT INTO src_changed SELECT id, updated_at, a,
  CASE WHEN id > :half AND id <= :n THEN b || ' changed' ELSE b END, c
  FROM src_half;
-- first: an empty target, the source N rows (the first run loads them all)
CREATE TABLE t0 (LIKE t INCLUDING ALL);
CREATE TABLE src_first (LIKE t INCLUDING ALL);
CREATE INDEX ON src_first (updated_at);
INSERT INTO src_first SELECT * FROM t;
SELECT hwm.create_pipeline('first', 'src_first', 't0', '{id}', 'updated_at');
SELECT hwm.create_pipeline('new', 'src_new', 't', '{id}', 'updated_at',
  initial_watermark => (SELECT updated_at::text FROM src_new WHERE id = :n));
SELECT hwm.create_pipeline('backlog', 'src_new', 't', '{id}', 'updated_at', batch_size => :batch,
  initial_watermark => (SELECT updated_at::text FROM src_new WHERE id = :n));
SELECT hwm.create_pipeline('half', 'src_half', 't', '{id}', 'updated_at',
  initial_watermark => (SELECT updated_at::text FROM src_half WHERE id = :half));
SELECT hwm.create_pipeline('changed', 'src_changed', 't', '{id}', 'updated_at',
  initial_watermark => (SELECT updated_at::text FROM src_changed WHERE id = :half));
SELECT hwm.create_pipeline('halfnk', 'src_halfnk', 't', '{id}', 'updated_at',
  initial_watermark => (SELECT updated_at::text FROM src_half WHERE id = :half));
CREATE TABLE wm (name text PRIMARY KEY, w timestamptz NOT NULL);
INSERT INTO wm SELECT pipeline, coalesce(watermark::timestamptz, '-infinity') FROM hwm.state;
VACUUM ANALYZE;
CHECKPOINT;
SQL

# the statement of contender $1 for case $2
statement() {
    local s=src_$2 lo floor
    [[ $2 == backlog ]] && s=src_new
    lo="(SELECT w FROM wm WHERE name = '$2')"
    # bare: the new keys only (above N in every case)
    floor="(SELECT updated_at FROM ${s%nk} WHERE id = $N)"
    local slice="SELECT s.id, s.updated_at, s.a, s.b, s.c FROM $s AS s WHERE s.updated_at > $lo"
    local set="updated_at = EXCLUDED.updated_at, a = EXCLUDED.a, b = EXCLUDED.b, c = EXCLUDED.c"
    local changed="hwm.changed(t.updated_at, t.a, t.b, t.c, EXCLUDED.updated_at, EXCLUDED.a, EXCLUDED.b, EXCLUDED.c)"
    local changed_s="hwm.changed(t.updated_at, t.a, t.b, t.c, s.updated_at, s.a, s.b, s.c)"
    local upd="UPDATE t SET updated_at = s.updated_at, a = s.a, b = s.b, c = s.c FROM $s AS s WHERE s.updated_at > $lo AND t.id = s.id AND $changed_s"
    if [[ $2 == first ]]; then
        case $1 in
        bare) echo "INSERT INTO t0 AS t $slice" ;;
        ctas) echo "CREATE TABLE t1 AS $slice; ALTER TABLE t1 ADD PRIMARY KEY (id)" ;;
        upsert) echo "INSERT INTO t0 AS t $slice ON CONFLICT (id) DO UPDATE SET $set WHERE $changed" ;;
        hwm) echo "SELECT * FROM hwm.run('$2')" ;;
        *) echo "SELECT 1" ;;
        esac
        return
    fi
    case $1 in
    bare) echo "INSERT INTO t AS t SELECT s.id, s.updated_at, s.a, s.b, s.c FROM $s AS s WHERE s.updated_at > $floor" ;;
    upsert) echo "INSERT INTO t AS t $slice ON CONFLICT (id) DO UPDATE SET $set WHERE $changed" ;;
    hwm) if [[ $2 == backlog ]]; then echo "CALL hwm.catch_up('$2')"; else echo "SELECT * FROM hwm.run('$2')"; fi ;;
    split) echo "WITH u AS ($upd RETURNING 1) INSERT INTO t AS t $slice AND NOT EXISTS (SELECT FROM t AS t2 WHERE t2.id = s.id)" ;;
    split_oc) echo "WITH u AS ($upd RETURNING 1) INSERT INTO t AS t $slice AND NOT EXISTS (SELECT FROM t AS t2 WHERE t2.id = s.id) ON CONFLICT (id) DO UPDATE SET $set WHERE $changed" ;;
    merge) echo "MERGE INTO t USING ($slice) AS s ON t.id = s.id WHEN MATCHED AND $changed_s THEN UPDATE SET updated_at = s.updated_at, a = s.a, b = s.b, c = s.c WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.updated_at, s.a, s.b, s.c)" ;;
    merge_nl) echo "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; $(statement merge "$2")" ;;
    merge_wm) echo "SET LOCAL work_mem = '256MB'; $(statement merge "$2")" ;;
    split_nl) echo "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; $(statement split "$2")" ;;
    dbt_merge) echo "MERGE INTO t USING ($slice) AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET updated_at = s.updated_at, a = s.a, b = s.b, c = s.c WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.updated_at, s.a, s.b, s.c)" ;;
    dbt_di) echo "DELETE FROM t USING $s AS s WHERE s.updated_at > $lo AND t.id = s.id; INSERT INTO t $slice" ;;
    esac
}

# ms of contender $1 on case $2: the statement(s) between BEGIN and ROLLBACK
measure() {
    local ms
    ms=$({
        echo '\o /dev/null'
        echo 'BEGIN;'
        echo '\timing on'
        statement "$1" "$2" | sed 's/$/;/' | sed 's/;;$/;/'
        echo '\timing off'
        echo 'ROLLBACK;'
    } | hwm_psql -q 2>>"$LOG" | sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | awk '{s += $1} END {print s}')
    hwm_psql -q -c 'VACUUM t, t0' >>"$LOG" 2>&1
    echo "$ms"
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# check once that every contender leaves the same table (within the rollback)
for c in $CASES; do
    ref_up=
    for k in $CONTENDERS; do
        sum=$({
            echo 'BEGIN;'
            echo '\o /dev/null'
            statement "$k" "$c" | sed 's/$/;/'
            echo '\o'
            if [[ $c == first ]]; then tbl=t0; [[ $k == ctas ]] && tbl=t1; else tbl=t; fi
            echo "SELECT count(*), sum(hashtext(x::text)) FROM $tbl AS x;"
            echo 'ROLLBACK;'
        } | hwm_psql -q -At 2>>"$LOG")
        [[ $k == bare ]] && ref=$sum
        # bare leaves the changed case's first half unchanged
        [[ $k == upsert ]] && ref_up=$sum
        if [[ $k != bare && $k != upsert && -n ${ref_up:-} && $sum != "$ref_up" ]]; then
            hwm_log "WARNING: $k on $c leaves $sum, the upsert $ref_up"
        fi
    done
    hwm_psql -q -c 'VACUUM t, t0' >>"$LOG" 2>&1
done
: "${ref:=}"

read -ra K <<<"$CONTENDERS"
version=$("$PGBIN/postgres" --version | awk '{print $3}')
hwm_log "PostgreSQL $version, N=$N, $ROUNDS rounds, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A T
for ((i = 0; i < ROUNDS; i++)); do
    for c in $CASES; do
        line="round $((i + 1)) $c:"
        for ((j = 0; j < ${#K[@]}; j++)); do
            k=${K[$(((j + i) % ${#K[@]}))]}
            ms=$(measure "$k" "$c")
            T[$c.$k]+="$ms "
            line+=" $k $ms"
        done
        hwm_log "$line"
    done
done
hwm_log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '| case |'
for k in "${K[@]}"; do printf ' %s ms (/ bare) |' "$k"; done
printf ' hwm / split (if both ran) |\n|---|'
for k in "${K[@]}"; do printf -- '---|'; done
printf -- '---|\n'
for c in $CASES; do
    # shellcheck disable=SC2086
    b=$(median ${T[$c.bare]:-0})
    printf '| %s |' "$c"
    for k in "${K[@]}"; do
        # shellcheck disable=SC2086
        m=$(median ${T[$c.$k]})
        printf ' %s (%s) |' "$m" "$(awk -v m="$m" -v b="$b" 'BEGIN {printf (b > 0 ? "%.2f" : "-"), m / b}')"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$version" "$N" "$c" "$k" "$m" \
            "$(git -C "$BENCH/.." rev-parse --short HEAD)" >>"$WORK/bulk.tsv"
    done
    # shellcheck disable=SC2086
    [[ -n ${T[$c.split]:-} && -n ${T[$c.hwm]:-} ]] &&
        printf ' %s |' "$(awk -v h="$(median ${T[$c.hwm]})" -v s="$(median ${T[$c.split]})" 'BEGIN {printf "%.2f", h / s}')"
    printf '\n'
done
