# shellcheck shell=bash
# test/dbt/history.sh: history models (materialized='hwm', history=true:
# issue 40) in a dbt project of their own, test/dbt/hwm_history.  Sourced
# by test/dbt/run.sh in its hooks part: it uses that script's cluster,
# venv, profiles, work dir and TAP helpers (ok, not_ok, check, q).  dbt
# connects as the ordinary login role "dbt" and builds in schema dh.
#
# The source is a change log (several versions of a key, a soft delete);
# each history is compared with the rows expected, one line per version:
# "id tier email valid_from-valid_to" (hours of 2026-03-01 UTC, valid_to
# empty for the current version).

cp -r "$REPO/test/dbt/hwm_history" "$work/repo/test/dbt/"
hproject=$work/repo/test/dbt/hwm_history
cat >>"$work/profiles/profiles.yml" <<EOF
hwm_history:
  target: test
  outputs:
    test:
      type: postgres
      host: 127.0.0.1
      port: $PGPORT
      user: dbt
      password: unused
      dbname: postgres
      schema: dh
      threads: 2
EOF
hwm_psql -q -o /dev/null <<'SQL'
CREATE SCHEMA crm;
CREATE TABLE crm.customer_changes (id int NOT NULL, changed_at timestamptz NOT NULL, tier text, email text,
                                   deleted boolean NOT NULL DEFAULT false);
GRANT USAGE ON SCHEMA crm TO dbt;
GRANT SELECT ON crm.customer_changes TO dbt;
SQL
# hchange ID HOUR TIER EMAIL [DELETED]: a row of the change log at that hour.
hchange() {
    q "INSERT INTO crm.customer_changes VALUES ($1, timestamptz '2026-03-01 00:00+00' + $2 * interval '1 hour',
                                                '$3', '$4', ${5:-false})" >/dev/null
}
# hrows TABLE: the versions of TABLE, one per line (see above).
hrows() {
    q "SELECT string_agg(format('%s %s %s %s-%s', id, tier, email,
                                extract(hour FROM valid_from AT TIME ZONE 'UTC'),
                                extract(hour FROM valid_to AT TIME ZONE 'UTC')), E'\n' ORDER BY id, valid_from)
         FROM $1"
}

# hdbt NAME ARGS...: run dbt in the history project, expect success.
# hdbt_fails NAME PATTERN ARGS...: expect failure, with PATTERN (grep -E)
# in dbt's output.  hlogged NAME PATTERN: the last call's output has
# PATTERN.  The output of the last call is in $hlog (run.sh's dbt_in).
hdbt() {
    dbt_pass "$1" "$hproject" "${@:2}"
    hlog=$dbt_log
}
hdbt_fails() {
    dbt_fail "$1" "$2" "$hproject" "${@:3}"
    hlog=$dbt_log
}
hlogged() { dbt_said "$1" "$2" "$hlog"; }
# the table's columns, primary key and unique partial indexes
hshape() {
    echo "$(q "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY attnum)
                 FROM pg_attribute WHERE attrelid = '$1'::regclass AND attnum > 0 AND NOT attisdropped")|$(q "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '$1'::regclass AND contype = 'p'")|$(q "SELECT string_agg(regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', ''), '; ') FROM pg_index WHERE indrelid = '$1'::regclass AND indisunique AND indpred IS NOT NULL")"
}

hdbt "dbt deps installs hwm into the history project" deps

# --- first run: the versions of a change log -----------------------------------
hchange 1 1 free ada@old
hchange 1 2 free ada@new        # tier unchanged: email updated in place
hchange 1 5 pro ada@new         # tier changed: a new version from 5:00
hchange 2 1 pro grace@x
hchange 2 4 pro grace@x true    # deleted: 2's version ends at 4:00
hchange 3 3 free cy@z
hdbt "first dbt run of a history model" run --select customer_history
check "the table has the model's columns plus valid_from (NOT NULL) and valid_to of the watermark's type, its primary key on (id, valid_from), a unique index of the current versions" \
    "id integer not null, changed_at timestamp with time zone, tier text, email text, deleted boolean, valid_from timestamp with time zone not null, valid_to timestamp with time zone|PRIMARY KEY (id, valid_from)|btree (id) WHERE (valid_to IS NULL)" \
    "$(hshape dh.customer_history)"
check "the pipeline is a history tracking the configured columns" "{tier}|valid_from|valid_to|deleted" \
    "$(q "SELECT history_columns, valid_from_column, valid_to_column, delete_column FROM hwm.state WHERE pipeline = 'dh.customer_history'")"
