# shellcheck shell=bash
# test/dbt/models.sh: materialized='hwm' (and 'hwm_interval') in a real dbt
# project, test/dbt/hwm_models.  Sourced by test/dbt/run.sh after its own
# checks: it uses that script's cluster, venv, profile and TAP helpers (ok,
# not_ok, check, q, same_as_source's way of comparing).  dbt connects as the
# ordinary login role "dbt" (target "test"); the superuser target "su" is
# used only to check that a scheduled model refuses it.

mproject=$work/repo/test/dbt/hwm_models
hwm_psql -q -o /dev/null <<'SQL'
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id int PRIMARY KEY, day date NOT NULL,
                          updated_at timestamptz NOT NULL DEFAULT now(),
                          amount numeric(10,2), status text);
INSERT INTO shop.orders
SELECT i, date '2024-01-01' + i / 10, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i, 'new'
  FROM generate_series(1, 50) i;
CREATE TABLE shop.evolving (id int PRIMARY KEY, updated_at timestamptz NOT NULL, seq bigint NOT NULL, amount int);
INSERT INTO shop.evolving
SELECT i, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i, i FROM generate_series(1, 10) i;
-- events over the last four hours and the current one, for the hourly rollup
CREATE TABLE shop.events (id serial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
                          kind text NOT NULL, amount int NOT NULL);
INSERT INTO shop.events (created_at, kind, amount)
SELECT date_trunc('hour', now()) - interval '4 hours' + i * interval '7 minutes', (ARRAY['a', 'b', 'c'])[1 + i % 3], i
  FROM generate_series(0, 40) i;
CREATE TABLE shop.ticks (id int PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now(), v int);
INSERT INTO shop.ticks (id, v) SELECT i, i FROM generate_series(1, 5) i;
-- soft-deleted members, for delete_column (tombstones)
CREATE TABLE shop.members (id int PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now(), name text,
                           deleted boolean NOT NULL DEFAULT false);
INSERT INTO shop.members (id, name, updated_at) SELECT i, 'm' || i, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour'
  FROM generate_series(1, 5) i;
CREATE ROLE analyst;
CREATE ROLE viewer;
GRANT USAGE ON SCHEMA shop TO dbt;
GRANT SELECT ON ALL TABLES IN SCHEMA shop TO dbt;
SQL

# mdbt NAME ARGS...: run dbt in the models project, expect success.
# mdbt_fails NAME PATTERN ARGS...: expect failure, with PATTERN (grep -E) in
# dbt's output.  The output of the last call is in $mlog.
mstep=0
mdbt_run() {
    mstep=$((mstep + 1))
    mlog=$work/models-$mstep.log
    # (bounded: a run that waited for a lock by mistake would never end;
    # 10 minutes, as dbt alone takes a minute on a busy machine)
    (cd "$mproject" && timeout 600 "$venv/bin/dbt" "$@") >"$mlog" 2>&1
}
mdbt() {
    local name=$1
    shift
    if mdbt_run "$@"; then
        ok "$name"
    else
        not_ok "$name"
        tail -n 30 "$mlog" | sed 's/^/# /'
    fi
}
mdbt_fails() {
    local name=$1 pattern=$2
    shift 2
    if mdbt_run "$@"; then
        not_ok "$name (dbt succeeded)"
        tail -n 20 "$mlog" | sed 's/^/# /'
    elif grep -qE "$pattern" "$mlog"; then
        ok "$name"
    else
        not_ok "$name (no /$pattern/ in dbt's output)"
        tail -n 20 "$mlog" | sed 's/^/# /'
    fi
}
# mlogged NAME PATTERN: the last dbt call's output has PATTERN (grep -E).
mlogged() {
    if grep -qE "$2" "$mlog"; then
        ok "$1"
    else
        not_ok "$1 (no /$2/ in dbt's output)"
        grep -E 'hwm|rror' "$mlog" | tail -n 10 | sed 's/^/# /'
    fi
}
# same_rows NAME TARGET SOURCE_QUERY: the target holds exactly those rows.
same_rows() {
    check "$1" "0" "$(q "SELECT (SELECT count(*) FROM (TABLE $2 EXCEPT $3) a) + (SELECT count(*) FROM ($3 EXCEPT TABLE $2) b)")"
}

