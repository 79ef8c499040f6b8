-- schedule_after: a pipeline run after its upstreams (issue 41).  A run of
-- an upstream that commits rows, or moves its watermark, wakes the pipelines
-- scheduled after it: a row of hwm.wakes, in the same transaction, which the
-- scheduler's dispatcher applies (next_run_at = now()); a run that loads
-- nothing wakes nobody.  hwm.schedule and hwm.schedule_after
-- replace each other, hwm.unschedule clears both; a dropped upstream
-- unschedules its downstreams with the reason in hwm.status.  Nothing runs
-- here (this database is not the scheduler's): test/t/073_chain_schedule.pl
-- shows the scheduler running chains.
\i test/setup.sql
SET client_min_messages = warning;
\set VERBOSITY terse
CREATE ROLE regress_hwm_after_a LOGIN;
CREATE ROLE regress_hwm_after_b LOGIN;
CREATE SCHEMA aft;
GRANT USAGE, CREATE ON SCHEMA aft TO regress_hwm_after_a, regress_hwm_after_b;

SET ROLE regress_hwm_after_a;
-- raw -> clean -> rollup, and a second source for a fan-in
CREATE TABLE aft.raw (id int PRIMARY KEY, v text);
CREATE TABLE aft.clean (id int PRIMARY KEY, v text);
CREATE TABLE aft.raw2 (id int PRIMARY KEY, v text);
CREATE TABLE aft.clean2 (id int PRIMARY KEY, v text);
CREATE TABLE aft.rollup (id int PRIMARY KEY, v text);
CREATE VIEW aft.both AS SELECT id, v FROM aft.clean UNION ALL SELECT id + 1000, v FROM aft.clean2;
SELECT hwm.create_pipeline('a_clean', 'aft.raw', 'aft.clean', '{id}', 'id');
SELECT hwm.create_pipeline('a_clean2', 'aft.raw2', 'aft.clean2', '{id}', 'id');
SELECT hwm.create_pipeline('a_rollup', 'aft.both', 'aft.rollup', '{id}', 'id');
RESET ROLE;

SET ROLE regress_hwm_after_a;
-- scheduled after both: nothing due until an upstream commits
SELECT hwm.schedule_after('a_rollup', '{a_clean, a_clean2, a_clean}');
SELECT schedule, upstreams, next_run_at, not_scheduled_because FROM hwm.status WHERE pipeline = 'a_rollup';
-- a run that loads nothing wakes nobody (hwm.wakes is hwm's alone: read as
-- the superuser)
SELECT rows_upserted FROM hwm.run('a_clean');
RESET ROLE;
SELECT count(*) AS wakes FROM hwm.wakes WHERE upstream LIKE 'a\_%';
-- a run that loads rows wakes it in the same transaction; a rollback takes
-- that back with the rows
BEGIN;
SET LOCAL ROLE regress_hwm_after_a;
INSERT INTO aft.raw VALUES (1, 'x'), (2, 'y');
SELECT rows_upserted FROM hwm.run('a_clean');
RESET ROLE;
SELECT upstream, target::regclass, changed FROM hwm.wakes WHERE upstream LIKE 'a\_%';
ROLLBACK;
SELECT count(*) AS wakes FROM hwm.wakes WHERE upstream LIKE 'a\_%';
SET ROLE regress_hwm_after_a;
INSERT INTO aft.raw VALUES (1, 'x'), (2, 'y');
SELECT rows_upserted FROM hwm.run('a_clean');
-- it stays for the dispatcher to apply: a run by hand of a_rollup takes
-- nothing (nothing runs after a_rollup, so its own run wakes nobody)
SELECT rows_upserted FROM hwm.run('a_rollup');
-- the other upstream wakes it too; a second wake of a_clean takes the place
-- of the first, not yet applied (one row per upstream)
INSERT INTO aft.raw2 VALUES (1, 'z');
SELECT rows_upserted FROM hwm.run('a_clean2');
INSERT INTO aft.raw VALUES (3, 'x');
SELECT rows_upserted FROM hwm.run('a_clean');
RESET ROLE;
SELECT upstream, changed FROM hwm.wakes WHERE upstream LIKE 'a\_%' ORDER BY 1, 2;
SET ROLE regress_hwm_after_a;
-- and no role but hwm's own reads or writes it
SELECT count(*) FROM hwm.wakes;
DELETE FROM hwm.wakes;

-- pause keeps the upstreams; hwm.schedule replaces them; schedule_after
-- replaces the schedule; unschedule clears both
SELECT hwm.pause('a_rollup');
SELECT enabled, upstreams, not_scheduled_because FROM hwm.status WHERE pipeline = 'a_rollup';
SELECT hwm.resume('a_rollup');
SELECT hwm.schedule('a_rollup', '1 hour') IS NOT NULL AS scheduled;
SELECT schedule, upstreams FROM hwm.status WHERE pipeline = 'a_rollup';
SELECT hwm.schedule_after('a_rollup', '{a_clean}');
SELECT schedule, schedule_anchor, next_run_at, after FROM hwm.state WHERE pipeline = 'a_rollup';
SELECT hwm.unschedule('a_rollup');
SELECT schedule, upstreams, next_run_at FROM hwm.status WHERE pipeline = 'a_rollup';

-- bad input: each refused, nothing changed
SELECT hwm.schedule_after('a_rollup', '{a_clean}');
\set VERBOSITY default
SELECT hwm.schedule_after('a_rollup', NULL);
SELECT hwm.schedule_after('a_rollup', '{}');
SELECT hwm.schedule_after('a_rollup', '{a_clean, NULL}');
SELECT hwm.schedule_after('a_rollup', '{no_such}');
SELECT hwm.schedule_after('no_such', '{a_clean}');
SELECT hwm.schedule_after(NULL, '{a_clean}');
-- a cycle: itself, or through another
SELECT hwm.schedule_after('a_rollup', '{a_rollup}');
SELECT hwm.schedule_after('a_clean', '{a_rollup}');
SELECT hwm.schedule_after('a_clean2', '{a_clean}');
SELECT hwm.schedule_after('a_clean', '{a_clean2}');
\set VERBOSITY terse
SELECT pipeline, upstreams FROM hwm.status WHERE pipeline LIKE 'a\_%' ORDER BY 1;
SELECT hwm.unschedule('a_clean2');
RESET ROLE;

-- owners: b may run after a's pipeline only where b may read its target,
-- and learns nothing of a pipeline it may not
SET ROLE regress_hwm_after_a;
GRANT SELECT ON aft.clean TO regress_hwm_after_b;
RESET ROLE;
SET ROLE regress_hwm_after_b;
CREATE TABLE aft.b_tgt (id int PRIMARY KEY, v text);
CREATE VIEW aft.b_src AS SELECT id, v FROM aft.clean;
SELECT hwm.create_pipeline('b_copy', 'aft.b_src', 'aft.b_tgt', '{id}', 'id');
\set VERBOSITY default
-- rollup's target is not b's to read: the same refusal as no pipeline at all
SELECT hwm.schedule_after('b_copy', '{a_rollup}');
SELECT hwm.schedule_after('b_copy', '{a_nothing}');
-- nor may b schedule a's pipeline
SELECT hwm.schedule_after('a_rollup', '{b_copy}');
\set VERBOSITY terse
SELECT hwm.schedule_after('b_copy', '{a_clean}');
SELECT pipeline, upstreams FROM hwm.status ORDER BY 1;
RESET ROLE;
-- a's run wakes b's pipeline (its wake, applied, makes b_copy due)
SET ROLE regress_hwm_after_a;
INSERT INTO aft.raw VALUES (4, 'w');
SELECT rows_upserted FROM hwm.run('a_clean');
RESET ROLE;
SELECT upstream, changed FROM hwm.wakes WHERE upstream LIKE 'a\_%' ORDER BY 1, 2;

-- a dropped upstream: its downstreams are no longer scheduled, and say why
SET ROLE regress_hwm_after_a;
SELECT hwm.schedule_after('a_rollup', '{a_clean, a_clean2}');
SELECT hwm.drop_pipeline('a_clean');
SELECT pipeline, schedule, upstreams, next_run_at, not_scheduled_because FROM hwm.status ORDER BY 1;
RESET ROLE;
SET ROLE regress_hwm_after_b;
SELECT schedule, upstreams, next_run_at, not_scheduled_because FROM hwm.status WHERE pipeline = 'b_copy';
-- scheduling again clears the reason
SELECT hwm.schedule('b_copy', '1 hour') IS NOT NULL AS scheduled;
SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'b_copy';
RESET ROLE;
-- an upstream dropped with its table; a_rollup's target lag goes with its
-- upstreams (alone it would run it to stay under it), as with hwm.unschedule
SET ROLE regress_hwm_after_a;
SELECT hwm.schedule_after('a_rollup', '{a_clean2}');
SELECT hwm.set_target_lag('a_rollup', '1 hour');
DROP TABLE aft.raw2;
SELECT pipeline, upstreams, not_scheduled_because FROM hwm.status ORDER BY 1;
SELECT target_lag, next_run_at FROM hwm.state WHERE pipeline = 'a_rollup';
RESET ROLE;

DROP OWNED BY regress_hwm_after_a, regress_hwm_after_b;
DROP SCHEMA aft CASCADE;
DROP ROLE regress_hwm_after_a, regress_hwm_after_b;
