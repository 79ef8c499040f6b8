-- demo/walkthrough.sql: a guided tour of hwm, run by scripts/demo.sh.
--
-- It needs a fresh database in a cluster with shared_preload_libraries = 'hwm'.
-- psql runs it with ON_ERROR_STOP, so the first failing statement ends the
-- demo with a non-zero exit.  Run by hand with:
--     psql -X -v ON_ERROR_STOP=1 -e -f demo/walkthrough.sql

SET timezone = 'UTC';

\echo
\echo '=== 1. Install the extension: its functions live in schema hwm'
CREATE EXTENSION hwm;

\echo '===    A pipeline runs with the rights of the role that created it, so hwm'
\echo '===    refuses pipelines owned by superusers: the rest runs as an ordinary role'
CREATE ROLE demo_loader;
GRANT CREATE ON SCHEMA public TO demo_loader;
SET ROLE demo_loader;

\echo
\echo '=== 2. A source table (rows arrive here) and a target table (hwm loads it)'
CREATE TABLE source (id int, load_date date, updated_at timestamptz, amount int);
CREATE TABLE target (id int PRIMARY KEY, load_date date, updated_at timestamptz, amount int);

INSERT INTO source VALUES
    (1, '2026-03-01', '2026-03-01 09:00', 100),
    (2, '2026-03-01', '2026-03-01 10:00', 200),
    (3, '2026-03-02', '2026-03-02 09:00', 300),
    (4, '2026-03-03', '2026-03-03 09:00', 400);

\echo
\echo '=== 3. A pipeline: rows are matched on id, the high-water mark is updated_at,'
\echo '===    and load_date is the partition that overwrite() replaces'
SELECT hwm.create_pipeline('orders', 'source', 'target',
                           unique_key => '{id}',
                           watermark_column => 'updated_at',
                           partition_column => 'load_date',
                           lookback => 0);

\echo
\echo '=== 4. First run: no watermark yet, so every source row is loaded'
SELECT * FROM hwm.run('orders');
SELECT * FROM target ORDER BY id;

\echo
\echo '=== 5. One new row and one updated row (both with a later updated_at)'
INSERT INTO source VALUES (5, '2026-03-03', '2026-03-03 12:00', 500);
UPDATE source SET amount = 250, updated_at = '2026-03-03 11:00' WHERE id = 2;

\echo '===    The next run loads only those two rows (rows_upserted = 2)'
SELECT * FROM hwm.run('orders');
SELECT * FROM target ORDER BY id;

\echo '===    Nothing changed since, so another run loads nothing (rows_upserted = 0)'
SELECT * FROM hwm.run('orders');

\echo
\echo '=== 6. A late row: load_date 2026-03-02, updated_at BELOW the watermark'
INSERT INTO source VALUES (6, '2026-03-02', '2026-03-02 18:00', 600);

\echo '===    run() only takes updated_at > watermark, so it misses the late row'
SELECT * FROM hwm.run('orders');
SELECT count(*) AS target_rows_with_id_6 FROM target WHERE id = 6;

\echo '===    overwrite() replaces the 2026-03-02 partition of target with the'
\echo '===    source rows of that day, which catches the late row'
SELECT * FROM hwm.overwrite('orders', '2026-03-02', '2026-03-02');
SELECT * FROM target WHERE load_date = '2026-03-02' ORDER BY id;

\echo '===    overwrite() is idempotent: running it again leaves target as it was'
CREATE TEMP TABLE target_before AS SELECT * FROM target;
SELECT * FROM hwm.overwrite('orders', '2026-03-02', '2026-03-02');
SELECT count(*) AS rows_that_differ
FROM ((TABLE target EXCEPT TABLE target_before)
      UNION ALL
      (TABLE target_before EXCEPT TABLE target)) AS diff;

\echo
\echo '=== 7. A backfill of a whole range of partitions: March 2026'
SELECT * FROM hwm.overwrite('orders', '2026-03-01', '2026-03-31');

-- TODO(hwm.backfill, hwm.swap): add these steps once the procedures exist:
--   CALL hwm.backfill(...);          -- range backfill in batches
--   CALL hwm.swap(target, staging);  -- atomic swap of a rebuilt staging table

\echo
\echo '=== 8. Where things stand'
SELECT * FROM target ORDER BY id;
SELECT pipeline, watermark, last_status FROM hwm.status;
SELECT run_id, kind, status, rows_upserted, rows_deleted, rows_inserted,
       watermark_before, watermark_after
FROM hwm.runs
ORDER BY run_id;
