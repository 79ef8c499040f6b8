/* hwm--1.2--1.3.sql: upgrade hwm 1.2 to 1.3 */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.3'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- 1.3, unreleased.  Each change to the catalog goes here and, in its final
-- form, into hwm--1.3.sql; test/t/061_upgrade.pl checks that a fresh 1.3
-- and a 1.2 updated by this script have the same objects.  A change that
-- adds a column to hwm.state moves CATALOG_NEWEST_COLUMN (src/catalog.c)
-- to it, so that the library refuses a 1.2 catalog from then on.
--
-- ---------------------------------------------------------------------------
-- Chains (issue 41): hwm.schedule_after's upstreams, why a schedule ended
-- without hwm.unschedule, a freshness goal, how far the last run found its
-- source complete, since when it is late, and what its watermark cannot be
-- made safe against.  watermark_caveat was the mark of the 1.3 catalog
-- (CATALOG_NEWEST_COLUMN).
ALTER TABLE hwm.state ADD COLUMN after text[];
ALTER TABLE hwm.state ADD COLUMN schedule_ended text;
ALTER TABLE hwm.state ADD COLUMN target_lag interval
    CHECK (target_lag OPERATOR(pg_catalog.>=) '1 second');
ALTER TABLE hwm.state ADD COLUMN data_as_of timestamptz;
ALTER TABLE hwm.state ADD COLUMN late_since timestamptz;
ALTER TABLE hwm.state ADD COLUMN watermark_caveat text;
COMMENT ON COLUMN hwm.state.after IS
'The upstream pipelines (hwm.schedule_after): a run of any of them that commits rows or moves its watermark makes this pipeline due at once; one run follows any number of such commits made while it waits or runs. NULL: none.';
COMMENT ON COLUMN hwm.state.schedule_ended IS
'Why the scheduler stopped running the pipeline without hwm.unschedule (an upstream of hwm.schedule_after was dropped); cleared by hwm.schedule, hwm.schedule_after and hwm.unschedule.';
COMMENT ON COLUMN hwm.state.target_lag IS
'Freshness goal (hwm.set_target_lag): how far behind now() the time up to which the target reflects its sources (hwm.freshness.data_as_of) may fall before the pipeline counts as late. A pipeline with a target lag and neither hwm.schedule nor hwm.schedule_after is run by the scheduler to stay under it. NULL: none.';
COMMENT ON COLUMN hwm.state.data_as_of IS
'Time-typed watermarks: the time below which the pipeline''s last load run found every source row committed and loaded it (the safe bound of that run: the oldest start of a writer in flight, no later than now() less hwm.start_margin and delay), so that a run over a source with nothing new still shows its target fresh. NULL: not known (no such run yet, another watermark type, or hwm.set_watermark since).';
COMMENT ON COLUMN hwm.state.watermark_caveat IS
'What hwm cannot make safe for the watermark, as hwm.create_pipeline or hwm.alter_pipeline last warned of it (a foreign table or materialized view read without a delay, an upstream pipeline whose watermark has another type); shown by hwm.status. NULL: nothing.';
COMMENT ON COLUMN hwm.state.late_since IS
'Since when the pipeline is late (hwm.freshness.late), as the scheduler noticed it: set, logged and notified once when it becomes late, cleared when it is no longer late. NULL: not late, or no target lag.';

-- hwm.schedule_after (src/schedule.c)
CREATE FUNCTION hwm.schedule_after(pipeline text, upstreams text[])
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_schedule_after';

COMMENT ON FUNCTION hwm.schedule_after(text, text[]) IS
'Run the pipeline after its upstream pipelines instead of every so often: a run of any of them that commits rows or moves its watermark makes it due at once; any number of such commits while it waits, and any while it runs, give one run each time, not one each; it never runs twice at once, and never while nothing upstream changed. Replaces a schedule of hwm.schedule, which replaces this in turn; hwm.unschedule clears it, hwm.pause and hwm.resume work as for schedules; a dropped upstream unschedules it, saying so in hwm.status. Refused: an unknown upstream, one of another owner whose target the pipeline''s owner may not read, a cycle.';

