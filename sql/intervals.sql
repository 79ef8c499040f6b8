-- intervals: every interval argument of every function, at its extremes
-- (issue 37).  Each is either refused with a clear error (22023, or 22008
-- for a time PostgreSQL cannot store) or taken as given, never wrapped
-- around: hwm.set_timeout('1000000 years') used to become a 1 ms limit.
-- The infinite intervals of PostgreSQL 17 are in intervals_infinite.sql.
\i test/setup.sql
CREATE SCHEMA iv;
SET search_path = iv, public;
\set VERBOSITY default
CREATE TABLE src (id int, ts timestamptz, v text);
CREATE TABLE tgt (id int PRIMARY KEY, ts timestamptz, v text);
CREATE TABLE ev (t timestamptz);
CREATE TABLE swap_tgt (id int PRIMARY KEY, v text);
CREATE TABLE swap_stg (id int PRIMARY KEY, v text);
SELECT hwm.create_pipeline('ivp', 'src', 'tgt', '{id}', 'ts');

-- set_timeout: at least 1 ms, at most what a timer can hold (the most
-- statement_timeout takes, 2147483647 ms)
SELECT hwm.set_timeout('ivp', '1 millisecond');
SELECT hwm.set_timeout('ivp', '2147483647 milliseconds');
SELECT timeout FROM hwm.state WHERE pipeline = 'ivp';
SELECT hwm.set_timeout('ivp', '2147483648 milliseconds');
SELECT hwm.set_timeout('ivp', '1 mon');
SELECT hwm.set_timeout('ivp', '1000000 years');
SELECT hwm.set_timeout('ivp', '178000000 years');
SELECT hwm.set_timeout('ivp', '-178000000 years');
SELECT hwm.set_timeout('ivp', '999 microseconds');
SELECT hwm.set_timeout('ivp', '0');
SELECT hwm.set_timeout('ivp', '1 day -1 hour');
SELECT timeout FROM hwm.state WHERE pipeline = 'ivp';

-- schedule (every): at least 1 second, no negative part, and two runs
-- that PostgreSQL can store
SELECT hwm.schedule('ivp', '1 second') = now() AS due_now;
SELECT hwm.schedule('ivp', '1000 years') = now() AS due_now;
SELECT hwm.schedule('ivp', '1000000 years', '2026-01-01 00:00+00');
SELECT hwm.schedule('ivp', '178000000 years', '2026-01-01 00:00+00');
SELECT hwm.schedule('ivp', '2147483647 days', '2026-01-01 00:00+00');
SELECT hwm.schedule('ivp', '2147483647 months', '2026-01-01 00:00+00');
SELECT hwm.schedule('ivp', '2147483647 months 2147483647 days 2562047788:00:54.775806', '2026-01-01 00:00+00');
SELECT hwm.schedule('ivp', '-178000000 years');
SELECT hwm.schedule('ivp', '999 milliseconds');
SELECT hwm.schedule('ivp', '0');
-- at the ends of time: the last anchor whose second run exists, and the first
SELECT hwm.schedule('ivp', '1 second', '294276-12-31 23:59:58+00') AS first_run;
SELECT hwm.schedule('ivp', '1 second', '294276-12-31 23:59:59+00');
SELECT n - now() BETWEEN '0' AND '1 day' AS next_midnight
  FROM hwm.schedule('ivp', '1 day', '4713-01-01 00:00+00 BC') AS n;
-- (the detail names now(): only the message of each)
\set VERBOSITY terse
SELECT hwm.create_pipeline('ivp2', 'src', 'tgt', '{id}', 'ts', schedule => '178000000 years');
SELECT hwm.alter_pipeline('ivp', schedule => '178000000 years');
SELECT hwm.alter_pipeline('ivp', schedule => '-1 second');
SELECT hwm.create_command_pipeline('ivc', 'src', 'ts', $$SELECT $1, $2$$, schedule => '178000000 years');
SELECT hwm.schedule_reconcile('ivp', '178000000 years');
SELECT hwm.schedule_reconcile('ivp', '-1 second');
\set VERBOSITY default
SELECT hwm.schedule_reconcile('ivp', '1000 years') = now() AS due_now;
SELECT hwm.unschedule_reconcile('ivp');

-- delay: not negative, and now() - delay must be a time (the detail names
-- the delay, the hint the limit)
SELECT hwm.alter_pipeline('ivp', delay => '0');
SELECT hwm.alter_pipeline('ivp', delay => '1000 years');
SELECT delay FROM hwm.state WHERE pipeline = 'ivp';
SELECT hwm.alter_pipeline('ivp', delay => '1000000 years');
SELECT hwm.alter_pipeline('ivp', delay => '178000000 years');
SELECT hwm.alter_pipeline('ivp', delay => '-178000000 years');
SELECT hwm.alter_pipeline('ivp', delay => '-1 microsecond');
SELECT hwm.create_pipeline('ivp2', 'src', 'tgt', '{id}', 'ts', delay => '178000000 years');
SELECT hwm.create_command_pipeline('ivc', 'src', 'ts', $$SELECT $1, $2$$, delay => '178000000 years');
SELECT delay FROM hwm.state WHERE pipeline = 'ivp';

-- time_interval of an interval pipeline
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '178000000 years', $$SELECT $1, $2$$);
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '1000000 years', $$SELECT $1, $2$$);
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '-178000000 years', $$SELECT $1, $2$$);
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '0', $$SELECT $1, $2$$);
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '1 microsecond', $$SELECT $1, $2$$);
SELECT hwm.create_interval_pipeline('ivi2', 'ev', 't', '1000 years', $$SELECT $1, $2$$);
\set VERBOSITY terse
SELECT hwm.create_interval_pipeline('ivi3', 'ev', 't', '1 hour', $$SELECT $1, $2$$, schedule => '178000000 years');
\set VERBOSITY default
SELECT hwm.create_interval_pipeline('ivi3', 'ev', 't', '1 hour', $$SELECT $1, $2$$, delay => '178000000 years');

-- swap's lock_timeout: 0 does not wait, at most what lock_timeout holds
-- (the swaps' runs are deleted below, for the files after this one)
SELECT coalesce(max(run_id), 0) AS before_swaps FROM hwm.runs \gset
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '0');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '2147483647 milliseconds');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '2147483648 milliseconds');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '178000000 years');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '-178000000 years');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '-1 millisecond');

-- what was accepted is stored as given
SELECT pipeline, schedule, timeout, delay, time_interval FROM hwm.state
 WHERE pipeline LIKE 'iv%' ORDER BY 1;
SELECT count(hwm.drop_pipeline(pipeline)) FROM hwm.state WHERE pipeline LIKE 'iv%';
DELETE FROM hwm.runs WHERE kind = 'swap' AND run_id > :before_swaps;
\set VERBOSITY terse
DROP SCHEMA iv CASCADE;
