-- lesson_load: lesson 1 "Your turn", reproduced through hwm.
-- source(id, load_date, updated_at TEXT, amount), target keyed on id, stored
-- watermark '2026-03-02 10:00'.  Strict > loads only id 3; id 4 arrived late
-- (below the watermark) and is caught by overwriting load_date 2026-03-02.
-- Running the whole script twice leaves the same rows.
\i test/setup.sql
CREATE SCHEMA lesson1;
SET search_path = lesson1, public;
SET datestyle = ISO;

CREATE TABLE source (id INTEGER, load_date DATE, updated_at TEXT, amount INTEGER);
INSERT INTO source VALUES
  (2, '2026-03-02', '2026-03-02 10:00', 200),
  (3, '2026-03-03', '2026-03-03 10:00', 300),
  (4, '2026-03-02', '2026-03-02 09:00', 250);
CREATE TABLE target (id INTEGER PRIMARY KEY, load_date DATE, updated_at TEXT, amount INTEGER);
-- id 2 was loaded by the run that set the watermark to 2026-03-02 10:00
INSERT INTO target VALUES (2, '2026-03-02', '2026-03-02 10:00', 200);

SELECT hwm.create_pipeline('lesson1', 'source', 'target',
                           unique_key => '{id}',
                           watermark_column => 'updated_at',
                           partition_column => 'load_date',
                           initial_watermark => '2026-03-02 10:00');

-- the lesson's worked example: what strict > decides
SELECT id, updated_at, amount,
  CASE WHEN updated_at > (SELECT watermark FROM hwm.state WHERE pipeline = 'lesson1')
       THEN 'loaded (newer than watermark)'
       ELSE 'skipped (needs backfill lookback)' END AS incremental_decision
FROM source
ORDER BY updated_at;

-- incremental load: only id 3, watermark to 2026-03-03 10:00
SELECT rows_upserted, partitions_overwritten, rows_deleted, rows_inserted,
       watermark_before, watermark_after
  FROM hwm.run('lesson1');
SELECT * FROM target ORDER BY id;
SELECT watermark FROM hwm.state WHERE pipeline = 'lesson1';

-- partition overwrite of 2026-03-02 catches the late id 4
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('lesson1', '2026-03-02', '2026-03-02');
SELECT * FROM target ORDER BY id;
SELECT test_fingerprint('target') AS once \gset

-- the same script again: nothing new, nothing changes
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('lesson1');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('lesson1', '2026-03-02', '2026-03-02');
SELECT test_fingerprint('target') = :'once' AS same_rows_after_second_run;

-- the history tells what happened
SELECT kind, status, rows_upserted, rows_deleted, rows_inserted,
       watermark_before, watermark_after, from_partition, to_partition
  FROM hwm.runs WHERE pipeline = 'lesson1' ORDER BY run_id;

SELECT hwm.drop_pipeline('lesson1');
RESET search_path;
RESET datestyle;
DROP SCHEMA lesson1 CASCADE;