COMMENT ON FUNCTION hwm.unschedule(text) IS
'Stop running the pipeline on a schedule, after its upstreams (hwm.schedule_after), on its source''s commits (hwm.schedule_on_commit), or to stay under its target lag (which it clears: hwm.set_target_lag); it still runs on demand with hwm.run. A run in progress finishes.';

-- Freshness (issue 41): a freshness goal per pipeline, and the views that
-- measure freshness and what monitoring tools scrape.
CREATE FUNCTION hwm.set_target_lag(pipeline text, target_lag interval)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_set_target_lag';

COMMENT ON FUNCTION hwm.set_target_lag(text, interval) IS
'Set the pipeline''s freshness goal: how far behind now() its data (hwm.freshness.data_as_of) may fall before hwm.freshness and hwm.metrics show it late; at least 1 second, finite, without negative parts (NULL: no goal). A pipeline with neither hwm.schedule nor hwm.schedule_after is then run by the scheduler half its target lag after each of its runs, and at once after each run of a pipeline loading a table it reads; with a schedule, the goal only makes it late. The scheduler logs and notifies (hwm.notify_channel) once each time a pipeline becomes late.';

-- hwm.wakes (issue 41): what runs of upstream pipelines woke, for the
-- scheduler to apply.  A run that commits rows, moves its watermark or
-- finds its source complete further inserts one row in its own transaction
-- (so a rolled-back run wakes nobody); the scheduler's worker that ran it
-- (right after its commit), or else the dispatcher, deletes the rows and
-- makes due the pipelines scheduled after that upstream, or run to stay
-- under a target lag over its target (src/catalog.c, src/worker.c).  An insert locks
-- no pipeline's row: a transaction that runs an upstream and then a
-- downstream by hand cannot deadlock with the scheduler running that
-- downstream, as it could when the run itself updated the downstream's row.
-- Not dumped: a wake belongs to the server that ran the upstream.
CREATE TABLE hwm.wakes (
    upstream text           NOT NULL,
    target   pg_catalog.oid,
    changed  boolean        NOT NULL,
    woken_at timestamptz    NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE hwm.wakes IS
'Wakes waiting for the scheduler: one row per run of a pipeline (upstream, its target) that committed rows or moved its watermark (changed) or found its source complete further; the scheduler''s worker that ran the upstream (right after its commit, taking the woken runs of its owner into its own queue), or else the dispatcher, deletes them and makes due the pipelines of hwm.schedule_after (changed only) and those run to stay under a target lag whose source reads that target. Written only by hwm.';

REVOKE ALL ON hwm.wakes FROM PUBLIC;

-- hwm.freshness (issue 41): per pipeline, the time up to which its target
-- reflects its sources, how far that is behind now(), and whether that is
-- more than its target lag.  A pipeline's own time is the later of its
-- watermark, where the watermark is a time (the test of hwm.status's lag),
-- and how far its last run found its source complete (data_as_of, which a
-- run with nothing new moves too, so an idle source is fresh); through a
-- chain it
-- is the oldest of its own and its upstreams', transitively.  Its upstreams
-- are the pipelines that load a table its source reads (the source; through
-- a view what the view's rule reads, in pg_depend, views within views; with
-- a table its partitions and the tables it is a partition of; not its own
-- target), as the safe watermark finds them (src/watermark.c, which also
-- follows the SQL functions a view calls), and the pipelines of its after
-- (hwm.schedule_after).  Read with the rights of whoever queries it, so only
-- the pipelines they can see count: another owner's upstream is left out
-- rather than shown through its time.  NULL when the pipeline or one of its
-- upstreams has no time to give (no run has found its source complete yet,
-- or a watermark that is not a time): nothing says how fresh the data is.  The recursive parts
-- stop on cycles, as UNION keeps no row twice.
-- The view's rows come from a function so that the server does not JIT-compile
-- them: the planner cannot estimate the recursions and takes them for
-- millions of rows, which costs about a second of compilation per query
-- on a server with jit on.  The function is SQL, run with the caller's rights
-- (row security on hwm.state applies as in the view).
CREATE FUNCTION hwm.freshness_rows()
RETURNS TABLE (pipeline text, owner regrole, data_as_of timestamptz, lag interval,
               target_lag interval, late boolean, late_since timestamptz)
LANGUAGE sql STABLE
SET jit = off
SET search_path = pg_catalog, pg_temp
AS $fn$
WITH RECURSIVE
  -- the relations each pipeline's source reads
  reads (pipeline, target, relid) AS (
       SELECT s.pipeline, s.target::pg_catalog.oid, s.source::pg_catalog.oid
         FROM hwm.state AS s
       UNION
       SELECT r.pipeline, r.target, n.relid
         FROM reads AS r
        CROSS JOIN LATERAL (
              SELECT d.refobjid
                FROM pg_catalog.pg_class AS v
                JOIN pg_catalog.pg_rewrite AS w ON w.ev_class OPERATOR(pg_catalog.=) v.oid
                JOIN pg_catalog.pg_depend AS d
                  ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                 AND d.objid OPERATOR(pg_catalog.=) w.oid
                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               WHERE v.oid OPERATOR(pg_catalog.=) r.relid
                 AND v.relkind OPERATOR(pg_catalog.=) 'v'
                 AND d.refobjid OPERATOR(pg_catalog.<>) v.oid
              UNION
              SELECT i.inhrelid FROM pg_catalog.pg_inherits AS i
               WHERE i.inhparent OPERATOR(pg_catalog.=) r.relid
              UNION
              SELECT i.inhparent FROM pg_catalog.pg_inherits AS i
                JOIN pg_catalog.pg_class AS p ON p.oid OPERATOR(pg_catalog.=) i.inhrelid
               WHERE i.inhrelid OPERATOR(pg_catalog.=) r.relid AND p.relispartition) AS n (relid)),
  -- each pipeline's direct upstreams
  edges (pipeline, upstream) AS (
       SELECT r.pipeline, u.pipeline
         FROM reads AS r
         JOIN hwm.state AS u ON u.target::pg_catalog.oid OPERATOR(pg_catalog.=) r.relid
        WHERE r.relid OPERATOR(pg_catalog.<>) COALESCE(r.target, 0::pg_catalog.oid)
       UNION
       SELECT s.pipeline, u.pipeline
         FROM hwm.state AS s
        CROSS JOIN LATERAL pg_catalog.unnest(s.after) AS a (upstream)
         JOIN hwm.state AS u ON u.pipeline OPERATOR(pg_catalog.=) a.upstream),
  -- and all of them, through any number of steps
  upstreams (pipeline, upstream) AS (
       SELECT e.pipeline, e.upstream FROM edges AS e
       UNION
       SELECT c.pipeline, e.upstream
         FROM upstreams AS c
         JOIN edges AS e ON e.pipeline OPERATOR(pg_catalog.=) c.upstream),
  -- each pipeline's own time
  own (pipeline, owner, target_lag, late_since, as_of) AS (
       SELECT s.pipeline, s.owner, s.target_lag, s.late_since,
              CASE WHEN (SELECT CASE WHEN t.typtype OPERATOR(pg_catalog.=) 'd' THEN t.typbasetype ELSE t.oid END
                           FROM pg_catalog.pg_type AS t
                          WHERE t.oid OPERATOR(pg_catalog.=) s.watermark_type) OPERATOR(pg_catalog.=) ANY
                        (ARRAY['pg_catalog.timestamptz', 'pg_catalog.timestamp', 'pg_catalog.date']::pg_catalog.regtype[]::pg_catalog.oid[])
                   THEN GREATEST(s.watermark::pg_catalog.timestamptz, s.data_as_of)
              END
         FROM hwm.state AS s),
  -- per pipeline with upstreams: whether one of them has no time, and the
  -- oldest of their times
  chain (pipeline, unknown, oldest) AS (
       SELECT c.pipeline, pg_catalog.bool_or(u.as_of IS NULL), pg_catalog.min(u.as_of)
         FROM upstreams AS c
         JOIN own AS u ON u.pipeline OPERATOR(pg_catalog.=) c.upstream
        GROUP BY c.pipeline)
SELECT o.pipeline,
       o.owner,
       f.data_as_of,
       l.lag,
       o.target_lag,
       l.lag OPERATOR(pg_catalog.>) o.target_lag AS late,
       o.late_since
  FROM own AS o
  LEFT JOIN chain AS ch ON ch.pipeline OPERATOR(pg_catalog.=) o.pipeline
 CROSS JOIN LATERAL (
       SELECT CASE WHEN o.as_of IS NULL OR ch.unknown THEN NULL
                   ELSE LEAST(o.as_of, ch.oldest)
              END AS data_as_of) AS f
 CROSS JOIN LATERAL (
       SELECT CASE WHEN pg_catalog.isfinite(f.data_as_of)
                   THEN pg_catalog.now() OPERATOR(pg_catalog.-) f.data_as_of
              END AS lag) AS l;
$fn$;

COMMENT ON FUNCTION hwm.freshness_rows() IS
'The rows of hwm.freshness (read that view instead): computed in a function that turns JIT compilation off, which the planner would otherwise choose for the view''s recursions.';

CREATE VIEW hwm.freshness WITH (security_invoker = true) AS
SELECT f.pipeline, f.owner, f.data_as_of, f.lag, f.target_lag, f.late, f.late_since
  FROM hwm.freshness_rows() AS f;

COMMENT ON VIEW hwm.freshness IS
'One line per pipeline: data_as_of, the time up to which its target reflects its sources (its watermark where that is a time, and through a chain the oldest of its own and its upstreams'': the pipelines that load a table its source reads, directly or through views, and those of hwm.schedule_after; only the pipelines the reader can see count); lag, now() minus that; its target_lag (hwm.set_target_lag); late, lag > target_lag; late_since, since when the scheduler has seen it late (it notifies once per lateness). A time watermark counts up to where its last run found the source complete (hwm.state.data_as_of), so a source with nothing new is not late. data_as_of is NULL while the pipeline or an upstream knows no time: no run has found its source complete yet, or its watermark is not a time.';

GRANT SELECT ON hwm.freshness TO PUBLIC;

-- hwm.metrics (issue 41): per pipeline, what a monitoring tool scrapes
-- (doc/prometheus.md): its load runs by outcome and the rows they loaded,
-- in the history that is kept (hwm.history_days, hwm.max_runs_per_pipeline:
-- the counts go down when old runs are pruned, so they are gauges, not
-- counters), the last finished run's duration, consecutive failures, and
-- its freshness.  Runs of an earlier pipeline of the same name are not
-- counted (started before this one was created).  Each pipeline's runs are
-- read through runs_pipeline_idx.
CREATE VIEW hwm.metrics WITH (security_invoker = true) AS
SELECT s.pipeline,
       s.owner,
       c.runs_succeeded,
       c.runs_failed,
       c.runs_skipped,
       c.runs_interrupted,
       c.rows_loaded,
       d.last_duration_seconds,
       s.consecutive_failures,
       pg_catalog.date_part('epoch', f.lag) AS lag_seconds,
       pg_catalog.date_part('epoch', f.target_lag) AS target_lag_seconds,
       f.late
  FROM hwm.state AS s
  LEFT JOIN hwm.freshness AS f ON f.pipeline OPERATOR(pg_catalog.=) s.pipeline
 CROSS JOIN LATERAL (
       SELECT pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'succeeded') AS runs_succeeded,
              pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'failed') AS runs_failed,
              pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'skipped') AS runs_skipped,
              pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'interrupted') AS runs_interrupted,
              COALESCE(pg_catalog.sum(r.rows_upserted) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'succeeded'), 0)::pg_catalog.int8 AS rows_loaded
         FROM hwm.runs AS r
        WHERE r.pipeline OPERATOR(pg_catalog.=) s.pipeline
          AND r.kind OPERATOR(pg_catalog.=) 'load'
          AND r.started_at OPERATOR(pg_catalog.>=) s.created_at) AS c
  LEFT JOIN LATERAL (
       SELECT pg_catalog.date_part('epoch', r.finished_at OPERATOR(pg_catalog.-) r.started_at) AS last_duration_seconds
         FROM hwm.runs AS r
        WHERE r.pipeline OPERATOR(pg_catalog.=) s.pipeline
          AND r.kind OPERATOR(pg_catalog.=) 'load'
          AND r.started_at OPERATOR(pg_catalog.>=) s.created_at
          AND r.finished_at IS NOT NULL
          AND r.status OPERATOR(pg_catalog.<>) 'running'
        ORDER BY r.run_id DESC
        LIMIT 1) AS d ON true;

