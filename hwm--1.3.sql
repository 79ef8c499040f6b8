/* hwm--1.3.sql: schema, catalog, history, status view and functions of hwm 1.3 (a fresh install; hwm--1.0--1.1.sql, hwm--1.1--1.2.sql and hwm--1.2--1.3.sql upgrade older versions) */

\echo Use "CREATE EXTENSION hwm" to load this file. \quit

-- This script creates hwm 1.3 as it is, each object once in its final form.
-- An older version reaches the same objects through the upgrade scripts,
-- which add columns at the end of a table: the tables below list their
-- columns in that order, so a fresh install and an upgraded one have the
-- same columns in the same places (test/t/061_upgrade.pl checks that the two
-- have the same objects).
--
-- Conventions: every name is schema-qualified (pg_catalog., hwm.), operators
-- too (OPERATOR(pg_catalog.=)), since the script runs with the installing
-- user's search_path; no function is SECURITY DEFINER.
--
-- Who may do what: the tables are written only by hwm's C functions, which
-- check who is asking and then write as the catalog's owner; everyone may
-- read them, and row security shows each user only the rows of the roles
-- whose privileges they have (superusers and BYPASSRLS roles see all).  hwm's
-- functions read and write as the owner, to whom row security does not apply
-- (it is not forced), so they see every pipeline.

-- ---------------------------------------------------------------------------
-- The schema.  Anyone may declare and run pipelines over the tables they can
-- use; the functions check the rights of the caller and of the pipeline's
-- owner.

COMMENT ON SCHEMA hwm IS
'hwm: high-water-mark incremental loads, partition overwrite, backfill and atomic swap';

GRANT USAGE ON SCHEMA hwm TO PUBLIC;

-- ---------------------------------------------------------------------------
-- hwm.state, the catalog: one row per pipeline.

