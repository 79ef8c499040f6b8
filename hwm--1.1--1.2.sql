/* hwm--1.1--1.2.sql: upgrade hwm 1.1 to 1.2 */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.2'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- 1.2: owners are contained (issue 20).  hwm--1.2.sql creates the same
-- objects in their final form; test/t/061_upgrade.pl checks that the two
-- agree.
--
-- Every row of hwm.runs and hwm.backfills belongs to the role whose
-- pipeline it is (or who ran it, without a pipeline), written with the row;
-- nobody else sees it.  Rows written by 1.1's scheduler have no owner: the
-- role named in run_by (the pipeline's owner, for the scheduler's runs) is
-- the best record of it there is.
UPDATE hwm.runs AS r SET owner = x.oid::pg_catalog.regrole
  FROM pg_catalog.pg_roles AS x
 WHERE r.owner IS NULL AND x.rolname OPERATOR(pg_catalog.=) r.run_by;
DROP POLICY runs_visible_to_owner ON hwm.runs;
CREATE POLICY runs_visible_to_owner ON hwm.runs FOR SELECT TO PUBLIC
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner::pg_catalog.oid, 'USAGE'));
COMMENT ON POLICY runs_visible_to_owner ON hwm.runs IS
'A user sees the runs made with the rights of roles whose privileges they have; the owner is written with the row, so a pipeline dropped and declared again by another role shows nothing of the old one.';

ALTER TABLE hwm.backfills ADD COLUMN owner regrole;
COMMENT ON COLUMN hwm.backfills.owner IS
'Owner of the pipeline when the backfill or rerun was started. Decides who sees the row.';
UPDATE hwm.backfills AS b SET owner = s.owner
  FROM hwm.state AS s
 WHERE b.pipeline OPERATOR(pg_catalog.=) s.pipeline;
ALTER TABLE hwm.backfills ENABLE ROW LEVEL SECURITY;
CREATE POLICY backfills_visible_to_owner ON hwm.backfills FOR SELECT TO PUBLIC
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner::pg_catalog.oid, 'USAGE'));
COMMENT ON POLICY backfills_visible_to_owner ON hwm.backfills IS
'A user sees the backfills and reruns of pipelines owned by roles whose privileges they have.';

-- Where each pipeline was declared.  Not dumped: a restore (by a superuser,
-- who creates the extension) declares the pipelines anew in the database it
-- restores into, and a pipeline without a row is at home.  A file-level
-- copy of the database (CREATE DATABASE ... TEMPLATE) carries the rows with
-- the old database's OID, and the scheduler leaves those pipelines alone
-- until their owner or a superuser calls hwm.resume in the copy.
-- ALTER DATABASE ... RENAME keeps the OID: not a copy.  (A row left by a
-- dropped pipeline matches nothing, and a pipeline declared again under its
-- name takes it over.)
CREATE TABLE hwm.homes (
    pipeline text          NOT NULL PRIMARY KEY,
    dboid    pg_catalog.oid NOT NULL
);
COMMENT ON TABLE hwm.homes IS
'The database (by OID) each pipeline was declared or last resumed in. A pipeline whose row names another database came with a copy of that database, and is not scheduled here until hwm.resume is called here.';
INSERT INTO hwm.homes (pipeline, dboid)
SELECT s.pipeline, d.oid
  FROM hwm.state AS s, pg_catalog.pg_database AS d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database();
REVOKE ALL ON hwm.homes FROM PUBLIC;
GRANT SELECT ON hwm.homes TO PUBLIC;
ALTER TABLE hwm.homes ENABLE ROW LEVEL SECURITY;
CREATE POLICY homes_visible_to_owner ON hwm.homes FOR SELECT TO PUBLIC
    USING (EXISTS (SELECT FROM hwm.state AS s WHERE s.pipeline OPERATOR(pg_catalog.=) homes.pipeline));
COMMENT ON POLICY homes_visible_to_owner ON hwm.homes IS
'A user sees where the pipelines they can see were declared.';

-- ---------------------------------------------------------------------------
-- Reconcile (issue 32): CALL hwm.reconcile deletes the target rows whose key
-- the source no longer has, in batches of keys, as a resumable job of
-- hwm.backfills (its kind says which job a row is), each batch recorded in
-- hwm.runs with kind 'reconcile'; hwm.status shows the last reconcile.
ALTER TABLE hwm.backfills ADD COLUMN kind text NOT NULL DEFAULT 'backfill'
    CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['backfill', 'rerun_intervals', 'reconcile']));
