-- typed_bounds: partition bounds and watermarks may be passed in the
-- column's own type (issue 22): hwm.overwrite('p', current_date - 5,
-- current_date) works as hwm.overwrite('p', '2026-...', '2026-...') does;
-- quoted literals still call the text versions; a value of another type is
-- the clear error its text form gives, and changes nothing.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
CREATE SCHEMA tb;
CREATE TABLE tb.src (id int PRIMARY KEY, day date NOT NULL, ts timestamptz NOT NULL, v text);
INSERT INTO tb.src SELECT g, DATE '2026-03-01' + g % 3, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', 'v' || g
  FROM generate_series(1, 9) g;
CREATE TABLE tb.tgt (LIKE tb.src INCLUDING ALL);
SELECT hwm.create_pipeline('tb', 'tb.src', 'tb.tgt', '{id}', 'ts', partition_column => 'day');
-- a date range, as dates
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('tb', DATE '2026-03-02', DATE '2026-03-03');
SELECT day, count(*) FROM tb.tgt GROUP BY day ORDER BY day;
-- the same with quoted literals (the text version)
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('tb', '2026-03-01', '2026-03-01');
SELECT * FROM hwm.backfill_plan('tb', DATE '2026-03-01', DATE '2026-03-03');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('tb.tgt', 'tb.src', 'day', DATE '2026-03-01', DATE '2026-03-03');
-- a timestamptz watermark, as a timestamptz; NULL still resets it
SELECT hwm.set_watermark('tb', TIMESTAMPTZ '2026-03-01 05:00+00');
SELECT watermark FROM hwm.state WHERE pipeline = 'tb';
-- bounds of another type: the error their text gives, nothing changed
SELECT * FROM hwm.overwrite('tb', 5, 7);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_watermark('tb', point(1, 2));
\echo :LAST_ERROR_SQLSTATE
SELECT watermark FROM hwm.state WHERE pipeline = 'tb';
SELECT hwm.set_watermark('tb', NULL);
SELECT watermark IS NULL AS reset FROM hwm.state WHERE pipeline = 'tb';
SELECT hwm.drop_pipeline('tb');
DROP SCHEMA tb CASCADE;
