-- reconcile_schedule: hwm.schedule_reconcile stores a second schedule per
-- pipeline (a reconcile of the whole target, run by the scheduler's worker
-- after a scheduled run of the pipeline succeeded, when it is due);
-- hwm.unschedule_reconcile removes it; hwm.status shows it.  Every refusal
-- changes nothing.  (The scheduler running it: test/t/068_reconcile_scheduled.pl.)
\i test/setup.sql
CREATE SCHEMA rcs;
SET search_path = rcs, public;
SET client_min_messages = error;

CREATE TABLE src (id int PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE tgt (id int PRIMARY KEY, v text, updated_at timestamptz);
SELECT hwm.create_pipeline('rcs', 'src', 'tgt', '{id}', 'updated_at');
RESET client_min_messages;

-- refusals, each changing nothing
SELECT hwm.schedule_reconcile(NULL, '1 day');
SELECT hwm.schedule_reconcile('nosuch', '1 day');
SELECT hwm.schedule_reconcile('rcs', NULL);
SELECT hwm.schedule_reconcile('rcs', '0.5 seconds');
SELECT hwm.schedule_reconcile('rcs', '-1 day');
SELECT hwm.schedule_reconcile('rcs', '1 day', 0);
SELECT hwm.schedule_reconcile('rcs', '1 day', NULL);
-- a pipeline without a schedule: the reconcile rides on its runs
SELECT hwm.schedule_reconcile('rcs', '1 day');
SELECT hwm.unschedule_reconcile('nosuch');
-- a command pipeline has no target to reconcile
CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY, n int);
SET client_min_messages = error;
SELECT hwm.create_command_pipeline('rcs_cmd', 'events', 'id', $$SELECT 1$$, schedule => '1 minute');
RESET client_min_messages;
SELECT hwm.schedule_reconcile('rcs_cmd', '1 day');
-- another role may not schedule a pipeline it does not own
CREATE ROLE hwm_rcs_other;
SET client_min_messages = error;
SELECT hwm.schedule('rcs', '1 minute') IS NOT NULL AS scheduled;
RESET client_min_messages;
SET ROLE hwm_rcs_other;
SELECT hwm.schedule_reconcile('rcs', '1 day');
SELECT hwm.unschedule_reconcile('rcs');
RESET ROLE;
SELECT reconcile_schedule, reconcile_anchor, reconcile_next_run_at, reconcile_batch_size
  FROM hwm.state WHERE pipeline = 'rcs';

-- scheduled: the first reconcile is due at once, then every day from then
BEGIN;
SELECT hwm.schedule_reconcile('rcs', '1 day', 500) = now() AS first_due_now;
SELECT reconcile_schedule, reconcile_batch_size, reconcile_anchor = now() AS anchored_now,
       reconcile_next_run_at = now() AS due_now
  FROM hwm.state WHERE pipeline = 'rcs';
SELECT reconcile_schedule, next_reconcile_at = now() AS next_now
  FROM hwm.status WHERE pipeline = 'rcs';
COMMIT;
-- scheduled again: replaced
SELECT hwm.schedule_reconcile('rcs', '1 hour') = now() AS first_due_now;
SELECT reconcile_schedule, reconcile_batch_size FROM hwm.state WHERE pipeline = 'rcs';
-- the load unscheduled: the reconcile's schedule is kept, idle
SELECT hwm.unschedule('rcs');
SELECT schedule, reconcile_schedule, reconcile_batch_size FROM hwm.state WHERE pipeline = 'rcs';
-- unscheduled: gone; the load's schedule is untouched
SET client_min_messages = error;
SELECT hwm.schedule('rcs', '1 minute') IS NOT NULL AS scheduled;
RESET client_min_messages;
SELECT hwm.unschedule_reconcile('rcs');
SELECT schedule, reconcile_schedule, reconcile_anchor, reconcile_next_run_at, reconcile_batch_size
  FROM hwm.state WHERE pipeline = 'rcs';
SELECT reconcile_schedule, next_reconcile_at FROM hwm.status WHERE pipeline = 'rcs';
-- unscheduling what is not scheduled is no error
SELECT hwm.unschedule_reconcile('rcs');

SET client_min_messages = error;
SELECT hwm.drop_pipeline('rcs');
SELECT hwm.drop_pipeline('rcs_cmd');
DROP ROLE hwm_rcs_other;
DROP SCHEMA rcs CASCADE;
