#!/usr/bin/env bash
# test/dbt/run.sh: the dbt package (dbt/hwm) in a real dbt project.
#
# Installs dbt-core and dbt-postgres from PyPI into a virtual environment
# (once per machine and versions, cached in /var/cache/hwm),
# starts a throwaway cluster with hwm (scripts/lib.sh), creates source and
# target tables and pipelines, and runs the example project in
# test/dbt/hwm_example, whose hooks call hwm from every place dbt offers:
# on-run-start, on-run-end, a model's pre-hook and post-hook inside the
# model's transaction, before_begin and after_commit hooks, and
# `dbt run-operation`.  It checks the tables after each step: the first
# `dbt run` loads every pipeline once, the second changes nothing, new
# source rows are loaded exactly once by the third, and an hwm error inside
# a hook fails the dbt run and leaves everything as it was.  Then
# test/dbt/models.sh runs the models of test/dbt/hwm_models, which are hwm
# pipelines themselves (materialized='hwm' and 'hwm_interval'), next to
# dbt's own incremental and microbatch models under late-committing writers,
# and those of test/dbt/hwm_other, a second project in the same schema.
#
# Prints TAP lines (ok N - ..., not ok N - ...) that scripts/test.sh counts,
# and exits non-zero when any check failed.  Needs hwm installed and PyPI
# reachable: if pip cannot install dbt, that is a failed check, not a skip.
# HWM_DBT_VENV=DIR reuses (or creates) the virtual environment in DIR;
# HWM_DBT_PART=models runs only the checks of test/dbt/models.sh (its two
# halves in turn), HWM_DBT_PART=models1 or models2 one half of them
# (test/dbt/models1.sh, models2.sh), HWM_DBT_PART=readme only those of
# test/dbt/readme.sh, HWM_DBT_PART=hooks all but the models' (each part
# starts a cluster and copies the projects into a directory of its own, so
# parts can run at once; scripts/test.sh runs models1, models2 and hooks
# side by side).
set -uo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

# Versions known to work with Python 3.11 and PostgreSQL 15.
DBT_CORE_VERSION=1.10.15
DBT_POSTGRES_VERSION=1.9.1

n=0 nfailed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); nfailed=$((nfailed + 1)); echo "not ok $n - $1"; }
finish() {
    echo "1..$n"
    ((nfailed == 0)) || { echo "# $nfailed of $n dbt checks failed" >&2; exit 1; }
    exit 0
}
# once_ok NAME: ok NAME, but for HWM_DBT_PART=models2, which repeats the
# set-up that models1 checks (dbt installed, dbt deps of the models
# project): there a comment line, so that the models' checks count the same
# whether they run in one part or two.  (A failure is not_ok in either.)
once_ok() {
    if [[ ${HWM_DBT_PART:-all} == models2 ]]; then
        echo "# ok - $1 (set-up, counted by models1)"
    else
        ok "$1"
    fi
}
# check NAME EXPECTED ACTUAL
check() {
    if [[ $2 == "$3" ]]; then
        ok "$1"
    else
        not_ok "$1"
        { echo "expected:"; echo "$2"; echo "got:"; echo "$3"; } | sed 's/^/#   /'
        return 1
    fi
}

work=$(mktemp -d /tmp/hwm-dbt.XXXXXX)
hwm_on_exit "rm -rf '$work'"

# --- dbt from PyPI -----------------------------------------------------------
# Installed once per machine and versions into the cache beside the
# PostgreSQL builds (HWM_CACHE, /var/cache/hwm): dbt-VERSION-VERSION, used
# once its stamp says the install finished; HWM_DBT_VENV names another.
# One install at a time (a lock), so parallel runs share it.
venv=${HWM_DBT_VENV:-${HWM_CACHE:-/var/cache/hwm}/dbt-$DBT_CORE_VERSION-$DBT_POSTGRES_VERSION}
if [[ ! -x $venv/bin/dbt || ( -z ${HWM_DBT_VENV:-} && ! -f $venv/.hwm-complete ) ]]; then
    mkdir -p "$(dirname "$venv")"
    exec {venv_lock}>"$venv.lock"
    flock "$venv_lock"
