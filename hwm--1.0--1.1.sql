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

-- (security_invoker as in 1.0: CREATE OR REPLACE VIEW replaces the options)
CREATE OR REPLACE VIEW hwm.status WITH (security_invoker = true) AS
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
       s.null_watermarks
  FROM hwm.state AS s;

COMMENT ON VIEW hwm.status IS
'One line per pipeline for people: watermark, lag behind now() for time-typed watermarks, last run and its outcome, next scheduled run, the transaction that held the watermark back at the last run and for how long, and the source rows with a NULL watermark that no run loads.';
-- End of issue 14.
