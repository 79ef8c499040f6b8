#!/usr/bin/env bash
# bench/dbt_models.sh: the `dbt run` time of a materialized='hwm' model
# against dbt's incremental models (merge and delete+insert) loading the
# same slices of the same source, as ratios; writes bench/DBT_MODELS.md.
#
#   bash bench/dbt_models.sh            # N=500000 rows, slices of 50000, 3 repetitions
#   N=... SLICE=... REPS=... bash bench/dbt_models.sh
#
# First, REPS first runs of three models over the N source rows (kind
# `first`: each model dropped, then `dbt run --select` it; rotating order):
# the hwm model (its first run: create the table with its key, the
# pipeline, load), dbt's `table` model (tbl: CREATE TABLE AS, no key), the
# same with the key hwm's table has (tbl_key: a unique index on id, which
# dbt-postgres builds after the CREATE TABLE AS) and dbt's incremental
# merge model (its first run is CREATE TABLE AS too).
# Then REPS `dbt run --full-refresh --select` of the same four models
# (kind `refresh`: hwm's rebuilds aside and swaps in; dbt's table and
# incremental models are CREATE TABLE AS again).
# Then two kinds of slice, each repetition loading one of each into all three
# models, in rotating order:
#   fresh   SLICE new rows;
#   resent  SLICE new rows of which the first half is already in every
#           target (as an earlier load or an upstream re-send leaves them):
#           dbt's models re-read a day below their newest row (a lookback
#           window), hwm reads from its watermark; both read the whole
#           slice, half of which is unchanged.
# Timed: the wall clock of `dbt run --select MODEL` (dbt's start included)
# and the model's own time from run_results.json.  dbt connects as an
# ordinary role, as it would in production (hwm refuses superuser pipelines).
#
# HWM_DBT_BASE=REV adds the hwm model of the package at git revision REV
# (hwm_base: the same model in a copy of the project, its table in schema
# dw_base) to every kind, in the same rotation: an A/B of two versions of
# the package on one cluster, which a model's run varying by a third from
# one repetition to the next makes the only fair way to see a change of a
# few ms (model / hwm in the table is then base / this tree).
#
# Installs what is missing (hwm into PostgreSQL HWM_PG, default 15; dbt
# into bench/work/venv, or HWM_DBT_VENV), runs a throwaway cluster, and
# leaves dbt's logs and the raw figures in bench/work/dbt_models/.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
source "$BENCH/../scripts/lib.sh"

N=${N:-500000} SLICE=${SLICE:-50000} REPS=${REPS:-3}
# (the server: HWM_PGBIN when given, else HWM_PG, which scripts/lib.sh defaults to 15)
if [[ -n ${HWM_PGBIN:-} ]]; then server="HWM_PGBIN=$HWM_PGBIN "; else server="HWM_PG=$HWM_PG "; fi
BASE=${HWM_DBT_BASE:-}
COMMAND="${server}${BASE:+HWM_DBT_BASE=$BASE }N=$N SLICE=$SLICE REPS=$REPS bash bench/dbt_models.sh"
DBT_CORE_VERSION=1.10.15 DBT_POSTGRES_VERSION=1.9.1
WORK=$BENCH/work/dbt_models
rm -rf "$WORK"
mkdir -p "$WORK"
RAW=$WORK/raw.tsv   # kind, repetition, model, wall ms, model ms, rows written
: >"$RAW"

if [[ -z ${HWM_PGBIN:-} ]]; then hwm_use_pg "${HWM_PG:-15}"; fi
hwm_build_install >"$WORK/build.log" 2>&1

venv=${HWM_DBT_VENV:-$BENCH/work/venv-dbt-models}
if [[ ! -x $venv/bin/dbt ]]; then
    python3 -m venv "$venv" 2>/dev/null || { hwm_apt_install python3 python3-venv; python3 -m venv "$venv"; }
    "$venv/bin/pip" install -q --disable-pip-version-check \
        "dbt-core==$DBT_CORE_VERSION" "dbt-postgres==$DBT_POSTGRES_VERSION" >"$WORK/pip.log" 2>&1
