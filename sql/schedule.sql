-- schedule: hwm.schedule, hwm.unschedule, hwm.pause, hwm.resume and
-- hwm.set_timeout write the catalog the background scheduler reads.
-- Schedules are anchored: next_run_at is the first slot start_at + k * every
-- that is not in the past, so runs do not drift.  This database is not the
-- one the scheduler serves (hwm.database), so nothing runs here and every
-- schedule says so; test/t/ shows the scheduler at work.
\i test/setup.sql
CREATE SCHEMA sched;
SET search_path = sched, public;

CREATE TABLE src (id int, v text);
CREATE TABLE tgt (id int PRIMARY KEY, v text);
SELECT hwm.create_pipeline('sp', 'src', 'tgt', '{id}', 'id');

-- a pipeline without schedule has nothing to run
SELECT schedule, next_run_at, enabled, timeout FROM hwm.status WHERE pipeline = 'sp';

-- schedule from now: the first run is due at once
SELECT hwm.schedule('sp', '1 hour') = now() AS due_now;
SELECT schedule, next_run_at = schedule_anchor AS first_slot_is_anchor
  FROM hwm.state WHERE pipeline = 'sp';

-- an anchor in the past: the next slot on its grid, not a run per missed slot
SELECT hwm.schedule('sp', '1 hour', now() - interval '2 hours 30 minutes') - now() AS next_in;
SELECT next_run_at - schedule_anchor AS after_anchor FROM hwm.state WHERE pipeline = 'sp';
-- an anchor in the future: it is the first run
SELECT hwm.schedule('sp', '1 day', now() + interval '3 hours') - now() AS next_in;
-- a schedule given to create_pipeline starts now
SELECT hwm.create_pipeline('sp2', 'src', 'tgt', '{id}', 'id', schedule => '5 minutes');
SELECT schedule, next_run_at = schedule_anchor AS first_slot_is_anchor,
       next_run_at <= now() AS due FROM hwm.state WHERE pipeline = 'sp2';

-- pause keeps the schedule, resume lets it run again
SELECT hwm.pause('sp');
SELECT enabled, schedule FROM hwm.status WHERE pipeline = 'sp';
SELECT hwm.resume('sp');
SELECT enabled, schedule FROM hwm.status WHERE pipeline = 'sp';

-- a time limit per pipeline, and none
SELECT hwm.set_timeout('sp', '10 minutes');
SELECT timeout FROM hwm.status WHERE pipeline = 'sp';
SELECT hwm.set_timeout('sp', NULL);
SELECT timeout FROM hwm.status WHERE pipeline = 'sp';

-- unschedule: on demand only
SELECT hwm.unschedule('sp');
SELECT schedule, schedule_anchor, next_run_at FROM hwm.state WHERE pipeline = 'sp';
-- the runs in flight show in hwm.status (none here)
SELECT pipeline, running_since FROM hwm.status ORDER BY pipeline;

-- bad input: refused, and nothing changes
SELECT hwm.schedule('sp', '1 hour') IS NOT NULL AS scheduled;
CREATE TEMP TABLE before AS SELECT * FROM hwm.state;
SELECT hwm.schedule(NULL, '1 hour');
SELECT hwm.schedule('nope', '1 hour');
SELECT hwm.schedule('sp', NULL);
-- (the hint's call is one to copy: the name quoted as a literal)
SELECT hwm.schedule('it''s', NULL);
SELECT hwm.schedule('sp', '0');
SELECT hwm.schedule('sp', '-1 hour');
SELECT hwm.schedule('sp', '500 milliseconds');
SELECT hwm.schedule('sp', '1 day -1 hour');
SELECT hwm.schedule('sp', '1 hour', NULL);
SELECT hwm.schedule('sp', '1 hour', 'infinity');
SELECT hwm.unschedule(NULL);
SELECT hwm.unschedule('nope');
SELECT hwm.pause(NULL);
SELECT hwm.pause('nope');
SELECT hwm.resume('nope');
SELECT hwm.set_timeout('nope', '1 minute');
SELECT hwm.set_timeout('sp', '0');
SELECT hwm.set_timeout('sp', '-5 minutes');
SELECT hwm.create_pipeline('sp3', 'src', 'tgt', '{id}', 'id', schedule => '100 ms');
-- only the owner (or a member, or a superuser) manages a pipeline's schedule
CREATE ROLE hwm_sched_other;
GRANT USAGE ON SCHEMA sched TO hwm_sched_other;
SET ROLE hwm_sched_other;
SELECT hwm.schedule('sp', '1 minute');
SELECT hwm.unschedule('sp');
SELECT hwm.pause('sp');
SELECT hwm.resume('sp');
SELECT hwm.set_timeout('sp', '1 minute');
RESET ROLE;
SELECT count(*) AS changed_rows FROM (
  SELECT * FROM hwm.state EXCEPT SELECT * FROM before) d;

-- ordinary users cannot move a schedule by writing the catalog directly
SET ROLE hwm_sched_other;
UPDATE hwm.state SET next_run_at = now() WHERE pipeline = 'sp';
RESET ROLE;

-- the scheduler connects as the owner: an owner who cannot log in, or may
-- not connect to this database, gets a warning when the schedule is set
-- (the schedule is stored all the same); one who can gets none
CREATE ROLE hwm_sched_nologin NOLOGIN;
GRANT USAGE ON SCHEMA sched TO hwm_sched_nologin;
GRANT SELECT ON src TO hwm_sched_nologin;
GRANT SELECT, INSERT, UPDATE, DELETE ON tgt TO hwm_sched_nologin;
SET ROLE hwm_sched_nologin;
SELECT hwm.create_pipeline('sp_nologin', 'src', 'tgt', '{id}', 'id', schedule => '1 hour');
SELECT hwm.schedule('sp_nologin', '1 day') IS NOT NULL AS scheduled;
RESET ROLE;
SELECT schedule FROM hwm.state WHERE pipeline = 'sp_nologin';
ALTER ROLE hwm_sched_nologin LOGIN;
SELECT hwm.schedule('sp_nologin', '1 hour') IS NOT NULL AS scheduled;
SELECT current_database() AS db \gset
REVOKE CONNECT ON DATABASE :"db" FROM PUBLIC;
SELECT hwm.schedule('sp_nologin', '1 hour') IS NOT NULL AS scheduled;
GRANT CONNECT ON DATABASE :"db" TO PUBLIC;
SELECT hwm.drop_pipeline('sp_nologin');
REVOKE ALL ON src, tgt FROM hwm_sched_nologin;
REVOKE USAGE ON SCHEMA sched FROM hwm_sched_nologin;
DROP ROLE hwm_sched_nologin;

SELECT hwm.drop_pipeline('sp');
SELECT hwm.drop_pipeline('sp2');
REVOKE USAGE ON SCHEMA sched FROM hwm_sched_other;
DROP ROLE hwm_sched_other;
DROP SCHEMA sched CASCADE;
