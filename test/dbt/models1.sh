# shellcheck shell=bash
# test/dbt/models1.sh: the first half of test/dbt/models.sh's checks, which
# sources it (HWM_DBT_PART=models1, or both halves): the hwm model's first
# and incremental runs, late commits, dbt's own commands on it, full
# refresh, schema changes, bad configuration, backfill, reconcile,
# hwm_interval, and side by side with dbt's incremental and microbatch
# models.  It uses models.sh's sources, helpers and `dbt deps`, and makes
# the rest of its tables itself.

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
check "... makes the config's index beside the primary key, and loads the rows" "btree (name)|PRIMARY KEY (id)|t" \
    "$(q "SELECT regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '') FROM pg_index WHERE indrelid = 'dw.members'::regclass AND NOT indisprimary")|$(q "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'dw.members'::regclass AND contype = 'p'")|$(q "SELECT count(*) = (SELECT count(*) FROM shop.members WHERE NOT deleted) FROM dw.members")"
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
    # (the checks read the model's view, made in the setup's transaction,
    # which the error rolls back)
    check "... raised before anything was created" "|||0" \
        "$(q "SELECT to_regclass('dw.bad')")|$(q "SELECT to_regclass('dw.bad__hwm_src')")|$(q "SELECT to_regclass('dw.bad__hwm_new')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dw.bad'")"
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
bad_config pipeline "{unique_key: id, watermark_column: updated_at, pipeline: dw.evolving}"
mlogged "... saying that the pipeline named loads another table" 'config .pipeline. names pipeline "dw.evolving", which loads dw.evolving, not this model'
q "SET ROLE dbt; SELECT hwm.create_command_pipeline('dw.bad_cmd', 'shop.evolving', 'updated_at', 'SELECT 1')" >/dev/null
bad_config pipeline "{unique_key: id, watermark_column: updated_at, pipeline: dw.bad_cmd}"
mlogged "... or is an interval or command pipeline" 'config .pipeline. names pipeline "dw.bad_cmd", an interval or command pipeline'
q "SET ROLE dbt; SELECT hwm.drop_pipeline('dw.bad_cmd')" >/dev/null
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
