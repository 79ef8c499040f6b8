-- bench/sql/data1.sql: the tables of benchmarks 1 and 5 (and the big ones
-- of 2 and 3), created empty in the template database b1tmpl; run.sh fills
-- them with data1-src.sql and data1-tgt.sql in parallel, then runs
-- data1-end.sql.  Every repetition of benchmarks 1 and 5 starts from a
-- fresh file copy of b1tmpl (CREATE DATABASE ... TEMPLATE b1tmpl).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
SET search_path = bench, pg_catalog;

-- One row's columns (a set-returning SQL function, so that the planner
-- inlines it), old version (v = 1) and updated version (v = 2); the
-- watermark is updated_at: old rows in 2020, the slice in 2021, both well in
-- the past (hwm keeps time-typed watermarks a margin behind now()).
CREATE FUNCTION bench.row_of(p_id bigint, p_v int, p_ts timestamptz)
RETURNS TABLE (id bigint, updated_at timestamptz, customer_id int,
               amount numeric(12,2), status text, note text)
LANGUAGE sql IMMUTABLE AS $$
  SELECT $1, $3, (($1 * 7919) % 100000)::int,
         ((($1 * 31) % 100000) / 100.0 + ($2 - 1))::numeric(12,2),
         CASE WHEN $2 >= 2 THEN 'updated' ELSE (ARRAY['new','paid','shipped','done'])[$1 % 4 + 1] END,
         md5($1::text || $2::text)
$$;

-- The source of benchmarks 1 and 5 holds every row's current version:
-- ids 1..n, of which every :every-th was updated in the slice, plus :new new
-- ids.  The slice (updates and new rows) carries 2021 timestamps,
-- interleaved.  The target holds ids 1..n as they were before the slice.
CREATE TABLE bench.src (id bigint NOT NULL, updated_at timestamptz NOT NULL,
    customer_id int, amount numeric(12,2), status text, note text);
CREATE TABLE bench.tgt (LIKE bench.src);

-- The hand-written pipeline's watermark.
CREATE TABLE bench.bare_wm (pipeline text PRIMARY KEY, wm timestamptz);