fi

hwm_start_cluster
hwm_psql -q -o /dev/null <<SQL
ALTER SYSTEM SET autovacuum = off;
ALTER SYSTEM SET jit = off;
SELECT pg_reload_conf();
CREATE EXTENSION hwm;
CREATE ROLE bench LOGIN;
GRANT CREATE ON DATABASE postgres TO bench;
CREATE SCHEMA bench;
GRANT USAGE ON SCHEMA bench TO bench;
CREATE TABLE bench.src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL,
    customer_id int, amount numeric(12,2), status text, note text);
GRANT SELECT ON bench.src TO bench;
INSERT INTO bench.src
SELECT i, '2020-01-01'::timestamptz + i * interval '1 ms', (i::bigint * 7919 % 100000)::int,
       (i::bigint * 31 % 100000) / 100.0, (ARRAY['new','paid','shipped','done'])[i % 4 + 1], md5(i::text)
  FROM generate_series(1, $N) i;
CREATE INDEX ON bench.src (updated_at);
VACUUM (ANALYZE) bench.src;
SQL

mkdir -p "$WORK/profiles"
# (target base: HWM_DBT_BASE's project, its tables in schema dw_base)
{
    printf 'hwm_bench_models:\n  target: bench\n  outputs:\n'
    for target in bench:dw base:dw_base; do
        cat <<EOF
    ${target%%:*}:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: bench
      password: unused
      dbname: postgres
      schema: ${target#*:}
      threads: 1
EOF
    done
} >"$WORK/profiles/profiles.yml"
export DBT_PROFILES_DIR=$WORK/profiles DBT_SEND_ANONYMOUS_USAGE_STATS=false DO_NOT_TRACK=1 \
    DBT_LOG_PATH=$WORK/logs DBT_TARGET_PATH=$WORK/target
# the project, copied with the repository's layout (packages.yml is relative)
mkdir -p "$WORK/repo/bench" "$WORK/repo/dbt"
cp -r "$BENCH/dbt_models" "$WORK/repo/bench/"
cp -r "$BENCH/../dbt/hwm" "$WORK/repo/dbt/"
project=$WORK/repo/bench/dbt_models
dbt_cmd() { (cd "$project" && "$venv/bin/dbt" "$@") >>"$WORK/dbt.log" 2>&1; }
dbt_cmd deps
# HWM_DBT_BASE: the same project beside it, with the package of that revision
if [[ -n $BASE ]]; then
    mkdir -p "$WORK/base/bench"
    cp -r "$BENCH/dbt_models" "$WORK/base/bench/"
    git -C "$BENCH/.." archive "$BASE" dbt/hwm | tar -x -C "$WORK/base"
    (cd "$WORK/base/bench/dbt_models" && "$venv/bin/dbt" deps) >>"$WORK/dbt.log" 2>&1
fi
# rel MODEL: its table; dbt_model MODEL ARGS...: dbt of the project that has it
rel() { if [[ $1 == hwm_base ]]; then echo dw_base.hwm; else echo "dw.$1"; fi; }
dbt_model() {
    local m=$1; shift
    if [[ $m == hwm_base ]]; then
        (cd "$WORK/base/bench/dbt_models" && "$venv/bin/dbt" "$@" --select hwm --target base) >>"$WORK/dbt.log" 2>&1
    else
        dbt_cmd "$@" --select "$m"
    fi
}
# drop MODEL, so that its next dbt run is a first run (the hwm model's
# pipeline and helper relations with it)
drop_model() {
    local t; t=$(rel "$1")
    if [[ $1 == hwm* ]]; then
        hwm_psql -q -o /dev/null -c "SET client_min_messages = warning" -c "SELECT hwm.drop_pipeline('$t') FROM hwm.state WHERE pipeline = '$t'" \
            -c "DROP VIEW IF EXISTS ${t}__hwm_src" -c "DROP FUNCTION IF EXISTS ${t}__hwm_fn()"
    fi
    hwm_psql -q -o /dev/null -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS $t" -c "CHECKPOINT"
}
first_models=(hwm tbl tbl_key inc_merge ${BASE:+hwm_base})
models=(hwm inc_merge inc_delete_insert ${BASE:+hwm_base})
next_id=$((N + 1))
# slice REP KIND: insert the slice into bench.src (updated_at in the past,
# slices a day and a half apart, so that dbt's one-day lookback reads only
# the slice), and for 'resent' its first half into every target.
slice() {
    local rep=$1 kind=$2 from=$next_id to=$((next_id + SLICE - 1)) half=$((next_id + SLICE / 2 - 1))
    next_id=$((to + 1))
    hwm_psql -q -o /dev/null <<SQL
INSERT INTO bench.src
SELECT i, '2021-01-01'::timestamptz + ($rep * 3 + CASE '$kind' WHEN 'resent' THEN 1.5 ELSE 0 END) * interval '1 day' + (i - $from) * interval '1 ms',
       (i::bigint * 7919 % 100000)::int, (i::bigint * 31 % 100000) / 100.0, 'new', md5(i::text)
  FROM generate_series($from, $to) i;
$(if [[ $kind == resent ]]; then for m in "${models[@]}"; do
    echo "INSERT INTO $(rel "$m") SELECT id, updated_at, customer_id, amount, status, note FROM bench.src WHERE id BETWEEN $from AND $half;"
done; fi)
VACUUM (ANALYZE);
CHECKPOINT;
SQL
}
# timed REP KIND MODEL
timed() {
    local rep=$1 kind=$2 m=$3 vars="{}" t0 t1 model_ms written0 written1 fr=() t
    t=$(rel "$m")
    [[ $kind == resent && $m != hwm* ]] && vars="{lookback: '1 day'}"
    [[ $kind == refresh ]] && fr=(--full-refresh)
    # (a first run or a rebuild: the rows the table holds, since hwm may
    # build them aside)
    written0=0
    [[ $kind != first && $kind != refresh ]] && written0=$(hwm_psql -qAt -c "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables WHERE relid = '$t'::regclass")
    t0=$(date +%s%N)
    dbt_model "$m" run --vars "$vars" "${fr[@]}"
    t1=$(date +%s%N)
    model_ms=$("$venv/bin/python" -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["results"][0]["execution_time"] * 1000))' "$WORK/target/run_results.json")
    sleep 0.6   # (the session's statistics reach pg_stat_user_tables)
    if [[ $kind == first || $kind == refresh ]]; then
        written1=$(hwm_psql -qAt -c "SELECT count(*) FROM $t")
    else
        written1=$(hwm_psql -qAt -c "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables WHERE relid = '$t'::regclass")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$rep" "$m" "$(((t1 - t0) / 1000000))" "$model_ms" "$((written1 - written0))" >>"$RAW"
    hwm_log "rep $rep $kind $m: $(((t1 - t0) / 1000000)) ms wall, $model_ms ms model, $((written1 - written0)) row versions written"
}
hwm_log "first runs of ${first_models[*]} ($N rows), then inc_delete_insert's (untimed)"
for ((rep = 1; rep <= REPS; rep++)); do
    for ((i = 0; i < ${#first_models[@]}; i++)); do
        m=${first_models[$(((i + rep) % ${#first_models[@]}))]}
        drop_model "$m"
        timed "$rep" first "$m"
    done
done
hwm_log "--full-refresh of ${first_models[*]}"
# (a CHECKPOINT before each, as drop_model does before a first run: each
# refresh writes a table and its WAL anew; without it the refreshes of the
# first repetitions all ran slow, while what the runs before had written
# was still being flushed, and which model drew them decided the medians)
for ((rep = 1; rep <= REPS; rep++)); do
    for ((i = 0; i < ${#first_models[@]}; i++)); do
        hwm_psql -q -o /dev/null -c "CHECKPOINT"
        timed "$rep" refresh "${first_models[$(((i + rep) % ${#first_models[@]}))]}"
    done
done
dbt_cmd run --select inc_delete_insert
# dbt's models get what a user would give them: an index for their max()
# filter and the key (hwm's has its primary key)
hwm_psql -q -o /dev/null -c "CREATE INDEX ON dw.inc_merge (updated_at)" -c "CREATE INDEX ON dw.inc_delete_insert (updated_at)" \
    -c "ALTER TABLE dw.inc_merge ADD PRIMARY KEY (id)" -c "ALTER TABLE dw.inc_delete_insert ADD PRIMARY KEY (id)" -c "VACUUM (ANALYZE)"

for ((rep = 1; rep <= REPS; rep++)); do
    for kind in fresh resent; do
        slice "$rep" "$kind"
        for ((i = 0; i < ${#models[@]}; i++)); do timed "$rep" "$kind" "${models[$(((i + rep) % ${#models[@]}))]}"; done
    done
done
# every model holds the source's rows
check=$(hwm_psql -qAt -c "SELECT string_agg(m || ' ' || d, ', ') FROM (
    SELECT 'hwm' m, (SELECT count(*) FROM (TABLE bench.src EXCEPT TABLE dw.hwm) x) d
    UNION ALL SELECT 'inc_merge', (SELECT count(*) FROM (TABLE bench.src EXCEPT TABLE dw.inc_merge) x)
    UNION ALL SELECT 'inc_delete_insert', (SELECT count(*) FROM (TABLE bench.src EXCEPT TABLE dw.inc_delete_insert) x)
    $([[ -n $BASE ]] && echo "UNION ALL SELECT 'hwm_base', (SELECT count(*) FROM (TABLE bench.src EXCEPT TABLE dw_base.hwm) x)")) c")

"$venv/bin/python" - "$RAW" "$BENCH/DBT_MODELS.md" "$COMMAND" "$check" \
    "$("$PG_CONFIG" --version)" "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB" "$BASE" <<'PY'
import csv, statistics, sys, datetime
raw, out, command, check, pg, machine, base = sys.argv[1:8]
rows = list(csv.reader(open(raw), delimiter="\t"))
def med(kind, model, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == kind and r[2] == model)
lines = ["# materialized='hwm' against dbt's incremental models", "",
         f"Command: `{command}` ({datetime.date.today()}, {pg}, {machine}, dbt-core 1.10.15, dbt-postgres 1.9.1).", "",
         "`first`: the first run of each model over the whole source (each dropped before), hwm's with its",
         "primary key, dbt's `table` (tbl) and incremental merge models as CREATE TABLE AS without one, and",
         "the table model with the key hwm's table has (tbl_key: a unique index on id, built after the CREATE TABLE AS).",
         "`refresh`: `dbt run --full-refresh` of the same four (hwm's rebuilt aside and swapped in).", "",
         "Each repetition loads two slices into three models of the same source: `fresh` (new rows only) and",
         "`resent` (half of the slice already in every target: dbt's models re-read a day below their newest row,",
         "hwm reads from its watermark, so both read the whole slice). Medians of the repetitions; a ratio above 1",
         "means dbt's model took longer than the hwm model." + (f" hwm_base: the hwm model of the package at {base}, in a copy" if base else ""),
         *(["of the project whose tables are in schema dw_base, in the same rotation."] if base else []), "",
         "| slice | model | `dbt run` wall ms | model ms | row versions written | wall / hwm | model / hwm |",
         "|---|---|---|---|---|---|---|"]
for kind in ("first", "refresh", "fresh", "resent"):
    hw, hm = med(kind, "hwm", 3), med(kind, "hwm", 4)
    for m in (("hwm", "tbl", "tbl_key", "inc_merge") if kind in ("first", "refresh") else ("hwm", "inc_merge", "inc_delete_insert")) + (("hwm_base",) if base else ()):
        w, mm, wr = med(kind, m, 3), med(kind, m, 4), med(kind, m, 5)
        lines.append(f"| {kind} | {m} | {w:.0f} | {mm:.0f} | {wr:.0f} | {w / hw:.2f} | {mm / hm:.2f} |")
lines += ["", f"Rows of the source missing from each model at the end: {check}.", "",
          "Raw figures (kind, repetition, model, wall ms, model ms, row versions written):", "", "```"]
lines += ["\t".join(r) for r in rows] + ["```", ""]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
PY
