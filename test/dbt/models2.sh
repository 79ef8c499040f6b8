# shellcheck shell=bash
# test/dbt/models2.sh: the second half of test/dbt/models.sh's checks,
# which sources it (HWM_DBT_PART=models2, or both halves): hwm models over
# other models, --empty, rows_affected, failures and warnings, contracts,
# retiring, two projects in one schema, schedule and a live chain.  It uses
# models.sh's sources, helpers and `dbt deps`, and makes the rest of its
# tables itself.

# --- hwm models over other models: pipelines outlive their upstream's rebuilds ------
# (issue 29, case 1) dbt drops a table model and creates it again on every run,
# replaces a view, drops an incremental model on --full-refresh, and changes
# materialization by dropping the old relation: each time with CASCADE.  The
# hwm models reading it (up_hwm: materialized='hwm', scheduled; up_hourly:
# 'hwm_interval') keep their pipelines, watermarks, history and schedule.
hwm_psql -q -o /dev/null <<'SQL'
CREATE TABLE shop.upstream (id int PRIMARY KEY, updated_at timestamptz NOT NULL, kind text NOT NULL, amount int NOT NULL);
INSERT INTO shop.upstream
SELECT i, date_trunc('hour', now()) - interval '5 hours' + i * interval '4 minutes', (ARRAY['a', 'b'])[1 + i % 2], i
  FROM generate_series(1, 60) i;