fi
if [[ ! -x $venv/bin/dbt || ( -z ${HWM_DBT_VENV:-} && ! -f $venv/.hwm-complete ) ]]; then
    # an unfinished install of the cache's is made again (not HWM_DBT_VENV's)
    [[ -n ${HWM_DBT_VENV:-} ]] || rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        hwm_apt_install python3 python3-venv
        rm -rf "$venv"
        python3 -m venv "$venv"
    fi
    hwm_log "pip install dbt-core==$DBT_CORE_VERSION dbt-postgres==$DBT_POSTGRES_VERSION into $venv"
    if ! "$venv/bin/pip" install -q --disable-pip-version-check \
        "dbt-core==$DBT_CORE_VERSION" "dbt-postgres==$DBT_POSTGRES_VERSION" >"$work/pip.log" 2>&1; then
        tail -n 20 "$work/pip.log" | sed 's/^/# /'
        [[ -n ${HWM_DBT_VENV:-} ]] || rm -rf "$venv"
        not_ok "pip install dbt-core==$DBT_CORE_VERSION dbt-postgres==$DBT_POSTGRES_VERSION (is PyPI reachable?)"
        finish
    fi
    [[ -n ${HWM_DBT_VENV:-} ]] || date -u +%FT%TZ >"$venv/.hwm-complete"
else
    hwm_log "dbt from $venv (cached)"
fi
# (not `dbt --version`, which asks PyPI for the latest release)
installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("dbt-core"), m.version("dbt-postgres"))' 2>&1)
if [[ $installed == "$DBT_CORE_VERSION $DBT_POSTGRES_VERSION" ]]; then
    once_ok "dbt-core $DBT_CORE_VERSION and dbt-postgres $DBT_POSTGRES_VERSION installed"
else
    check "dbt-core $DBT_CORE_VERSION and dbt-postgres $DBT_POSTGRES_VERSION installed" \
        "$DBT_CORE_VERSION $DBT_POSTGRES_VERSION" "$installed"
fi

# --- a cluster with sources, targets and pipelines ---------------------------
hwm_start_cluster || { not_ok "start a cluster"; finish; }
hwm_psql -q -o /dev/null <<'SQL'
CREATE EXTENSION hwm;
CREATE SCHEMA raw;
CREATE SCHEMA mart;
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['events', 'orders', 'customers', 'refunds', 'extra', 'history'] LOOP
        EXECUTE format('CREATE TABLE raw.%I (id int PRIMARY KEY, day date NOT NULL,
                        updated_at timestamptz NOT NULL, amount numeric NOT NULL)', t);
        EXECUTE format('CREATE TABLE mart.%I (LIKE raw.%I INCLUDING ALL)', t, t);
        EXECUTE format($q$INSERT INTO raw.%I
                          SELECT i, date '2024-01-01' + i / 10,
                                 timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i
                            FROM generate_series(1, 30) i$q$, t);
    END LOOP;
END $$;
-- dbt logs in as an ordinary role that owns the pipelines (hwm refuses
-- superuser-owned ones) and builds its models in its own schema.
CREATE ROLE dbt LOGIN;
GRANT CREATE ON DATABASE postgres TO dbt;
GRANT USAGE ON SCHEMA raw, mart TO dbt;
GRANT SELECT ON ALL TABLES IN SCHEMA raw TO dbt;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA mart TO dbt;
SET ROLE dbt;
SELECT hwm.create_pipeline('events', 'raw.events', 'mart.events', '{id}', 'updated_at',
                           partition_column => 'day', lookback => 1);
