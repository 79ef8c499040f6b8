-- load: hwm.run, the incremental run.  The first run loads everything; a run
-- upserts only rows newer than the watermark, skips rows whose values did not
-- change (no new row versions), never moves the watermark backwards, catches
-- late rows with lookback, moves a key between partitions without failing,
-- and commits or rolls back with the caller's transaction.
\i test/setup.sql
CREATE SCHEMA load;
SET search_path = load, public;
SET datestyle = ISO;

CREATE TABLE orders_src (
    id int, day date, updated_at timestamptz, amount numeric, note text, attrs json);
CREATE TABLE orders (
    id int PRIMARY KEY, day date, updated_at timestamptz, amount numeric, note text, attrs json,
    loaded_at timestamptz NOT NULL DEFAULT now());   -- not in the source: takes its default
INSERT INTO orders_src
SELECT g, DATE '2026-03-01' + (g % 5), TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour',
       g * 10, 'n' || g, json_build_object('g', g)
  FROM generate_series(1, 20) g;

SELECT hwm.create_pipeline('orders', 'orders_src', 'orders', '{id}', 'updated_at', 'day');

-- the first run has no watermark and loads everything
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('orders');
SELECT count(*), bool_and(loaded_at IS NOT NULL) AS defaults_filled FROM orders;
SELECT count(*) AS differences FROM (
  SELECT id, day, updated_at, amount, note, attrs::text FROM orders_src
  EXCEPT SELECT id, day, updated_at, amount, note, attrs::text FROM orders) d;

-- nothing new: nothing loaded, no row version written, watermark unchanged
CREATE TEMP TABLE versions AS SELECT id, ctid AS row_ctid, xmin::text AS row_xmin FROM orders;
SELECT rows_upserted, watermark_before = watermark_after AS same_watermark FROM hwm.run('orders');
SELECT count(*) AS rows_rewritten FROM orders o JOIN versions v USING (id)
 WHERE (o.ctid, o.xmin::text) IS DISTINCT FROM (v.row_ctid, v.row_xmin);

-- one update and one insert after the watermark: exactly two rows upserted
UPDATE orders_src SET amount = 1000, updated_at = '2026-03-02 00:00+00' WHERE id = 3;
INSERT INTO orders_src VALUES (21, '2026-03-05', '2026-03-02 01:00+00', 210, 'n21', '{"g": 21}');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('orders');
SELECT id, amount FROM orders WHERE id IN (3, 21) ORDER BY id;

-- a newer timestamp with the same values: the row is not rewritten ...
UPDATE orders_src SET updated_at = '2026-03-02 02:00+00' WHERE id = 5;
UPDATE orders SET updated_at = '2026-03-02 02:00+00' WHERE id = 5;
TRUNCATE versions;
INSERT INTO versions SELECT id, ctid, xmin::text FROM orders;
SELECT rows_upserted FROM hwm.run('orders');
SELECT count(*) AS rows_rewritten FROM orders o JOIN versions v USING (id)
 WHERE (o.ctid, o.xmin::text) IS DISTINCT FROM (v.row_ctid, v.row_xmin);

-- ... and the watermark never moves backwards, even when the newest source
-- rows disappear
DELETE FROM orders_src WHERE updated_at >= '2026-03-02 00:00+00';
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('orders');

-- rows whose watermark column is NULL are not picked up by the incremental
-- path (only an overwrite of their partition loads them)
INSERT INTO orders_src VALUES (22, '2026-03-05', NULL, 220, 'n22', NULL);
SELECT rows_upserted FROM hwm.run('orders');
SELECT count(*) AS loaded_22 FROM orders WHERE id = 22;

-- atomic: a run rolled back with its transaction leaves target, watermark
-- and history as they were
INSERT INTO orders_src VALUES (23, '2026-03-05', '2026-03-03 00:00+00', 230, 'n23', NULL);
SELECT count(*) AS runs_before FROM hwm.runs WHERE pipeline = 'orders' \gset
BEGIN;
SELECT rows_upserted, watermark_after FROM hwm.run('orders');
ROLLBACK;
SELECT watermark FROM hwm.state WHERE pipeline = 'orders';
SELECT count(*) AS loaded_23 FROM orders WHERE id = 23;
SELECT count(*) = :runs_before AS history_unchanged FROM hwm.runs WHERE pipeline = 'orders';
-- and committed with it
BEGIN;
SELECT rows_upserted, watermark_after FROM hwm.run('orders');
COMMIT;
SELECT count(*) AS loaded_23 FROM orders WHERE id = 23;

