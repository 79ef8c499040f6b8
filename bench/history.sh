#!/usr/bin/env bash
# bench/history.sh: history pipelines (issue 40), one command from a fresh
# machine.  Two parts (PARTS, default "hand dbt"):
#
# hand  A history `hist` of N keys (default 1,000,000): one current version
#       each, and every fifth key two closed versions before it (1.4 N
#       rows); primary key (id, valid_from) and a partial unique index on
#       (id) WHERE valid_to IS NULL.  The change log `log` has every version
#       (index on ts) and, above the pipeline's watermark, a slice of SLICE
#       rows (default 10,000): SLICE keys spread over the whole key range,
#       their tracked column (and payload) changed.  Contenders, each as
#       BEGIN; statements; ROLLBACK (psql \timing of the statements alone),
#       then VACUUM hist (not timed), so that every repetition starts from
#       the same table, warm (one untimed round first):
#         hwm   SELECT * FROM hwm.run('p')
#         hand  the two statements a data engineer writes for the same work:
#               UPDATE hist SET valid_to = s.ts FROM the slice s WHERE the
#               key matches, valid_to IS NULL and tracked IS DISTINCT FROM
#               s.tracked; INSERT INTO hist the slice's rows whose key has
#               no current version left (new versions, valid_to NULL)
#       REPS repetitions (default 7), the order alternating; medians and the
#       ratio hwm / hand (goal: at most 1.2).  Both leave the same table
#       (checked once).  The plan of each (auto_explain, nested statements,
#       ANALYZE and BUFFERS) goes to bench/work/history-explain.txt.
#
# dbt   The same change against `dbt snapshot` (check strategy, check_cols
#       [tracked], dbt-postgres), at DBT_SIZES keys (default "100000
#       1000000").  dbt is given a table `cur` of the current rows (one a
#       key, primary key id), updated in place; hwm the change log `log`
#       (append-only, index on ts) and the history `hist` (indexes as in
#       hand).  Both are built by the same rounds: every key, then two
#       rounds changing a fifth of the keys each (each round: hwm.run and
#       dbt snapshot).  Then DBT_REPS runs (default 7): each changes SLICE
#       keys (spread over the key range; tracked and payload) in both
#       inputs, VACUUM ANALYZE, then hwm.run (psql \timing) and dbt snapshot
#       (the snapshot's execution_time from run_results.json, and the wall
#       clock of the dbt command, its start-up included), the order
#       alternating.  Last, SLICE keys change three times each between two
#       runs (three log rows a key; three UPDATEs of `cur`): the versions
#       each keeps (hwm: rows_inserted; dbt: rows added to the snapshot).
#       dbt comes from the venv of test/dbt/run.sh (HWM_DBT_VENV=DIR, else
#       /var/cache/hwm/dbt-1.10.15-1.9.1, installed there when missing).
#
# HISTORY_SETTINGS="name = value" adds a setting to the cluster's (e.g.
# random_page_cost = 1.1, bench/run.sh's: the hand-written UPDATE then
# probes the index instead of reading the whole history).
#
# Appends the figures to bench/work/history.tsv and writes them into the
# section "History pipelines" of bench/RESULTS.md (a row per build and part).
#
#   bash bench/history.sh
#   N=100000 SLICE=1000 REPS=3 DBT_SIZES=10000 DBT_REPS=2 bash bench/history.sh   # smoke run
#   HWM_BENCH_PGBIN=/path/to/bin HWM_BENCH_SRC=/path/to/checkout bash bench/history.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
N=${N:-1000000}
SLICE=${SLICE:-10000}
REPS=${REPS:-7}
PARTS=${PARTS:-hand dbt}
DBT_SIZES=${DBT_SIZES:-100000 1000000}
DBT_REPS=${DBT_REPS:-7}
TSV=$WORK/history.tsv
EXPLAIN=$WORK/history-explain.txt

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
# HISTORY_SETTINGS: more lines for postgresql.conf (e.g. "random_page_cost = 1.1")
bench_cluster history "autovacuum = off" "hwm.allow_superuser_pipelines = on" "jit = off" \
    "shared_buffers = 2GB" "max_wal_size = 8GB" "checkpoint_timeout = 1h" ${HISTORY_SETTINGS:+"$HISTORY_SETTINGS"}