SELECT hwm.create_pipeline('orders', 'raw.orders', 'mart.orders', '{id}', 'id');
SELECT hwm.create_pipeline('customers', 'raw.customers', 'mart.customers', '{id}', 'id');
SELECT hwm.create_pipeline('refunds', 'raw.refunds', 'mart.refunds', '{id}', 'id');
SELECT hwm.create_pipeline('extra', 'raw.extra', 'mart.extra', '{id}', 'id', partition_column => 'day');
SELECT hwm.create_pipeline('history', 'raw.history', 'mart.history', '{id}', 'id', partition_column => 'day');
RESET ROLE;
SQL
q() { hwm_psql -qAt -c "$1"; }

# --- the project, its profile and the package ---------------------------------
# Copied with the repository's layout, so packages.yml's relative path holds.
mkdir -p "$work/repo/test/dbt" "$work/repo/dbt" "$work/profiles"
cp -r "$REPO/dbt/hwm" "$work/repo/dbt/"
cp -r "$REPO/test/dbt/hwm_example" "$REPO/test/dbt/hwm_models" "$REPO/test/dbt/hwm_other" "$work/repo/test/dbt/"
project=$work/repo/test/dbt/hwm_example
cat >"$work/profiles/profiles.yml" <<EOF
hwm_example:
  target: test
  outputs:
    test:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: dbt
      password: unused
      dbname: postgres
      schema: analytics
      threads: 1
hwm_models:
  target: test
  outputs:
    test:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: dbt
      password: unused
      dbname: postgres
      schema: dw
      threads: 4
    su:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: postgres
      password: unused
      dbname: postgres
      schema: dw
      threads: 1
hwm_other:
  target: test
  outputs:
    test:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: dbt
      password: unused
      dbname: postgres
      schema: dw
      threads: 2
EOF
export DBT_PROFILES_DIR=$work/profiles DBT_SEND_ANONYMOUS_USAGE_STATS=false DO_NOT_TRACK=1 \
    DBT_USE_COLORS=false DBT_LOG_PATH=$work/logs DBT_TARGET_PATH=$work/target

with_backfill=false
if [[ $(q "SELECT to_regproc('hwm.backfill') IS NOT NULL") == t ]]; then
    with_backfill=true
fi
vars="{with_backfill: $with_backfill}"

# dbt_ok NAME ARGS...: run dbt, expect success; its output goes to a log
# that is shown only on failure.
step=0
dbt_ok() {
    local name=$1 log
    shift
    step=$((step + 1))
    log=$work/dbt-$step.log
    if (cd "$project" && "$venv/bin/dbt" "$@") >"$log" 2>&1; then
        ok "$name"
    else
        not_ok "$name"
        tail -n 40 "$log" | sed 's/^/# /'
    fi
}

# dbt_in DIR ARGS...: run dbt in the project DIR; its output in $dbt_log, a
# log of its own per call.  Bounded: a run that waited for a lock by mistake
# would never end (10 minutes, as dbt alone takes a minute on a busy machine).
dbt_calls=0
dbt_in() {
    local dir=$1
    shift
    dbt_calls=$((dbt_calls + 1))
    dbt_log=$work/dbt-in-$dbt_calls.log
    (cd "$dir" && timeout 600 "$venv/bin/dbt" "$@") >"$dbt_log" 2>&1
}
# dbt_pass NAME DIR ARGS...: dbt_in, expecting success.
dbt_pass() {
    local name=$1
    shift
    if dbt_in "$@"; then
        ok "$name"
    else
        not_ok "$name"
        tail -n 30 "$dbt_log" | sed 's/^/# /'
    fi
}
# dbt_fail NAME PATTERN DIR ARGS...: dbt_in, expecting failure with PATTERN
# (grep -E) in dbt's output.
dbt_fail() {
    local name=$1 pattern=$2
    shift 2
    if dbt_in "$@"; then
        not_ok "$name (dbt succeeded)"
        tail -n 20 "$dbt_log" | sed 's/^/# /'
    elif grep -qE "$pattern" "$dbt_log"; then
        ok "$name"
    else
        not_ok "$name (no /$pattern/ in dbt's output)"
        tail -n 20 "$dbt_log" | sed 's/^/# /'
    fi
}
# dbt_said NAME PATTERN LOG: dbt's output in LOG has PATTERN (grep -E).
dbt_said() {
    if grep -qE "$2" "$3"; then
        ok "$1"
    else
        not_ok "$1 (no /$2/ in dbt's output)"
        grep -E 'hwm|rror' "$3" | tail -n 10 | sed 's/^/# /'
    fi
}

