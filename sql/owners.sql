-- owners: what one owner can do to another (issue 20).  Each case here
-- failed before 1.2: a schedule that no run time can follow is refused when
-- declared; hwm.backfills and hwm.runs show a role only its own rows,
-- written with their owner, so a name dropped and declared again by another
-- role shows nothing of the old pipeline; a rerun records who ran it and
-- its failure; a stored error is cut to 8 kB; DROP ROLE, REASSIGN OWNED and
-- DROP OWNED treat pipelines as the role's objects; names that no one means
-- are refused.  (The scheduler's side is test/t/049_hostile_owners.pl.)
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
CREATE ROLE regress_hwm_own_a;
CREATE ROLE regress_hwm_own_b;
CREATE SCHEMA own;
GRANT USAGE, CREATE ON SCHEMA own TO regress_hwm_own_a, regress_hwm_own_b;

SET ROLE regress_hwm_own_a;
CREATE TABLE own.src (id int PRIMARY KEY, day date NOT NULL, ts timestamptz NOT NULL, note text);
INSERT INTO own.src SELECT g, DATE '2026-01-01' + g % 3, TIMESTAMPTZ '2026-01-01 00:00+00' + g * INTERVAL '1 minute', 'n' || g
  FROM generate_series(1, 9) g;
CREATE TABLE own.tgt (LIKE own.src INCLUDING ALL);
-- a trigger that refuses a row, quoting what it holds, as real ones do
CREATE FUNCTION own.guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.note = 'n5' THEN
        RAISE EXCEPTION 'refusing row with secret SSN-123-45-6789';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER guard BEFORE INSERT OR UPDATE ON own.tgt FOR EACH ROW EXECUTE FUNCTION own.guard();
SELECT hwm.create_pipeline('a_pipe', 'own.src', 'own.tgt', '{id}', 'ts', partition_column => 'day');

-- 1. a schedule that no run time can follow is refused, and nothing changes
-- (terse: the detail names the current time)
\set VERBOSITY terse
SELECT hwm.schedule('a_pipe', '292260 years');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.schedule('a_pipe', '9223372036854775807 microseconds');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.schedule('a_pipe', '106751992 days');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT schedule, next_run_at FROM hwm.state WHERE pipeline = 'a_pipe';
-- a long one that fits is fine
SELECT hwm.schedule('a_pipe', '1000 years', '2026-01-01') AS next_run;
SELECT hwm.unschedule('a_pipe');

-- 2. a backfill that fails on the trigger, whose error quotes row data:
-- recorded with its owner (an error of 8 kB or more is stored cut, see
-- test/t/049_hostile_owners.pl, which fails a scheduled run with 9 MB)
-- (terse: the detail names the backfill's id, which other tests move)
\set VERBOSITY terse
CALL hwm.backfill('a_pipe', '2026-01-01', '2026-01-03');
\set VERBOSITY default
SELECT status, error_sqlstate, error, owner, run_by
  FROM hwm.backfills WHERE pipeline = 'a_pipe';
SELECT kind, status, error, owner FROM hwm.runs WHERE pipeline = 'a_pipe' ORDER BY run_id;
RESET ROLE;

-- 3. another owner sees none of it: not the backfill, not the runs
SET ROLE regress_hwm_own_b;
SELECT count(*) AS backfills_seen FROM hwm.backfills;
SELECT count(*) AS runs_seen FROM hwm.runs;
SELECT count(*) AS pipelines_seen FROM hwm.status;
RESET ROLE;

-- 4. the name dropped, and declared again by b: b sees only its own history
SET ROLE regress_hwm_own_a;
SELECT hwm.drop_pipeline('a_pipe');
GRANT SELECT ON own.src TO regress_hwm_own_b;
RESET ROLE;
SET ROLE regress_hwm_own_b;
CREATE TABLE own.b_tgt (LIKE own.src INCLUDING ALL);
SELECT hwm.create_pipeline('a_pipe', 'own.src', 'own.b_tgt', '{id}', 'ts', partition_column => 'day');
SELECT rows_upserted FROM hwm.run('a_pipe');
SELECT kind, status, owner FROM hwm.runs WHERE pipeline = 'a_pipe' ORDER BY run_id;
SELECT count(*) AS backfills_seen FROM hwm.backfills WHERE pipeline = 'a_pipe';
-- b's backfill of the range a's failed on is a job of its own: it does not
-- take over a's unfinished one (which b could not see, and whose progress
-- was a's pipeline's)
CALL hwm.backfill('a_pipe', '2026-01-01', '2026-01-03');
SELECT status, partitions_done, owner FROM hwm.backfills WHERE pipeline = 'a_pipe';
RESET ROLE;
SET ROLE regress_hwm_own_a;
SELECT status, owner FROM hwm.backfills WHERE pipeline = 'a_pipe';
RESET ROLE;

-- 4b. a rerun records who ran it, and its failure (it stayed 'running' with
-- no error): the command inserts into a table with a key, so running it
-- again over an interval already done fails
CREATE TABLE own.hourly (h timestamptz PRIMARY KEY, n bigint NOT NULL);
GRANT INSERT ON own.hourly TO regress_hwm_own_b;
SET ROLE regress_hwm_own_b;
SELECT hwm.create_interval_pipeline('b_hourly', 'own.src', 'ts', '1 hour', $$
    INSERT INTO own.hourly SELECT $1, count(*) FROM own.src WHERE ts >= $1 AND ts < $2
$$, start_at => '2026-01-01 00:00+00');
SELECT hwm.set_watermark('b_hourly', '2026-01-01 01:00+00');
RESET ROLE;
INSERT INTO own.hourly VALUES ('2026-01-01 00:00+00', 9);
CALL hwm.rerun_intervals('b_hourly', '2026-01-01 00:00+00', '2026-01-01 01:00+00');
SELECT status, error_sqlstate, error, run_by, owner FROM hwm.backfills WHERE pipeline = 'b_hourly';
SELECT hwm.drop_pipeline('b_hourly');

-- 5. DROP ROLE is refused while the role owns pipelines here, like any
-- object (after PostgreSQL's own checks, of the caller's right and of the
-- role's objects: here PostgreSQL names its grants first, as each version
-- words it; sql/run_owns.sql shows hwm's refusal); REASSIGN OWNED moves
-- them, DROP OWNED drops them
\set VERBOSITY sqlstate
DROP ROLE regress_hwm_own_b;
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
-- (a role that does not exist is PostgreSQL's business: IF EXISTS skips it)
DROP ROLE IF EXISTS regress_hwm_nobody;
-- (b leaves a backfill of a_pipe unfinished: its target refuses day 2)
SET ROLE regress_hwm_own_b;
CREATE FUNCTION own.no_day_2() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'no day 2 here'; END $$;
CREATE TRIGGER no_day_2 BEFORE INSERT ON own.b_tgt FOR EACH ROW
  WHEN (NEW.day = '2026-01-02') EXECUTE FUNCTION own.no_day_2();
\set VERBOSITY terse
CALL hwm.backfill('a_pipe', '2026-01-01', '2026-01-03');
\set VERBOSITY default
RESET ROLE;
SELECT pipeline, owner FROM hwm.state ORDER BY 1;
REASSIGN OWNED BY regress_hwm_own_b TO regress_hwm_own_a;
SELECT pipeline, owner FROM hwm.state ORDER BY 1;
-- the unfinished job is the pipeline's: its new owner resumes it, and it
-- is theirs (the job b finished stays b's history)
SET ROLE regress_hwm_own_a;
DROP TRIGGER no_day_2 ON own.b_tgt;
CALL hwm.backfill('a_pipe', '2026-01-01', '2026-01-03');
SELECT status, done_through, partitions_done, owner, run_by FROM hwm.backfills
 WHERE pipeline = 'a_pipe' ORDER BY backfill_id;
RESET ROLE;
DROP OWNED BY regress_hwm_own_a;
SELECT count(*) AS pipelines_left FROM hwm.state;

-- 6. a pipeline resumed here is at home here; a copy's row (another
-- database's OID) keeps the scheduler off it until then (its owner may log
-- in: else hwm.status would say that first)
ALTER ROLE regress_hwm_own_b LOGIN;
SET ROLE regress_hwm_own_b;
CREATE TABLE own.c_src (id int PRIMARY KEY, ts timestamptz NOT NULL);
CREATE TABLE own.c_tgt (LIKE own.c_src INCLUDING ALL);
SELECT hwm.create_pipeline('c_pipe', 'own.c_src', 'own.c_tgt', '{id}', 'ts', schedule => '1 hour');
SELECT dboid = (SELECT oid FROM pg_database WHERE datname = current_database()) AS at_home FROM hwm.homes;
SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'c_pipe';
RESET ROLE;
-- (what a copy of the database looks like: the row names another database)
UPDATE hwm.homes SET dboid = 1 WHERE pipeline = 'c_pipe';
SET ROLE regress_hwm_own_b;
SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'c_pipe';
SELECT hwm.resume('c_pipe');
SELECT not_scheduled_because IS NULL AS scheduled FROM hwm.status WHERE pipeline = 'c_pipe';
SELECT hwm.pause('c_pipe');
SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'c_pipe';
RESET ROLE;
-- an owner that cannot log in, or may not connect: the scheduler cannot run it
SELECT hwm.resume('c_pipe');
ALTER ROLE regress_hwm_own_b NOLOGIN;
SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'c_pipe';
ALTER ROLE regress_hwm_own_b LOGIN;
REVOKE CONNECT ON DATABASE :"DBNAME" FROM PUBLIC;
SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'c_pipe';
GRANT CONNECT ON DATABASE :"DBNAME" TO PUBLIC;
SELECT not_scheduled_because IS NULL AS scheduled FROM hwm.status WHERE pipeline = 'c_pipe';

DROP OWNED BY regress_hwm_own_a, regress_hwm_own_b;
DROP SCHEMA own CASCADE;
DROP ROLE regress_hwm_own_a, regress_hwm_own_b;