CREATE TABLE hwm.state (
    pipeline              text        NOT NULL PRIMARY KEY
                                      CHECK (pipeline OPERATOR(pg_catalog.<>) ''),
    source                regclass    NOT NULL,
    target                regclass,   -- NULL: a command or interval pipeline
    unique_key            name[]      NOT NULL,
    watermark_column      name        NOT NULL,
    watermark_type        regtype     NOT NULL,
    partition_column      name,
    lookback              integer     NOT NULL DEFAULT 0 CHECK (lookback OPERATOR(pg_catalog.>=) 0),
    delay                 interval,
    batch_size            bigint      CHECK (batch_size OPERATOR(pg_catalog.>) 0),
    -- the schedule (src/schedule.c; the scheduler is src/launcher.c,
    -- src/dispatch.c and src/worker.c)
    schedule              interval,
    next_run_at           timestamptz,
    schedule_anchor       timestamptz,
    timeout               interval,
    watermark             text,
    owner                 regrole     NOT NULL,
    enabled               boolean     NOT NULL DEFAULT true,
    created_at            timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- the last run
    last_run_id           bigint,
    last_run_started_at   timestamptz,
    last_run_finished_at  timestamptz,
    last_status           text,
    last_rows             bigint,
    consecutive_failures  integer     NOT NULL DEFAULT 0,
    last_error            text,
    -- what a load remembers for the next one, so that a run costs what is
    -- new (issue 14, src/watermark.c), and what held its watermark back
    reread_from           text,
    reread_vxids          text[],
    reread_starts         timestamptz[],
    reread_epoch          timestamptz,
    held_by_pid           integer,
    held_by_application   text,
    held_since            timestamptz,
    null_watermarks       bigint,
    -- command and interval pipelines (issue 16, src/command.c,
    -- src/interval.c)
    command               text,
    time_interval         interval,
    interval_anchor       text,
    batched               boolean     NOT NULL DEFAULT false,
    skip_empty            boolean     NOT NULL DEFAULT false,
    -- the scheduled reconcile (issue 32, src/reconcile.c)
    reconcile_schedule    interval,
    reconcile_anchor      timestamptz,
    reconcile_next_run_at timestamptz,
    reconcile_batch_size  integer     CHECK (reconcile_batch_size OPERATOR(pg_catalog.>) 0),
    -- the run the scheduler claimed last (issue 28): a claim is true only
    -- while nothing changed the schedule; hwm.schedule, unschedule, pause and
    -- resume clear it, and the worker runs a claimed run only when the column
    -- still names it and its role still owns the pipeline (under the
    -- pipeline's lock, just before the run); otherwise the run is recorded as
    -- skipped
    claimed_run_id        bigint,
    -- tombstones (issue 32): the source column whose value marks a deleted row
    delete_column         name,
    -- chains (issue 41, src/schedule.c): the pipelines whose committed runs
    -- start this one, why the scheduler stopped running it without
    -- hwm.unschedule, and its freshness goal
    after                 text[],
    schedule_ended        text,
    target_lag            interval    CHECK (target_lag OPERATOR(pg_catalog.>=) '1 second'),
    -- freshness (issue 41, src/freshness.c): how far the last load run
    -- found its source complete, and since when the pipeline is late
    data_as_of            timestamptz,
    late_since            timestamptz,
    -- what the safe bound cannot make safe, as declared (issue 41)
    watermark_caveat      text,
    -- history pipelines (issue 40): the tracked columns, and the target's
    -- columns a version's bounds are in
    history_columns       name[],
    valid_from_column     name,
    valid_to_column       name,
    -- scheduled on its source's commits (src/watch.c): the least time
    -- between two runs' starts
    on_commit             interval,
    CONSTRAINT state_history_bounds
        CHECK ((valid_from_column IS NULL) OPERATOR(pg_catalog.=) (valid_to_column IS NULL)),
    CONSTRAINT state_target_or_command
        CHECK (target IS NOT NULL OR command IS NOT NULL),
    CONSTRAINT state_interval_has_command
        CHECK (time_interval IS NULL OR command IS NOT NULL)
);

COMMENT ON TABLE hwm.state IS
'hwm catalog: one row per pipeline (source, target, business key, watermark, partition column, lookback, owner, last run). Change it only through the hwm functions.';
COMMENT ON COLUMN hwm.state.lookback IS
'Number of newest source partitions that every run re-overwrites to catch late-arriving rows (0: none).';
COMMENT ON COLUMN hwm.state.delay IS
'Settle time for application-supplied timestamps: the watermark never moves past now() - delay (NULL: none).';
COMMENT ON COLUMN hwm.state.batch_size IS
'Most rows one run loads (NULL: no cap); rows sharing one watermark value are never split. CALL hwm.catch_up runs batch after batch.';
COMMENT ON COLUMN hwm.state.schedule IS
'How often the background scheduler runs the pipeline (NULL: only on demand).';
COMMENT ON COLUMN hwm.state.next_run_at IS
'When the scheduler runs the pipeline next (a missed slot after downtime becomes one catch-up run; after a failure, the backed-off retry time).';
COMMENT ON COLUMN hwm.state.schedule_anchor IS
'The instant the schedule counts from: runs are due at schedule_anchor + k * schedule, so they never drift.';
COMMENT ON COLUMN hwm.state.timeout IS
'Longest a scheduled run may take before it is cancelled and recorded as failed (NULL: no limit).';
COMMENT ON COLUMN hwm.state.watermark IS
'High-water mark: the greatest watermark_column value loaded so far, in the column type''s text form (NULL: nothing loaded yet).';
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
COMMENT ON COLUMN hwm.state.reconcile_schedule IS
'How often the scheduler reconciles the whole target (hwm.schedule_reconcile; NULL: never): after a scheduled run of the pipeline succeeded, once reconcile_next_run_at has come.';
COMMENT ON COLUMN hwm.state.reconcile_anchor IS
'The anchor of the reconcile''s schedule: reconciles are due at reconcile_anchor + k * reconcile_schedule.';
COMMENT ON COLUMN hwm.state.reconcile_next_run_at IS
'When the scheduled reconcile is due next; the worker moves it to the next slot of the grid before it reconciles.';
COMMENT ON COLUMN hwm.state.reconcile_batch_size IS
'The batch_size (target keys per transaction) of the scheduled reconcile.';
COMMENT ON COLUMN hwm.state.claimed_run_id IS
'The scheduled run the scheduler claimed last (its run_id in hwm.runs); cleared when the schedule or the pause state changes, which makes a claimed run that has not started yet be skipped.';
COMMENT ON COLUMN hwm.state.delete_column IS
'Delete marker of the source (NULL: none): a row of the slice whose marker is true (boolean) or not NULL (timestamp, timestamptz, date) deletes the target row of its key instead of being upserted.';

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
COMMENT ON COLUMN hwm.state.history_columns IS
'History pipelines: the tracked columns, whose change opens a new version of a key (NULL: every column loaded but the key, the watermark column and the delete marker).';
COMMENT ON COLUMN hwm.state.valid_from_column IS
'History pipelines: the target column holding the watermark value a version is valid from (inclusive); with the key, the identity of a version. NULL: not a history pipeline.';
COMMENT ON COLUMN hwm.state.valid_to_column IS
'History pipelines: the target column holding the watermark value a version is valid to (exclusive): the next version''s valid_from, or the tombstone''s value; NULL on the current version.';
COMMENT ON COLUMN hwm.state.on_commit IS
'Scheduled on its source''s commits (hwm.schedule_on_commit): the least time between the starts of two of its runs; the scheduler runs it when a transaction that wrote its source''s tables commits. NULL: not scheduled so.';

-- pg_dump keeps the pipelines and their watermarks.
SELECT pg_catalog.pg_extension_config_dump('hwm.state', '');

REVOKE ALL ON hwm.state FROM PUBLIC;
GRANT SELECT ON hwm.state TO PUBLIC;

ALTER TABLE hwm.state ENABLE ROW LEVEL SECURITY;
CREATE POLICY state_visible_to_owner ON hwm.state FOR SELECT TO PUBLIC
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner::pg_catalog.oid, 'USAGE'));
COMMENT ON POLICY state_visible_to_owner ON hwm.state IS
'A user sees the pipelines owned by roles whose privileges they have.';

