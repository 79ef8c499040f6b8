-- run_owns: a run owns its pipeline until it ends, and leaves nothing behind
-- (issue 28).  Each case here failed before: a pipeline's command (or a
-- function it calls) set its own pipeline's watermark, which the run then
-- overwrote (1000 -> 20 backwards), dropped it and declared another of the
-- same name, which received the run's result, ran it again, or took a
-- session-level advisory lock that stayed with the caller's session; the
-- run wrote its result back by name, into whatever row had that name.
-- Declarations that could never run were accepted and failed at every run:
-- statements a run cannot execute, an interval pipeline over an integer
-- column (a conversion error), an interval longer than any schedule may be.
-- And DROP ROLE by a role without the right to drop showed hwm's error,
-- with the pipelines' names, before PostgreSQL's own.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
CREATE SCHEMA ro;
SET search_path = ro, public;
CREATE TABLE ev (id bigint PRIMARY KEY, t timestamptz NOT NULL);
INSERT INTO ev SELECT g, TIMESTAMPTZ '2026-01-01 00:00+00' + g * INTERVAL '1 minute'
  FROM generate_series(1, 100) g;
CREATE TABLE log (lo bigint, hi bigint);

-- 1. statements that can never run inside a run, refused at declaration,
-- each by name; nothing is declared
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'VACUUM ro.ev');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'LISTEN ro_channel');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'UNLISTEN *');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'DISCARD ALL');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'SET ROLE NONE');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'SET SESSION AUTHORIZATION DEFAULT');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'CHECKPOINT');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'LOAD ''plpgsql''');
SELECT hwm.create_command_pipeline('never', 'ev', 'id',
  'DECLARE c CURSOR WITH HOLD FOR SELECT * FROM ro.ev WHERE id > $1 AND id <= $2');
SELECT hwm.create_command_pipeline('never', 'ev', 'id',
  'CREATE TEMP TABLE t AS SELECT * FROM ro.ev WHERE id > $1 AND id <= $2');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'CREATE TABLE pg_temp.t (a int)');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'CREATE INDEX CONCURRENTLY ON ro.ev (t)');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'COPY ro.ev TO STDOUT');
SELECT hwm.create_command_pipeline('never', 'ev', 'id', 'COMMIT');
-- what a transaction block allows is accepted: ANALYZE
SELECT hwm.create_command_pipeline('analyze', 'ev', 'id', 'ANALYZE ro.ev');
SELECT pipeline FROM hwm.state WHERE pipeline IN ('never', 'analyze');
SELECT hwm.drop_pipeline('analyze');