GRANT SELECT ON shop.upstream TO dbt;
SQL
up_ident() { q "SELECT pipeline || '|' || created_at || '|' || coalesce(schedule::text, '-') FROM hwm.state WHERE pipeline IN ('dw.up_hwm', 'dw.up_hourly') ORDER BY 1" | tr '\n' ' '; }
up_same() { same_rows "$1" dw.up_hwm "SELECT id, updated_at, kind, amount * 10 FROM shop.upstream"; }
up_hours() { same_rows "$1" dw.up_hourly "SELECT date_trunc('hour', updated_at), kind, count(*), sum(amount) FROM shop.upstream
    WHERE updated_at < (SELECT watermark::timestamptz FROM hwm.state WHERE pipeline = 'dw.up_hourly') GROUP BY 1, 2"; }
# New upstream rows are stamped up to a minute ago (loaded by the next run,
# past hwm.start_margin), never before the current hour began, and each later
# than the one before: a row stamped into an hour the hwm_interval model has
# already computed would stay out of it by design (until a rerun), so
# up_hours failed whenever the clock crossed an hour during this section
# (now() - 1 minute, in the first minute of an hour).  In an hour's first two
# minutes the stamp is the hour plus half the time since.
recent="greatest(now() - interval '1 minute', date_trunc('hour', now()) + (now() - date_trunc('hour', now())) / 2)"
mdbt "first dbt run of a table model and the hwm models reading it" run --select upstream
mlogged "... both warn that dbt rebuilds their upstream wholesale, with the remedy (issue 41)" \
    "hwm model dw\.up_hwm reads up_stage \(table\), which dbt rebuilds wholesale.*delay"
mlogged "... the hwm_interval model too" "hwm model dw\.up_hourly reads up_stage \(table\), which dbt rebuilds wholesale"
up_same "... the hwm model has the upstream's rows"
up_hours "... the hwm_interval model every finished hour"
ident=$(up_ident)
check "... both pipelines exist, the hwm model's scheduled" "2|01:00:00" \
    "$(q "SELECT count(*) FROM hwm.state WHERE pipeline IN ('dw.up_hwm', 'dw.up_hourly')")|$(q "SELECT schedule FROM hwm.state WHERE pipeline = 'dw.up_hwm'")"
check "... and their source views do not depend on the upstream table" "0" \
    "$(q "SELECT count(*) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
            WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = 'dw.up_stage'::regclass
              AND r.ev_class IN ('dw.up_hwm__hwm_src'::regclass, 'dw.up_hourly__hwm_src'::regclass)")"
wm_before=$(q "SELECT watermark FROM hwm.state WHERE pipeline = 'dw.up_hwm'")
runs_before=$(q "SELECT count(*) FROM hwm.runs WHERE pipeline = 'dw.up_hwm' AND kind = 'load'")
q "INSERT INTO shop.upstream VALUES (61, $recent, 'a', 61), (62, $recent, 'b', 62)" >/dev/null
mdbt "a second dbt run: dbt drops and re-creates the table model (CASCADE)" run --select upstream
check "... the pipelines are the same ones (created_at and schedule kept)" "$ident" "$(up_ident)"
up_same "... and the hwm model loaded the new rows"
check "... from the watermark it had, its history continued" "t|t" \
    "$(q "SELECT watermark_before = '$wm_before' FROM hwm.runs WHERE pipeline = 'dw.up_hwm' AND kind = 'load' AND rows_upserted > 0 ORDER BY run_id DESC LIMIT 1")|$(q "SELECT count(*) > $runs_before FROM hwm.runs WHERE pipeline = 'dw.up_hwm' AND kind = 'load'")"
# The upstream dropped while the hwm models are not run: a run of the
# pipeline in between fails, and the next dbt run carries on.
q "SET ROLE dbt; DROP TABLE dw.up_stage CASCADE" >/dev/null
check "an upstream dropped by hand (CASCADE) leaves both pipelines" "$ident" "$(up_ident)"
check "... a run in between fails, saying what is missing" "1" \
    "$(q "SET ROLE dbt; SELECT * FROM hwm.run('dw.up_hwm')" 2>&1 | grep -c 'up_stage.*does not exist')"
q "INSERT INTO shop.upstream VALUES (63, $recent, 'a', 63)" >/dev/null
mdbt "the upstream as a view now (a changed materialization)" run --select upstream --vars "{up_mat: view}"
check "... over a view, hwm follows the view to its tables: no warning" "0" \
    "$(grep -c 'which dbt rebuilds wholesale' "$mlog")"
check "... same pipelines" "$ident" "$(up_ident)"
up_same "... the hwm model has every row"
q "INSERT INTO shop.upstream VALUES (64, $recent, 'b', 64)" >/dev/null
mdbt "the upstream as an incremental model (replacing the view)" run --select upstream --vars "{up_mat: incremental}"
q "INSERT INTO shop.upstream VALUES (65, $recent, 'a', 65)" >/dev/null
mdbt "... then --full-refresh of the upstream alone" run --select up_stage --full-refresh --vars "{up_mat: incremental}"
mdbt "... and a plain run of the hwm models" run --select up_hwm up_hourly --vars "{up_mat: incremental}"
check "... same pipelines" "$ident" "$(up_ident)"
up_same "... the hwm model has every row"
up_hours "... the hwm_interval model every finished hour"

# --- dbt run --empty never changes a live pipeline -----------------------------------
# (issue 29, case 3) --empty rewrites every ref() and source() to read no rows.
up_live() { q "SELECT p.pipeline || '|' || p.source::oid || '|' || coalesce(p.watermark, '-') || '|' || coalesce(p.command, '-') || '|' || coalesce(p.schedule::text, '-')
                 FROM hwm.state p WHERE p.pipeline IN ('dw.up_hwm', 'dw.up_hourly') ORDER BY 1" | tr '\n' ' '
              q "SELECT md5(prosrc) FROM pg_proc WHERE oid = 'dw.up_hwm__hwm_fn()'::regprocedure"; }
live_before=$(up_live)
mdbt "dbt run --empty of the hwm models" run --select up_hwm up_hourly fresh_empty --empty --vars "{up_mat: incremental}"
mlogged "... says it leaves their pipelines alone" 'hwm dw\.up_hwm: dbt run --empty: .*left as they are'
check "... and leaves their source, function, watermark, command and schedule as they were" "$live_before" "$(up_live)"
q "INSERT INTO shop.upstream VALUES (66, $recent, 'b', 66)" >/dev/null
mdbt "... the upstream model rebuilt" run --select up_stage --vars "{up_mat: incremental}"
check "... a run of the pipeline after it still loads the new row" "1" \
    "$(q "SET ROLE dbt; SELECT rows_upserted FROM hwm.run('dw.up_hwm')" 2>&1 | tail -n 1)"
check "a first dbt run with --empty makes the table, empty, and no pipeline" "0|0" \
    "$(q "SELECT count(*) FROM dw.fresh_empty")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.fresh_empty'")"
mdbt "... the next dbt run gives it its pipeline and loads" run --select fresh_empty
same_rows "... every row" dw.fresh_empty "TABLE shop.upstream"

