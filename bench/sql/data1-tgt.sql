-- bench/sql/data1-tgt.sql: fill bench.tgt (see data1.sql); psql variable n.
\set ON_ERROR_STOP 1
INSERT INTO bench.tgt
SELECT r.* FROM generate_series(1, :n) AS g(i),
       LATERAL bench.row_of(g.i, 1, '2020-01-01'::timestamptz + g.i * interval '1 ms') AS r;
ALTER TABLE bench.tgt ADD PRIMARY KEY (id);
-- (dbt's incremental filter reads max(updated_at) of the target)
CREATE INDEX tgt_updated_at ON bench.tgt (updated_at);
VACUUM (ANALYZE) bench.tgt;
