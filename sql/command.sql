-- command: command pipelines (a SQL command over each settled range of the
-- watermark, $1 exclusive / $2 inclusive) and interval pipelines (a command
-- over each finished interval of a time column, $1 inclusive / $2
-- exclusive); their runs, catch-up, reruns, and every refusal at declare
-- time, each of which changes nothing.
\i test/setup.sql
CREATE SCHEMA cmd;
SET search_path = cmd, public;

CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY, t timestamptz NOT NULL,
                     kind text NOT NULL, d date);
CREATE TABLE by_kind (kind text PRIMARY KEY, n bigint NOT NULL);
CREATE TABLE hourly (hour timestamptz, kind text, n bigint NOT NULL, PRIMARY KEY (hour, kind));
INSERT INTO events (t, kind) VALUES
  ('2026-03-01 10:05+00', 'a'), ('2026-03-01 10:40+00', 'b'), ('2026-03-01 11:10+00', 'a'),
  ('2026-03-01 13:30+00', 'a'), ('2026-03-01 13:31+00', 'a');

-- a command pipeline: a rollup that adds each new range's counts
SELECT hwm.create_command_pipeline('rollup', 'events', 'id', $$
  INSERT INTO cmd.by_kind AS b (kind, n)
  SELECT e.kind, count(*) FROM cmd.events AS e
   WHERE ($1 IS NULL OR e.id > $1) AND e.id <= $2 GROUP BY e.kind
  ON CONFLICT (kind) DO UPDATE SET n = b.n + EXCLUDED.n$$);
SELECT command IS NOT NULL AS has_command, target, watermark_column, watermark
  FROM hwm.state WHERE pipeline = 'rollup';
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('rollup');
-- nothing new: the command does not run, nothing is counted twice
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('rollup');
INSERT INTO events (t, kind) VALUES ('2026-03-01 14:00+00', 'c'), ('2026-03-01 14:01+00', 'a');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('rollup');
SELECT b.kind, b.n, g.n AS source_n FROM by_kind AS b
  FULL JOIN (SELECT kind, count(*) AS n FROM events GROUP BY kind) AS g USING (kind) ORDER BY 1;

-- batch_size: a backlog in bounded ranges, each committed by catch_up
TRUNCATE by_kind;
SELECT hwm.create_command_pipeline('rollup_batched', 'events', 'id', $$
  INSERT INTO cmd.by_kind AS b (kind, n)
  SELECT e.kind, count(*) FROM cmd.events AS e
   WHERE ($1 IS NULL OR e.id > $1) AND e.id <= $2 GROUP BY e.kind
  ON CONFLICT (kind) DO UPDATE SET n = b.n + EXCLUDED.n$$, batch_size => 3);
CALL hwm.catch_up('rollup_batched');
SELECT watermark_before, watermark_after, rows_upserted FROM hwm.runs
 WHERE pipeline = 'rollup_batched' ORDER BY run_id;
SELECT kind, n FROM by_kind ORDER BY 1;

-- a failing command rolls its run back: the watermark stays
SELECT hwm.create_command_pipeline('fails', 'events', 'id',
  'SELECT 1 / (pg_catalog.count(*) - pg_catalog.count(*)) FROM cmd.events WHERE id > $1 AND id <= $2',
  initial_watermark => '5');
SELECT * FROM hwm.run('fails');
SELECT watermark FROM hwm.state WHERE pipeline = 'fails';

-- set_watermark works on a command pipeline too
SELECT hwm.set_watermark('fails', '7');
SELECT watermark FROM hwm.state WHERE pipeline = 'fails';

-- a command pipeline's runs cover exactly (old watermark, new watermark]:
-- consecutive ranges meet with no gap and no overlap, every row is counted
-- once, and it keeps no place to read from (reread_from, which copy
-- pipelines remember to read less, stays NULL)
CREATE TABLE ranges (lo timestamptz, hi timestamptz, n bigint);
SELECT hwm.create_command_pipeline('ranges', 'events', 't', $$
  INSERT INTO cmd.ranges SELECT $1, $2, count(*) FROM cmd.events AS e
   WHERE ($1 IS NULL OR e.t > $1) AND e.t <= $2$$, batch_size => 2);
SET client_min_messages = warning;
CALL hwm.catch_up('ranges');
RESET client_min_messages;
SELECT lo, hi, n FROM ranges ORDER BY hi;
SELECT sum(n) = (SELECT count(*) FROM events) AS every_row_once,
       bool_and(r.lo IS NOT DISTINCT FROM
                (SELECT max(p.hi) FROM ranges AS p WHERE p.hi < r.hi)) AS ranges_meet
  FROM ranges AS r;