mdbt "dbt deps installs hwm into the models project" deps

# --- first run -----------------------------------------------------------------
mdbt "first dbt run of an hwm model and a model downstream of it" run --select orders orders_by_day
same_rows "the hwm model holds the source's rows" dw.orders "TABLE shop.orders"
check "the pipeline is declared: owned by dbt's role, source a view over the function holding the model's SQL, key and columns as configured" \
    "dbt|dw.orders__hwm_src|dw.orders|{id}|updated_at|day|1|20|2024-01-03 02:00:00+00" \
    "$(q "SELECT owner, source, target, unique_key, watermark_column, partition_column, lookback, batch_size, watermark
            FROM hwm.state WHERE pipeline = 'dw.orders'" | sed 's/ *| */|/g')"
check "the table has the model's columns and a primary key on unique_key" \
    "id integer,day date,updated_at timestamp with time zone,amount numeric(10,2),status text|PRIMARY KEY (id)" \
    "$(q "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
            FROM pg_attribute WHERE attrelid = 'dw.orders'::regclass AND attnum > 0 AND NOT attisdropped")|$(q "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'dw.orders'::regclass AND contype = 'p'")"
mlogged "dbt's output says what the load did" 'hwm dw\.orders: [0-9]+ runs, 49 rows upserted, [0-9]+ partitions overwritten \(0 rows deleted, 1 inserted or updated\), watermark none -> 2024-01-03 02:00:00\+00'
# (the first run's lookback loads id 50, the newest day's, ahead of its batch)
check "the load ran outside dbt's transaction: each batch of batch_size 20 committed on its own" \
    "20,20,9|t" \
    "$(q "SELECT string_agg(rows_upserted::text, ',' ORDER BY run_id) FILTER (WHERE rows_upserted > 0),
                 count(DISTINCT xmin::text) >= 3
            FROM hwm.runs WHERE pipeline = 'dw.orders' AND kind = 'load'" | tr '|' '|')"
check "ref() from a downstream model reads the hwm model" "50|1275.00" "$(q "SELECT sum(orders), sum(amount) FROM dw.orders_by_day")"
check "grants and persist_docs apply to the hwm model" "t|Orders, loaded by hwm|The order's id" \
    "$(q "SELECT has_table_privilege('analyst', 'dw.orders', 'SELECT'), obj_description('dw.orders'::regclass, 'pg_class'),
                 col_description('dw.orders'::regclass, 1)")"

# --- delete_column: tombstones -----------------------------------------------------
mdbt "dbt run of a model with delete_column" run --select members
check "... declares the pipeline with the delete marker" "deleted" "$(q "SELECT delete_column FROM hwm.state WHERE pipeline = 'dw.members'")"
hwm_psql -q -o /dev/null <<'SQL'
UPDATE shop.members SET deleted = true, updated_at = now() WHERE id IN (2, 4);
INSERT INTO shop.members (id, name, deleted) VALUES (9, 'never loaded', true);
SQL
mdbt "dbt run after soft deletes" run --select members
same_rows "... deletes the marked rows from the table (the live rows stay)" dw.members "SELECT * FROM shop.members WHERE NOT deleted"
mdbt "dbt run without delete_column" run --select members --vars "{members_delete_column: null}"
check "... removes the marker from the pipeline (alter_pipeline)" "" "$(q "SELECT delete_column FROM hwm.state WHERE pipeline = 'dw.members'")"
mdbt "dbt run with delete_column again" run --select members
check "... puts it back" "deleted" "$(q "SELECT delete_column FROM hwm.state WHERE pipeline = 'dw.members'")"