-- ---------------------------------------------------------------------------
-- hwm.runs, the run history: one row per run, overwrite, backfill step,
-- swap, manual watermark change or reconcile batch.  Each row belongs to the
-- role whose rights the run used, written with the row.

CREATE TABLE hwm.runs (
    run_id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pipeline               text,
    kind                   text        NOT NULL
                                       CHECK (kind OPERATOR(pg_catalog.=) ANY
                                              (ARRAY['load', 'overwrite', 'backfill', 'swap', 'set_watermark', 'reconcile'])),
    started_at             timestamptz NOT NULL,
    finished_at            timestamptz,
    status                 text        NOT NULL
                                       CHECK (status OPERATOR(pg_catalog.=) ANY
                                              (ARRAY['running', 'succeeded', 'failed', 'interrupted', 'skipped'])),
    rows_upserted          bigint,
    partitions_overwritten integer,
    rows_deleted           bigint,
    rows_inserted          bigint,
    watermark_before       text,
    watermark_after        text,
    from_partition         text,
    to_partition           text,
    run_by                 name        NOT NULL DEFAULT CURRENT_USER,
    error_sqlstate         text,
    error                  text,
    method                 text
                                       CHECK (method OPERATOR(pg_catalog.=) ANY
                                              (ARRAY['diff', 'exchange', 'exchange+diff'])),
    owner                  regrole,
    rows_refused           bigint
);

CREATE INDEX runs_pipeline_idx ON hwm.runs (pipeline, run_id);
-- The runs in progress: the 'running' rows the scheduler's dispatcher claims
-- (src/dispatch.c, through src/catalog.c) and hwm.status's running_since.
CREATE INDEX runs_running_idx ON hwm.runs (pipeline) WHERE status OPERATOR(pg_catalog.=) 'running';