SELECT pipeline, reread_from, reread_vxids FROM hwm.state
 WHERE pipeline IN ('rollup', 'rollup_batched', 'ranges') ORDER BY 1;

-- an interval pipeline: hourly counts of each finished hour
SELECT hwm.create_interval_pipeline('hourly', 'events', 't', '1 hour', $$
  INSERT INTO cmd.hourly (hour, kind, n)
  SELECT $1, e.kind, count(*) FROM cmd.events AS e
   WHERE e.t >= $1 AND e.t < $2 GROUP BY e.kind$$);
SELECT time_interval, interval_anchor, batched, skip_empty, watermark
  FROM hwm.state WHERE pipeline = 'hourly';
-- the first run does the oldest row's hour, each later run the next
-- finished hour (the empty 12:00 hour too: no skip_empty)
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('hourly');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('hourly');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('hourly');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('hourly');
SELECT from_partition, to_partition, rows_upserted FROM hwm.runs
 WHERE pipeline = 'hourly' ORDER BY run_id;
SELECT hour, kind, n FROM hourly ORDER BY 1, 2;

-- skip_empty and batched: one command over the whole backlog; the days
-- without rows are skipped, and a date column counts whole days
UPDATE events SET d = t::date + (id % 3)::int * 2;
CREATE TABLE daily (from_day date, to_day date, n bigint);
SELECT hwm.create_interval_pipeline('daily', 'events', 'd', '1 day', $$
  INSERT INTO cmd.daily SELECT $1, $2, count(*) FROM cmd.events AS e
   WHERE e.d >= $1 AND e.d < $2$$, batched => true, skip_empty => true);
-- (the backlog ends with the last finished day: the NOTICE names today)
SET client_min_messages = warning;
SELECT rows_upserted, watermark_before, watermark_after::date > '2026-03-06' AS past_the_rows
  FROM hwm.run('daily');
RESET client_min_messages;
SELECT from_day, n FROM daily;
SELECT hwm.create_interval_pipeline('daily_each', 'events', 'd', '1 day', $$
  INSERT INTO cmd.daily SELECT $1, $2, count(*) FROM cmd.events AS e
   WHERE e.d >= $1 AND e.d < $2$$, skip_empty => true);
TRUNCATE daily;
SET client_min_messages = warning;
CALL hwm.catch_up('daily_each');
RESET client_min_messages;
SELECT * FROM daily ORDER BY 1;
SELECT from_partition, to_partition, rows_upserted FROM hwm.runs
 WHERE pipeline = 'daily_each' AND from_partition IS NOT NULL ORDER BY run_id;

-- rerun a range of hours on purpose (a correction): one transaction each,
-- recorded in hwm.backfills; the watermark does not move
DELETE FROM hourly WHERE hour >= '2026-03-01 10:00+00' AND hour < '2026-03-01 12:00+00';
-- (its NOTICE names the rerun's id, which depends on the tests before this
-- one: hwm.backfills below shows the same counts)
SET client_min_messages = warning;
CALL hwm.rerun_intervals('hourly', '2026-03-01 10:00+00', '2026-03-01 12:00+00');
RESET client_min_messages;
SELECT hour, kind, n FROM hourly ORDER BY 1, 2;
SELECT from_partition, to_partition, done_through, status, partitions_done, rows_inserted
  FROM hwm.backfills WHERE pipeline = 'hourly';
SELECT watermark FROM hwm.state WHERE pipeline = 'hourly';

-- hwm.status tells the kinds apart
SELECT pipeline, kind FROM hwm.status
 WHERE pipeline IN ('rollup', 'hourly', 'daily') ORDER BY 1;

-- set_watermark on an interval pipeline: only the start of an interval
SELECT hwm.set_watermark('hourly', '2026-03-01 10:30+00');
SELECT hwm.set_watermark('hourly', '2026-03-01 14:00+00');
SELECT watermark FROM hwm.state WHERE pipeline = 'hourly';

-- refusals at declare time, each with nothing written
-- a name without its schema does not resolve under the pinned search_path
SELECT hwm.create_command_pipeline('bad', 'events', 'id',
  'INSERT INTO by_kind SELECT kind, count(*) FROM cmd.events WHERE id > $1 AND id <= $2 GROUP BY kind');
-- a third parameter
SELECT hwm.create_command_pipeline('bad', 'events', 'id',
  'DELETE FROM cmd.by_kind WHERE n > $3');