check "the first run keeps every version of the change log: several per key, a tombstone closing one" \
"1 free ada@new 1-5
1 pro ada@new 5-
2 pro grace@x 1-4
3 free cy@z 3-" "$(hrows dh.customer_history)"

# --- second run: the history continues ----------------------------------------------
hchange 1 6 pro ada@newer       # email alone: the current version updated in place
hchange 2 7 pro grace@y         # back after the deletion: a new version
hchange 3 8 gold cy@z           # a new tier: 3's version closes at 8:00
hdbt "second dbt run of the history model" run --select customer_history
check "the second run continues each key's history from its current version; an untracked change updates it in place" \
"1 free ada@new 1-5
1 pro ada@newer 5-
2 pro grace@x 1-4
2 pro grace@y 7-
3 free cy@z 3-8
3 gold cy@z 8-" "$(hrows dh.customer_history)"
before=$(hrows dh.customer_history)
hdbt "a dbt run with nothing new" run --select customer_history
check "... changes nothing" "$before|0" \
    "$(hrows dh.customer_history)|$(q "SELECT rows_upserted FROM hwm.runs WHERE pipeline = 'dh.customer_history' ORDER BY run_id DESC LIMIT 1")"

# --- --full-refresh rebuilds the same history ---------------------------------------------
hwm_psql -q -o /dev/null <<'SQL'
CREATE TABLE public.history_before AS TABLE dh.customer_history;
CREATE VIEW public.current_customers AS SELECT id, tier FROM dh.customer_history WHERE valid_to IS NULL;
GRANT SELECT ON dh.customer_history TO PUBLIC;
-- damage the history: the rebuild must repair it
DELETE FROM dh.customer_history WHERE id = 2 AND valid_to IS NOT NULL;
UPDATE dh.customer_history SET email = 'wrong' WHERE id = 3;
SQL
hsame_as_before="SELECT (SELECT count(*) FROM (TABLE dh.customer_history EXCEPT TABLE public.history_before) a)
                      + (SELECT count(*) FROM (TABLE public.history_before EXCEPT TABLE dh.customer_history) b)"
oid_before=$(q "SELECT 'dh.customer_history'::regclass::oid")
wm_before=$(q "SELECT watermark FROM hwm.state WHERE pipeline = 'dh.customer_history'")
hdbt "dbt run --full-refresh of the history model" run --select customer_history --full-refresh
check "--full-refresh rebuilds the same history from the model's SQL (damaged versions repaired)" "0" "$(q "$hsame_as_before")"
check "... swapped in: the table keeps its OID, grant and dependent view; the pipeline is a history again, at the same watermark; no staging left" \
    "$oid_before|t|3|{tier}|valid_from|$wm_before|1|" \
    "$(q "SELECT 'dh.customer_history'::regclass::oid, has_table_privilege('public', 'dh.customer_history', 'SELECT'),
                 (SELECT count(*) FROM public.current_customers)")|$(q "SELECT history_columns, valid_from_column, watermark FROM hwm.state WHERE pipeline = 'dh.customer_history'")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline LIKE 'dh.customer_history%'")|$(q "SELECT to_regclass('dh.customer_history__hwm_stg')")"
check "... with the same columns, key and index of the current versions" \
    "id integer not null, changed_at timestamp with time zone, tier text, email text, deleted boolean, valid_from timestamp with time zone not null, valid_to timestamp with time zone|PRIMARY KEY (id, valid_from)|btree (id) WHERE (valid_to IS NULL)" \
    "$(hshape dh.customer_history)"
q "DROP VIEW public.current_customers" >/dev/null

# --- history on or off: only by a rebuild ---------------------------------------------------
hdbt_fails "turning history off on an existing model is refused" \
    "config 'history' is no longer true.*--full-refresh" run --select customer_history --vars '{history: false}'
check "... and changes nothing" "0|{tier}" \
    "$(q "$hsame_as_before")|$(q "SELECT history_columns FROM hwm.state WHERE pipeline = 'dh.customer_history'")"
hdbt "dbt run --full-refresh with history off" run --select customer_history --full-refresh --vars '{history: false}'
check "... makes it a copy of each key's latest row: no bounds, primary key on unique_key, not a history" \
    "id integer not null, changed_at timestamp with time zone, tier text, email text, deleted boolean|PRIMARY KEY (id)||1 pro ada@newer,2 pro grace@y,3 gold cy@z|" \
    "$(hshape dh.customer_history)|$(q "SELECT string_agg(concat_ws(' ', id, tier, email), ',' ORDER BY id) FROM dh.customer_history")|$(q "SELECT valid_from_column FROM hwm.state WHERE pipeline = 'dh.customer_history'")"