# --- incremental runs ---------------------------------------------------------------
last=$(q "SELECT max(run_id) FROM hwm.runs")
mdbt "second dbt run with nothing new" run --select orders
check "... loads nothing" "0" "$(q "SELECT coalesce(sum(rows_upserted), 0) + coalesce(sum(rows_inserted), 0) FROM hwm.runs WHERE pipeline = 'dw.orders' AND run_id > $last")"
hwm_psql -q -o /dev/null <<'SQL'
INSERT INTO shop.orders (id, day, amount, status) SELECT i, '2024-01-06', i, 'new' FROM generate_series(51, 55) i;
UPDATE shop.orders SET amount = -7, status = 'changed', updated_at = now() WHERE id = 3;
-- a late-arriving row: an old updated_at, in the newest partition (lookback 1)
INSERT INTO shop.orders VALUES (200, '2024-01-06', '2023-06-01 00:00+00', 200, 'late');
SQL
mdbt "dbt run after new, changed and late-arriving rows" run --select orders
same_rows "new and changed rows are upserted, the late-arriving row caught by the lookback" dw.orders "TABLE shop.orders"
mlogged "... and dbt's output says so" 'hwm dw\.orders: [0-9]+ runs?, 6 rows upserted, [0-9]+ partitions overwritten \(0 rows deleted, 1 inserted or updated\)'

# --- a transaction that commits late ------------------------------------------------
# A writer takes its now() and commits after a dbt run that saw a later row:
# the run holds its watermark back, the next one loads the late row.
late_fifo=$work/late.fifo
mkfifo "$late_fifo"
hwm_psql -q <"$late_fifo" >"$work/late.log" 2>&1 &
late_pid=$!
exec 7>"$late_fifo"
echo "SET application_name = 'late_writer'; BEGIN; INSERT INTO shop.orders (id, day, amount, status) VALUES (300, '2024-01-06', 300, 'late commit');" >&7
for _ in $(seq 1 100); do
    [[ $(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'late_writer' AND state = 'idle in transaction'") == 1 ]] && break
    sleep 0.1
done
q "INSERT INTO shop.orders (id, day, amount, status) VALUES (301, '2024-01-06', 301, 'after')" >/dev/null
sleep 1.2   # past hwm.start_margin, so the watermark could pass row 301 if nothing held it
mdbt "dbt run while a writer's transaction is open" run --select orders
check "... loads the row committed after it, not the one still in flight" "1|0" \
    "$(q "SELECT count(*) FILTER (WHERE id = 301), count(*) FILTER (WHERE id = 300) FROM dw.orders")"
mlogged "... and says what held the watermark back" 'held back by pid [0-9]+ \(late_writer\)'
echo "COMMIT;" >&7
exec 7>&-
wait "$late_pid"
mdbt "dbt run after the late transaction committed" run --select orders
same_rows "the late-committing row is loaded: nothing lost" dw.orders "TABLE shop.orders"

# --- an ordinary relation for dbt ------------------------------------------------
mdbt "dbt test on the hwm model and its downstream model" test --select orders orders_by_day
mdbt "dbt ls lists the hwm model" ls --select orders --output name
mlogged "... by name" '^orders$'
mdbt "dbt docs generate" docs generate
check "the catalog describes the hwm model's columns" "5" \
    "$("$venv/bin/python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["nodes"]["model.hwm_models.orders"]["columns"]))' "$work/target/catalog.json" 2>&1)"

# --- --full-refresh: hwm.swap keeps the table's identity ----------------------------
hwm_psql -q -o /dev/null <<'SQL'
CREATE VIEW public.orders_new AS SELECT id, amount FROM dw.orders WHERE status = 'new';
-- damage the table: the rebuild must repair it
UPDATE dw.orders SET amount = -1 WHERE id = 1;
DELETE FROM dw.orders WHERE id = 2;
SQL
oid_before=$(q "SELECT 'dw.orders'::regclass::oid")
mdbt "dbt run --full-refresh of the hwm model" run --select orders --full-refresh
check "the table keeps its OID, its grant and its dependent view" "$oid_before|t|t" \
    "$(q "SELECT 'dw.orders'::regclass::oid, has_table_privilege('analyst', 'dw.orders', 'SELECT'),
                 (SELECT count(*) FROM public.orders_new) = (SELECT count(*) FROM shop.orders WHERE status = 'new')")"
same_rows "the rebuilt table holds the source's rows (damaged rows repaired)" dw.orders "TABLE shop.orders"
check "the watermark is the staging load's, and no staging table or pipeline is left" \
    "$(q "SELECT max(updated_at) FROM shop.orders")|1|" \
    "$(q "SELECT watermark::timestamptz FROM hwm.state WHERE pipeline = 'dw.orders'")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline LIKE 'dw.orders%'")|$(q "SELECT to_regclass('dw.orders__hwm_stg')")"