# --- what each dbt run loaded: rows_affected, HWM n, concurrent runs -----------------
# (issue 29, case 4) run_results.json's adapter_response of an hwm model is
# `HWM <rows>` with rows_affected the rows it loaded; two dbt runs of one
# model at once each report the runs they made, not each other's.
rr() { "$venv/bin/python" -c 'import json,sys
r=[x for x in json.load(open(sys.argv[1]))["results"] if x["unique_id"]==sys.argv[2]][0]["adapter_response"]
print(str(r.get("rows_affected"))+"|"+str(r.get("_message")))' "$1/run_results.json" "$2" 2>&1; }
q "INSERT INTO shop.upstream SELECT i, now(), 'c', i FROM generate_series(1001, 1300) i" >/dev/null
mdbt "the upstream rebuilt with 300 new rows" run --select up_stage --vars "{up_mat: incremental}"
last=$(q "SELECT max(run_id) FROM hwm.runs")
(cd "$mproject" && timeout 600 "$venv/bin/dbt" run --select up_hwm --vars "{up_mat: incremental}" --target-path "$work/conc1") >"$work/conc1.log" 2>&1 &
c1=$!
(cd "$mproject" && timeout 600 "$venv/bin/dbt" run --select up_hwm --vars "{up_mat: incremental}" --target-path "$work/conc2") >"$work/conc2.log" 2>&1 &
c2=$!
wait "$c1"; s1=$?
wait "$c2"; s2=$?
check "two dbt runs of one hwm model at once both succeed" "0 0" "$s1 $s2"
r1=$(rr "$work/conc1" model.hwm_models.up_hwm)
r2=$(rr "$work/conc2" model.hwm_models.up_hwm)
check "... and their rows_affected add up to the 300 rows loaded, each its own (got $r1 and $r2)" "300|300" \
    "$(( ${r1%%|*} + ${r2%%|*} ))|$(q "SELECT sum(rows_upserted) FROM hwm.runs WHERE pipeline = 'dw.up_hwm' AND run_id > $last")"
check "... each message is HWM <its rows>" "HWM ${r1%%|*}|HWM ${r2%%|*}" "${r1#*|}|${r2#*|}"
if grep -q "OK created sql hwm model dw.up_hwm .*\[HWM [0-9]*" "$work/conc1.log"; then
    ok "... which dbt's log line shows"
else
    not_ok "... which dbt's log line shows"; grep "up_hwm" "$work/conc1.log" | tail -n 5 | sed 's/^/# /'
fi

# --- failures that leave nothing behind, warnings ---------------------------------------
# (issue 29, cases 6, 7, 8)
hwm_psql -q -o /dev/null <<'SQL'
CREATE TABLE shop.nullwm (id int PRIMARY KEY, updated_at timestamptz, v int);
INSERT INTO shop.nullwm VALUES (1, now() - interval '1 hour', 1), (2, NULL, 2), (3, NULL, 3);
GRANT SELECT ON shop.nullwm TO dbt;
CREATE FUNCTION public.cents(numeric) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT ($1 * 100)::bigint';
SQL
mdbt_fails "a model whose output repeats a key fails, naming the model, its unique_key and how to find the repeats" \
    "hwm model dw\.dupes: the model returns more than one row for a value of its unique_key \(id\).*having count\(\*\) > 1" \
    run --select dupes --vars "{dupes: true}"
mlogged "... as a database error, not a compilation error (issue 42)" "Database Error in model dupes"
check "... and its failed first run left no table, helper view, function or pipeline" "|||0" \
    "$(q "SELECT to_regclass('dw.dupes')")|$(q "SELECT to_regclass('dw.dupes__hwm_src')")|$(q "SELECT to_regprocedure('dw.dupes__hwm_fn()')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.dupes'")"
mdbt_fails "a first run whose pipeline hwm refuses (an initial_watermark that is no timestamp) fails" \
    'invalid input syntax for type timestamp with time zone: "last tuesday"' \
    run --select dupes --vars "{dupes: true, dupes_initial_watermark: 'last tuesday'}"
mlogged "... as a database error" "Database Error in model dupes"
check "... in the round trip of its load, which commits nothing: no table, helper view, function or pipeline" "||||0" \
    "$(q "SELECT to_regclass('dw.dupes')")|$(q "SELECT to_regclass('dw.dupes__hwm_src')")|$(q "SELECT to_regclass('dw.dupes__hwm_new')")|$(q "SELECT to_regprocedure('dw.dupes__hwm_fn()')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.dupes'")"
mdbt "source rows with a NULL watermark: the model loads the others" run --select nullwm
mlogged "... and says so, with the count and the column" 'hwm model dw\.nullwm: 2 source rows have a NULL updated_at'
check "... as a dbt warning" "1" "$(grep -c '\[warn *\].*hwm model dw\.nullwm: 2 source rows have a NULL updated_at' "$work/logs/dbt.log")"
mdbt_fails "... which dbt's --warn-error makes an error (issue 42)" \
    "Compilation Error in model nullwm.*|hwm model dw\.nullwm: 2 source rows have a NULL updated_at" --warn-error run --select nullwm
mlogged "... counted in dbt's summary" "ERROR=1"
mdbt "dbt test of the model: the package's generic test hwm.null_watermarks" test --select nullwm
mlogged "... is a warning dbt counts" "Done\. PASS=[0-9]+ WARN=1 ERROR=0"
mdbt_fails "... and an error under --warn-error" "Done\. PASS=[0-9]+ WARN=0 ERROR=1" --warn-error test --select nullwm
mdbt_fails "a model calling a function of its own without its schema fails as a database error, saying why (issue 42)" \
    "search_path = pg_catalog, pg_temp .*a function of your own must be named with its schema" \
    run --select unqualified --vars "{unqualified: true}"
mlogged "... naming the function" "Database Error in model unqualified|42883: function cents\(numeric\) does not exist"
mdbt "a model whose column a view reads" run --select typed
q "SET ROLE dbt; CREATE VIEW dw.typed_view AS SELECT id, amount FROM dw.typed" >/dev/null
mdbt_fails "--full-refresh changing that column's type fails, naming the view and what to do" \
    "column amount changed type from integer to bigint, but views read the columns that change: dw\.typed_view \(column amount\).*Drop those views, run .dbt run --full-refresh --select typed\+" \
    run --select typed --full-refresh --vars "{typed_amount: bigint}"
check "... and changed nothing: the column's type, the pipeline, no staging left" "integer|1||" \
    "$(q "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'dw.typed'::regclass AND attname = 'amount'")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.typed'")|$(q "SELECT to_regclass('dw.typed__hwm_stg')")|$(q "SELECT to_regclass('dw.typed__hwm_new')")"
