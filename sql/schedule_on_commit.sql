-- schedule_on_commit: a pipeline run when a transaction that writes its
-- source's tables commits (issue 41), at most once per min_interval.  Its
-- declaration (hwm.schedule, hwm.schedule_after and hwm.schedule_on_commit
-- replace each other, hwm.unschedule clears each, bad input refused), and
-- the writers' side: a table's watch, armed as the scheduler's worker arms
-- it before a run, is disarmed by the first commit that writes the table
-- (src/watch.c), whatever statement wrote it, and by nothing else.  Nothing
-- runs here (this database is not the scheduler's):
-- test/t/077_on_commit.pl shows the scheduler running such pipelines.
\i test/setup.sql
SET client_min_messages = warning;
\set VERBOSITY terse
CREATE FUNCTION hwm_test_watch_arm(regclass) RETURNS boolean
  LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_watch_arm';
CREATE FUNCTION hwm_test_watch_written(regclass) RETURNS boolean
  LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_watch_written';
CREATE ROLE regress_hwm_oc_a LOGIN;
CREATE ROLE regress_hwm_oc_b LOGIN;
CREATE SCHEMA oc;
GRANT USAGE, CREATE ON SCHEMA oc TO regress_hwm_oc_a, regress_hwm_oc_b;

SET ROLE regress_hwm_oc_a;
CREATE TABLE oc.raw (id int PRIMARY KEY, v text);
CREATE TABLE oc.tgt (id int PRIMARY KEY, v text);
CREATE TABLE oc.other (id int PRIMARY KEY, v text);
CREATE TABLE oc.parts (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE oc.parts_1 PARTITION OF oc.parts FOR VALUES FROM (0) TO (1000);
CREATE VIEW oc.raw_v AS SELECT id, v FROM oc.raw;
CREATE MATERIALIZED VIEW oc.mv AS SELECT id, v FROM oc.raw;
CREATE TABLE oc.mv_tgt (id int PRIMARY KEY, v text);
SELECT hwm.create_pipeline('oc_p', 'oc.raw', 'oc.tgt', '{id}', 'id');
SELECT hwm.create_pipeline('oc_mv', 'oc.mv', 'oc.mv_tgt', '{id}', 'id');

-- scheduled on commit: due at once (its first run arms the watches), no
-- schedule, no upstreams; the default min_interval is a second
SELECT hwm.schedule_on_commit('oc_p');
SELECT schedule, upstreams, on_commit, next_run_at IS NOT NULL AS due, not_scheduled_because
  FROM hwm.status WHERE pipeline = 'oc_p';
SELECT hwm.schedule_on_commit('oc_p', '250 milliseconds');
SELECT hwm.schedule_on_commit('oc_p', '0');
SELECT on_commit FROM hwm.status WHERE pipeline = 'oc_p';
-- pause keeps it; hwm.schedule replaces it, and it replaces a schedule;
-- hwm.schedule_after likewise; hwm.unschedule clears it
SELECT hwm.pause('oc_p');
SELECT enabled, on_commit, not_scheduled_because FROM hwm.status WHERE pipeline = 'oc_p';
SELECT hwm.resume('oc_p');
SELECT hwm.schedule('oc_p', '1 hour') IS NOT NULL AS scheduled;
SELECT schedule, on_commit FROM hwm.status WHERE pipeline = 'oc_p';
SELECT hwm.schedule_on_commit('oc_p', '2 seconds');
SELECT schedule, schedule_anchor, after, on_commit FROM hwm.state WHERE pipeline = 'oc_p';
SELECT hwm.create_pipeline('oc_q', 'oc.tgt', 'oc.other', '{id}', 'id');
SELECT hwm.schedule_after('oc_p', '{oc_q}');
SELECT schedule, after, on_commit FROM hwm.state WHERE pipeline = 'oc_p';
SELECT hwm.schedule_on_commit('oc_p', '2 seconds');
SELECT hwm.unschedule('oc_p');
SELECT schedule, upstreams, on_commit, next_run_at FROM hwm.status WHERE pipeline = 'oc_p';
-- a target lag with it only makes the pipeline late: its next run stays
-- the commits' (none due here)
SELECT hwm.schedule_on_commit('oc_p', '2 seconds');
RESET ROLE;
UPDATE hwm.state SET next_run_at = NULL WHERE pipeline = 'oc_p';
SET ROLE regress_hwm_oc_a;
SELECT hwm.set_target_lag('oc_p', '1 hour');
SELECT next_run_at, on_commit, target_lag FROM hwm.state WHERE pipeline = 'oc_p';
SELECT hwm.set_target_lag('oc_p', NULL);

-- a source whose changes no commit here announces: said, and stored
SELECT hwm.schedule_on_commit('oc_mv');
SELECT on_commit FROM hwm.state WHERE pipeline = 'oc_mv';

-- bad input: each refused, nothing changed
\set VERBOSITY default
SELECT hwm.schedule_on_commit('oc_p', NULL);
SELECT hwm.schedule_on_commit('oc_p', '-1 second');
SELECT hwm.schedule_on_commit('oc_p', '1 day -1 second');
SELECT hwm.schedule_on_commit('oc_p', '30 days');
SELECT hwm.schedule_on_commit('no_such');
SELECT hwm.schedule_on_commit(NULL);
\set VERBOSITY terse
SELECT on_commit FROM hwm.state WHERE pipeline = 'oc_p';
RESET ROLE;
-- another owner's pipeline: not b's to schedule
SET ROLE regress_hwm_oc_b;
\set VERBOSITY default
SELECT hwm.schedule_on_commit('oc_p', '1 second');
\set VERBOSITY terse
RESET ROLE;
SELECT on_commit FROM hwm.state WHERE pipeline = 'oc_p';

-- The writers' side.  A table never armed reads as written (after a
-- restart, a dispatcher runs its pipelines once, which arms them).
SELECT hwm_test_watch_written('oc.raw') AS never_armed;
SELECT hwm_test_watch_arm('oc.raw') AS armed, hwm_test_watch_written('oc.raw') AS written;
-- a transaction that writes it disarms it when it commits, not before
BEGIN;
INSERT INTO oc.raw VALUES (1, 'a');
SELECT hwm_test_watch_written('oc.raw') AS before_commit;
COMMIT;
SELECT hwm_test_watch_written('oc.raw') AS after_commit;
-- a rolled-back one does not; nor does a write of another table
SELECT hwm_test_watch_arm('oc.raw');
BEGIN;
INSERT INTO oc.raw VALUES (2, 'b');
ROLLBACK;
INSERT INTO oc.other VALUES (1, 'x');
SELECT * FROM oc.raw;
SELECT hwm_test_watch_written('oc.raw') AS after_rollback_and_others;
-- every kind of write: UPDATE, DELETE, MERGE, COPY FROM, a writable CTE,
-- an auto-updatable view, a function's statement, a trigger's
SELECT hwm_test_watch_arm('oc.raw');
UPDATE oc.raw SET v = 'b' WHERE id = 1;
SELECT hwm_test_watch_written('oc.raw') AS update_;
SELECT hwm_test_watch_arm('oc.raw');
DELETE FROM oc.raw WHERE id = 1;
SELECT hwm_test_watch_written('oc.raw') AS delete_;
SELECT hwm_test_watch_arm('oc.raw');
MERGE INTO oc.raw AS r USING (VALUES (5, 'e')) AS s (id, v) ON r.id = s.id
  WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v);