VERSION=$("$PGBIN/postgres" --version | awk '{print $3}')
hwm_log "history benchmark: PostgreSQL $VERSION, hwm $BENCH_COMMIT, parts: $PARTS (log: $LOG)"
q() { hwm_psql -q -At "$@" 2>>"$LOG"; }
q -c "CREATE EXTENSION hwm"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
tsv() { local IFS=$'\t'; echo "$(date -u +%FT%TZ)	$BENCH_COMMIT	$VERSION	$*" >>"$TSV"; }
ROWS=()

# --- hand: hwm.run against the hand-written pair ------------------------------
# The history's rows: key i has its current version from 2026-01-01 + i ms;
# every fifth key two closed ones before, from 2025-01-01 + i ms and
# 2025-06-01 + i ms.  The slice: keys i with i % (N / SLICE) = 7, at
# 2026-02-01 + i ms, tracked and payload changed.
part_hand() {
    local stride=$((N / SLICE)) wm
    hwm_log "hand: history of $N keys, slice of $SLICE changed keys"
    q -v n="$N" -v stride="$stride" -o /dev/null <<'SQL'
CREATE TABLE log (id int NOT NULL, ts timestamptz NOT NULL, tracked text, payload text);
CREATE TABLE hist (id int NOT NULL, ts timestamptz, tracked text, payload text,
                   valid_from timestamptz NOT NULL, valid_to timestamptz,
                   PRIMARY KEY (id, valid_from));
CREATE UNIQUE INDEX hist_current ON hist (id) WHERE valid_to IS NULL;
INSERT INTO hist
SELECT i, f, 'status ' || (i + v) % 7, md5((i * 3 + v)::text), f, t
  FROM generate_series(1, :n) i,
       LATERAL (VALUES (0, timestamptz '2025-01-01' + i * interval '1 ms', timestamptz '2025-06-01' + i * interval '1 ms'),
                       (1, timestamptz '2025-06-01' + i * interval '1 ms', timestamptz '2026-01-01' + i * interval '1 ms'),
                       (2, timestamptz '2026-01-01' + i * interval '1 ms', NULL)) AS x(v, f, t)
 WHERE v = 2 OR i % 5 = 0
 ORDER BY i, f;
INSERT INTO log SELECT id, ts, tracked, payload FROM hist ORDER BY ts;
INSERT INTO log
SELECT i, timestamptz '2026-02-01' + i * interval '1 ms', 'changed ' || i % 7, md5(i::text || 'changed')
  FROM generate_series(1, :n) i WHERE i % :stride = 7;
CREATE INDEX ON log (ts);
SELECT hwm.create_pipeline('p', 'log', 'hist', '{id}', 'ts', history => true,
                           history_columns => '{tracked}',
                           initial_watermark => (timestamptz '2026-01-01' + :n * interval '1 ms')::text);
VACUUM ANALYZE;
CHECKPOINT;
SQL
    wm=$(q -c "SELECT (timestamptz '2026-01-01' + $N * interval '1 ms')")
    local upd="UPDATE hist AS t SET valid_to = s.ts FROM log AS s WHERE s.ts > '$wm' AND t.id = s.id AND t.valid_to IS NULL AND t.tracked IS DISTINCT FROM s.tracked"
    local ins="INSERT INTO hist (id, ts, tracked, payload, valid_from, valid_to) SELECT s.id, s.ts, s.tracked, s.payload, s.ts, NULL FROM log AS s WHERE s.ts > '$wm' AND NOT EXISTS (SELECT FROM hist AS t WHERE t.id = s.id AND t.valid_to IS NULL)"
    statements() {
        case $1 in
        hwm) echo "SELECT * FROM hwm.run('p');" ;;
        hand) printf '%s;\n' "$upd" "$ins" ;;
        esac
    }
    measure() {
        local ms
        ms=$({
            echo '\o /dev/null'
            echo 'BEGIN;'
            echo '\timing on'
            statements "$1"
            echo '\timing off'
            echo 'ROLLBACK;'
        } | hwm_psql -q 2>>"$LOG" | sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | awk '{s += $1} END {print s}')
        q -c 'VACUUM hist' >/dev/null
        echo "$ms"
    }
    # both leave the same table
    local sums=() k
    for k in hwm hand; do
        sums+=("$({
            echo 'BEGIN;'
            echo '\o /dev/null'
            statements $k
            echo '\o'
            echo "SELECT count(*), count(*) FILTER (WHERE valid_to IS NULL), sum(hashtext(h::text)) FROM hist AS h;"
            echo 'ROLLBACK;'
        } | hwm_psql -q -At 2>>"$LOG")")
        q -c 'VACUUM hist' >/dev/null
    done
    local same=yes
    if [[ ${sums[0]} != "${sums[1]}" ]]; then
        same=NO
        hwm_log "WARNING: hwm leaves $(tr '\n' ' ' <<<"${sums[0]}"), the hand pair $(tr '\n' ' ' <<<"${sums[1]}")"
    fi
    hwm_log "hand: hwm and the pair leave the same table: $same (rows, current, hash: ${sums[0]//|/ })"
    # the plans, from auto_explain (nested statements: hwm's own)
    {
        echo "# hwm.run('p'): the statement it runs"
        {
            echo "LOAD 'auto_explain';"
            echo "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;"
            echo "SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_level = notice;"
            echo "SET client_min_messages = notice;"
            echo 'BEGIN;'
            echo '\o /dev/null'
            statements hwm
            echo 'ROLLBACK;'
            echo 'BEGIN;'
            echo '\o /dev/null'
            echo "SELECT 'the hand-written pair';"
            statements hand
            echo 'ROLLBACK;'
        } | hwm_psql -q 2>&1 | sed -E 's/^psql:<stdin>:[0-9]+: //'
    } >"$EXPLAIN"
    q -c 'VACUUM hist' >/dev/null
    # warm-up, then REPS rounds, the order alternating
    measure hwm >/dev/null
    measure hand >/dev/null
    local H=() B=() i a b line
    local load0
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((i = 0; i < REPS; i++)); do
        if ((i % 2 == 0)); then a=$(measure hwm); b=$(measure hand); line="hwm $a hand $b"
        else b=$(measure hand); a=$(measure hwm); line="hand $b hwm $a"; fi
        H+=("$a") B+=("$b")
        hwm_log "hand: round $((i + 1)): $line ms"
    done
    local mh mb
    mh=$(median "${H[@]}") mb=$(median "${B[@]}")
    hwm_log "hand: median hwm $mh ms, hand $mb ms, ratio $(ratio "$mh" "$mb")"
    tsv hand "$N" "$SLICE" "$mh" "$mb" "$(ratio "$mh" "$mb")"
    local per=() j
    for ((j = 0; j < REPS; j++)); do per+=("$(ratio "${H[j]}" "${B[j]}")"); done
    ROWS+=("hand|$N|$SLICE|$mh|$mb|$(ratio "$mh" "$mb")|$(IFS=,; echo "${per[*]}" | sed 's/,/, /g')|$same|$load0 → $(cut -d' ' -f1-3 /proc/loadavg)")
}