mdbt_fails "on_schema_change='sync_all_columns' fails the same way" \
    "column amount changed type from integer to bigint, but views read the columns that change: dw\.typed_view" \
    run --select typed --vars "{typed_amount: bigint, typed_osc: sync_all_columns}"
q "SET ROLE dbt; DROP VIEW dw.typed_view" >/dev/null
mdbt "... and once the view is dropped, --full-refresh applies the new type" run --select typed --full-refresh --vars "{typed_amount: bigint}"
check "... to the table" "bigint" "$(q "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'dw.typed'::regclass AND attname = 'amount'")"

# --- dbt's contracts and constraints -------------------------------------------------
# (issue 29, case 2) an enforced contract is checked as dbt checks a table
# model's, on every run, before anything changes; its constraints are the
# table's.
mdbt_fails "an enforced contract the model's SQL breaks fails the first run" \
    "contract" run --select contracted --vars "{contract_amount: bigint}"
check "... before anything was created" "||0" \
    "$(q "SELECT to_regclass('dw.contracted')")|$(q "SELECT to_regclass('dw.contracted__hwm_src')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.contracted'")"
mdbt "an hwm model with an enforced contract that holds" run --select contracted
mlogged "... says that its constraints are the table's (dbt's parser said they were not supported)" \
    "hwm model dw\.contracted: the contract's constraints \((not_null|primary_key|check)(, (not_null|primary_key|check))*\) are the table's"
# (PostgreSQL 18 lists each NOT NULL as a constraint too, contype 'n': left
# out, so that every version shows the same)
check "... gets the contract's constraints and its key" "CHECK ((amount >= 0))|PRIMARY KEY (id)" \
    "$(q "SELECT string_agg(pg_get_constraintdef(oid), '|' ORDER BY contype) FROM pg_constraint WHERE conrelid = 'dw.contracted'::regclass AND contype <> 'n'")"
same_rows "... and loads" dw.contracted "SELECT id, updated_at, amount FROM shop.upstream"
wm=$(q "SELECT watermark FROM hwm.state WHERE pipeline = 'dw.contracted'")
mdbt_fails "an incremental run that breaks the contract fails" "contract" run --select contracted --vars "{contract_amount: bigint}"
mdbt_fails "... and so does a --full-refresh" "contract" run --select contracted --full-refresh --vars "{contract_amount: bigint}"
check "... changing nothing" "integer|$wm" \
    "$(q "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'dw.contracted'::regclass AND attname = 'amount'")|$(q "SELECT watermark FROM hwm.state WHERE pipeline = 'dw.contracted'")"