hdbt_fails "turning history on on an existing model is refused" \
    "config 'history' is true, but the table holds one row per key.*--full-refresh" run --select customer_history
check "... and changes nothing" "3|" \
    "$(q "SELECT count(*) FROM dh.customer_history")|$(q "SELECT valid_from_column FROM hwm.state WHERE pipeline = 'dh.customer_history'")"
hdbt "dbt run --full-refresh with history on again" run --select customer_history --full-refresh
check "... rebuilds the history from the change log, with its bounds, key and index" \
    "0|id integer not null, changed_at timestamp with time zone, tier text, email text, deleted boolean, valid_from timestamp with time zone not null, valid_to timestamp with time zone|PRIMARY KEY (id, valid_from)|btree (id) WHERE (valid_to IS NULL)|{tier}" \
    "$(q "$hsame_as_before")|$(hshape dh.customer_history)|$(q "SELECT history_columns FROM hwm.state WHERE pipeline = 'dh.customer_history'")"

# --- history_columns: kept in sync with hwm.alter_pipeline ----------------------------------
hchange 1 9 pro ada@x           # email alone: a new version once email is tracked
hdbt "dbt run with history_columns [tier, email]" run --select customer_history --vars '{history_columns: [tier, email]}'
check "... changes the pipeline's tracked columns in place (hwm.state)" "{tier,email}" \
    "$(q "SELECT history_columns FROM hwm.state WHERE pipeline = 'dh.customer_history'")"
hlogged "... keeping its watermark" 'hwm dh\.customer_history: changed in place, watermark .* kept \(its configuration changed\)'
hlogged "... and says so" 'the history now tracks tier, email \(was tier\)'
check "... and the run after it opens a version on a change of email; the versions kept stay" \
"1 free ada@new 1-5
1 pro ada@newer 5-9
1 pro ada@x 9-
2 pro grace@x 1-4
2 pro grace@y 7-
3 free cy@z 3-8
3 gold cy@z 8-" "$(hrows dh.customer_history)"
hdbt "dbt run with history_columns unset" run --select customer_history --vars '{history_columns: null}'
check "... sets the pipeline's history_columns back to hwm's default (reset)" "" \
    "$(q "SELECT history_columns FROM hwm.state WHERE pipeline = 'dh.customer_history'")"

# --- an enforced contract lists the bounds ---------------------------------------------------
hdbt "dbt run --empty of a history with an enforced contract and bounds named since and until" run --select plan_history --empty
check "... creates its table, empty, without a pipeline" "0|0" \
    "$(q "SELECT count(*) FROM dh.plan_history")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline = 'dh.plan_history'")"
hdbt "the next dbt run gives the empty history its pipeline and loads it" run --select plan_history
hlogged "... taking the empty table over" 'the empty table dh\.plan_history .* gets its pipeline'
check "... has the contract's columns, since NOT NULL, its key on (id, since), the current versions' index" \
    "id integer not null, changed_at timestamp with time zone, tier text, since timestamp with time zone not null, until timestamp with time zone|PRIMARY KEY (id, since)|btree (id) WHERE (until IS NULL)" \
    "$(hshape dh.plan_history)"
check "... and every version of the tier, with since and until" \
    "1 free 1 5,1 pro 5 ,2 pro 1 ,3 free 3 8,3 gold 8 " \
    "$(q "SELECT string_agg(concat_ws(' ', id, tier, extract(hour FROM since AT TIME ZONE 'UTC'), coalesce(extract(hour FROM until AT TIME ZONE 'UTC')::text, '')), ',' ORDER BY id, since) FROM dh.plan_history")"

# --- configurations refused before anything is created ---------------------------------------
hdbt_fails "a history with partition_column is refused" \
    "config 'history' is true, and config 'partition_column' is set too: a history keeps every version of a key" \
    run --select partitioned_history
hdbt_fails "a history whose enforced contract lacks the bounds is refused" \
    "its contract is enforced and does not list valid_from and valid_to" \
    run --select uncontracted_bounds
check "... and neither created a table, helper or pipeline" "0|0" \
    "$(q "SELECT count(*) FROM pg_class WHERE relnamespace = 'dh'::regnamespace AND (relname LIKE 'partitioned_history%' OR relname LIKE 'uncontracted_bounds%')")|$(q "SELECT count(*) FROM hwm.state WHERE pipeline IN ('dh.partitioned_history', 'dh.uncontracted_bounds')")"