COMMENT ON TABLE hwm.runs IS
'hwm run history: one row per load, overwrite, backfill, swap or manual watermark change, with row counts and the watermark before and after.';
COMMENT ON COLUMN hwm.runs.method IS
'How an overwrite or backfill step rewrote its range: diff (delete what the source lacks, upsert the rest), exchange (whole partitions exchanged, see hwm.partition_exchange) or exchange+diff; NULL for other runs.';
COMMENT ON COLUMN hwm.runs.owner IS
'Role whose rights the run used: the pipeline''s owner, or the caller of a run without a pipeline. Decides who sees the row.';
COMMENT ON COLUMN hwm.runs.rows_refused IS
'History pipelines: source rows the run did not apply, being older than their key''s history and not in it (a source that rewrote an old row without a newer watermark value); NULL for other runs.';

-- pg_dump keeps the history, and where its run_id counter stands.
SELECT pg_catalog.pg_extension_config_dump('hwm.runs', '');
SELECT pg_catalog.pg_extension_config_dump('hwm.runs_run_id_seq', '');

REVOKE ALL ON hwm.runs FROM PUBLIC;
GRANT SELECT ON hwm.runs TO PUBLIC;

ALTER TABLE hwm.runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY runs_visible_to_owner ON hwm.runs FOR SELECT TO PUBLIC
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner::pg_catalog.oid, 'USAGE'));
COMMENT ON POLICY runs_visible_to_owner ON hwm.runs IS
'A user sees the runs made with the rights of roles whose privileges they have; the owner is written with the row, so a pipeline dropped and declared again by another role shows nothing of the old one.';

-- ---------------------------------------------------------------------------
-- hwm.backfills, the resumable jobs (src/job.c): one row per backfill of a
-- pipeline's partition range, rerun of an interval pipeline's intervals or
-- reconcile of a key range, written as the job goes (committed after every
-- batch when called outside a transaction block), so that a stopped job can
-- be resumed.  Each row belongs to the pipeline's owner at the job's start.

CREATE TABLE hwm.backfills (
    backfill_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pipeline        text        NOT NULL,
    from_partition  text        NOT NULL,
    to_partition    text        NOT NULL,
    batch_size      integer     NOT NULL CHECK (batch_size OPERATOR(pg_catalog.>=) 1),
    done_through    text,
    status          text        NOT NULL
                                CHECK (status OPERATOR(pg_catalog.=) ANY
                                       (ARRAY['running', 'succeeded', 'failed'])),
    partitions_done integer     NOT NULL DEFAULT 0,
    rows_deleted    bigint      NOT NULL DEFAULT 0,
    rows_inserted   bigint      NOT NULL DEFAULT 0,
    started_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at     timestamptz,
    run_by          name        NOT NULL DEFAULT CURRENT_USER,
    error_sqlstate  text,
    error           text,
    owner           regrole,
    kind            text        NOT NULL DEFAULT 'backfill'
                                CHECK (kind OPERATOR(pg_catalog.=) ANY
                                       (ARRAY['backfill', 'rerun_intervals', 'reconcile']))
);

CREATE INDEX backfills_range_idx ON hwm.backfills (pipeline, from_partition, to_partition, backfill_id);

