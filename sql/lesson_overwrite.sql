-- lesson_overwrite: lesson 1 "Make it stick".  A target pre-seeded with
-- stale values for load_date 2026-03-05 is corrected by a partition overwrite
-- from source; running it again leaves the target unchanged, down to the row
-- versions (the rerun rewrites nothing).  Shown with overwrite_partition (no
-- pipeline) and with a pipeline's overwrite.
\i test/setup.sql
CREATE SCHEMA lesson1b;
SET search_path = lesson1b, public;
SET datestyle = ISO;

CREATE TABLE source (id INTEGER, load_date DATE, amount INTEGER);
INSERT INTO source VALUES
  (10, '2026-03-04', 40),
  (11, '2026-03-05', 110),
  (12, '2026-03-05', 120),
  (13, '2026-03-05', 130);
CREATE TABLE target (id INTEGER PRIMARY KEY, load_date DATE, amount INTEGER);
INSERT INTO target VALUES
  (10, '2026-03-04', 40),
  (11, '2026-03-05', 999),    -- stale amount
  (12, '2026-03-05', 120),    -- already right
  (14, '2026-03-05', 140);    -- gone from source

SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('target', 'source', 'load_date', '2026-03-05', '2026-03-05');
SELECT * FROM target ORDER BY id;
SELECT test_fingerprint('target') AS once \gset
CREATE TEMP TABLE versions AS SELECT id, ctid AS row_ctid, xmin::text AS row_xmin FROM target;

-- a retry: same rows, and not one row version written
SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('target', 'source', 'load_date', '2026-03-05', '2026-03-05');
SELECT test_fingerprint('target') = :'once' AS same_rows;
SELECT count(*) AS rows_rewritten
  FROM target t JOIN versions v USING (id)
 WHERE (t.ctid, t.xmin::text) IS DISTINCT FROM (v.row_ctid, v.row_xmin);

-- the same through a pipeline, after the target went stale again
UPDATE target SET amount = 0 WHERE load_date = '2026-03-05';
INSERT INTO target VALUES (15, '2026-03-05', 150);
SELECT hwm.create_pipeline('lesson1b', 'source', 'target', '{id}', 'id', 'load_date');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('lesson1b', '2026-03-05', '2026-03-05');
SELECT test_fingerprint('target') = :'once' AS same_rows_as_before;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('lesson1b', '2026-03-05', '2026-03-05');
SELECT test_fingerprint('target') = :'once' AS same_rows_after_retry;

-- a naive append (what the lesson warns against) violates the key on a retry
INSERT INTO target SELECT * FROM source WHERE load_date = '2026-03-05';
SELECT count(*) AS rows_in_partition FROM target WHERE load_date = '2026-03-05';

-- the overwrite did not touch the other partition
SELECT * FROM target WHERE load_date <> '2026-03-05' ORDER BY id;

SELECT hwm.drop_pipeline('lesson1b');
RESET search_path;
RESET datestyle;
DROP SCHEMA lesson1b CASCADE;
