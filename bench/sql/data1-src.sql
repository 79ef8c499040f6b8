-- bench/sql/data1-src.sql: fill bench.src (see data1.sql); psql variables n, new, every.
\set ON_ERROR_STOP 1
INSERT INTO bench.src
SELECT r.*
  FROM generate_series(1, :n + :new) AS g(i),
       LATERAL bench.row_of(g.i,
           CASE WHEN g.i > :n OR g.i % :every = 0 THEN 2 ELSE 1 END,
           CASE WHEN g.i > :n THEN '2021-01-01'::timestamptz + (g.i - :n) * interval '2 ms' + interval '1 ms'
                WHEN g.i % :every = 0 THEN '2021-01-01'::timestamptz + (g.i / :every) * interval '2 ms'
                ELSE '2020-01-01'::timestamptz + g.i * interval '1 ms' END) AS r;
CREATE INDEX src_updated_at ON bench.src (updated_at);
VACUUM (ANALYZE) bench.src;
