-- intervals_infinite: the infinite intervals of PostgreSQL 17 and later
-- ('infinity', '-infinity') given to every interval argument (issue 37):
-- each is refused with a clear error, none stored.  Before 17 an interval
-- is always finite: the file stops here (intervals_infinite_1.out).
\i test/setup.sql
SELECT current_setting('server_version_num')::int < 170000 AS finite_only \gset
\if :finite_only
\quit
\endif
CREATE SCHEMA ivi;
SET search_path = ivi, public;
CREATE TABLE src (id int, ts timestamptz, v text);
CREATE TABLE tgt (id int PRIMARY KEY, ts timestamptz, v text);
CREATE TABLE ev (t timestamptz);
CREATE TABLE swap_tgt (id int PRIMARY KEY, v text);
CREATE TABLE swap_stg (id int PRIMARY KEY, v text);
SELECT hwm.create_pipeline('ivp', 'src', 'tgt', '{id}', 'ts');

SELECT hwm.set_timeout('ivp', 'infinity');
SELECT hwm.set_timeout('ivp', '-infinity');
SELECT hwm.set_target_lag('ivp', 'infinity');
SELECT hwm.set_target_lag('ivp', '-infinity');
SELECT hwm.schedule('ivp', 'infinity', '2026-01-01 00:00+00');
SELECT hwm.schedule('ivp', '-infinity');
SELECT hwm.schedule_reconcile('ivp', 'infinity');
SELECT hwm.schedule_reconcile('ivp', '-infinity');
SELECT hwm.alter_pipeline('ivp', delay => 'infinity');
SELECT hwm.alter_pipeline('ivp', delay => '-infinity');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => 'infinity');
CALL hwm.swap('swap_tgt', 'swap_stg', lock_timeout => '-infinity');
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', 'infinity', $$SELECT $1, $2$$);
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '-infinity', $$SELECT $1, $2$$);
-- (the detail names now(): only the message of each)
\set VERBOSITY terse
SELECT hwm.create_pipeline('ivp2', 'src', 'tgt', '{id}', 'ts', schedule => 'infinity');
SELECT hwm.create_pipeline('ivp2', 'src', 'tgt', '{id}', 'ts', delay => 'infinity');
SELECT hwm.create_command_pipeline('ivc', 'src', 'ts', $$SELECT $1, $2$$, schedule => 'infinity');
SELECT hwm.create_command_pipeline('ivc', 'src', 'ts', $$SELECT $1, $2$$, delay => 'infinity');
SELECT hwm.alter_pipeline('ivp', schedule => 'infinity');
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '1 hour', $$SELECT $1, $2$$, schedule => 'infinity');
SELECT hwm.create_interval_pipeline('ivi', 'ev', 't', '1 hour', $$SELECT $1, $2$$, delay => 'infinity');
\set VERBOSITY default

-- nothing stored
SELECT pipeline, schedule, timeout, delay, reconcile_schedule, target_lag FROM hwm.state WHERE pipeline LIKE 'iv%';
SELECT count(hwm.drop_pipeline(pipeline)) FROM hwm.state WHERE pipeline LIKE 'iv%';
\set VERBOSITY terse
DROP SCHEMA ivi CASCADE;