COMMENT ON COLUMN hwm.backfills.kind IS
'Which job the row is: backfill (CALL hwm.backfill; from_partition, to_partition and done_through are partition values), rerun_intervals (CALL hwm.rerun_intervals; interval boundaries) or reconcile (CALL hwm.reconcile; keys, '''' for a range without that bound, batch_size in keys).';
UPDATE hwm.backfills AS b SET kind = 'rerun_intervals'
  FROM hwm.state AS s
 WHERE b.pipeline OPERATOR(pg_catalog.=) s.pipeline AND s.time_interval IS NOT NULL;
ALTER TABLE hwm.runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE hwm.runs ADD CONSTRAINT runs_kind_check
    CHECK (kind OPERATOR(pg_catalog.=) ANY
           (ARRAY['load', 'overwrite', 'backfill', 'swap', 'set_watermark', 'reconcile']));

-- Not SECURITY DEFINER and no SET clause, like hwm.backfill: it commits
-- after every batch when called outside a transaction block.
CREATE PROCEDURE hwm.reconcile(
    pipeline   text,
    from_key   text    DEFAULT NULL,
    to_key     text    DEFAULT NULL,
    batch_size integer DEFAULT 10000,
    dry_run    boolean DEFAULT false)
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_reconcile';

COMMENT ON PROCEDURE hwm.reconcile(text, text, text, integer, boolean) IS
'Delete the target rows whose unique key the source no longer has among its live rows (rows deleted in the source, which no watermark sees, or soft-deleted without a new watermark value), over the whole target or the inclusive range from_key..to_key of the key''s first column (the first column of the target''s unique index; NULL: no bound), walking the target''s keys in that index''s order, batch_size keys per batch; keys compare as the unique index has them equal, on source values in the target''s types. Each batch runs under the pipeline''s lock and reads the source as it is then. Outside a transaction block it commits after every batch and records its progress in hwm.backfills (kind reconcile); calling it again resumes an unfinished reconcile. Every batch that deleted rows, and the last, is recorded in hwm.runs (kind reconcile). With dry_run it only reports (NOTICE) how many rows it would delete and their first and last keys (hwm.reconcile_preview returns them).';

CREATE FUNCTION hwm.reconcile_preview(
    pipeline text,
    from_key text DEFAULT NULL,
    to_key   text DEFAULT NULL)
RETURNS TABLE (rows_to_delete bigint, first_key text, last_key text)
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_reconcile_preview';

COMMENT ON FUNCTION hwm.reconcile_preview(text, text, text) IS
'What CALL hwm.reconcile(pipeline, from_key, to_key) would delete now, as one row: how many target rows, and the first and last of their keys (NULL: none). Its dry run as a result, for callers that cannot read a NOTICE (dbt). Changes and records nothing.';

-- hwm.status gets a column: dropped and created again (see 1.1).
DROP VIEW hwm.status;
-- A reconcile on a schedule of its own (issue 32): the scheduler's worker runs
-- the reconcile of the whole target after a scheduled run of the pipeline
-- succeeded, once reconcile_next_run_at has come (see src/README.md).
ALTER TABLE hwm.state ADD COLUMN reconcile_schedule interval;
ALTER TABLE hwm.state ADD COLUMN reconcile_anchor timestamptz;
ALTER TABLE hwm.state ADD COLUMN reconcile_next_run_at timestamptz;
ALTER TABLE hwm.state ADD COLUMN reconcile_batch_size integer
    CHECK (reconcile_batch_size OPERATOR(pg_catalog.>) 0);
COMMENT ON COLUMN hwm.state.reconcile_schedule IS
'How often the scheduler reconciles the whole target (hwm.schedule_reconcile; NULL: never): after a scheduled run of the pipeline succeeded, once reconcile_next_run_at has come.';
COMMENT ON COLUMN hwm.state.reconcile_anchor IS
'The anchor of the reconcile''s schedule: reconciles are due at reconcile_anchor + k * reconcile_schedule.';
COMMENT ON COLUMN hwm.state.reconcile_next_run_at IS
'When the scheduled reconcile is due next; the worker moves it to the next slot of the grid before it reconciles.';
COMMENT ON COLUMN hwm.state.reconcile_batch_size IS
'The batch_size (target keys per transaction) of the scheduled reconcile.';

CREATE FUNCTION hwm.schedule_reconcile(
    pipeline   text,
    every      interval,
    batch_size integer DEFAULT 10000)
RETURNS timestamptz
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_schedule_reconcile';

COMMENT ON FUNCTION hwm.schedule_reconcile(text, interval, integer) IS
'Reconcile the pipeline''s whole target every interval (at least 1 second), batch_size keys per batch, in the scheduler: after a scheduled run of the pipeline succeeded, when the reconcile is due, the same worker runs it as CALL hwm.reconcile(pipeline, batch_size => batch_size) would, under the pipeline''s timeout. The pipeline must have a schedule (hwm.schedule). Returns when the first reconcile is due.';

CREATE FUNCTION hwm.unschedule_reconcile(pipeline text)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_unschedule_reconcile';

COMMENT ON FUNCTION hwm.unschedule_reconcile(text) IS
'Stop reconciling the pipeline on a schedule (the load''s schedule is kept); CALL hwm.reconcile still works by hand.';

CREATE VIEW hwm.status WITH (security_invoker = true) AS
SELECT s.pipeline,
       s.owner,
       s.source,
       s.target,
       s.watermark_column,
       s.watermark,
       CASE WHEN s.watermark IS NOT NULL
             AND (SELECT CASE WHEN t.typtype OPERATOR(pg_catalog.=) 'd' THEN t.typbasetype ELSE t.oid END
                    FROM pg_catalog.pg_type AS t
                   WHERE t.oid OPERATOR(pg_catalog.=) s.watermark_type) OPERATOR(pg_catalog.=) ANY
                 (ARRAY['pg_catalog.timestamptz', 'pg_catalog.timestamp', 'pg_catalog.date']::pg_catalog.regtype[]::pg_catalog.oid[])
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) s.watermark::pg_catalog.timestamptz
       END AS lag,
       s.partition_column,
       s.lookback,
       s.enabled,
       s.schedule,
       s.next_run_at,
       s.timeout,
       (SELECT pg_catalog.min(r.started_at) FROM hwm.runs AS r
         WHERE r.pipeline OPERATOR(pg_catalog.=) s.pipeline
           AND r.status OPERATOR(pg_catalog.=) 'running') AS running_since,
       s.last_run_id,
       s.last_run_started_at,
       s.last_run_finished_at,
       s.last_status,
       s.last_rows,
       s.consecutive_failures,
       s.last_error,
       s.held_by_pid,
       s.held_by_application,
       pg_catalog.now() OPERATOR(pg_catalog.-) s.held_since AS held_for,
       s.null_watermarks,
       CASE WHEN s.time_interval IS NOT NULL THEN 'interval'
            WHEN s.command IS NOT NULL THEN 'command'
            ELSE 'copy' END AS kind,
       CASE WHEN s.schedule IS NULL THEN NULL
            WHEN EXISTS (SELECT FROM hwm.homes AS h
                          WHERE h.pipeline OPERATOR(pg_catalog.=) s.pipeline
                            AND h.dboid OPERATOR(pg_catalog.<>)
                                (SELECT d.oid FROM pg_catalog.pg_database AS d
                                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))
            THEN 'declared in another database and copied into this one: its owner or a superuser must call hwm.resume here before the scheduler runs it'
            WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS o WHERE o.oid OPERATOR(pg_catalog.=) s.owner::pg_catalog.oid)
            THEN 'its owner role no longer exists: drop the pipeline'
            WHEN NOT s.enabled THEN 'paused: hwm.resume starts it again'
            WHEN s.next_run_at IS NULL THEN 'no next run time can be represented: schedule it again'
            WHEN NOT (SELECT o.rolcanlogin FROM pg_catalog.pg_roles AS o WHERE o.oid OPERATOR(pg_catalog.=) s.owner::pg_catalog.oid)
            THEN 'its owner cannot log in, and scheduled runs connect as the owner: ALTER ROLE ... LOGIN, or run it by hand'
            WHEN NOT pg_catalog.has_database_privilege(s.owner::pg_catalog.oid, pg_catalog.current_database(), 'CONNECT')
            THEN 'its owner may not connect to this database, and scheduled runs connect as the owner: GRANT CONNECT ON DATABASE ... TO the owner, or run it by hand'
            WHEN ro.read_only AND ro.setrole OPERATOR(pg_catalog.=) 0 AND ro.setdatabase OPERATOR(pg_catalog.<>) 0
            THEN 'every transaction in this database is read-only by default (ALTER DATABASE ... SET default_transaction_read_only): its scheduled runs fail; ALTER DATABASE ... RESET default_transaction_read_only'
            WHEN ro.read_only AND ro.setrole OPERATOR(pg_catalog.=) 0
            THEN 'every role''s transactions are read-only by default (ALTER ROLE ALL SET default_transaction_read_only): its scheduled runs fail; ALTER ROLE ALL RESET default_transaction_read_only'
            WHEN ro.read_only
            THEN 'its owner''s transactions are read-only by default (ALTER ROLE ... SET default_transaction_read_only): its scheduled runs fail; ALTER ROLE ... RESET default_transaction_read_only'
            WHEN s.last_status OPERATOR(pg_catalog.=) 'failed' AND s.last_error OPERATOR(pg_catalog.~~) 'the scheduler could not claim the run:%'
            THEN 'the scheduler could not claim its last run (last_error says why): it tries again at next_run_at'
       END AS not_scheduled_because,
       rc.finished_at AS last_reconcile_at,
       rc.status AS last_reconcile_status,
       rc.rows_deleted AS last_reconcile_rows_deleted,
       s.reconcile_schedule,
       s.reconcile_next_run_at AS next_reconcile_at
  FROM hwm.state AS s
  -- the default_transaction_read_only its scheduled runs get: the most
  -- specific of the owner's in this database, the owner's, the database's,
  -- every role's (pg_db_role_setting, which every role may read)
  LEFT JOIN LATERAL (
       SELECT x.setrole, x.setdatabase,
              pg_catalog.split_part(c.c, '=', 2) OPERATOR(pg_catalog.~*) '^(on|t|tr|tru|true|y|ye|yes|1)$' AS read_only
         FROM pg_catalog.pg_db_role_setting AS x,
              pg_catalog.unnest(x.setconfig) AS c(c)
        WHERE x.setdatabase OPERATOR(pg_catalog.=) ANY (ARRAY[0::pg_catalog.oid,
                  (SELECT d.oid FROM pg_catalog.pg_database AS d
                    WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())])
          AND x.setrole OPERATOR(pg_catalog.=) ANY (ARRAY[0::pg_catalog.oid, s.owner::pg_catalog.oid])
          AND pg_catalog.lower(c.c) OPERATOR(pg_catalog.~~) 'default\_transaction\_read\_only=%'
        ORDER BY x.setrole OPERATOR(pg_catalog.=) 0, x.setdatabase OPERATOR(pg_catalog.=) 0
        LIMIT 1) AS ro ON true
  -- the last reconcile of this pipeline (not of one dropped before it)
  LEFT JOIN LATERAL (
       SELECT b.finished_at, b.status, b.rows_deleted
         FROM hwm.backfills AS b
        WHERE b.pipeline OPERATOR(pg_catalog.=) s.pipeline
          AND b.kind OPERATOR(pg_catalog.=) 'reconcile'
          AND b.started_at OPERATOR(pg_catalog.>=) s.created_at
        ORDER BY b.backfill_id DESC
        LIMIT 1) AS rc ON true;

GRANT SELECT ON hwm.status TO PUBLIC;
COMMENT ON VIEW hwm.status IS
'One line per pipeline for people: watermark, lag behind now() for time-typed watermarks, last run and its outcome, next scheduled run, the transaction that held the watermark back at the last run and for how long, the source rows with a NULL watermark that no run loads, the pipeline''s kind (copy, command or interval), and why a scheduled pipeline is not being run by the scheduler, or not successfully (paused, copied from another database, an owner that cannot log in or connect, a read-only default of the database or the owner, a claim that failed), and the last reconcile (when it finished, its status, the rows it deleted).';
-- Partition bounds and watermarks of the column's own type (issue 22): a
-- date, a timestamp or a number is passed as it is, and turned into the
-- text form the functions above take, in the caller's session (whose
-- DateStyle and TimeZone read it back).  Quoted literals still call the
-- text versions.  (CALL hwm.backfill and hwm.rerun_intervals take text: a
-- wrapper would make their commits between batches impossible.)
CREATE FUNCTION hwm.overwrite(
    pipeline           text,
    from_partition     anyelement,
    to_partition       anyelement,
    nowait             boolean DEFAULT false,
    OUT rows_deleted   bigint,
    OUT rows_inserted  bigint,
    OUT run_id         bigint)
RETURNS record
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM hwm.overwrite($1, $2::pg_catalog.text, $3::pg_catalog.text, $4) $$;
COMMENT ON FUNCTION hwm.overwrite(text, anyelement, anyelement, boolean) IS
'hwm.overwrite with the bounds in the partition column''s own type (a date, a timestamp, a number) rather than text.';

CREATE FUNCTION hwm.overwrite_partition(
    target             regclass,
    source             regclass,
    partition_column   name,
    from_partition     anyelement,
    to_partition       anyelement,
    OUT rows_deleted   bigint,
    OUT rows_inserted  bigint,
    OUT run_id         bigint)
RETURNS record
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM hwm.overwrite_partition($1, $2, $3, $4::pg_catalog.text, $5::pg_catalog.text) $$;
COMMENT ON FUNCTION hwm.overwrite_partition(regclass, regclass, name, anyelement, anyelement) IS
'hwm.overwrite_partition with the bounds in the partition column''s own type rather than text.';

CREATE FUNCTION hwm.backfill_plan(
    pipeline          text,
    from_partition    anyelement,
    to_partition      anyelement)
RETURNS TABLE (partition text, source_rows bigint, target_rows bigint)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM hwm.backfill_plan($1, $2::pg_catalog.text, $3::pg_catalog.text) $$;
COMMENT ON FUNCTION hwm.backfill_plan(text, anyelement, anyelement) IS
'hwm.backfill_plan with the bounds in the partition column''s own type rather than text.';

CREATE FUNCTION hwm.set_watermark(pipeline text, watermark anyelement)
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT hwm.set_watermark($1, $2::pg_catalog.text) $$;
COMMENT ON FUNCTION hwm.set_watermark(text, anyelement) IS
'hwm.set_watermark with the watermark in the watermark column''s own type rather than text.';

-- The run the scheduler claimed last (issue 28).  A claim is true only while
-- nothing changed the schedule: hwm.schedule, unschedule, pause and resume
-- clear it, and the worker runs a claimed run only when the column still
-- names it and its role still owns the pipeline (under the pipeline's lock,
-- just before the run); otherwise the run is recorded as skipped.
ALTER TABLE hwm.state ADD COLUMN claimed_run_id bigint;
COMMENT ON COLUMN hwm.state.claimed_run_id IS
'The scheduled run the scheduler claimed last (its run_id in hwm.runs); cleared when the schedule or the pause state changes, which makes a claimed run that has not started yet be skipped.';
CREATE FUNCTION hwm.alter_pipeline(
    pipeline          text,
    source            regclass DEFAULT NULL,
    target            regclass DEFAULT NULL,
    unique_key        text[]   DEFAULT NULL,
    partition_column  name     DEFAULT NULL,
    lookback          integer  DEFAULT NULL,
    schedule          interval DEFAULT NULL,
    delay             interval DEFAULT NULL,
    batch_size        bigint   DEFAULT NULL,
    command           text     DEFAULT NULL,
    batched           boolean  DEFAULT NULL,
    skip_empty        boolean  DEFAULT NULL,
    reset             text[]   DEFAULT NULL,
    delete_column     name     DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_alter_pipeline';

COMMENT ON FUNCTION hwm.alter_pipeline(text, regclass, regclass, text[], name, integer, interval, interval, bigint, text, boolean, boolean, text[], name) IS
'Change a pipeline''s settings in place, checked as create_pipeline checks them: a NULL argument keeps the setting, reset => ''{...}'' clears partition_column, lookback, schedule, delay, batch_size or delete_column. The watermark, what the last run remembered, the history, the owner and (unless given) the schedule are kept.';

-- Tombstones (issue 32): the source column whose value marks a deleted row.
ALTER TABLE hwm.state ADD COLUMN delete_column name;
COMMENT ON COLUMN hwm.state.delete_column IS
'Delete marker of the source (NULL: none): a row of the slice whose marker is true (boolean) or not NULL (timestamp, timestamptz, date) deletes the target row of its key instead of being upserted.';

-- create_pipeline takes delete_column: recreated with its new signature.
DROP FUNCTION hwm.create_pipeline(text, regclass, regclass, text[], name, name, integer, interval, text, interval, bigint);
CREATE FUNCTION hwm.create_pipeline(
    pipeline          text,
    source            regclass,
    target            regclass,
    unique_key        text[],
    watermark_column  name,
    partition_column  name     DEFAULT NULL,
    lookback          integer  DEFAULT 0,
    schedule          interval DEFAULT NULL,
    initial_watermark text     DEFAULT NULL,
    delay             interval DEFAULT NULL,
    batch_size        bigint   DEFAULT NULL,
    delete_column     name     DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_pipeline';

COMMENT ON FUNCTION hwm.create_pipeline(text, regclass, regclass, text[], name, name, integer, interval, text, interval, bigint, name) IS
'Declare a pipeline that loads source into target incrementally: upsert on unique_key the rows whose watermark_column is greater than the stored watermark; with partition_column and lookback, re-overwrite the lookback newest partitions on every run; with delay, keep the watermark at least that far behind now(); with batch_size, load at most that many rows per run; with delete_column (a boolean, or a timestamp set on deletion), a source row carrying that marker deletes the target row of its key. Everything is validated up front.';

-- End of 1.2.