COMMENT ON VIEW hwm.metrics IS
'One line per pipeline for monitoring tools (doc/prometheus.md): its load runs by outcome (succeeded, failed, skipped, interrupted) and the rows its succeeded load runs upserted, counted over the history that is kept (hwm.history_days, hwm.max_runs_per_pipeline), so they fall when old runs are pruned; how long its last finished load run took; its consecutive failures; its lag and target lag in seconds and whether it is late (hwm.freshness).';

GRANT SELECT ON hwm.metrics TO PUBLIC;

-- ---------------------------------------------------------------------------
-- History pipelines (issue 40): the tracked columns and the target's bound
-- columns of a history pipeline; the source rows a history's run refused.
ALTER TABLE hwm.state ADD COLUMN history_columns name[];
ALTER TABLE hwm.state ADD COLUMN valid_from_column name;
ALTER TABLE hwm.state ADD COLUMN valid_to_column name;
ALTER TABLE hwm.state ADD CONSTRAINT state_history_bounds
    CHECK ((valid_from_column IS NULL) OPERATOR(pg_catalog.=) (valid_to_column IS NULL));
COMMENT ON COLUMN hwm.state.history_columns IS
'History pipelines: the tracked columns, whose change opens a new version of a key (NULL: every column loaded but the key, the watermark column and the delete marker).';
COMMENT ON COLUMN hwm.state.valid_from_column IS
'History pipelines: the target column holding the watermark value a version is valid from (inclusive); with the key, the identity of a version. NULL: not a history pipeline.';
COMMENT ON COLUMN hwm.state.valid_to_column IS
'History pipelines: the target column holding the watermark value a version is valid to (exclusive): the next version''s valid_from, or the tombstone''s value; NULL on the current version.';