# The state of every target, and the facts of the runs after run_id $1.
targets_sql="SELECT string_agg(t || ':' || n || ':' || s, ' ' ORDER BY t) FROM (
    SELECT 'events' t, count(*) n, sum(hashtext(x::text)) s FROM mart.events x
    UNION ALL SELECT 'orders', count(*), sum(hashtext(x::text)) FROM mart.orders x
    UNION ALL SELECT 'customers', count(*), sum(hashtext(x::text)) FROM mart.customers x
    UNION ALL SELECT 'refunds', count(*), sum(hashtext(x::text)) FROM mart.refunds x
    UNION ALL SELECT 'extra', count(*), sum(hashtext(x::text)) FROM mart.extra x
    UNION ALL SELECT 'history', count(*), sum(hashtext(x::text)) FROM mart.history x) c"
runs_after() {
    q "SELECT coalesce(string_agg(pipeline || ' ' || kind || ' ' || coalesce(rows_upserted, 0)
                                  || '/' || coalesce(rows_deleted, 0) || '/' || coalesce(rows_inserted, 0),
                                  ', ' ORDER BY run_id), '')
         FROM hwm.runs WHERE run_id > $1 AND kind <> 'backfill'"
}
# same_as_source NAME TABLE...: each mart.TABLE has exactly raw.TABLE's rows.
same_as_source() {
    local name=$1 t d bad=""
    shift
    for t in "$@"; do
        d=$(q "SELECT (SELECT count(*) FROM (TABLE raw.$t EXCEPT TABLE mart.$t) a)
                    + (SELECT count(*) FROM (TABLE mart.$t EXCEPT TABLE raw.$t) b)")
        [[ $d == 0 ]] || bad+="$t differs in $d rows; "
    done
    check "$name" "" "$bad"
}

# HWM_DBT_PART=models (models1, models2) runs only test/dbt/models.sh (one
# half of it); =hooks all but it (scripts/test.sh runs them side by side).
case ${HWM_DBT_PART:-all} in
all | hooks | readme | models | models1 | models2) ;;
*) not_ok "HWM_DBT_PART=$HWM_DBT_PART: no such part (all, hooks, readme, models, models1, models2)"; finish ;;
esac
if [[ ${HWM_DBT_PART:-all} == all || ${HWM_DBT_PART:-all} == hooks ]]; then
dbt_ok "dbt deps installs the local hwm package" deps

# --- what the macros render for a hook ----------------------------------------
dbt_ok "dbt compile of an analysis calling every macro" compile --select hwm_calls
check "the macros render quoted literals, NULL and named arguments" \
"SELECT * FROM hwm.run('orders', nowait => false);
SELECT * FROM hwm.run('it''s', nowait => true);
SELECT * FROM hwm.overwrite('events', '2024-01-01', '2024-01-02', nowait => false);
CALL hwm.backfill('extra', '2024-01-01', '2024-01-03', batch_size => 2, dry_run => false);
CALL hwm.backfill('extra', '2024-01-01', '2024-01-03', batch_size => 1, dry_run => true);
CALL hwm.catch_up('orders');
SELECT hwm.set_watermark('orders', NULL);
CALL hwm.reconcile('orders', NULL, '100', batch_size => 500, dry_run => false);" \
    "$(grep -v '^--' "$work/target/compiled/hwm_example/analyses/hwm_calls.sql" 2>&1)"

