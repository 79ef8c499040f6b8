-- alter_pipeline: a pipeline's settings changed in place (issue 29), checked
-- as create_pipeline checks them, with its watermark, load memory, history
-- and schedule kept: a new source (a view rebuilt over a rebuilt table), a
-- lookback, delay, batch_size or schedule, reset => '{...}' to clear one.
-- Every bad call is an error that changes nothing.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
CREATE SCHEMA ap;
CREATE TABLE ap.src (id int PRIMARY KEY, day date NOT NULL, ts timestamptz NOT NULL, v text);
INSERT INTO ap.src SELECT g, DATE '2026-03-01' + g % 3, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', 'v' || g
  FROM generate_series(1, 9) g;
CREATE VIEW ap.v1 AS SELECT id, day, ts, v FROM ap.src;
CREATE TABLE ap.tgt (LIKE ap.src INCLUDING ALL);
SELECT hwm.create_pipeline('ap', 'ap.v1', 'ap.tgt', '{id}', 'ts');
SELECT rows_upserted, watermark_after FROM hwm.run('ap');
CREATE VIEW ap.state AS
  SELECT source, target, unique_key, partition_column, lookback, delay, batch_size, schedule,
         next_run_at IS NOT NULL AS next_run_set, watermark, watermark_type
    FROM hwm.state WHERE pipeline = 'ap';
-- a new source, with the watermark and history kept; the old view may then go
CREATE VIEW ap.v2 AS SELECT id, day, ts, upper(v) AS v FROM ap.src;
SELECT hwm.alter_pipeline('ap', source => 'ap.v2');
DROP VIEW ap.v1;
SELECT * FROM ap.state;
INSERT INTO ap.src VALUES (10, '2026-03-02', '2026-03-01 10:00+00', 'v10');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('ap');
SELECT id, v FROM ap.tgt WHERE id >= 9 ORDER BY id;
SELECT count(*) AS runs FROM hwm.runs WHERE pipeline = 'ap' AND kind = 'load';
-- partition column and lookback, delay, batch_size and schedule, then reset
SELECT hwm.alter_pipeline('ap', partition_column => 'day', lookback => 1, delay => '1 minute',
                          batch_size => 100, schedule => '1 hour');
SELECT * FROM ap.state;
-- a setting not given is kept: the schedule and its next run too
CREATE TABLE ap.next AS SELECT next_run_at FROM hwm.state WHERE pipeline = 'ap';
SELECT hwm.alter_pipeline('ap', batch_size => 50);
SELECT s.schedule, s.batch_size, s.next_run_at = n.next_run_at AS same_next_run
  FROM hwm.state s, ap.next n WHERE s.pipeline = 'ap';
SELECT hwm.alter_pipeline('ap', reset => '{lookback,partition_column,delay,batch_size,schedule}');
SELECT * FROM ap.state;
-- the old key replaced by another the target has a unique index on
CREATE UNIQUE INDEX ON ap.tgt (ts);
SELECT hwm.alter_pipeline('ap', unique_key => '{ts}');
SELECT unique_key FROM ap.state;
SELECT hwm.alter_pipeline('ap', unique_key => '{id}');

-- failures: each an error, and nothing changed
CREATE TABLE ap.before AS SELECT * FROM ap.state;
SELECT hwm.alter_pipeline('nope', lookback => 1);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline(NULL, lookback => 1);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', lookback => 1);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', lookback => -1, partition_column => 'day');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', partition_column => 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', delay => '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', batch_size => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', schedule => '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', reset => '{watermark}');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', reset => '{delay}', delay => '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', command => 'SELECT 1');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap', unique_key => '{v}');
\echo :LAST_ERROR_SQLSTATE
-- a source without the watermark column, or with it of another type
CREATE VIEW ap.no_ts AS SELECT id, day, v FROM ap.src;
SELECT hwm.alter_pipeline('ap', source => 'ap.no_ts');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW ap.ts_text AS SELECT id, day, ts::timestamp AS ts, v FROM ap.src;
SELECT hwm.alter_pipeline('ap', source => 'ap.ts_text');
\echo :LAST_ERROR_SQLSTATE
-- a temporary source, which no other session can read
CREATE TEMP VIEW tmp_src AS SELECT * FROM ap.src;
SELECT hwm.alter_pipeline('ap', source => 'tmp_src');
\echo :LAST_ERROR_SQLSTATE
-- another role may not alter the pipeline
CREATE ROLE ap_other;
SET ROLE ap_other;
SELECT hwm.alter_pipeline('ap', lookback => 0);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT (SELECT count(*) FROM (TABLE ap.before EXCEPT TABLE ap.state) d) AS changed;

-- a command pipeline: command and schedule change, target does not apply
CREATE TABLE ap.log (n bigint);
SELECT hwm.create_command_pipeline('ap_cmd', 'ap.src', 'ts',
  'INSERT INTO ap.log SELECT count(*) FROM ap.src WHERE ts > $1 AND ts <= $2');
SELECT hwm.alter_pipeline('ap_cmd', command => 'INSERT INTO ap.log VALUES (-1)');
SELECT rows_upserted FROM hwm.run('ap_cmd');
SELECT n FROM ap.log;
SELECT hwm.alter_pipeline('ap_cmd', target => 'ap.tgt');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('ap_cmd', batched => true);
\echo :LAST_ERROR_SQLSTATE
SELECT command FROM hwm.state WHERE pipeline = 'ap_cmd';

SELECT hwm.drop_pipeline('ap');
SELECT hwm.drop_pipeline('ap_cmd');
DROP ROLE ap_other;
DROP SCHEMA ap CASCADE;
