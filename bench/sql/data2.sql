-- bench/sql/data2.sql: the tables of benchmarks 2, 3 and 4, in the
-- database bench (a copy of b1tmpl, so bench.src and bench.tgt are there
-- too).  psql variables: small2 (rows of the small source of benchmark 2),
-- n3small (rows of the small target of benchmark 3), days4, perday4
-- (benchmark 4).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = bench, pg_catalog;
CREATE EXTENSION pgstattuple SCHEMA public;

-- Benchmark 2: a small source (the big one is bench.src), and empty targets.
CREATE TABLE bench.src2small (LIKE bench.src);
INSERT INTO bench.src2small SELECT * FROM bench.src WHERE id <= :small2;
CREATE INDEX ON bench.src2small (updated_at);
CREATE TABLE bench.tgt2small (LIKE bench.src);
ALTER TABLE bench.tgt2small ADD PRIMARY KEY (id);
CREATE TABLE bench.tgt2big (LIKE bench.src);
ALTER TABLE bench.tgt2big ADD PRIMARY KEY (id);

-- Benchmark 3: the small target (the big one is bench.tgt) and one source
-- per target; slices are added to the sources as the benchmark goes.
CREATE TABLE bench.tgt3small (LIKE bench.src);
INSERT INTO bench.tgt3small SELECT * FROM bench.tgt WHERE id <= :n3small;
ALTER TABLE bench.tgt3small ADD PRIMARY KEY (id);
CREATE INDEX ON bench.tgt3small (updated_at);
CREATE TABLE bench.src3small (LIKE bench.src);
CREATE INDEX ON bench.src3small (updated_at);
CREATE TABLE bench.src3big (LIKE bench.src);
CREATE INDEX ON bench.src3big (updated_at);

-- Benchmark 4: :days4 days of :perday4 rows; the source differs from the
-- target on one day (the 15th): 5% of that day's rows are gone, 10% changed,
-- 5% new.  tgt4 is a plain table, tgt4p the same rows partitioned by day.
CREATE TABLE bench.src4 (id bigint NOT NULL, day date NOT NULL, updated_at timestamptz NOT NULL,
    customer_id int, amount numeric(12,2), status text, note text);
CREATE TABLE bench.tgt4_base (LIKE bench.src4);
INSERT INTO bench.tgt4_base
SELECT r.id, '2020-01-01'::date + ((g.i - 1) / :perday4)::int, r.updated_at, r.customer_id, r.amount, r.status, r.note
  FROM generate_series(1, :days4 * :perday4) AS g(i),
       LATERAL bench.row_of(g.i, 1, '2020-01-01'::timestamptz + g.i * interval '1 ms') AS r;
INSERT INTO bench.src4
SELECT b.id, b.day,
       CASE WHEN c.changed THEN b.updated_at + interval '1 day' ELSE b.updated_at END,
       b.customer_id,
       CASE WHEN c.changed THEN b.amount + 1 ELSE b.amount END,
       CASE WHEN c.changed THEN 'corrected' ELSE b.status END,
       b.note
  FROM bench.tgt4_base AS b,
       LATERAL (SELECT b.day = DATE '2020-01-15' AND b.id % 10 = 1 AS changed,
                       b.day = DATE '2020-01-15' AND b.id % 20 = 3 AS gone) AS c
 WHERE NOT c.gone;
INSERT INTO bench.src4
SELECT r.id, DATE '2020-01-15', r.updated_at, r.customer_id, r.amount, r.status, r.note
  FROM generate_series(1, :perday4 / 20) AS g(i),
       LATERAL bench.row_of(1000000000 + g.i, 1, '2020-01-15'::timestamptz + g.i * interval '1 ms') AS r;
ALTER TABLE bench.src4 ADD PRIMARY KEY (id);
CREATE INDEX ON bench.src4 (day);
CREATE INDEX ON bench.src4 (updated_at);
CREATE TABLE bench.tgt4 (LIKE bench.src4);
INSERT INTO bench.tgt4 SELECT * FROM bench.tgt4_base;
ALTER TABLE bench.tgt4 ADD PRIMARY KEY (id);
CREATE INDEX ON bench.tgt4 (day);
CREATE TABLE bench.tgt4p (LIKE bench.src4) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE bench.%I PARTITION OF bench.tgt4p FOR VALUES FROM (%L) TO (%L)',
              'tgt4p_' || to_char(d, 'YYYYMMDD'), d::date, (d + interval '1 day')::date)
  FROM generate_series(DATE '2020-01-01', DATE '2020-01-01' + :days4 - 1, interval '1 day') AS d
\gexec
INSERT INTO bench.tgt4p SELECT * FROM bench.tgt4_base;
ALTER TABLE bench.tgt4p ADD PRIMARY KEY (id, day);
-- day 15 as it was, to reset the targets between repetitions
CREATE TABLE bench.tgt4_day15 AS SELECT * FROM bench.tgt4_base WHERE day = DATE '2020-01-15';
DROP TABLE bench.tgt4_base;

VACUUM (ANALYZE);