-- lookback: every run overwrites the 2 newest partitions (2026-03-05 and
-- 2026-03-04), so a late row there is caught; one in an older partition is
-- not, until that partition is overwritten
SELECT hwm.drop_pipeline('orders');
SELECT hwm.create_pipeline('orders', 'orders_src', 'orders', '{id}', 'updated_at', 'day',
                           lookback => 2, initial_watermark => '2026-03-03 00:00+00');
INSERT INTO orders_src VALUES
  (30, '2026-03-04', '2026-03-01 00:00+00', 300, 'late, recent partition', NULL),
  (31, '2026-03-02', '2026-03-01 00:00+00', 310, 'late, old partition', NULL);
SELECT rows_upserted, partitions_overwritten, rows_deleted, rows_inserted FROM hwm.run('orders');
SELECT id, note FROM orders WHERE id IN (22, 30, 31) ORDER BY id;
SELECT from_partition, to_partition, partitions_overwritten FROM hwm.runs
 WHERE pipeline = 'orders' ORDER BY run_id DESC LIMIT 1;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('orders', '2026-03-02', '2026-03-02');
SELECT id, note FROM orders WHERE id = 31;
-- lookback removes rows that the newest partitions no longer have
DELETE FROM orders_src WHERE id = 30;
SELECT rows_deleted, rows_inserted FROM hwm.run('orders');
SELECT count(*) AS still_there_30 FROM orders WHERE id = 30;

-- a key that moved to another partition is moved, not refused by the
-- primary key
UPDATE orders_src SET day = '2026-03-05' WHERE id = 1;
SELECT day FROM orders WHERE id = 1;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('orders', '2026-03-05', '2026-03-05');
SELECT day FROM orders WHERE id = 1;

-- the slice may not hold one key twice: the upsert says so, nothing changes
INSERT INTO orders_src VALUES (40, '2026-03-05', '2026-03-04 00:00+00', 1, 'a', NULL),
                              (40, '2026-03-05', '2026-03-04 00:01+00', 2, 'b', NULL);
SELECT test_fingerprint('orders') AS before \gset
\set SHOW_CONTEXT never
SELECT * FROM hwm.run('orders');
\set SHOW_CONTEXT errors
SELECT test_fingerprint('orders') = :'before' AS unchanged;
DELETE FROM orders_src WHERE id = 40;

-- composite keys and identity columns
CREATE TABLE lines_src (order_id int, line int, qty int, changed bigint);
CREATE TABLE lines (id bigint GENERATED ALWAYS AS IDENTITY, order_id int, line int, qty int,
                    PRIMARY KEY (order_id, line));
INSERT INTO lines_src SELECT g / 3, g % 3, g, g FROM generate_series(0, 8) g;
SELECT hwm.create_pipeline('lines', 'lines_src', 'lines', '{order_id,line}', 'changed');
SELECT rows_upserted, watermark_after FROM hwm.run('lines');
UPDATE lines_src SET qty = 99, changed = 100 WHERE order_id = 1 AND line = 2;
SELECT rows_upserted, watermark_after FROM hwm.run('lines');
SELECT order_id, line, qty FROM lines WHERE qty = 99;
SELECT count(*) FROM lines;

-- delay: application-supplied timestamps need time to settle.  The
-- watermark never passes now() - delay, yet fresh rows are loaded at once
-- (and re-read, unchanged, until the watermark passes them)
CREATE TABLE ev_src (id int, at timestamptz);
CREATE TABLE ev (id int PRIMARY KEY, at timestamptz);
INSERT INTO ev_src VALUES (1, '2026-01-01 00:00+00'), (2, now() - interval '1 minute');
SELECT hwm.create_pipeline('ev', 'ev_src', 'ev', '{id}', 'at', delay => '10 minutes');
SELECT rows_upserted, watermark_after FROM hwm.run('ev');
SELECT count(*) AS loaded FROM ev;
SELECT rows_upserted, watermark_after FROM hwm.run('ev');
SELECT hwm.drop_pipeline('ev');

-- the run history
SELECT kind, rows_upserted, partitions_overwritten, rows_deleted, rows_inserted,
       watermark_before, watermark_after
  FROM hwm.runs WHERE pipeline = 'lines' ORDER BY run_id;
SELECT pipeline, watermark, last_status, last_rows, consecutive_failures, last_error
  FROM hwm.status WHERE pipeline IN ('orders', 'lines') ORDER BY 1;

SELECT hwm.drop_pipeline('orders');
SELECT hwm.drop_pipeline('lines');
RESET search_path;
RESET datestyle;
DROP SCHEMA load CASCADE;