COMMENT ON TABLE hwm.backfills IS
'hwm backfill progress: one row per backfill of a pipeline''s partition range (status running, succeeded or failed; done_through is the last partition committed). Calling the same backfill again resumes an unfinished one after done_through.';
COMMENT ON COLUMN hwm.backfills.done_through IS
'The last partition value overwritten and committed, in the partition column type''s text form (NULL: none yet).';
COMMENT ON COLUMN hwm.backfills.owner IS
'Owner of the pipeline when the backfill or rerun was started. Decides who sees the row.';
COMMENT ON COLUMN hwm.backfills.kind IS
'Which job the row is: backfill (CALL hwm.backfill; from_partition, to_partition and done_through are partition values), rerun_intervals (CALL hwm.rerun_intervals; interval boundaries) or reconcile (CALL hwm.reconcile; keys, '''' for a range without that bound, batch_size in keys).';

-- pg_dump keeps the jobs, so that a restored unfinished one can be resumed.
SELECT pg_catalog.pg_extension_config_dump('hwm.backfills', '');
SELECT pg_catalog.pg_extension_config_dump('hwm.backfills_backfill_id_seq', '');

REVOKE ALL ON hwm.backfills FROM PUBLIC;
GRANT SELECT ON hwm.backfills TO PUBLIC;

ALTER TABLE hwm.backfills ENABLE ROW LEVEL SECURITY;
CREATE POLICY backfills_visible_to_owner ON hwm.backfills FOR SELECT TO PUBLIC
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner::pg_catalog.oid, 'USAGE'));
COMMENT ON POLICY backfills_visible_to_owner ON hwm.backfills IS
'A user sees the backfills and reruns of pipelines owned by roles whose privileges they have.';

-- ---------------------------------------------------------------------------
-- hwm.homes: where each pipeline was declared (issue 20).  Not dumped: a
-- restore (by a superuser, who creates the extension) declares the pipelines
-- anew in the database it restores into, and a pipeline without a row is at
-- home.  A file-level copy of the database (CREATE DATABASE ... TEMPLATE)
-- carries the rows with the old database's OID, and the scheduler leaves
-- those pipelines alone until their owner or a superuser calls hwm.resume in
-- the copy.  ALTER DATABASE ... RENAME keeps the OID: not a copy.  (A row
-- left by a dropped pipeline matches nothing, and a pipeline declared again
-- under its name takes it over.)

CREATE TABLE hwm.homes (
    pipeline text          NOT NULL PRIMARY KEY,
    dboid    pg_catalog.oid NOT NULL
);

COMMENT ON TABLE hwm.homes IS
'The database (by OID) each pipeline was declared or last resumed in. A pipeline whose row names another database came with a copy of that database, and is not scheduled here until hwm.resume is called here.';

REVOKE ALL ON hwm.homes FROM PUBLIC;
GRANT SELECT ON hwm.homes TO PUBLIC;

ALTER TABLE hwm.homes ENABLE ROW LEVEL SECURITY;
CREATE POLICY homes_visible_to_owner ON hwm.homes FOR SELECT TO PUBLIC
    USING (EXISTS (SELECT FROM hwm.state AS s WHERE s.pipeline OPERATOR(pg_catalog.=) homes.pipeline));
COMMENT ON POLICY homes_visible_to_owner ON hwm.homes IS
'A user sees where the pipelines they can see were declared.';

-- ---------------------------------------------------------------------------
-- hwm.status: one line per pipeline, for people.  It reads the tables with
-- the rights of whoever queries it (security_invoker), so that their row
-- security applies (a view otherwise reads as its owner).

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
-- Declaring pipelines (src/manage.c).  A copy pipeline upserts into its
-- target; a command pipeline runs a SQL command over the range of watermark
-- values each run settles ($1 exclusive, $2 inclusive); an interval pipeline
-- runs it over each finished interval of a time column ($1 inclusive, $2
-- exclusive).  Neither of the last two has a target: the command writes
-- wherever it writes.

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

CREATE FUNCTION hwm.drop_pipeline(pipeline text)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_drop_pipeline';

COMMENT ON FUNCTION hwm.drop_pipeline(text) IS
'Remove a pipeline from the catalog; its run history stays in hwm.runs.';

-- A pipeline goes with its source or target table.
CREATE FUNCTION hwm.on_sql_drop()
RETURNS event_trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_on_sql_drop';

COMMENT ON FUNCTION hwm.on_sql_drop() IS
'Event trigger function: drops the pipelines whose source or target table was dropped, so the catalog never keeps the OID of a table that no longer exists.';

CREATE EVENT TRIGGER hwm_sql_drop ON sql_drop
    EXECUTE FUNCTION hwm.on_sql_drop();

COMMENT ON EVENT TRIGGER hwm_sql_drop IS
'Drops hwm pipelines together with their source or target table.';

-- ---------------------------------------------------------------------------
-- Running pipelines (src/load.c, src/manage.c).
--
-- Where a function takes a partition bound or a watermark as text, an
-- overload of the same name takes it in the column's own type (issue 22): a
-- date, a timestamp or a number is passed as it is, and turned into that
-- text form in the caller's session (whose DateStyle and TimeZone read it
-- back).  Quoted literals still call the text versions.  The overloads are
-- SQL functions with a pinned search_path.  (CALL hwm.backfill,
-- hwm.rerun_intervals and hwm.reconcile take text only: a wrapper would make
-- their commits between batches impossible.)

CREATE FUNCTION hwm.run(
    pipeline                   text,
    nowait                     boolean DEFAULT false,
    OUT rows_upserted          bigint,
    OUT partitions_overwritten integer,
    OUT rows_deleted           bigint,
    OUT rows_inserted          bigint,
    OUT watermark_before       text,
    OUT watermark_after        text,
    OUT run_id                 bigint)
RETURNS record
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_run';

COMMENT ON FUNCTION hwm.run(text, boolean) IS
'One incremental run in the caller''s transaction: upsert the source rows newer than the watermark, advance the watermark no further than transactions still in flight allow, re-overwrite the lookback newest partitions, record the run. Waits for a concurrent run of the same pipeline, or fails at once with nowait. Returns one summary row.';

CREATE PROCEDURE hwm.catch_up(pipeline text)
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_catch_up';

COMMENT ON PROCEDURE hwm.catch_up(text) IS
'Run a pipeline batch after batch until its watermark stops moving; outside a transaction block each batch commits on its own, inside one they share the caller''s transaction.';

CREATE FUNCTION hwm.set_watermark(pipeline text, watermark text)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_set_watermark';

COMMENT ON FUNCTION hwm.set_watermark(text, text) IS
'Move a pipeline''s watermark by hand (NULL: the next run loads everything). The change is recorded in hwm.runs.';

CREATE FUNCTION hwm.set_watermark(pipeline text, watermark anyelement)
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT hwm.set_watermark($1, $2::pg_catalog.text) $$;

COMMENT ON FUNCTION hwm.set_watermark(text, anyelement) IS
'hwm.set_watermark with the watermark in the watermark column''s own type rather than text.';

-- ---------------------------------------------------------------------------
-- Partition overwrite (src/overwrite.c, src/range.c).

CREATE FUNCTION hwm.overwrite(
    pipeline           text,
    from_partition     text,
    to_partition       text,
    nowait             boolean DEFAULT false,
    OUT rows_deleted   bigint,
    OUT rows_inserted  bigint,
    OUT run_id         bigint)
RETURNS record
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_overwrite';

COMMENT ON FUNCTION hwm.overwrite(text, text, text, boolean) IS
'Make the target''s partitions from_partition..to_partition (inclusive) equal to the source''s, in one transaction: delete what the source no longer has, upsert the rest. Idempotent.';

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
    from_partition     text,
    to_partition       text,
    OUT rows_deleted   bigint,
    OUT rows_inserted  bigint,
    OUT run_id         bigint)
RETURNS record
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_overwrite_partition';

COMMENT ON FUNCTION hwm.overwrite_partition(regclass, regclass, name, text, text) IS
'Partition overwrite without a pipeline: make target''s rows with partition_column in from_partition..to_partition equal to source''s, in one transaction, upserting on the target''s primary key when it has one.';

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

-- ---------------------------------------------------------------------------
-- Resumable jobs, recorded in hwm.backfills: backfill (src/backfill.c),
-- rerun of intervals (src/interval.c) and reconcile (src/reconcile.c).  The
-- procedures are not SECURITY DEFINER and have no SET clause: either would
-- make every CALL atomic, and a job could no longer commit between batches.

CREATE PROCEDURE hwm.backfill(
    pipeline       text,
    from_partition text,
    to_partition   text,
    batch_size     integer DEFAULT 1,
    dry_run        boolean DEFAULT false)
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_backfill';

COMMENT ON PROCEDURE hwm.backfill(text, text, text, integer, boolean) IS
'Overwrite every partition value of the inclusive range (those the source or the target has), in ascending order. Outside a transaction block it commits after every batch_size partitions and records its progress in hwm.backfills; calling it again resumes an unfinished backfill. Inside a transaction block it runs in that transaction. With dry_run, it only reports (NOTICE) the partitions and row counts it would touch.';

CREATE FUNCTION hwm.backfill_plan(
    pipeline          text,
    from_partition    text,
    to_partition      text)
RETURNS TABLE (partition text, source_rows bigint, target_rows bigint)
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_backfill_plan';

COMMENT ON FUNCTION hwm.backfill_plan(text, text, text) IS
'The partitions that a backfill of the inclusive range would overwrite, in order, with their row counts in the source and the target. Changes nothing.';

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

CREATE PROCEDURE hwm.rerun_intervals(
    pipeline  text,
    from_time text,
    to_time   text)
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_rerun_intervals';

COMMENT ON PROCEDURE hwm.rerun_intervals(text, text, text) IS
'Run an interval pipeline''s command again over every interval from from_time (inclusive) to to_time (exclusive), both interval boundaries no later than its watermark, one interval per transaction outside a transaction block; progress is recorded in hwm.backfills and calling it again resumes an unfinished rerun. The watermark does not move.';

-- Reconcile (issue 32): delete the target rows whose key the source no
-- longer has, in batches of keys; each batch is recorded in hwm.runs with
-- kind 'reconcile', and hwm.status shows the last reconcile.
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

-- ---------------------------------------------------------------------------
-- Scheduling (src/schedule.c, src/reconcile.c; the background scheduler is
-- src/launcher.c, src/dispatch.c and src/worker.c, see src/README.md).  The scheduler
-- needs shared_preload_libraries = 'hwm'.  A scheduled reconcile runs in the
-- scheduler's worker after a scheduled run of the pipeline succeeded, once
-- reconcile_next_run_at has come.

CREATE FUNCTION hwm.schedule(
    pipeline text,
    every    interval,
    start_at timestamptz DEFAULT pg_catalog.now())
RETURNS timestamptz
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_schedule';

COMMENT ON FUNCTION hwm.schedule(text, interval, timestamptz) IS
'Run the pipeline every interval, at start_at + k * every (anchored: runs do not drift); start_at defaults to now(), which runs it at once. Returns the next run time. The background scheduler needs shared_preload_libraries = ''hwm''.';

CREATE FUNCTION hwm.schedule_after(pipeline text, upstreams text[])
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_schedule_after';

COMMENT ON FUNCTION hwm.schedule_after(text, text[]) IS
'Run the pipeline after its upstream pipelines instead of every so often: a run of any of them that commits rows or moves its watermark makes it due at once; any number of such commits while it waits, and any while it runs, give one run each time, not one each; it never runs twice at once, and never while nothing upstream changed. Replaces a schedule of hwm.schedule, which replaces this in turn; hwm.unschedule clears it, hwm.pause and hwm.resume work as for schedules; a dropped upstream unschedules it, saying so in hwm.status. Refused: an unknown upstream, one of another owner whose target the pipeline''s owner may not read, a cycle.';

CREATE FUNCTION hwm.schedule_on_commit(pipeline text, min_interval interval DEFAULT '1 second')
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_schedule_on_commit';

COMMENT ON FUNCTION hwm.schedule_on_commit(text, interval) IS
'Run the pipeline when a transaction that inserts, updates, deletes or copies into its source''s tables (the table, its partitions, a view''s tables) commits, at most once per min_interval (counted between the starts of runs; 0: after every commit), instead of every so often: once at once, then never while nothing is written. Any number of commits while it waits or runs give one run, not one each; it never runs twice at once. Only commits of this server are seen, through shared_preload_libraries = ''hwm'': not a logical replication apply, a foreign table, a materialized view''s refresh. Replaces a schedule of hwm.schedule or hwm.schedule_after, which replace this in turn; hwm.unschedule clears it, hwm.pause and hwm.resume work as for schedules.';

CREATE FUNCTION hwm.unschedule(pipeline text)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_unschedule';

COMMENT ON FUNCTION hwm.unschedule(text) IS
'Stop running the pipeline on a schedule, after its upstreams (hwm.schedule_after), on its source''s commits (hwm.schedule_on_commit), or to stay under its target lag (which it clears: hwm.set_target_lag); it still runs on demand with hwm.run. A run in progress finishes.';

CREATE FUNCTION hwm.pause(pipeline text)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_pause';

COMMENT ON FUNCTION hwm.pause(text) IS
'Keep the scheduler from starting the pipeline (enabled = false) while keeping its schedule; hwm.run still works by hand.';

CREATE FUNCTION hwm.resume(pipeline text)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_resume';

COMMENT ON FUNCTION hwm.resume(text) IS
'Let the scheduler run a paused pipeline again; slots missed while paused become one catch-up run.';

CREATE FUNCTION hwm.set_timeout(pipeline text, timeout interval)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_set_timeout';

COMMENT ON FUNCTION hwm.set_timeout(text, interval) IS
'Cancel a scheduled run of the pipeline that takes longer than timeout and record it as failed (NULL: no limit).';

CREATE FUNCTION hwm.set_target_lag(pipeline text, target_lag interval)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_set_target_lag';

COMMENT ON FUNCTION hwm.set_target_lag(text, interval) IS
'Set the pipeline''s freshness goal: how far behind now() its data (hwm.freshness.data_as_of) may fall before hwm.freshness and hwm.metrics show it late; at least 1 second, finite, without negative parts (NULL: no goal). A pipeline with neither hwm.schedule nor hwm.schedule_after is then run by the scheduler half its target lag after each of its runs, and at once after each run of a pipeline loading a table it reads; with a schedule, the goal only makes it late. The scheduler logs and notifies (hwm.notify_channel) once each time a pipeline becomes late.';

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

-- ---------------------------------------------------------------------------
-- Staging swap (src/swap.c).  Not SECURITY DEFINER: the caller must own both
-- tables.

CREATE PROCEDURE hwm.swap(
    target       regclass,
    staging      regclass,
    min_rows     bigint   DEFAULT NULL,
    min_ratio    float8   DEFAULT NULL,
    check_query  text     DEFAULT NULL,
    lock_timeout interval DEFAULT '5s')
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_swap';

COMMENT ON PROCEDURE hwm.swap(regclass, regclass, bigint, double precision, text, interval) IS
'Validate staging (same columns, types and nullability; an index matching each of the target''s; the target''s CHECK constraints and foreign keys; at least min_rows rows and min_ratio times the target''s; check_query returns true), then exchange the storage of the two tables in one transaction. The target keeps its OID, so its views, grants, foreign keys, triggers, policies and publications stay attached; staging then holds the previous contents (swap again to restore them). Locks are waited for at most lock_timeout.';

CREATE FUNCTION hwm.create_staging(target regclass)
RETURNS regclass
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_staging';

COMMENT ON FUNCTION hwm.create_staging(regclass) IS
'Create <target>_hwm_staging next to the target with the same columns, defaults, constraints, indexes, persistence and owner (CREATE TABLE ... (LIKE target INCLUDING ALL)), ready to be loaded and swapped in with hwm.swap.';

-- ---------------------------------------------------------------------------
-- Internal: the change test of the upserts hwm generates (src/changed.c),
-- called as hwm.changed(t.a, t.b, EXCLUDED.a, EXCLUDED.b); not STRICT, since
-- a NULL against a value is a change.

CREATE FUNCTION hwm.changed(VARIADIC "any")
RETURNS boolean
LANGUAGE c IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'hwm_changed';

COMMENT ON FUNCTION hwm.changed(VARIADIC "any") IS
'Used by the upserts hwm generates: whether the first half of the arguments differs from the second half, pair by pair, in binary image (what record_image_ne says of two rows: 1.0 and 1.00 differ, two NULLs are equal), without forming the rows.';

-- End of 1.3.