mdbt "a --full-refresh of the model within its contract" run --select contracted --full-refresh
check "... keeps the contract's constraints (hwm.swap checks the new rows against them)" "CHECK ((amount >= 0))|PRIMARY KEY (id)" \
    "$(q "SELECT string_agg(pg_get_constraintdef(oid), '|' ORDER BY contype) FROM pg_constraint WHERE conrelid = 'dw.contracted'::regclass AND contype <> 'n'")"

# --- retiring models -----------------------------------------------------------------
# (issue 29, case 5) a deleted model's pipeline is named by every dbt run and
# dropped by `dbt run-operation hwm_retire`; a model switched to another
# materialization loses what hwm made for it.
mdbt "an hwm model, scheduled" run --select retiree --vars "{retiree: true}"
check "... has its pipeline" "1" "$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.retiree'")"
mdbt "once the model is gone from the project, a dbt run" run --select ticks
mlogged "... names its pipeline, with its schedule and target" \
    "hwm: pipeline dw\.retiree \(01:00:00, loading dw\.retiree\) was made by an hwm model of this project \(hwm_models\) that the project no longer declares"
check "... in a dbt warning" "t" "$(grep -q '\[warn *\].*hwm: pipeline dw\.retiree (01:00:00' "$work/logs/dbt.log" && echo t || echo f)"
mdbt "dbt run-operation hwm_retire (a dry run by default)" run-operation hwm_retire
mlogged "... lists it" "would drop pipeline dw\.retiree"
check "... and drops nothing" "1" "$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.retiree'")"
mdbt "dbt run-operation hwm_retire --args '{dry_run: false}'" run-operation hwm_retire --args "{dry_run: false}"
check "... drops the pipeline, its view and function, and keeps the table" "0|||dw.retiree" \
    "$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.retiree'")|$(q "SELECT to_regclass('dw.retiree__hwm_src')")|$(q "SELECT to_regprocedure('dw.retiree__hwm_fn()')")|$(q "SELECT to_regclass('dw.retiree')")"
mdbt "the next dbt run" run --select ticks
check "... warns no more" "0" "$(grep -c 'dw\.retiree' "$mlog")"
for mat in incremental table; do
    mdbt "an hwm model (to become $mat)" run --select switcher --full-refresh
    check "... has its pipeline" "1" "$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.switcher'")"
    mdbt "... materialized as $mat now" run --select switcher --vars "{switch_mat: $mat}"
    check "... has no pipeline, helper view or function left" "0||" \
        "$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.switcher'")|$(q "SELECT to_regclass('dw.switcher__hwm_src')")|$(q "SELECT to_regprocedure('dw.switcher__hwm_fn()')")"
    mlogged "... and dbt's output says so" "model dw\.switcher is materialized as $mat now"
done

# --- two projects in one schema ----------------------------------------------------------
# (issue 42) test/dbt/hwm_other builds an hwm and an hwm_interval model in dw,
# the schema of this project's models.  Each project's orphan warnings and
# hwm_retire act on its own pipelines only, as recorded on each pipeline's
# source view; a pipeline made before that record is adopted by the project
# that next declares it; the helpers of a table dropped by hand go with it.
oproject=$work/repo/test/dbt/hwm_other
# odbt NAME ARGS...: as mdbt, in the second project ($mlog is its output)
odbt() {
    dbt_pass "$1" "$oproject" "${@:2}"
    mlog=$dbt_log
}
other_made() { q "SELECT string_agg(s.pipeline || ':' || coalesce(obj_description(s.source, 'pg_class')::jsonb ->> 'project', '-')
                                    || ':' || coalesce(obj_description(s.source, 'pg_class')::jsonb ->> 'model', '-'), ' ' ORDER BY s.pipeline)
                     FROM hwm.state s WHERE s.pipeline LIKE 'dw.other%'"; }
odbt "the second project: deps" deps
odbt "the second project's first dbt run, in the same schema" run
check "... records on each pipeline (hwm and hwm_interval) the project and model that made it" \
    "dw.other_hourly:hwm_other:model.hwm_other.other_hourly dw.other_orders:hwm_other:model.hwm_other.other_orders" "$(other_made)"
mdbt "a dbt run of this project" run --select ticks
check "... names no pipeline of the other project" "0" "$(grep -c 'dw\.other_' "$mlog")"
mdbt "dbt run-operation hwm_retire --args '{dry_run: false}' of this project" run-operation hwm_retire --args "{dry_run: false}"
check "... drops no pipeline, view or function of the other project" "2|dw.other_hourly__hwm_src|dw.other_orders__hwm_fn()" \
    "$(q "SELECT count(*) FROM hwm.state WHERE pipeline LIKE 'dw.other%'")|$(q "SELECT to_regclass('dw.other_hourly__hwm_src')")|$(q "SELECT to_regprocedure('dw.other_orders__hwm_fn()')")"