-- hwm.schedule_on_commit (issue 41, src/watch.c): the least time between two
-- runs of a pipeline run on its source's commits.  on_commit is the mark of
-- the 1.3 catalog (CATALOG_NEWEST_COLUMN): it comes last.
ALTER TABLE hwm.state ADD COLUMN on_commit interval;
COMMENT ON COLUMN hwm.state.on_commit IS
'Scheduled on its source''s commits (hwm.schedule_on_commit): the least time between the starts of two of its runs; the scheduler runs it when a transaction that wrote its source''s tables commits. NULL: not scheduled so.';

CREATE FUNCTION hwm.schedule_on_commit(pipeline text, min_interval interval DEFAULT '1 second')
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_schedule_on_commit';

COMMENT ON FUNCTION hwm.schedule_on_commit(text, interval) IS
'Run the pipeline when a transaction that inserts, updates, deletes or copies into its source''s tables (the table, its partitions, a view''s tables) commits, at most once per min_interval (counted between the starts of runs; 0: after every commit), instead of every so often: once at once, then never while nothing is written. Any number of commits while it waits or runs give one run, not one each; it never runs twice at once. Only commits of this server are seen, through shared_preload_libraries = ''hwm'': not a logical replication apply, a foreign table, a materialized view''s refresh. Replaces a schedule of hwm.schedule or hwm.schedule_after, which replace this in turn; hwm.unschedule clears it, hwm.pause and hwm.resume work as for schedules.';