# --- first dbt run: every pipeline loads once ----------------------------------
dbt_ok "first dbt run succeeds (hwm called from every kind of hook)" run --vars "$vars"
same_as_source "after the first dbt run, events, orders, customers and refunds equal their sources" events orders customers refunds
check "on-run-start, in-transaction pre-hook and post-hook, before_begin, after_commit and on-run-end each ran hwm once" \
    "events load 30/0/0, customers load 30/0/0, refunds load 30/0/0, orders load 30/0/0, orders load 0/0/0, events overwrite 0/0/0" \
    "$(runs_after 0)"
if $with_backfill; then
    check "on-run-end ran hwm.backfill inside dbt's transaction: days 1 to 3 of history loaded" \
        "29|$(q "SELECT count(*) FROM raw.history WHERE day <= '2024-01-03'")" \
        "$(q "SELECT count(*) FROM mart.history")|$(q "SELECT count(*) FROM mart.history WHERE day <= '2024-01-03'")"
else
    echo "# hwm.backfill is not in this build: hwm_backfill is only checked as rendered SQL"
fi
check "the model built in the pre-hook's transaction reads what its pre-hook loaded" \
    "30|465" "$(q "SELECT sum(orders), sum(amount) FROM analytics.orders_daily")"
check "the in-transaction pre-hook committed in the model's transaction" t \
    "$(q "SELECT xmin::text = (SELECT xmin::text FROM pg_class WHERE oid = 'analytics.orders_daily'::regclass)
            FROM hwm.runs WHERE pipeline = 'orders' ORDER BY run_id LIMIT 1")"
check "the before_begin pre-hook committed in a transaction of its own" f \
    "$(q "SELECT xmin::text = (SELECT xmin::text FROM pg_class WHERE oid = 'analytics.customers_daily'::regclass)
            FROM hwm.runs WHERE pipeline = 'customers' ORDER BY run_id LIMIT 1")"

# --- run-operation -----------------------------------------------------------
dbt_ok "dbt run-operation hwm_run" run-operation hwm_run --args '{pipeline: extra}'
check "run-operation hwm_run loaded the pipeline and committed" "30" "$(q "SELECT count(*) FROM mart.extra")"
if grep -q 'hwm: rows_upserted=30' "$work/dbt-$step.log"; then
    ok "run-operation logs hwm's summary row"
else
    not_ok "run-operation logs hwm's summary row"
    sed 's/^/# /' "$work/dbt-$step.log" | tail -n 20
fi
q "UPDATE raw.extra SET amount = -1 WHERE id = 15" >/dev/null
dbt_ok "dbt run-operation hwm_overwrite" run-operation hwm_overwrite \
    --args "{pipeline: extra, from_partition: '2024-01-02', to_partition: '2024-01-02'}"
check "run-operation hwm_overwrite rewrote the changed row" "-1" "$(q "SELECT amount FROM mart.extra WHERE id = 15")"
if $with_backfill; then
    dbt_ok "dbt run-operation hwm_backfill" run-operation hwm_backfill \
        --args "{pipeline: history, from_partition: '2024-01-01', to_partition: '2024-01-04', batch_size: 2}"
    same_as_source "run-operation hwm_backfill completed history" history
fi
same_as_source "after the run-operations, extra equals its source too" extra

# --- second dbt run and run-operation: nothing changes --------------------------
before=$(q "$targets_sql")
last=$(q "SELECT max(run_id) FROM hwm.runs")
dbt_ok "second dbt run succeeds" run --vars "$vars"
dbt_ok "second dbt run-operation hwm_run succeeds" run-operation hwm_run --args '{pipeline: extra}'
check "the second dbt run and run-operation changed no target" "$before" "$(q "$targets_sql")"
check "... though every hook ran hwm again, each loading nothing" \
    "events load 0/0/0, customers load 0/0/0, refunds load 0/0/0, orders load 0/0/0, orders load 0/0/0, events overwrite 0/0/0, extra load 0/0/0" \
    "$(runs_after "$last")"