mdbt_fails "a model of this project on the other project's relation is refused, naming that project" \
    "which dbt project hwm_other made \(its model model\.hwm_other\.other_orders\); this is project hwm_models" \
    run --select intruder --vars "{intruder: true}"
check "... changing nothing" "dw.other_hourly:hwm_other:model.hwm_other.other_hourly dw.other_orders:hwm_other:model.hwm_other.other_orders" "$(other_made)"
# a pipeline made before the record (by an older version of the package)
q "COMMENT ON VIEW dw.other_orders__hwm_src IS NULL" >/dev/null
mdbt "a dbt run of this project while the other's pipeline has no record" run --select ticks
check "... does not name it" "0" "$(grep -c 'dw\.other_' "$mlog")"
mdbt "dbt run-operation hwm_retire of this project" run-operation hwm_retire --args "{dry_run: false}"
mlogged "... lists it apart, not dropped (it may be another project's)" \
    "hwm_retire: pipeline dw\.other_orders .*made by an older version of the hwm package.*not dropped"
check "... and drops it not" "1" "$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.other_orders'")"
odbt "the other project's next dbt run" run
mlogged "... adopts it" "hwm dw\.other_orders: recorded as made by dbt project hwm_other .*adopted"
check "... records it as its own" \
    "dw.other_hourly:hwm_other:model.hwm_other.other_hourly dw.other_orders:hwm_other:model.hwm_other.other_orders" "$(other_made)"
# a deleted hwm_interval model: its pipeline has no target
odbt "the other project without its hwm_interval model" run --vars "{other_hourly: false}"
mlogged "... names that model's pipeline in a warning" \
    "hwm: pipeline dw\.other_hourly \(not scheduled, loading dw\.other_hourly\) was made by an hwm model of this project \(hwm_other\)"
check "... a dbt warning" "t" "$(grep -q '\[warn *\].*hwm: pipeline dw\.other_hourly' "$work/logs/dbt.log" && echo t || echo f)"
odbt "... whose hwm_retire --args '{dry_run: false}'" run-operation hwm_retire --args "{dry_run: false}" --vars "{other_hourly: false}"
check "... drops that pipeline with its view and function, keeping its table and the other pipeline" "dw.other_orders|||dw.other_hourly" \
    "$(q "SELECT string_agg(pipeline, ' ') FROM hwm.state WHERE pipeline LIKE 'dw.other%'")|$(q "SELECT to_regclass('dw.other_hourly__hwm_src')")|$(q "SELECT to_regprocedure('dw.other_hourly__hwm_fn()')")|$(q "SELECT to_regclass('dw.other_hourly')")"
# a target dropped by hand: hwm's sql_drop trigger drops its pipeline, the
# package its helpers (those of its own project only)
q "SET ROLE dbt; DROP TABLE dw.other_orders" >/dev/null
mdbt "after the other project's table was dropped by hand, a dbt run of this project" run --select ticks
check "... leaves the other project's helpers alone" "dw.other_orders__hwm_src|dw.other_orders__hwm_fn()" \
    "$(q "SELECT to_regclass('dw.other_orders__hwm_src')")|$(q "SELECT to_regprocedure('dw.other_orders__hwm_fn()')")"
odbt "... the other project's next dbt run (the model deleted too)" run --vars "{other_hourly: false, other_orders: false}"
check "... drops the helper view and function of its dropped table" "||0" \
    "$(q "SELECT to_regclass('dw.other_orders__hwm_src')")|$(q "SELECT to_regprocedure('dw.other_orders__hwm_fn()')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline LIKE 'dw.other%'")"
mlogged "... and says so" "hwm: the table dw\.other_orders was dropped: its helper view dw\.other_orders__hwm_src and function dw\.other_orders__hwm_fn\(\) were dropped too"

# --- schedule: hwm's background worker keeps the model fresh ---------------------------
mdbt "dbt run of a model with a schedule" run --select ticks
check "... schedules its pipeline" "00:00:01" "$(q "SELECT schedule FROM hwm.state WHERE pipeline = 'dw.ticks'")"
q "INSERT INTO shop.ticks (id, v) VALUES (6, 6)" >/dev/null
for _ in $(seq 1 120); do
    [[ $(q "SELECT count(*) FROM dw.ticks WHERE id = 6") == 1 ]] && break
    sleep 0.5
