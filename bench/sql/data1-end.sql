-- bench/sql/data1-end.sql: the extensions and pipeline of benchmark 1 in
-- b1tmpl; psql variable wm0 (the watermark before the slice).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION hwm;
CREATE EXTENSION pg_prewarm;
CREATE EXTENSION pg_stat_statements SCHEMA public;
SELECT hwm.create_pipeline('p1', 'bench.src', 'bench.tgt', '{id}', 'updated_at', initial_watermark => :'wm0');
INSERT INTO bench.bare_wm VALUES ('p1', :'wm0');
VACUUM (ANALYZE);