# --- new source rows: loaded exactly once ---------------------------------------
hwm_psql -q -o /dev/null <<'SQL'
INSERT INTO raw.events VALUES (31, '2024-01-04', '2024-01-02 07:00+00', 31), (32, '2024-01-04', '2024-01-02 08:00+00', 32);
INSERT INTO raw.orders VALUES (31, '2024-01-04', now(), 31);
INSERT INTO raw.customers VALUES (31, '2024-01-04', now(), 31), (32, '2024-01-04', now(), 32), (33, '2024-01-04', now(), 33);
INSERT INTO raw.refunds VALUES (31, '2024-01-04', now(), 31);
SQL
last=$(q "SELECT max(run_id) FROM hwm.runs")
dbt_ok "third dbt run succeeds" run --vars "{with_backfill: false}"
same_as_source "the new source rows are in the targets" events orders customers refunds
check "each hook loaded exactly the new rows, once" \
    "events load 2/0/0, customers load 3/0/0, refunds load 1/0/0, orders load 1/0/0, orders load 0/0/0, events overwrite 0/0/0" \
    "$(runs_after "$last")"
check "nothing doubled" "32 31 33 31" \
    "$(q "SELECT (SELECT count(DISTINCT id) FROM mart.events) || ' ' || (SELECT count(*) FROM mart.orders) || ' '
               || (SELECT count(*) FROM mart.customers) || ' ' || (SELECT count(*) FROM mart.refunds)")"

# --- an hwm error inside a hook fails the run and changes nothing ----------------
q "INSERT INTO raw.orders VALUES (32, '2024-01-04', now(), 32)" >/dev/null
before=$(q "$targets_sql")
model_before=$(q "SELECT sum(orders) FROM analytics.orders_daily")
last=$(q "SELECT max(run_id) FROM hwm.runs")
step=$((step + 1))
if (cd "$project" && "$venv/bin/dbt" run --select orders_daily --vars '{orders_pipeline: no_such_pipeline}') \
    >"$work/dbt-$step.log" 2>&1; then
    not_ok "a pre-hook calling an unknown pipeline fails the dbt run"
else
    ok "a pre-hook calling an unknown pipeline fails the dbt run"
fi
if grep -q 'pipeline "no_such_pipeline" does not exist' "$work/dbt-$step.log"; then
    ok "... with hwm's error in dbt's output"
else
    not_ok "... with hwm's error in dbt's output"
    tail -n 20 "$work/dbt-$step.log" | sed 's/^/# /'
fi
check "... and the model, the targets and the orders pipeline's history are unchanged" \
    "$before|$model_before|" \
    "$(q "$targets_sql")|$(q "SELECT sum(orders) FROM analytics.orders_daily")|$(runs_after "$last" | grep -o 'orders[^,]*')"

# --- history models (materialized='hwm', history=true) ------------------------------
# shellcheck source=test/dbt/history.sh
source "$REPO/test/dbt/history.sh"

fi  # HWM_DBT_PART

# --- dbt/hwm/README.md's Getting started, followed literally ---------------------------
if [[ ${HWM_DBT_PART:-all} == all || ${HWM_DBT_PART:-all} == hooks || ${HWM_DBT_PART:-all} == readme ]]; then
    # shellcheck source=test/dbt/readme.sh
    source "$REPO/test/dbt/readme.sh"
    [[ ${HWM_DBT_PART:-all} == all ]] || finish
fi

# --- models that are hwm pipelines: materialized='hwm' and 'hwm_interval' ----------
# (models.sh runs models1.sh, models2.sh or both, as HWM_DBT_PART says)
# shellcheck source=test/dbt/models.sh
source "$REPO/test/dbt/models.sh"

finish