ALTER TABLE hwm.runs ADD COLUMN rows_refused bigint;
COMMENT ON COLUMN hwm.runs.rows_refused IS
'History pipelines: source rows the run did not apply, being older than their key''s history and not in it (a source that rewrote an old row without a newer watermark value); NULL for other runs.';

-- hwm.status: why a pipeline scheduled after its upstreams is not run (an
-- upstream dropped), and its upstreams, as a last column; its kind says
-- history for a history pipeline (so made after the history columns)
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
            WHEN s.valid_from_column IS NOT NULL THEN 'history'
            ELSE 'copy' END AS kind,
       CASE WHEN s.schedule IS NULL AND s.after IS NULL AND s.on_commit IS NULL AND s.target_lag IS NULL
            THEN s.schedule_ended
            WHEN EXISTS (SELECT FROM hwm.homes AS h
                          WHERE h.pipeline OPERATOR(pg_catalog.=) s.pipeline
                            AND h.dboid OPERATOR(pg_catalog.<>)
                                (SELECT d.oid FROM pg_catalog.pg_database AS d
                                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))
            THEN 'declared in another database and copied into this one: its owner or a superuser must call hwm.resume here before the scheduler runs it'
            WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS o WHERE o.oid OPERATOR(pg_catalog.=) s.owner::pg_catalog.oid)
            THEN 'its owner role no longer exists: drop the pipeline'
            WHEN NOT s.enabled THEN 'paused: hwm.resume starts it again'
            WHEN s.schedule IS NOT NULL AND s.next_run_at IS NULL THEN 'no next run time can be represented: schedule it again'
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
       s.reconcile_next_run_at AS next_reconcile_at,
       s.after AS upstreams,
       s.watermark_caveat,
       s.on_commit
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

