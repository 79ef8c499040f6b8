-- bulk_fill: a table aside (a first load into an empty target, a
-- partition exchanged by an overwrite) is filled a page of rows at a time,
-- as COPY FROM fills a table (bulk.c): one WAL record per page instead of
-- one per row.  What reaches the table is what the INSERT ... SELECT it
-- replaces would put there: the source's values in the target's types
-- (assignment casts, typmods, domains), the defaults of the target's other
-- columns, and the target's NOT NULL and CHECK constraints enforced; a
-- row they refuse gives the aside up as before.  A target with a generated
-- column is filled by the INSERT.
\i test/setup.sql
CREATE SCHEMA bulk_fill;
SET search_path = bulk_fill, public;
SET datestyle = ISO;
SET timezone = 'UTC';

-- the WAL records q writes (EXPLAIN's count, which includes what a
-- function it calls writes)
CREATE FUNCTION wal_records(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF, FORMAT JSON) ' || q INTO j;
    RETURN (j -> 0 -> 'Plan' ->> 'WAL Records')::bigint;
END $$;
-- rows in one query's result and not the other's, both ways
CREATE FUNCTION differences(a text, b text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) d', a, b, b, a) INTO n;
    RETURN n;
END $$;

-- 20,000 rows of about 200 bytes and a few of 6 kB: batches end on the row
-- count and on the byte count
CREATE TABLE src (id int, updated_at timestamptz, amount numeric, code text, note text);
INSERT INTO src SELECT g, TIMESTAMPTZ '2020-01-01 00:00+00' + g * INTERVAL '1 minute',
  round(g / 3.0, 4), 'c' || g % 100,
  CASE WHEN g % 1000 = 0 THEN (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 190) i)
       ELSE repeat(md5(g::text), 6) END
  FROM generate_series(1, 20000) g;
-- the fast paths need the source's types in the target, but typmods may
-- differ (amount is rounded to two places); loaded_by is not the source's
-- (its default), missing has no default (NULL)
CREATE TABLE t (id int PRIMARY KEY, updated_at timestamptz NOT NULL, amount numeric(12,2),
                code text CHECK (code LIKE 'c%'), note text CHECK (length(note) > 10),
                loaded_by text NOT NULL DEFAULT 'hwm', missing int);
SELECT hwm.create_pipeline('t', 'src', 't', '{id}', 'updated_at');

-- the first load: far fewer WAL records than rows (a page holds about 40
-- rows; creating, indexing and trading the table aside write some hundreds)
SET client_min_messages = debug1;
SELECT wal_records($$SELECT rows_upserted FROM hwm.run('t')$$) < 5000 AS one_record_per_page;
RESET client_min_messages;
SELECT count(*), count(DISTINCT loaded_by) AS by, min(loaded_by), count(missing) AS missing FROM t;
-- the values the INSERT would have written: rounded to the target's scale
SELECT differences('SELECT id, updated_at, round(amount, 2), code, note FROM src',
                   'SELECT id, updated_at, amount, code, note FROM t') AS differences;
SELECT id, amount, code, length(note) FROM t WHERE id IN (1, 2, 1000) ORDER BY id;
-- the primary key was built after the rows went in, and holds
SELECT count(*) FROM t WHERE id = 4321;
INSERT INTO t (id, updated_at) VALUES (1, now());

-- the target's constraints hold on the rows filled aside: a row one
-- refuses fails the run as before (the plain insert, the MERGE and the
-- upsert report it on the target), and nothing is loaded
CREATE TABLE t2 (LIKE t INCLUDING ALL);
SELECT hwm.create_pipeline('t2', 'src', 't2', '{id}', 'updated_at');
UPDATE src SET note = 'short' WHERE id = 4000;
SELECT rows_upserted FROM hwm.run('t2');
SELECT count(*) FROM t2;
UPDATE src SET note = repeat(md5(id::text), 6) WHERE id = 4000;
UPDATE src SET code = 'x1' WHERE id = 4000;
SELECT rows_upserted FROM hwm.run('t2');
UPDATE src SET code = 'c0', amount = 1e10 WHERE id = 4000;
SELECT rows_upserted FROM hwm.run('t2');
UPDATE src SET amount = round(id / 3.0, 4) WHERE id = 4000;
UPDATE src SET updated_at = NULL WHERE id = 4000;
SELECT rows_upserted FROM hwm.run('t2');
SELECT count(*) FROM t2;
SELECT count(*) AS left_aside FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%';
SELECT differences('SELECT * FROM t WHERE id <> 4000', 'TABLE t2') AS differences;

-- a generated column: the INSERT fills the table aside (it computes the
-- column), one WAL record per row
CREATE TABLE g (id int PRIMARY KEY, updated_at timestamptz, amount numeric,
                doubled numeric GENERATED ALWAYS AS (amount * 2) STORED);
SELECT hwm.create_pipeline('g', 'src', 'g', '{id}', 'updated_at');
SELECT wal_records($$SELECT rows_upserted FROM hwm.run('g')$$) >= 20000 AS one_record_per_row;
SELECT count(*), count(*) FILTER (WHERE doubled = amount * 2) AS computed FROM g;

-- a partition exchanged by an overwrite is filled the same way
CREATE TABLE psrc (id int, day date, v text);
INSERT INTO psrc SELECT g, DATE '2026-01-01' + g % 4, repeat(md5(g::text), 3) FROM generate_series(1, 20000) g;
CREATE TABLE p (id int, day date NOT NULL, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE p1 PARTITION OF p FOR VALUES FROM ('2026-01-01') TO ('2026-01-03');
CREATE TABLE p2 PARTITION OF p FOR VALUES FROM ('2026-01-03') TO ('2026-01-05');
INSERT INTO p SELECT id, day, 'old' FROM psrc;
SELECT hwm.create_pipeline('p', 'psrc', 'p', ARRAY['id', 'day'], 'id', 'day');
SELECT wal_records($$SELECT rows_inserted FROM hwm.overwrite('p', '2026-01-01', '2026-01-04')$$) < 5000 AS one_record_per_page;
SELECT method FROM hwm.runs WHERE pipeline = 'p' ORDER BY run_id DESC LIMIT 1;
SELECT differences('TABLE psrc', 'TABLE p') AS differences;

DROP SCHEMA bulk_fill CASCADE;
