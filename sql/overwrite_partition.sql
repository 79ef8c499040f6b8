-- overwrite_partition: partition overwrite without a pipeline, with the
-- caller's rights.  A target with a primary key is diffed and upserted; one
-- without is deleted and re-inserted; a natively partitioned target works
-- too.  Each is idempotent, and each is recorded in hwm.runs.
\i test/setup.sql
CREATE SCHEMA owp;
SET search_path = owp, public;
SET datestyle = ISO;

CREATE TABLE src (id int, day date, v text);
INSERT INTO src SELECT g, DATE '2026-01-01' + g % 10, 'v' || g FROM generate_series(1, 100) g;

-- no primary key: plain DELETE + INSERT of the range
CREATE TABLE heap_tgt (id int, day date, v text);
INSERT INTO heap_tgt SELECT id, day, 'stale' FROM src;
INSERT INTO heap_tgt VALUES (1000, '2026-01-03', 'ghost');
SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('heap_tgt', 'src', 'day', '2026-01-02', '2026-01-04');
SELECT day, count(*), min(v), max(v) FROM heap_tgt GROUP BY day ORDER BY day;
SELECT test_fingerprint('heap_tgt') AS once \gset
SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('heap_tgt', 'src', 'day', '2026-01-02', '2026-01-04');
SELECT test_fingerprint('heap_tgt') = :'once' AS same_rows_after_retry;

-- declaratively partitioned target with a primary key
CREATE TABLE part_tgt (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE part_tgt_a PARTITION OF part_tgt FOR VALUES FROM ('2026-01-01') TO ('2026-01-06');
CREATE TABLE part_tgt_b PARTITION OF part_tgt FOR VALUES FROM ('2026-01-06') TO ('2026-01-11');
SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('part_tgt', 'src', 'day', '2026-01-01', '2026-01-10');
UPDATE part_tgt SET v = 'stale' WHERE day = '2026-01-07';
SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('part_tgt', 'src', 'day', '2026-01-06', '2026-01-10');
SELECT count(*) AS differences FROM (SELECT * FROM src EXCEPT SELECT * FROM part_tgt) d;
SELECT tableoid::regclass, count(*) FROM part_tgt GROUP BY 1 ORDER BY 1;

-- recorded without a pipeline
SELECT pipeline, kind, rows_deleted, rows_inserted, from_partition, to_partition
  FROM hwm.runs WHERE pipeline IS NULL AND from_partition LIKE '2026-01-%' ORDER BY run_id;

-- the caller's own rights apply: a role that may only read the target is refused
CREATE ROLE hwm_owp_reader;
GRANT USAGE ON SCHEMA owp TO hwm_owp_reader;
GRANT SELECT ON src, heap_tgt TO hwm_owp_reader;
SET ROLE hwm_owp_reader;
SELECT * FROM hwm.overwrite_partition('heap_tgt', 'src', 'day', '2026-01-02', '2026-01-02');
RESET ROLE;
SELECT test_fingerprint('heap_tgt') = :'once' AS unchanged;
DROP OWNED BY hwm_owp_reader;
DROP ROLE hwm_owp_reader;

RESET search_path;
RESET datestyle;
DROP SCHEMA owp CASCADE;