COMMENT ON VIEW hwm.status IS
'One line per pipeline for people: watermark, lag behind now() for time-typed watermarks, last run and its outcome, next scheduled run, the transaction that held the watermark back at the last run and for how long, the source rows with a NULL watermark that no run loads, the pipeline''s kind (copy, history, command or interval), and why a scheduled pipeline is not being run by the scheduler, or not successfully (paused, copied from another database, an owner that cannot log in or connect, a read-only default of the database or the owner, a claim that failed, an upstream dropped), the last reconcile (when it finished, its status, the rows it deleted), the upstream pipelines it runs after (hwm.schedule_after), what its watermark cannot be made safe against (watermark_caveat, as declared), and, run on its source''s commits, the least time between its runs (on_commit: hwm.schedule_on_commit).';

GRANT SELECT ON hwm.status TO PUBLIC;

-- create_pipeline takes history, history_columns, valid_from_column and
-- valid_to_column: recreated with its new signature.
DROP FUNCTION hwm.create_pipeline(text, regclass, regclass, text[], name, name, integer, interval, text, interval, bigint, name);
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
    delete_column     name     DEFAULT NULL,
    history           boolean  DEFAULT false,
    history_columns   text[]   DEFAULT NULL,
    valid_from_column name     DEFAULT NULL,
    valid_to_column   name     DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_pipeline';

COMMENT ON FUNCTION hwm.create_pipeline(text, regclass, regclass, text[], name, name, integer, interval, text, interval, bigint, name, boolean, text[], name, name) IS
'Declare a pipeline that loads source into target incrementally: upsert on unique_key the rows whose watermark_column is greater than the stored watermark; with partition_column and lookback, re-overwrite the lookback newest partitions on every run; with delay, keep the watermark at least that far behind now(); with batch_size, load at most that many rows per run; with delete_column (a boolean, or a timestamp set on deletion), a source row carrying that marker deletes the target row of its key. With history, the target keeps every version of a key instead, valid from valid_from_column (default valid_from) to valid_to_column (default valid_to, NULL while current): a change in history_columns (default: every column but the key, the watermark and the delete marker) opens a version, a tombstone closes one. Everything is validated up front.';

-- alter_pipeline takes a history's history_columns: recreated with its new
-- signature.
DROP FUNCTION hwm.alter_pipeline(text, regclass, regclass, text[], name, integer, interval, interval, bigint, text, boolean, boolean, text[], name);
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
    delete_column     name     DEFAULT NULL,
    history_columns   text[]   DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_alter_pipeline';

COMMENT ON FUNCTION hwm.alter_pipeline(text, regclass, regclass, text[], name, integer, interval, interval, bigint, text, boolean, boolean, text[], name, text[]) IS
'Change a pipeline''s settings in place, checked as create_pipeline checks them: a NULL argument keeps the setting, reset => ''{...}'' clears partition_column, lookback, schedule, delay, batch_size or delete_column, or sets a history''s history_columns back to its default. A history stays a history; history_columns changes what later runs track (the versions kept stay as they are). The watermark, what the last run remembered, the run history, the owner and (unless given) the schedule are kept.';