-- 2. interval pipelines: a column that cannot be cut into intervals of time
-- is named with its type (before: a conversion error about the anchor), and
-- an interval is bounded as a schedule is
SELECT hwm.create_interval_pipeline('iv', 'ev', 'id', '1 hour', 'SELECT $1, $2');
SELECT hwm.create_interval_pipeline('iv', 'ev', 'id', '1 hour', 'SELECT $1, $2', start_at => '10');
SELECT hwm.create_interval_pipeline('iv', 'ev', 't', '178000000 years', 'SELECT $1, $2');
-- (terse: the schedule's detail names the current time)
\set VERBOSITY terse
SELECT hwm.create_command_pipeline('iv', 'ev', 'id', 'SELECT $1, $2', schedule => '178000000 years');
\set VERBOSITY default
-- from start_at: the interval after the one it starts must end in range too
SELECT hwm.create_interval_pipeline('iv', 'ev', 't', '100000 years', 'SELECT $1, $2',
  start_at => '202000-01-01 00:00:00+00');
SELECT count(*) FROM hwm.state WHERE pipeline = 'iv';
SELECT hwm.create_interval_pipeline('iv', 'ev', 't', '1000 years', 'SELECT $1, $2');
SELECT hwm.drop_pipeline('iv');

-- 3. a run owns its pipeline: what its command does to that pipeline is
-- refused, and the run (with everything its command did) rolls back.  The
-- command calls ro.act(), which executes the statement in ro.todo.
CREATE TABLE todo (stmt text);
INSERT INTO todo VALUES ('SELECT 1');
CREATE FUNCTION act() RETURNS SETOF int LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE (SELECT stmt FROM ro.todo);
    RETURN NEXT 1;
END $$;
SELECT hwm.create_command_pipeline('own', 'ev', 'id',
  'INSERT INTO ro.log SELECT $1, $2 FROM ro.act()', initial_watermark => '10');
SELECT hwm.create_command_pipeline('other', 'ev', 'id',
  'INSERT INTO ro.log SELECT -$1, -$2', initial_watermark => '10');
CREATE TABLE ev2 (id bigint PRIMARY KEY);
SELECT hwm.create_command_pipeline('own2', 'ev2', 'id',
  'INSERT INTO ro.log SELECT $1, $2 FROM ro.act()');
INSERT INTO ev2 VALUES (1);
\set VERBOSITY terse
UPDATE todo SET stmt = $$SELECT hwm.set_watermark('own', '20')$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$SELECT hwm.drop_pipeline('own')$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$SELECT hwm.create_command_pipeline('own', 'ro.ev', 'id', 'SELECT $1, $2')$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$SELECT hwm.run('own')$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$CALL hwm.catch_up('own')$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$SELECT hwm.pause('own')$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$SELECT hwm.schedule('own', '1 hour')$$;
SELECT * FROM hwm.run('own');
-- a pipeline dropped with its table, by its own run
UPDATE todo SET stmt = $$DROP TABLE ro.ev2$$;
SELECT * FROM hwm.run('own2');
-- a run inside a run of another pipeline, which then acts on the outer one
UPDATE todo SET stmt = $$SELECT hwm.run('other')$$;
UPDATE hwm.state SET command = 'INSERT INTO ro.log SELECT -$1, -$2 FROM hwm.set_watermark(''own'', ''20'')'
 WHERE pipeline = 'other';
SELECT * FROM hwm.run('own');
\set VERBOSITY default
-- nothing of any of them is kept: the watermark is where it was, no row logged
SELECT pipeline, watermark, enabled, schedule FROM hwm.state
 WHERE pipeline IN ('own', 'own2', 'other') ORDER BY 1;
SELECT count(*) AS logged FROM log;
-- the same pipelines act on each other from outside their runs as before
UPDATE hwm.state SET command = 'INSERT INTO ro.log SELECT -$1, -$2' WHERE pipeline = 'other';
SELECT watermark_before, watermark_after FROM hwm.run('own');
SELECT pipeline, watermark FROM hwm.state WHERE pipeline IN ('own', 'other') ORDER BY 1;
SELECT lo, hi FROM log ORDER BY lo;

-- 4. a session-level advisory lock taken inside a run is refused (it would
-- stay with the caller's session after the run); a transaction-level one is
-- released with the run's transaction
SELECT hwm.set_watermark('own', '10');
TRUNCATE log;
UPDATE todo SET stmt = $$SELECT pg_catalog.pg_advisory_lock(2828)$$;
SELECT * FROM hwm.run('own');
UPDATE todo SET stmt = $$SELECT pg_catalog.pg_try_advisory_lock_shared(28, 28)$$;
SELECT * FROM hwm.run('own');
SELECT count(*) AS advisory_locks_held FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid();
UPDATE todo SET stmt = $$SELECT pg_catalog.pg_advisory_xact_lock(2828)$$;
SELECT watermark_before, watermark_after FROM hwm.run('own');
SELECT count(*) AS advisory_locks_held FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid();
-- outside a run, session locks are the caller's business as before
SELECT pg_advisory_lock(2828);
SELECT pg_advisory_unlock(2828);

-- 5. a run writes its result back by the pipeline's identity (its name and
-- created_at), never by name alone: the owner's DROP OWNED, run as the
-- command, removes the pipeline, and the run fails instead of succeeding
-- with its result written nowhere.  A declaration takes created_at from the
-- clock, so a pipeline dropped and declared again in one transaction is
-- another one.
CREATE ROLE regress_hwm_ro_owner;
CREATE ROLE regress_hwm_ro_readers;
GRANT regress_hwm_ro_readers TO regress_hwm_ro_owner;
GRANT USAGE ON SCHEMA ro TO regress_hwm_ro_readers;
GRANT SELECT ON ev TO regress_hwm_ro_readers;
SET ROLE regress_hwm_ro_owner;
SELECT hwm.create_command_pipeline('dropped_by_owner', 'ro.ev', 'id',
  'DROP OWNED BY regress_hwm_ro_owner', initial_watermark => '10');
-- (terse: the detail names when the pipeline was declared)
\set VERBOSITY terse
SELECT * FROM hwm.run('dropped_by_owner');
\set VERBOSITY default
SELECT pipeline, watermark FROM hwm.state WHERE pipeline = 'dropped_by_owner';
RESET ROLE;
BEGIN;
SELECT created_at AS old_created_at FROM hwm.state WHERE pipeline = 'other' \gset
SELECT hwm.drop_pipeline('other');
SELECT hwm.create_command_pipeline('other', 'ev', 'id', 'SELECT $1, $2');
SELECT created_at <> :'old_created_at' AND created_at > now() AS another_identity
  FROM hwm.state WHERE pipeline = 'other';
ROLLBACK;

-- 6. DROP ROLE by a role that may not drop the owner: PostgreSQL's
-- permission error (42501), not hwm's list of her pipelines (2BP01); a
-- role that may gets hwm's, and the role stays
CREATE ROLE regress_hwm_ro_alice;
GRANT regress_hwm_ro_readers TO regress_hwm_ro_alice;
SET ROLE regress_hwm_ro_alice;
SELECT hwm.create_command_pipeline('alice_secret', 'ro.ev', 'id', 'SELECT $1, $2');
RESET ROLE;
CREATE ROLE regress_hwm_ro_nobody;
DO $$
BEGIN
    SET LOCAL ROLE regress_hwm_ro_nobody;
    DROP ROLE regress_hwm_ro_alice;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'DROP ROLE by a role without the right: SQLSTATE %', SQLSTATE;
END $$;
DROP ROLE regress_hwm_ro_alice;
SELECT count(*) FROM pg_roles WHERE rolname = 'regress_hwm_ro_alice';

-- clean up
SELECT hwm.drop_pipeline(pipeline) FROM hwm.state
 WHERE pipeline IN ('own', 'own2', 'other', 'dropped_by_owner', 'alice_secret');
SET client_min_messages = warning;
DROP SCHEMA ro CASCADE;
RESET client_min_messages;
DROP ROLE regress_hwm_ro_owner, regress_hwm_ro_alice, regress_hwm_ro_readers,
  regress_hwm_ro_nobody;
