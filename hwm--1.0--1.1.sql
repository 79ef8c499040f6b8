/* hwm--1.0--1.1.sql: upgrade hwm 1.0 to 1.1 (ALTER EXTENSION hwm UPDATE TO '1.1') */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.1'" to load this file. \quit

-- Each change below is also in hwm--1.1.sql; test/t/061_upgrade.pl checks
-- that an upgraded 1.0 and a fresh 1.1 end up with the same objects.

-- Issue 14: a run costs what is new.  What a load remembers for the next
-- one (see src/watermark.c), and what held its watermark back.
ALTER TABLE hwm.state
    ADD COLUMN reread_from text,
    ADD COLUMN reread_vxids text[],
    ADD COLUMN reread_starts timestamptz[],
    ADD COLUMN reread_epoch timestamptz,
    ADD COLUMN held_by_pid integer,
    ADD COLUMN held_by_application text,
    ADD COLUMN held_since timestamptz,
    ADD COLUMN null_watermarks bigint;
COMMENT ON COLUMN hwm.state.reread_from IS
'Where the next run starts reading (inclusive, in the watermark column''s text form): rows below it were either loaded or belong to a transaction listed in reread_vxids. NULL: read from the watermark.';
COMMENT ON COLUMN hwm.state.reread_vxids IS
'Transactions that were in flight at an earlier run and may still commit rows below reread_from (virtual transaction ids); when one has ended, the next run re-reads from its start.';
COMMENT ON COLUMN hwm.state.reread_starts IS
'Start times of the transactions in reread_vxids (NULL: unknown, such as a prepared transaction or a writer of a sequence-typed watermark: the next run after it ends re-reads from the watermark).';
COMMENT ON COLUMN hwm.state.reread_epoch IS
'Start time of the server when reread_vxids was recorded; after a restart the list means nothing and the next run re-reads from the watermark.';
COMMENT ON COLUMN hwm.state.held_by_pid IS
'The process whose transaction held the watermark back at the last run (the oldest such transaction), NULL: none.';
COMMENT ON COLUMN hwm.state.held_by_application IS
'application_name of held_by_pid at the last run.';
COMMENT ON COLUMN hwm.state.held_since IS
'Start of the transaction of held_by_pid: the watermark cannot pass it while it is open.';
COMMENT ON COLUMN hwm.state.null_watermarks IS
'Source rows whose watermark column is NULL, counted at the last run: an incremental run never loads them.';

-- Issue 16's columns (command and interval pipelines, see its block
-- below), added here so that hwm.status can show each pipeline's kind.
ALTER TABLE hwm.state ALTER COLUMN target DROP NOT NULL;
ALTER TABLE hwm.state ADD COLUMN command text;
ALTER TABLE hwm.state ADD COLUMN time_interval interval;
ALTER TABLE hwm.state ADD COLUMN interval_anchor text;
ALTER TABLE hwm.state ADD COLUMN batched boolean NOT NULL DEFAULT false;
ALTER TABLE hwm.state ADD COLUMN skip_empty boolean NOT NULL DEFAULT false;
ALTER TABLE hwm.state ADD CONSTRAINT state_target_or_command
    CHECK (target IS NOT NULL OR command IS NOT NULL);
ALTER TABLE hwm.state ADD CONSTRAINT state_interval_has_command
    CHECK (time_interval IS NULL OR command IS NOT NULL);

COMMENT ON COLUMN hwm.state.command IS
'Command and interval pipelines: the SQL command each run executes, $1 and $2 being the range it covers (NULL: a copy pipeline into target).';
COMMENT ON COLUMN hwm.state.time_interval IS
'Interval pipelines: the length of one interval of the time column (watermark_column); the watermark is the end (exclusive) of the last interval done. NULL: not an interval pipeline.';
COMMENT ON COLUMN hwm.state.interval_anchor IS
'Interval pipelines: a boundary of the interval grid, in the time column type''s text form; intervals start at interval_anchor + k * time_interval (counted in UTC).';
COMMENT ON COLUMN hwm.state.batched IS
'Interval pipelines: run the command once over all the finished intervals of the backlog instead of once per interval.';
COMMENT ON COLUMN hwm.state.skip_empty IS
'Interval pipelines: do not run the command for an interval in which the source has no rows (the watermark still moves past it).';

