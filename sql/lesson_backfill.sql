-- lesson_backfill: lesson 2's March backfill.  warehouse events for
-- event_date BETWEEN 2026-03-01 AND 2026-03-31 are reprocessed from the raw
-- source in one transaction: corrupted March rows are fixed, March rows the
-- source no longer has are removed, missing ones appear, February and April
-- stay as they were, and a retry produces the same result.
\i test/setup.sql
CREATE SCHEMA lesson2;
SET search_path = lesson2, public;
SET datestyle = ISO;

CREATE TABLE raw_events (event_id bigint, event_date date, user_id int, value numeric);
INSERT INTO raw_events
SELECT g, DATE '2026-02-20' + (g % 50), g % 7, g * 1.5
  FROM generate_series(1, 500) g;
CREATE TABLE events (event_id bigint PRIMARY KEY, event_date date NOT NULL, user_id int, value numeric);
INSERT INTO events SELECT * FROM raw_events;
-- a bug corrupted March, and the loader lost a few rows and kept ghosts
UPDATE events SET value = -1 WHERE event_date BETWEEN '2026-03-01' AND '2026-03-31' AND event_id % 3 = 0;
DELETE FROM events WHERE event_date BETWEEN '2026-03-01' AND '2026-03-31' AND event_id % 11 = 0;
INSERT INTO events VALUES (9001, '2026-03-15', 1, 0), (9002, '2026-03-31', 1, 0);
-- and February and April hold rows the source lacks: they must stay
INSERT INTO events VALUES (9100, '2026-02-27', 1, 0), (9101, '2026-04-01', 1, 0);

SELECT count(*) FILTER (WHERE value = -1) AS corrupted,
       count(*) FILTER (WHERE event_id > 9000) AS ghosts
  FROM events;

SELECT hwm.create_pipeline('events', 'raw_events', 'events', '{event_id}', 'event_id', 'event_date');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('events', '2026-03-01', '2026-03-31');

-- March now equals the source's March, nothing else moved
SELECT count(*) AS march_differences FROM (
  (SELECT * FROM events WHERE event_date BETWEEN '2026-03-01' AND '2026-03-31'
   EXCEPT SELECT * FROM raw_events WHERE event_date BETWEEN '2026-03-01' AND '2026-03-31')
  UNION ALL
  (SELECT * FROM raw_events WHERE event_date BETWEEN '2026-03-01' AND '2026-03-31'
   EXCEPT SELECT * FROM events WHERE event_date BETWEEN '2026-03-01' AND '2026-03-31')) d;
SELECT event_id, event_date FROM events WHERE event_id > 9000 ORDER BY 1;
SELECT test_fingerprint('events') AS once \gset

-- the retry (a backfill that failed and is run again) changes nothing
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('events', '2026-03-01', '2026-03-31');
SELECT test_fingerprint('events') = :'once' AS same_rows_after_retry;

-- an overwrite rolled back with its transaction leaves the old rows
UPDATE raw_events SET value = 0 WHERE event_date = '2026-03-10';
BEGIN;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('events', '2026-03-10', '2026-03-10');
ROLLBACK;
SELECT test_fingerprint('events') = :'once' AS unchanged_after_rollback;

SELECT hwm.drop_pipeline('events');
RESET search_path;
RESET datestyle;
DROP SCHEMA lesson2 CASCADE;