SELECT hwm_test_watch_written('oc.raw') AS merge_;
SELECT hwm_test_watch_arm('oc.raw');
COPY oc.raw FROM stdin;
6	f
\.
SELECT hwm_test_watch_written('oc.raw') AS copy_;
SELECT hwm_test_watch_arm('oc.raw');
WITH i AS (INSERT INTO oc.raw VALUES (7, 'g') RETURNING id) SELECT count(*) FROM i;
SELECT hwm_test_watch_written('oc.raw') AS writable_cte;
SELECT hwm_test_watch_arm('oc.raw');
INSERT INTO oc.raw_v VALUES (8, 'h');
SELECT hwm_test_watch_written('oc.raw') AS through_view;
CREATE FUNCTION oc.put(i int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN INSERT INTO oc.raw VALUES (i, 'fn'); END $$;
SELECT hwm_test_watch_arm('oc.raw');
SELECT oc.put(9);
SELECT hwm_test_watch_written('oc.raw') AS in_function;
CREATE FUNCTION oc.copy_other() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO oc.raw VALUES (NEW.id + 100, NEW.v); RETURN NEW; END $$;
CREATE TRIGGER copy_other AFTER INSERT ON oc.other FOR EACH ROW EXECUTE FUNCTION oc.copy_other();
SELECT hwm_test_watch_arm('oc.raw');
INSERT INTO oc.other VALUES (2, 'y');
SELECT hwm_test_watch_written('oc.raw') AS in_trigger;
-- a partitioned table: its writers name it, or the partition (the worker
-- arms both: a source's relations take in partitions and ancestors)
SELECT hwm_test_watch_arm('oc.parts'), hwm_test_watch_arm('oc.parts_1');
INSERT INTO oc.parts VALUES (1, 'p');
SELECT hwm_test_watch_written('oc.parts') AS parent, hwm_test_watch_written('oc.parts_1') AS partition;
SELECT hwm_test_watch_arm('oc.parts'), hwm_test_watch_arm('oc.parts_1');
INSERT INTO oc.parts_1 VALUES (2, 'p');
SELECT hwm_test_watch_written('oc.parts') AS parent, hwm_test_watch_written('oc.parts_1') AS partition;
-- one commit writing twice disarms once; the next arming waits again
SELECT hwm_test_watch_arm('oc.raw');
BEGIN;
INSERT INTO oc.raw VALUES (20, 'x');
INSERT INTO oc.raw VALUES (21, 'x');
COMMIT;
SELECT hwm_test_watch_written('oc.raw') AS written;
SELECT hwm_test_watch_arm('oc.raw');
SELECT hwm_test_watch_written('oc.raw') AS written;

DROP OWNED BY regress_hwm_oc_a, regress_hwm_oc_b;
DROP SCHEMA oc CASCADE;
DROP ROLE regress_hwm_oc_a, regress_hwm_oc_b;
DROP FUNCTION hwm_test_watch_arm(regclass), hwm_test_watch_written(regclass);