-- New columns for hwm.status: dropped and created again rather than
-- replaced (CREATE OR REPLACE would also take over a look-alike object),
-- with its grant, its comment and security_invoker as in 1.0.
DROP VIEW hwm.status;
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
            ELSE 'copy' END AS kind
  FROM hwm.state AS s;

GRANT SELECT ON hwm.status TO PUBLIC;
COMMENT ON VIEW hwm.status IS
'One line per pipeline for people: watermark, lag behind now() for time-typed watermarks, last run and its outcome, next scheduled run, the transaction that held the watermark back at the last run and for how long, the source rows with a NULL watermark that no run loads, and the pipeline''s kind (copy, command or interval).';
-- End of issue 14.

-- ---------------------------------------------------------------------------
-- Command and interval pipelines (issue 16; src/command.c, src/interval.c).
-- The same block is in hwm--1.0--1.1.sql and hwm--1.1.sql.
-- A command pipeline runs a SQL command over the range of watermark values
-- each run settles ($1 exclusive, $2 inclusive); an interval pipeline runs
-- it over each finished interval of a time column ($1 inclusive, $2
-- exclusive).  Neither has a target: the command writes wherever it writes.
-- (The columns of these pipelines are added above, before hwm.status,
-- which shows each pipeline's kind.)

CREATE FUNCTION hwm.create_command_pipeline(
    pipeline          text,
    source            regclass,
    watermark_column  name,
    command           text,
    schedule          interval DEFAULT NULL,
    initial_watermark text     DEFAULT NULL,
    delay             interval DEFAULT NULL,
    batch_size        bigint   DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_command_pipeline';

COMMENT ON FUNCTION hwm.create_command_pipeline(text, regclass, name, text, interval, text, interval, bigint) IS
'Declare a command pipeline: each run settles the new safe watermark as hwm.run does and, when the source has rows above the old one, runs command once with $1 = the old watermark (exclusive; NULL on the first run) and $2 = the new one (inclusive), both of the watermark column''s type, then stores the new watermark in the same transaction. The command runs as the pipeline''s owner with search_path pinned to pg_catalog, pg_temp, so it must qualify its names; it is parsed and its tables'' privileges checked now.';

CREATE FUNCTION hwm.create_interval_pipeline(
    pipeline      text,
    source        regclass,
    time_column   name,
    time_interval interval,
    command       text,
    anchor        text     DEFAULT NULL,
    start_at      text     DEFAULT NULL,
    batched       boolean  DEFAULT false,
    skip_empty    boolean  DEFAULT false,
    schedule      interval DEFAULT NULL,
    delay         interval DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_interval_pipeline';

COMMENT ON FUNCTION hwm.create_interval_pipeline(text, regclass, name, interval, text, text, text, boolean, boolean, interval, interval) IS
'Declare an interval pipeline: the time column is cut into intervals of time_interval from anchor (default 2000-01-01 00:00 UTC); once an interval has ended and no transaction still in flight can write into it (and delay has passed), a run executes command with $1 = its start (inclusive) and $2 = its end (exclusive). One interval per hwm.run (CALL hwm.catch_up commits each on its own), or the whole backlog in one command with batched; skip_empty skips intervals without rows. start_at is the first interval''s start (default: the interval of the oldest row).';

-- Not SECURITY DEFINER and no SET clause, like hwm.backfill: it commits
-- after every interval when called outside a transaction block.
CREATE PROCEDURE hwm.rerun_intervals(
    pipeline  text,
    from_time text,
    to_time   text)
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_rerun_intervals';

COMMENT ON PROCEDURE hwm.rerun_intervals(text, text, text) IS
'Run an interval pipeline''s command again over every interval from from_time (inclusive) to to_time (exclusive), both interval boundaries no later than its watermark, one interval per transaction outside a transaction block; progress is recorded in hwm.backfills and calling it again resumes an unfinished rerun. The watermark does not move.';
-- End of command and interval pipelines.
-- ---------------------------------------------------------------------------