# --- dbt: hwm.run against dbt snapshot -----------------------------------------
dbt_setup() {
    DBT_VENV=${HWM_DBT_VENV:-${HWM_CACHE:-/var/cache/hwm}/dbt-1.10.15-1.9.1}
    if [[ ! -x $DBT_VENV/bin/dbt ]]; then
        hwm_log "no dbt in $DBT_VENV: installing it as test/dbt/run.sh does"
        hwm_apt_install python3 python3-venv
        python3 -m venv "$DBT_VENV"
        "$DBT_VENV/bin/pip" install -q --disable-pip-version-check dbt-core==1.10.15 dbt-postgres==1.9.1 >>"$LOG" 2>&1
    fi
    DBT_DIR=$(mktemp -d /tmp/hwm-histdbt.XXXXXX)
    hwm_on_exit "rm -rf '$DBT_DIR'"
    mkdir -p "$DBT_DIR/project/snapshots" "$DBT_DIR/profiles"
    cat >"$DBT_DIR/profiles/profiles.yml" <<EOF
hwm_history:
  target: bench
  outputs:
    bench:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: postgres
      password: unused
      dbname: postgres
      schema: public
      threads: 1
EOF
    cat >"$DBT_DIR/project/dbt_project.yml" <<'EOF'
name: hwm_history
version: '1.0'
config-version: 2
profile: hwm_history
snapshot-paths: ["snapshots"]
EOF
    # the snapshot of the current rows of schema d<size>, into that schema
    cat >"$DBT_DIR/project/snapshots/snap.sql" <<'EOF'
{% snapshot snap %}
{{ config(target_schema='d' ~ var('size'), unique_key='id', strategy='check', check_cols=['tracked']) }}
select * from {{ 'd' ~ var('size') }}.cur
{% endsnapshot %}
EOF
    export DBT_PROFILES_DIR=$DBT_DIR/profiles DBT_SEND_ANONYMOUS_USAGE_STATS=false DO_NOT_TRACK=1 \
        DBT_USE_COLORS=false DBT_LOG_PATH=$DBT_DIR/logs DBT_TARGET_PATH=$DBT_DIR/target
}