mlogged "... and dbt's output says so" 'full refresh: rebuilt in orders__hwm_stg and swapped in'
q "INSERT INTO shop.orders (id, day, amount, status) VALUES (400, '2024-01-06', 400, 'new')" >/dev/null
mdbt "dbt build of the hwm model and what depends on it" build --select orders+
same_rows "the run after the full refresh loads incrementally" dw.orders "TABLE shop.orders"
check "dbt build ran the tests and rebuilt the downstream model after the hwm model" \
    "$(q "SELECT count(*) FROM shop.orders")" "$(q "SELECT sum(orders) FROM dw.orders_by_day")"

# --- a changed model: on_schema_change, refused changes, full refresh -----------------
ev_same() {
    same_rows "$1" dw.evolving "SELECT id, updated_at, seq, $2 FROM shop.evolving"
}
ev_cols() { q "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
                 FROM pg_attribute WHERE attrelid = 'dw.evolving'::regclass AND attnum > 0 AND NOT attisdropped"; }
mdbt "first run of a model that will change" run --select evolving
ev_same "... loaded" "amount"
mdbt_fails "a new column with on_schema_change unset (hwm's default: fail) is refused, saying what to do" \
    "new column doubled integer.*on_schema_change is 'fail'.*append_new_columns.*sync_all_columns.*--full-refresh" \
    run --select evolving --vars "{ev_extra: ', amount * 2 as doubled'}"
check "... and the table is unchanged" "id integer,updated_at timestamp with time zone,seq bigint,amount integer" "$(ev_cols)"
q "INSERT INTO shop.evolving VALUES (11, now(), 11, 11)" >/dev/null
mdbt "on_schema_change='append_new_columns' adds the new column" \
    run --select evolving --vars "{ev_extra: ', amount * 2 as doubled', ev_osc: append_new_columns}"
check "... which new rows fill (rows loaded before keep NULL)" "id integer,updated_at timestamp with time zone,seq bigint,amount integer,doubled integer|22|10" \
    "$(ev_cols)|$(q "SELECT doubled FROM dw.evolving WHERE id = 11")|$(q "SELECT count(*) FROM dw.evolving WHERE doubled IS NULL")"
mlogged "... and dbt's output says so" "append_new_columns.*new column doubled integer"
q "INSERT INTO shop.evolving VALUES (12, now(), 12, 12)" >/dev/null
mdbt "on_schema_change='ignore' does not load a new column" \
    run --select evolving --vars "{ev_extra: ', amount * 2 as doubled, amount * 3 as tripled', ev_osc: ignore}"
check "... but loads the rows" "id integer,updated_at timestamp with time zone,seq bigint,amount integer,doubled integer|24" \
    "$(ev_cols)|$(q "SELECT doubled FROM dw.evolving WHERE id = 12")"
mlogged "... and says which columns it leaves out" "ignore.*new column tripled integer.*not loaded"
mdbt_fails "on_schema_change='ignore' refuses a column the model no longer returns" \
    "column doubled no longer returned.*would load NULL" run --select evolving --vars "{ev_osc: ignore}"
q "INSERT INTO shop.evolving VALUES (13, now(), 13, 13)" >/dev/null
mdbt "on_schema_change='sync_all_columns' drops and retypes columns" \
    run --select evolving --vars "{ev_amount: 'amount::text', ev_osc: sync_all_columns}"
check "... to the model's" "id integer,updated_at timestamp with time zone,seq bigint,amount text" "$(ev_cols)"
ev_same "... and every row is loaded" "amount::text"
mdbt_fails "a changed unique_key is refused, saying to run --full-refresh" \
    "config 'unique_key' changed from id to seq.*--full-refresh --select evolving" \
    run --select evolving --vars "{ev_key: seq, ev_amount: 'amount::text', ev_osc: sync_all_columns}"
mdbt_fails "a changed watermark_column is refused, saying to run --full-refresh" \
    "config 'watermark_column' changed from updated_at to seq.*--full-refresh --select evolving" \
    run --select evolving --vars "{ev_wm: seq, ev_amount: 'amount::text', ev_osc: sync_all_columns}"
ev_oid=$(q "SELECT 'dw.evolving'::regclass::oid")
# a grant made by hand (this model has no grants config, which would revoke it)
q "SET ROLE dbt; GRANT SELECT ON dw.evolving TO viewer" >/dev/null
mdbt "--full-refresh applies a new key and watermark column (the table has a dropped column)" \
    run --select evolving --full-refresh --vars "{ev_key: seq, ev_wm: seq, ev_amount: 'amount::text', ev_osc: sync_all_columns}"
check "... keeping the OID and the grant, with the new key and pipeline" "$ev_oid|true|PRIMARY KEY (seq)|{seq}|seq|13" \
    "$(q "SELECT 'dw.evolving'::regclass::oid || '|' || has_table_privilege('viewer', 'dw.evolving', 'SELECT')")|$(q "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'dw.evolving'::regclass AND contype = 'p'")|$(q "SELECT unique_key::text || '|' || watermark_column || '|' || watermark FROM hwm.state WHERE pipeline = 'dw.evolving'")"
ev_same "... and the source's rows" "amount::text"
q "INSERT INTO shop.evolving VALUES (14, now(), 14, 14)" >/dev/null
mdbt "the next run loads on the new watermark column" \
    run --select evolving --vars "{ev_key: seq, ev_wm: seq, ev_amount: 'amount::text', ev_osc: sync_all_columns}"
ev_same "... every row" "amount::text"

# --- bad configuration: a dbt error naming the key, nothing created -----------------
bad_config() {
    local key=$1 cfg=$2
    shift 2
    mdbt_fails "bad configuration $cfg: an error naming config '$key'" "config '$key'" \
        run --select bad --vars "{bad_cfg: $cfg}" "$@"
    check "... raised before anything was created" "||0" \
        "$(q "SELECT to_regclass('dw.bad')")|$(q "SELECT to_regclass('dw.bad__hwm_src')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.bad'")"
}
bad_config unique_key "{watermark_column: updated_at}"
bad_config unique_key "{unique_key: [id, nope], watermark_column: updated_at}"
bad_config watermark_column "{unique_key: id, watermark_column: nope}"
bad_config watermark_column "{unique_key: id}"
bad_config partition_column "{unique_key: id, watermark_column: updated_at, partition_column: nope}"
bad_config lookback "{unique_key: id, watermark_column: updated_at, lookback: 2}"
bad_config schedule "{unique_key: id, watermark_column: updated_at, schedule: 'every hour'}"
bad_config schedule "{unique_key: id, watermark_column: updated_at, schedule: '1 minute'}" --target su
bad_config time_column "{materialized: hwm_interval, time_interval: '1 hour'}"
bad_config time_interval "{materialized: hwm_interval, time_column: updated_at}"
bad_config time_column "{materialized: hwm_interval, time_column: nope, time_interval: '1 hour'}"
bad_config incremental_predicates "{unique_key: id, watermark_column: updated_at, incremental_predicates: ['id > 0']}"
bad_config reconcile "{unique_key: id, watermark_column: updated_at, reconcile: 'yes'}"
bad_config schedule_after_refs "{unique_key: id, watermark_column: updated_at, schedule_after_refs: true}"
mlogged "... saying the model ref()s no hwm model" "config 'schedule_after_refs' is true, but the model ref\(\)s no hwm or hwm_interval model"
bad_config schedule_after_refs "{materialized: hwm_interval, time_column: updated_at, time_interval: '1 hour', schedule: '1 hour', schedule_after_refs: true}"
mlogged "... saying schedule and schedule_after_refs exclude each other" "config 'schedule_after_refs' is true and config 'schedule' is set too \(1 hour\).*Drop one of them"

# --- backfill of an hwm model through dbt run-operation -----------------------------
q "UPDATE shop.orders SET amount = amount + 1000 WHERE day = '2024-01-02'" >/dev/null
mdbt "dbt run-operation hwm_backfill names the model's pipeline with model=" \
    run-operation hwm_backfill --args "{model: orders, from_partition: '2024-01-01', to_partition: '2024-01-03'}"
same_rows "... and overwrites the changed partition" dw.orders "TABLE shop.orders"

# --- reconcile: rows hard-deleted in the source ----------------------------------------
# accounts: a key of two columns (id, region), two rows per id.
hwm_psql -q -o /dev/null <<'SQL'
CREATE TABLE shop.accounts (id int, region text, updated_at timestamptz NOT NULL DEFAULT now(), balance int,
                            PRIMARY KEY (id, region));
INSERT INTO shop.accounts (id, region, balance) SELECT (i + 1) / 2, (ARRAY['eu', 'us'])[1 + i % 2], i FROM generate_series(1, 60) i;
GRANT SELECT ON shop.accounts TO dbt;
SQL
mdbt "first dbt run of a model whose source rows will be hard-deleted" run --select accounts
same_rows "... it holds the source's rows" dw.accounts "TABLE shop.accounts"
# 13 rows: both of ids 5, 10, ..., 30, and one of id 3's two
q "DELETE FROM shop.accounts WHERE id % 5 = 0 OR (id, region) = (3, 'us')" >/dev/null
mdbt "a dbt run after rows were hard-deleted in the source" run --select accounts
check "... keeps them: no watermark sees a delete" "60" "$(q "SELECT count(*) FROM dw.accounts")"
accounts_before=$(q "SELECT count(*) || ':' || sum(hashtext(a::text)) FROM dw.accounts a")
last=$(q "SELECT max(run_id) FROM hwm.runs")
mdbt "dbt run-operation hwm_reconcile with dry_run" \
    run-operation hwm_reconcile --args "{model: accounts, batch_size: 7, dry_run: true}"
mlogged "... logs what it would delete, its keys whole (hwm.reconcile_preview)" 'hwm_reconcile dw\.accounts: dry run: 13 target rows would be deleted, keys \{3,us\} to \{30,us\}; nothing was changed'
check "... and changes and records nothing" "$accounts_before|0" \
    "$(q "SELECT count(*) || ':' || sum(hashtext(a::text)) FROM dw.accounts a")|$(q "SELECT count(*) FROM hwm.runs WHERE run_id > $last")"
mdbt "dbt run-operation hwm_reconcile names the model's pipeline with model=" \
    run-operation hwm_reconcile --args "{model: accounts, batch_size: 7}"
same_rows "... and the target equals the source again" dw.accounts "TABLE shop.accounts"
mlogged "... logs what it deleted" 'hwm_reconcile dw\.accounts: [0-9]+ batches of up to 7 keys, 13 target rows deleted'
check "... in batches of 7 keys, each committed in a transaction of its own, recorded in hwm.runs" "13|t" \
    "$(q "SELECT sum(rows_deleted), count(DISTINCT xmin::text) >= 3 FROM hwm.runs
            WHERE pipeline = 'dw.accounts' AND kind = 'reconcile' AND run_id > $last")"
mdbt "dbt run-operation hwm_reconcile with pipeline= and nothing to delete" \
    run-operation hwm_reconcile --args "{pipeline: dw.accounts, dry_run: true}"
mlogged "... says so" 'hwm_reconcile dw\.accounts: dry run: no target row to delete'
accounts_before=$(q "SELECT count(*) || ':' || sum(hashtext(a::text)) FROM dw.accounts a")
mdbt_fails "dbt run-operation hwm_reconcile of a model that does not exist fails, naming the hwm models" \
    'hwm_reconcile: no model named nope in this project; the hwm models are: .*accounts' \
    run-operation hwm_reconcile --args "{model: nope}"
mdbt_fails "... and of a model that is not an hwm model" "hwm_reconcile: model orders_by_day is materialized as 'table', not 'hwm'" \
    run-operation hwm_reconcile --args "{model: orders_by_day}"
mdbt_fails "... and of a pipeline that does not exist, with hwm's error" 'pipeline "dw.nope" does not exist' \
    run-operation hwm_reconcile --args "{pipeline: dw.nope}"
mdbt_fails "... and with a batch_size that is not a positive integer" 'hwm_reconcile: batch_size must be an integer of at least 1' \
    run-operation hwm_reconcile --args "{model: accounts, batch_size: 0}"
check "... each changing nothing" "$accounts_before" "$(q "SELECT count(*) || ':' || sum(hashtext(a::text)) FROM dw.accounts a")"
# config reconcile=true: every incremental run reconciles after its load
q "DELETE FROM shop.accounts WHERE id IN (1, 2); INSERT INTO shop.accounts (id, region, balance) VALUES (100, 'eu', 100)" >/dev/null
mdbt "a dbt run of the model with reconcile=true, after new rows and hard deletes" \
    run --select accounts --vars "{accounts_reconcile: true}"
same_rows "... loads the new rows and deletes the deleted ones" dw.accounts "TABLE shop.accounts"
mlogged "... and says so" 'hwm dw\.accounts: reconcile \(config reconcile=true\): 4 target rows deleted'

# --- materialized='hwm_interval': an hourly rollup ------------------------------------
# The rows of every finished hour, as the model's SQL computes them.
hourly_sql="SELECT date_trunc('hour', created_at) AS hour, kind, count(*) AS n, sum(amount) AS amount FROM shop.events GROUP BY 1, 2"
hourly_done() { same_rows "$1" dw.events_hourly "SELECT * FROM ($hourly_sql) h
    WHERE hour < (SELECT watermark::timestamptz FROM hwm.state WHERE pipeline = 'dw.events_hourly')"; }
mdbt "first dbt run of an hwm_interval model" run --select events_hourly
hourly_done "each finished hour is computed, the current one is not"
check "... on an interval pipeline reading the model's only source (through its view and function), up to the current hour" \
    "dw.events_hourly__hwm_src|created_at|01:00:00|true|true" \
    "$(q "SELECT source || '|' || watermark_column || '|' || time_interval || '|'
                 || (watermark::timestamptz >= date_trunc('hour', now()) - interval '1 hour') || '|'
                 || (SELECT prosrc LIKE '%from \"shop\".\"events\"%' FROM pg_proc WHERE oid = 'dw.events_hourly__hwm_fn()'::regprocedure)
            FROM hwm.state WHERE pipeline = 'dw.events_hourly'")"
mlogged "... and dbt's output says which intervals it did" 'hwm dw\.events_hourly: [0-9]+ runs, [0-9]+ rows processed, watermark none -> '
# a row that commits into an hour already done: computed again only when asked
q "INSERT INTO shop.events (created_at, kind, amount) VALUES (date_trunc('hour', now()) - interval '3 hours' + interval '1 minute', 'late', 1000)" >/dev/null
mdbt "a dbt run after a row arrived in an hour already done" run --select events_hourly
check "... leaves that hour as it was computed" "0" "$(q "SELECT count(*) FROM dw.events_hourly WHERE kind = 'late'")"
from=$(q "SELECT date_trunc('hour', now()) - interval '4 hours'")
to=$(q "SELECT watermark FROM hwm.state WHERE pipeline = 'dw.events_hourly'")
mdbt "dbt run-operation hwm_rerun_intervals computes the hours again (a backfill)" \
    run-operation hwm_rerun_intervals --args "{model: events_hourly, from_time: '$from', to_time: '$to'}"
hourly_done "... and the late row's hour has it"
hourly_oid=$(q "SELECT 'dw.events_hourly'::regclass::oid")
q "DELETE FROM dw.events_hourly WHERE kind = 'a'" >/dev/null
mdbt "dbt run --full-refresh of the hwm_interval model" run --select events_hourly --full-refresh
hourly_done "... recomputes every finished hour"
check "... into the same table" "$hourly_oid" "$(q "SELECT 'dw.events_hourly'::regclass::oid")"

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
    local name=$1
    shift
    mstep=$((mstep + 1))
    mlog=$work/models-$mstep.log
    if (cd "$oproject" && timeout 600 "$venv/bin/dbt" "$@") >"$mlog" 2>&1; then
        ok "$name"
    else
        not_ok "$name"
        tail -n 30 "$mlog" | sed 's/^/# /'
    fi
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

# --- side by side under late-committing writers ---------------------------------------
# Six pgbench clients each take their now(), sleep up to 150 ms, insert a row
# stamped with it and commit, for 20 s, while dbt runs four models of the
# same rows in a loop: dbt's incremental model (delete+insert and merge, the
# documented max(created_at) filter), dbt's microbatch (hourly batches,
# lookback 1) and materialized='hwm'.  Then one last dbt run; a row of the
# source missing from a model is lost.
hwm_psql -q -o /dev/null <<'SQL'
CREATE TABLE shop.traffic (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL, writer int NOT NULL);
CREATE INDEX ON shop.traffic (created_at);
GRANT SELECT ON shop.traffic TO dbt;
-- (a first row, so that the incremental models' max(created_at) is not NULL)
INSERT INTO shop.traffic (created_at, writer) VALUES (now() - interval '1 minute', 0);
SQL
traffic_begin=$(q "SELECT to_char(date_trunc('hour', now() AT TIME ZONE 'UTC') - interval '1 hour', 'YYYY-MM-DD\"T\"HH24:MI:SS')")
mdbt "first dbt run of the four models side by side" run --select side_by_side --vars "{traffic_begin: '$traffic_begin'}"
writer=$HWM_CLUSTER_DIR/traffic.sql
hwm_as_postgres tee "$writer" >/dev/null <<'SQL'
BEGIN;
SELECT pg_sleep(random() * 0.15);
INSERT INTO shop.traffic (created_at, writer) VALUES (now(), :client_id);
COMMIT;
SQL
hwm_as_postgres "$PGBIN/pgbench" -n -c 6 -j 2 -T 20 -f "$writer" -h "$PGHOST" -p "$PGPORT" -U postgres postgres \
    >"$work/pgbench.log" 2>&1 &
pgbench_pid=$!
sbs_runs=0 sbs_failed=0
while kill -0 "$pgbench_pid" 2>/dev/null; do
    mdbt_run run --select side_by_side --vars "{traffic_begin: '$traffic_begin'}" || sbs_failed=$((sbs_failed + 1))
    sbs_runs=$((sbs_runs + 1))
done
wait "$pgbench_pid"
check "pgbench wrote late-committing rows for 20 s" "0" "$?"
mdbt "a last dbt run of the four models after the writers stopped" run --select side_by_side --vars "{traffic_begin: '$traffic_begin'}"
check "every dbt run during the traffic succeeded" "0 of $sbs_runs" "$sbs_failed of $sbs_runs"
sleep 1   # (statistics of the last run's sessions reach pg_stat_user_tables)
sbs_report="source rows $(q "SELECT count(*) FROM shop.traffic"), dbt runs during the traffic $sbs_runs;"
for m in delete_insert merge microbatch hwm; do
    sbs_report+=" $m lost $(q "SELECT count(*) FROM shop.traffic s WHERE NOT EXISTS (SELECT FROM dw.traffic_$m t WHERE t.id = s.id)")"
    sbs_report+=" (rows written $(q "SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE relid = 'dw.traffic_$m'::regclass"));"
done
echo "# side by side: $sbs_report"
check "materialized='hwm' loses no row of the late-committing traffic" "0|0" \
    "$(q "SELECT count(*) FROM shop.traffic s WHERE NOT EXISTS (SELECT FROM dw.traffic_hwm t WHERE t.id = s.id)")|$(q "SELECT count(*) FROM dw.traffic_hwm t WHERE NOT EXISTS (SELECT FROM shop.traffic s WHERE s.id = t.id)")"