-- $1 used with the wrong type
SELECT hwm.create_command_pipeline('bad', 'events', 'id',
  'DELETE FROM cmd.by_kind WHERE kind = $1');
-- two statements, none, a transaction statement, a syntax error
SELECT hwm.create_command_pipeline('bad', 'events', 'id',
  'DELETE FROM cmd.by_kind WHERE n > $1; DELETE FROM cmd.by_kind WHERE n < $2');
SELECT hwm.create_command_pipeline('bad', 'events', 'id', ' ; ');
SELECT hwm.create_command_pipeline('bad', 'events', 'id', 'COMMIT');
SELECT hwm.create_command_pipeline('bad', 'events', 'id', 'DELETE FROM cmd.by_kind WHER n > $1');
SELECT hwm.create_command_pipeline('bad', 'events', 'id', NULL);
SELECT hwm.create_command_pipeline('bad', 'events', 'nope', 'SELECT $1, $2');
-- a table the owner may not use
CREATE ROLE cmd_owner;
GRANT USAGE ON SCHEMA cmd TO cmd_owner;
GRANT SELECT ON events TO cmd_owner;
SET ROLE cmd_owner;
SELECT hwm.create_command_pipeline('bad', 'events', 'id',
  'DELETE FROM cmd.by_kind WHERE n > $1 AND n <= $2');
RESET ROLE;
-- interval pipelines: a column that is not a time, a bad interval, a start
-- off the grid, a date column cut into hours
SELECT hwm.create_interval_pipeline('bad', 'events', 'kind', '1 hour', 'SELECT $1, $2');
SELECT hwm.create_interval_pipeline('bad', 'events', 't', '-1 hour', 'SELECT $1, $2');
SELECT hwm.create_interval_pipeline('bad', 'events', 't', '0', 'SELECT $1, $2');
SELECT hwm.create_interval_pipeline('bad', 'events', 't', '1 hour', 'SELECT $1, $2',
                                    start_at => '2026-03-01 10:30+00');
SELECT hwm.create_interval_pipeline('bad', 'events', 'd', '6 hours', 'SELECT $1, $2');
SELECT hwm.create_interval_pipeline('bad', 'events', 't', '1 hour', 'SELECT $1, $2',
                                    anchor => 'noon');
SELECT count(*) AS bad_pipelines FROM hwm.state WHERE pipeline = 'bad';
-- reruns: off the grid, reversed, past the watermark, not an interval pipeline
CALL hwm.rerun_intervals('hourly', '2026-03-01 10:30+00', '2026-03-01 12:00+00');
CALL hwm.rerun_intervals('hourly', '2026-03-01 12:00+00', '2026-03-01 10:00+00');
CALL hwm.rerun_intervals('hourly', '2026-03-01 10:00+00', '2099-01-01 00:00+00');
CALL hwm.rerun_intervals('rollup', '1', '2');
-- the copy-only functions refuse command and interval pipelines
SELECT * FROM hwm.overwrite('rollup', '1', '2');
CALL hwm.backfill('hourly', '2026-03-01', '2026-03-02');
SELECT * FROM hwm.backfill_plan('rollup', '1', '2');

-- an interval pipeline whose time column's type was changed since it was
-- declared: every use of its grid refuses it (each read a text value as a
-- time: the rerun crashed the server); the watermark stays, the failed run
-- is recorded
CREATE TABLE retyped (t timestamptz NOT NULL);
INSERT INTO retyped VALUES ('2026-03-01 10:05+00');
SELECT hwm.create_interval_pipeline('retyped', 'retyped', 't', '1 hour', $$SELECT $1, $2$$);
SELECT hwm.set_watermark('retyped', '2026-03-01 12:00+00');
ALTER TABLE retyped ALTER COLUMN t TYPE text;
SELECT rows_upserted FROM hwm.run('retyped');
CALL hwm.rerun_intervals('retyped', '2026-03-01 10:00+00', '2026-03-01 11:00+00');
SELECT hwm.set_watermark('retyped', '2026-03-01 11:00+00');
SELECT watermark, (SELECT count(*) FROM hwm.runs WHERE pipeline = 'retyped') AS runs,
       (SELECT count(*) FROM hwm.backfills WHERE pipeline = 'retyped') AS reruns
  FROM hwm.state WHERE pipeline = 'retyped';
SELECT hwm.drop_pipeline('retyped');

SELECT hwm.drop_pipeline(pipeline) FROM hwm.state WHERE pipeline IN
  ('rollup', 'rollup_batched', 'fails', 'ranges', 'hourly', 'daily', 'daily_each');
DROP SCHEMA cmd CASCADE;
DROP ROLE cmd_owner;