done
check "the background worker loads a new row without dbt" "1" "$(q "SELECT count(*) FROM dw.ticks WHERE id = 6")" ||
    { q "SELECT now(), * FROM hwm.status WHERE pipeline = 'dw.ticks'"
      q "SELECT run_id, pipeline, status, started_at, run_by, error FROM hwm.runs ORDER BY run_id DESC LIMIT 5"
      q "SELECT pid, backend_type, state, wait_event_type, wait_event, xact_start, left(query, 60) FROM pg_stat_activity WHERE backend_type LIKE 'hwm%' OR application_name LIKE 'hwm%'"
      grep -v 'already a transaction' "$HWM_CLUSTER_DIR/server.log" | tail -n 20; } | sed 's/^/# /' 
# a run of the pipeline in progress (held open): dbt run leaves the load to it
busy_fifo=$work/busy.fifo
mkfifo "$busy_fifo"
hwm_psql -q <"$busy_fifo" >"$work/busy.log" 2>&1 &
busy_pid=$!
exec 8>"$busy_fifo"
echo "SET application_name = 'busy_run'; BEGIN; SELECT * FROM hwm.run('dw.ticks');" >&8
for _ in $(seq 1 100); do
    [[ $(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'busy_run' AND state = 'idle in transaction'") == 1 ]] && break
    sleep 0.1
done
mdbt "dbt run while a run of the scheduled model is in progress" run --select ticks
mlogged "... does not wait for it (nowait) and says so" 'hwm dw\.ticks: a scheduled run of the pipeline was busy'
# (the run held open ends only when the test commits it, below: had dbt
# waited for it, dbt would have hit its timeout and failed above)
check "... and returns while that run is still open" "1" \
    "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'busy_run' AND state = 'idle in transaction'")"
echo "COMMIT;" >&8
exec 8>&-
wait "$busy_pid"
mdbt "dbt run with the schedule removed" run --select ticks --vars "{tick_schedule: null}"
check "... unschedules the pipeline" "" "$(q "SELECT schedule FROM hwm.state WHERE pipeline = 'dw.ticks'")"

# --- a live chain: models scheduled after the hwm models they ref() ------------------
# (issue 41) schedule_after_refs=true schedules a model's pipeline after the
# pipelines of the hwm models it ref()s (hwm.schedule_after): chain_a (every
# second) -> chain_b -> chain_v (a view) -> chain_hourly (hwm_interval).  New
# source rows reach the end of the chain through hwm's background worker,
# which this cluster runs (shared_preload_libraries = 'hwm'), without dbt.
hwm_psql -q -o /dev/null <<'SQL'
CREATE TABLE shop.chain (id int PRIMARY KEY, updated_at timestamptz NOT NULL, kind text NOT NULL, amount int NOT NULL);
-- the first half of the hour before this one
INSERT INTO shop.chain
SELECT i, date_trunc('hour', now()) - interval '1 hour' + i * interval '5 minutes', (ARRAY['a', 'b'])[1 + i % 2], i
  FROM generate_series(0, 5) i;
GRANT SELECT ON shop.chain TO dbt;
SQL
chain_hour=$(q "SELECT min(date_trunc('hour', updated_at)) FROM shop.chain")
# each pipeline's upstreams and schedule ('-': none)
chain_sched() { q "SELECT string_agg(pipeline || ':' || coalesce(after::text, '-') || ':' || coalesce(schedule::text, '-'), ' ' ORDER BY pipeline)
                     FROM hwm.state WHERE pipeline IN ('dw.chain_a', 'dw.chain_b', 'dw.chain_hourly')"; }
chain_b_same() { same_rows "$1" dw.chain_b "SELECT id, updated_at, kind, amount * 10 FROM shop.chain"; }
chain_hourly_sql="SELECT date_trunc('hour', updated_at) AS hour, kind, count(*) AS n, sum(amount * 10) AS amount10 FROM shop.chain GROUP BY 1, 2"
# chain_wait SQL: poll (at most a minute, as for ticks above) until SQL is t
chain_wait() {
    for _ in $(seq 1 120); do
        [[ $(q "$1") == t ]] && return 0
        sleep 0.5
    done
    return 1
}
chain_debug() {
    { q "SELECT now(), pipeline, watermark, next_run_at, last_status, not_scheduled_because FROM hwm.status WHERE pipeline LIKE 'dw.chain%'"
      q "SELECT run_id, pipeline, status, started_at, rows_upserted, watermark_before, watermark_after, error FROM hwm.runs WHERE pipeline LIKE 'dw.chain%' ORDER BY run_id DESC LIMIT 8"
      grep -v 'already a transaction' "$HWM_CLUSTER_DIR/server.log" | tail -n 10; } | sed 's/^/# /'
}
mdbt "dbt run --empty of the chain's head: its table, no pipeline" run --select chain_a --empty
mdbt_fails "a model scheduled after an hwm model that has no pipeline yet fails, saying to run that model first" \
    "config 'schedule_after_refs'.*the upstream pipeline dw\.chain_a does not exist yet.*dbt run --select \+chain_b" \
    run --select chain_b
check "... after its load, with its pipeline left unscheduled" "dw.chain_b:-:-" "$(chain_sched)"
mdbt "dbt run of the chain" run --select +chain_hourly
check "... schedules each model after the pipeline of the hwm model it reads (through the view for the hwm_interval model)" \
    "dw.chain_a:-:00:00:01 dw.chain_b:{dw.chain_a}:- dw.chain_hourly:{dw.chain_b}:-" "$(chain_sched)"
mlogged "... and says so" "hwm dw\.chain_b: runs after dw\.chain_a \(config schedule_after_refs\)"
chain_b_same "... chain_b has the source's rows"
check "... chain_hourly closes no hour that chain_b has not loaded past" "0" "$(q "SELECT count(*) FROM dw.chain_hourly")"
last=$(q "SELECT max(run_id) FROM hwm.runs")
q "INSERT INTO shop.chain VALUES (100, $recent, 'a', 100)" >/dev/null
if chain_wait "SELECT EXISTS (SELECT FROM dw.chain_b WHERE id = 100) AND EXISTS (SELECT FROM dw.chain_hourly WHERE hour = '$chain_hour')"; then
    ok "a new source row reaches the end of the chain without dbt: the worker runs chain_a, then chain_b, then chain_hourly"
else
    not_ok "a new source row reaches the end of the chain without dbt: the worker runs chain_a, then chain_b, then chain_hourly"
    chain_debug
fi
chain_b_same "... chain_b has every row"
same_rows "... chain_hourly every hour chain_b has loaded past" dw.chain_hourly "SELECT * FROM ($chain_hourly_sql) h
    WHERE hour < (SELECT watermark::timestamptz FROM hwm.state WHERE pipeline = 'dw.chain_hourly')"
check "... each stage run by the worker after the one before (hwm.runs)" "dw.chain_a dw.chain_b dw.chain_hourly" \
    "$(q "SELECT string_agg(pipeline, ' ' ORDER BY first) FROM (SELECT pipeline, min(run_id) AS first FROM hwm.runs
            WHERE run_id > $last AND pipeline LIKE 'dw.chain%' AND (rows_upserted > 0 OR pipeline = 'dw.chain_hourly') GROUP BY 1) r")"
mdbt "a second dbt run of the chain" run --select +chain_hourly
check "... leaves the schedules as they were (no hwm.schedule_after when nothing changed)" \
    "0|dw.chain_a:-:00:00:01 dw.chain_b:{dw.chain_a}:- dw.chain_hourly:{dw.chain_b}:-" "$(grep -c 'runs after' "$mlog")|$(chain_sched)"
mdbt "--full-refresh of the chain's head alone (its pipeline declared again)" run --select chain_a --full-refresh
check "... keeps chain_b scheduled after it" "dw.chain_b:{dw.chain_a}:-|" \
    "$(q "SELECT pipeline || ':' || after::text || ':' || coalesce(schedule::text, '-') FROM hwm.state WHERE pipeline = 'dw.chain_b'")|$(q "SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'dw.chain_b'")"
mlogged "... and says so" "hwm dw\.chain_a: dw\.chain_b run after it again"
q "INSERT INTO shop.chain VALUES (101, $recent, 'b', 101)" >/dev/null
if chain_wait "SELECT EXISTS (SELECT FROM dw.chain_b WHERE id = 101)"; then
    ok "... and the chain still runs: a new source row reaches chain_b without dbt"
else
    not_ok "... and the chain still runs: a new source row reaches chain_b without dbt"
    chain_debug
fi
mdbt "dbt run with schedule_after_refs and schedule removed" run --select +chain_hourly --vars "{chain_after: false, chain_schedule: null}"
check "... unschedules the pipelines" "dw.chain_a:-:- dw.chain_b:-:- dw.chain_hourly:-:-" "$(chain_sched)"
mlogged "... and says so" "hwm dw\.chain_b: no longer runs after dw\.chain_a"