# dbt snapshot of size $1: prints "execution_time_ms wall_ms"
dbt_snapshot() {
    local t0 t1 exec_s
    t0=$(date +%s%N)
    if ! (cd "$DBT_DIR/project" && "$DBT_VENV/bin/dbt" snapshot --vars "{size: $1}" >>"$LOG" 2>&1); then
        hwm_log "dbt snapshot failed; see $LOG"
        return 1
    fi
    t1=$(date +%s%N)
    exec_s=$("$DBT_VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0]["execution_time"])' \
        "$DBT_DIR/target/run_results.json")
    awk -v e="$exec_s" -v w="$(((t1 - t0) / 1000000))" 'BEGIN {printf "%.0f %d\n", e * 1000, w}'
}

# hwm.run of size $1, timed by psql: prints "ms rows_inserted"
hwm_run() {
    local out
    # (the versions opened from hwm.runs: before 457fb8a hwm.run returned 0)
    out=$(printf '%s\n' '\o /dev/null' '\timing on' "SELECT * FROM hwm.run('h$1');" '\timing off' '\o' \
        "SELECT rows_inserted FROM hwm.runs WHERE pipeline = 'h$1' ORDER BY run_id DESC LIMIT 1;" |
        hwm_psql -q -At 2>>"$LOG")
    echo "$(sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' <<<"$out") $(tail -n 1 <<<"$out")"
}

# one change: keys i % $3 = $4 of size $1 get tracked and payload of round $2,
# in cur (updated in place) and in log (appended at the next timestamps)
dbt_change() {
    q -v size="$1" -v r="$2" -v m="$3" -v k="$4" <<'SQL'
SET search_path = d:size;
INSERT INTO log
SELECT id, (SELECT max(ts) FROM log) + row_number() OVER (ORDER BY id) * interval '1 ms',
       'round ' || :r || ' ' || id % 7, md5(id::text || ' ' || :r)
  FROM cur WHERE id % :m = :k;
UPDATE cur SET (ts, tracked, payload) = (l.ts, l.tracked, l.payload)
  FROM log AS l WHERE l.id = cur.id AND l.ts > (SELECT max(ts) FROM cur) AND cur.id % :m = :k;
SQL
}

part_dbt() {
    local size=$1 stride=$((size / SLICE)) r i a b
    hwm_log "dbt: $size keys"
    q -v size="$size" -o /dev/null <<'SQL'
CREATE SCHEMA d:size;
SET search_path = d:size;
CREATE TABLE cur (id int PRIMARY KEY, ts timestamptz NOT NULL, tracked text, payload text);
CREATE TABLE log (id int NOT NULL, ts timestamptz NOT NULL, tracked text, payload text);
CREATE INDEX ON log (ts);
CREATE TABLE hist (id int NOT NULL, ts timestamptz, tracked text, payload text,
                   valid_from timestamptz NOT NULL, valid_to timestamptz,
                   PRIMARY KEY (id, valid_from));
CREATE UNIQUE INDEX ON hist (id) WHERE valid_to IS NULL;
INSERT INTO log SELECT i, timestamptz '2026-01-01' + i * interval '1 ms', 'status ' || i % 7, md5(i::text)
  FROM generate_series(1, :size) i;
INSERT INTO cur SELECT * FROM log;
SELECT hwm.create_pipeline('h' || :size, 'd' || :size || '.log', 'd' || :size || '.hist', '{id}', 'ts',
                           history => true, history_columns => '{tracked}');
SQL
    # the same rounds build both histories: every key, then a fifth twice
    for r in 0 1 2; do
        ((r > 0)) && dbt_change "$size" "$r" 5 $((r - 1))
        q -c "VACUUM ANALYZE d$size.cur, d$size.log, d$size.hist"
        hwm_log "dbt: $size keys, building round $r: hwm $(hwm_run "$size") (ms, versions opened); dbt snapshot $(dbt_snapshot "$size") (ms, ms wall)"
    done
    q -c "VACUUM ANALYZE" -c "CHECKPOINT"
    hwm_log "dbt: $size keys: history $(q -c "SELECT count(*) FROM d$size.hist") rows, snapshot $(q -c "SELECT count(*) FROM d$size.snap") rows"
    local H=() D=() W=() load0
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((i = 0; i < DBT_REPS; i++)); do
        dbt_change "$size" $((10 + i)) "$stride" $(((7 + 13 * i) % stride))
        q -c "VACUUM ANALYZE d$size.cur, d$size.log, d$size.hist, d$size.snap"
        if ((i % 2 == 0)); then
            a=$(hwm_run "$size"); b=$(dbt_snapshot "$size")
        else
            b=$(dbt_snapshot "$size"); a=$(hwm_run "$size")
        fi
        H+=("${a% *}") D+=("${b% *}") W+=("${b#* }")
        hwm_log "dbt: $size keys, run $((i + 1)): hwm ${a% *} ms (${a#* } versions), dbt snapshot ${b% *} ms (${b#* } ms wall)"
    done
    local load1 mh md mw
    load1=$(cut -d' ' -f1-3 /proc/loadavg)
    mh=$(median "${H[@]}") md=$(median "${D[@]}") mw=$(median "${W[@]}")
    # three versions of each of SLICE keys between two runs
    local log_before snap_before hv dv tm tv
    q -v size="$size" -v m="$stride" -v k=3 <<'SQL'
SET search_path = d:size;
INSERT INTO log
SELECT id, (SELECT max(ts) FROM log) + (row_number() OVER (ORDER BY v, id)) * interval '1 ms',
       'three ' || v || ' ' || id % 7, md5(id::text || ' three ' || v)
  FROM cur, generate_series(1, 3) v WHERE id % :m = :k;
SQL
    for v in 1 2 3; do
        q -c "UPDATE d$size.cur SET (ts, tracked, payload) = (l.ts, l.tracked, l.payload) FROM d$size.log AS l
               WHERE l.id = cur.id AND l.tracked LIKE 'three $v %' AND cur.id % $stride = 3"
    done
    q -c "VACUUM ANALYZE d$size.cur, d$size.log, d$size.hist, d$size.snap"
    snap_before=$(q -c "SELECT count(*) FROM d$size.snap")
    tv=$(hwm_run "$size")
    tm=$(dbt_snapshot "$size")
    hv=${tv#* }
    dv=$(($(q -c "SELECT count(*) FROM d$size.snap") - snap_before))
    # both end with the same current rows
    local same
    same=$(q -c "SELECT CASE WHEN count(*) = 0 THEN 'yes' ELSE 'NO: ' || count(*) || ' keys differ' END FROM
                 (SELECT id, tracked FROM d$size.hist WHERE valid_to IS NULL
                  EXCEPT SELECT id, tracked FROM d$size.snap WHERE dbt_valid_to IS NULL) AS x")
    hwm_log "dbt: $size keys: median hwm $mh ms, dbt snapshot $md ms ($mw ms wall), dbt / hwm $(ratio "$md" "$mh"); three versions of $SLICE keys: hwm kept $hv (${tv% *} ms), dbt $dv (${tm% *} ms); same current rows: $same"
    tsv dbt "$size" "$SLICE" "$mh" "$md" "$mw" "$hv" "$dv"
    ROWS+=("dbt|$size|$SLICE|$mh|$md|$mw|$(ratio "$md" "$mh")|$hv|$dv|$same|$load0 → $load1")
}

for part in $PARTS; do
    case $part in
    hand) part_hand ;;
    dbt)
        dbt_setup
        for size in $DBT_SIZES; do part_dbt "$size"; done
        ;;
    esac
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- bench/RESULTS.md: one row per build and part, the command of each ----------
cmd=""
[[ $N != 1000000 ]] && cmd+="N=$N "
[[ $SLICE != 10000 ]] && cmd+="SLICE=$SLICE "
[[ $REPS != 7 ]] && cmd+="REPS=$REPS "
[[ $PARTS != "hand dbt" ]] && cmd+="PARTS=\"$PARTS\" "
[[ $DBT_SIZES != "100000 1000000" ]] && cmd+="DBT_SIZES=\"$DBT_SIZES\" "
[[ $DBT_REPS != 7 ]] && cmd+="DBT_REPS=$DBT_REPS "
[[ -n ${HISTORY_SETTINGS:-} ]] && cmd+="HISTORY_SETTINGS=\"$HISTORY_SETTINGS\" "
[[ -n ${HWM_BENCH_PGBIN:-} ]] && cmd+="HWM_BENCH_PGBIN=<copy of $(sed -E 's/^PostgreSQL ([0-9]+).*/\1/' <<<"$("$PG_CONFIG" --version)") bin> "
[[ -n ${HWM_BENCH_SRC:-} ]] && cmd+="HWM_BENCH_SRC=<checkout of $BENCH_COMMIT> "
cmd+="bash bench/history.sh"
NOTE="- build \`$BENCH_COMMIT\`: \`$cmd\`, $(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $VERSION, $(nproc) cores, load average $LOAD_BEFORE before, $LOAD_AFTER after."
python3 - "$BENCH/RESULTS.md" "$BENCH_COMMIT" "${HISTORY_SETTINGS:-}" "$NOTE" "${ROWS[@]}" <<'PY'
import sys, re
path, build, settings, note = sys.argv[1:5]
results = sys.argv[5:]
settings = f"`{settings}`" if settings else "defaults"
import datetime
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
text = open(path).read()
pat = re.compile(r"<!-- history:start -->.*?<!-- history:end -->", re.S)
m = pat.search(text)
old = m.group(0).splitlines() if m else []
parts = {r.split("|")[0] for r in results}
# the hand table's rows come before the dbt table's heading
split = next((i for i, l in enumerate(old) if l.startswith("**Against `dbt snapshot`**")), len(old))
def keep(lines, part):
    # rows of another build or settings, or of a part this run did not measure
    return [l for l in lines if l.startswith("| `") and (
        not l.startswith(f"| `{build}` | {settings} |") or part not in parts)]
hand = keep(old[:split], "hand")
dbt = keep(old[split:], "dbt")
notes = [l for l in old if l.startswith("- build `") and l != note]
for r in results:
    f = r.split("|")
    if f[0] == "hand":
        _, n, s, mh, mb, ra, per, same, load = f
        hand.append(f"| `{build}` | {settings} | {int(n):,} | {int(s):,} | {mh} ms | {mb} ms | **{ra}** | {per} | {same} | {load} | {when} |")
    else:
        _, n, s, mh, md, mw, ra, hv, dv, same, load = f
        dbt.append(f"| `{build}` | {settings} | {int(n):,} | {int(s):,} | {mh} ms | {md} ms | {mw} ms | **{ra}** | {int(hv):,} | {int(dv):,} | {same} | {load} | {when} |")
notes.append(note)
section = "\n".join([
    "<!-- history:start -->",
    "## History pipelines (issue 40)",
    "",
    "`bench/history.sh` (its header says exactly what each contender is given and runs). The cluster: `shared_buffers = 2GB`, `autovacuum = off`, `jit = off`, the rest the defaults (random_page_cost 4) but for the settings named in a row.",
    "",
    "**Against the hand-written pair.** A history of N keys (one current version each, every fifth key two closed versions before it: 1.4 N rows; primary key (id, valid_from), unique index on (id) WHERE valid_to IS NULL), a slice of S changed keys (tracked column and payload) spread over the key range, above the watermark of a change log with every version (index on ts). `hwm.run('p')` against `UPDATE hist SET valid_to = s.ts FROM slice s WHERE t.id = s.id AND t.valid_to IS NULL AND t.tracked IS DISTINCT FROM s.tracked` + `INSERT INTO hist SELECT ... FROM slice WHERE NOT EXISTS (a current version of the key)`: each in BEGIN ... ROLLBACK (psql `\\timing` of the statements), VACUUM after each (not timed), after VACUUM ANALYZE and a warm-up round; medians of the repetitions, the order alternating. Goal: hwm / hand at most 1.2.",
    "",
    "| build | settings | keys | slice | hwm.run | hand pair | hwm / hand | per repetition | same table | load average during | written (UTC) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    *hand,
    "",
    "**Against `dbt snapshot`** (check strategy, `check_cols: [tracked]`, dbt-core 1.10.15, dbt-postgres 1.9.1). dbt is given `cur`, the current rows (one a key, primary key id), updated in place; hwm the append-only change log (index on ts) and its history (indexes as above). Both histories are built by the same three rounds (every key; a fifth of the keys changed, twice). Then runs, each after S keys changed in both inputs (and VACUUM ANALYZE), the order alternating: hwm.run (psql `\\timing`) and the snapshot's own time (`run_results.json`; the wall clock of `dbt snapshot` with dbt's start-up beside it); medians. Versions kept: S keys each change three times between two runs (three log rows a key; three UPDATEs of `cur`), then one run of each: the versions opened (hwm: `rows_inserted`; dbt: rows added to the snapshot). \"same current rows\": the current versions of both histories agree on every key's tracked value at the end.",
    "",
    "| build | settings | keys | slice | hwm.run | dbt snapshot | dbt wall clock | dbt / hwm | versions kept of 3 x S (hwm) | (dbt) | same current rows | load average during | written (UTC) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    *dbt,
    "",
    *notes,
    "<!-- history:end -->",
])
text = pat.sub(lambda m: section, text) if m else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
hwm_log "wrote the history section of bench/RESULTS.md (plans: $EXPLAIN)"
