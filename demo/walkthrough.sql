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
\echo '=== 7. A backfill of a whole range of partitions: March 2026.'
\echo '===    A bug corrupted two days of target; first, what a backfill would touch:'
UPDATE target SET amount = -1 WHERE load_date IN ('2026-03-01', '2026-03-03');
SELECT * FROM hwm.backfill_plan('orders', '2026-03-01', '2026-03-31');
\echo '===    The backfill commits one partition at a time (resumable if stopped)'
CALL hwm.backfill('orders', '2026-03-01', '2026-03-31');
SELECT status, done_through, partitions_done, rows_deleted, rows_inserted
FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;
SELECT count(*) AS corrupted_rows_left FROM target WHERE amount = -1;

\echo
\echo '=== 8. History correction by staging and swap: build a corrected copy,'
\echo '===    validate it, swap it in atomically (the target keeps its identity)'
CREATE VIEW big_orders AS SELECT id, amount FROM target WHERE amount >= 300;
SELECT 'target'::regclass::oid AS target_oid \gset
SELECT hwm.create_staging('target');
INSERT INTO target_hwm_staging SELECT id, load_date, updated_at, amount * 10 FROM target;
CALL hwm.swap('target', 'target_hwm_staging', min_ratio => 0.9);
SELECT 'target'::regclass::oid = :target_oid AS same_table, * FROM big_orders ORDER BY id;
\echo '===    The previous contents are kept in the staging table, ready to swap back'
SELECT count(*) AS previous_rows_kept FROM target_hwm_staging;

\echo
\echo '=== 9. Where things stand'
SELECT * FROM target ORDER BY id;
SELECT pipeline, watermark, last_status FROM hwm.status;
SELECT run_id, kind, status, rows_upserted, rows_deleted, rows_inserted,
       watermark_before, watermark_after
FROM hwm.runs
ORDER BY run_id;
