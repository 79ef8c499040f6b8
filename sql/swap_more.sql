-- swap_more: what the swap must check beyond swap.sql, each case a staging
-- table that an earlier version let through (or refused for no reason):
-- exclusion operators, generation expressions, opclass options, MATCH FULL
-- foreign keys, foreign keys to partitioned tables, the staging table's own
-- constraints (it receives the target's rows), forced row security hiding
-- bad rows from the checks, an invalid index of the target, a user catalog
-- table; planner statistics that follow the rows; then rollback of a swap to
-- a savepoint or in an exception block, with amcheck on heaps, TOAST tables
-- and indexes.
\i test/setup.sql
CREATE EXTENSION amcheck;
CREATE SCHEMA swm;
SET search_path = swm, public;

-- an exclusion constraint is its operators, not only its index
CREATE TABLE ex (r int4range, EXCLUDE USING gist (r WITH &&));
CREATE TABLE ex_s (r int4range, EXCLUDE USING gist (r WITH =));
INSERT INTO ex_s VALUES ('[1,10)'), ('[5,15)');
CALL hwm.swap('ex', 'ex_s');
CREATE TABLE ex_ok (r int4range, EXCLUDE USING gist (r WITH &&));
INSERT INTO ex_ok VALUES ('[1,10)'), ('[10,15)');
CALL hwm.swap('ex', 'ex_ok');
SELECT r FROM ex ORDER BY r;

-- a stored generated column must be generated the same way
CREATE TABLE gen (a int, b int GENERATED ALWAYS AS (a * 2) STORED);
CREATE TABLE gen_s (a int, b int GENERATED ALWAYS AS (a * 3) STORED);
INSERT INTO gen_s (a) VALUES (1);
CALL hwm.swap('gen', 'gen_s');
CREATE TABLE gen_ok (LIKE gen INCLUDING GENERATED);
INSERT INTO gen_ok (a) VALUES (1);
CALL hwm.swap('gen', 'gen_ok');
SELECT a, b FROM gen;

-- opclass parameters are part of an index's definition
CREATE TABLE doc (id int, tsv tsvector);
CREATE INDEX doc_tsv ON doc USING gist (tsv tsvector_ops (siglen = 8));
CREATE TABLE doc_s (id int, tsv tsvector);
CREATE INDEX doc_s_tsv ON doc_s USING gist (tsv tsvector_ops (siglen = 200));
CALL hwm.swap('doc', 'doc_s');
DROP INDEX doc_s_tsv;
CREATE INDEX doc_s_tsv ON doc_s USING gist (tsv tsvector_ops (siglen = 8));
CALL hwm.swap('doc', 'doc_s');

-- an invalid index of the target (a failed CREATE INDEX CONCURRENTLY) is
-- named as such
INSERT INTO doc VALUES (1, NULL), (1, NULL);
CREATE UNIQUE INDEX CONCURRENTLY doc_id ON doc (id);
CALL hwm.swap('doc', 'doc_s');
DROP INDEX doc_id;

-- a user catalog table is read by logical decoding through old relfilenodes
CREATE TABLE uc (id int) WITH (user_catalog_table = true);
CREATE TABLE uc_s (id int);
CALL hwm.swap('uc', 'uc_s');

-- MATCH FULL: a key with some columns null and some not is a violation
CREATE TABLE pk2 (a int, b int, PRIMARY KEY (a, b));
INSERT INTO pk2 VALUES (1, 1);
CREATE TABLE mf (a int, b int, FOREIGN KEY (a, b) REFERENCES pk2 MATCH FULL);
CREATE TABLE mf_s (LIKE mf);
INSERT INTO mf_s VALUES (1, 1), (NULL, NULL), (1, NULL);
CALL hwm.swap('mf', 'mf_s');
DELETE FROM mf_s WHERE a IS NOT NULL AND b IS NULL;
CALL hwm.swap('mf', 'mf_s');
SELECT a, b FROM mf ORDER BY a;

-- a foreign key to a partitioned table looks in all its partitions
CREATE TABLE pp (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE pp1 PARTITION OF pp FOR VALUES FROM (0) TO (100);
CREATE TABLE pp2 PARTITION OF pp FOR VALUES FROM (100) TO (200);
INSERT INTO pp VALUES (1), (150);
CREATE TABLE ch (id int, pid int REFERENCES pp);
CREATE TABLE ch_s (LIKE ch);
INSERT INTO ch_s VALUES (1, 1), (2, 150);
CALL hwm.swap('ch', 'ch_s');
SELECT id, pid FROM ch ORDER BY id;
INSERT INTO ch_s VALUES (3, 199);
CALL hwm.swap('ch', 'ch_s');
-- and a partitioned table's foreign key to the target looks in all its partitions
CREATE TABLE par (id int PRIMARY KEY);
INSERT INTO par VALUES (1), (2);
CREATE TABLE pch (id int, pid int REFERENCES par) PARTITION BY RANGE (id);
CREATE TABLE pch1 PARTITION OF pch FOR VALUES FROM (0) TO (100);
INSERT INTO pch VALUES (1, 2);
CREATE TABLE par_s (LIKE par INCLUDING ALL);
INSERT INTO par_s VALUES (1);
CALL hwm.swap('par', 'par_s');
INSERT INTO par_s VALUES (2);
CALL hwm.swap('par', 'par_s');

-- the staging table receives the target's rows: its own constraints must
-- hold for them too (a CHECK the target does not have, a NOT NULL, a
-- foreign key of its own, a foreign key that points at it)
CREATE TABLE k (id int);
INSERT INTO k VALUES (500);
CREATE TABLE k_s (id int CHECK (id < 100));
INSERT INTO k_s VALUES (1);
CALL hwm.swap('k', 'k_s');
ALTER TABLE k_s DROP CONSTRAINT k_s_id_check;
INSERT INTO k VALUES (NULL);
ALTER TABLE k_s ALTER id SET NOT NULL;
CALL hwm.swap('k', 'k_s');
ALTER TABLE k_s ALTER id DROP NOT NULL;
ALTER TABLE k_s ADD FOREIGN KEY (id) REFERENCES par;
CALL hwm.swap('k', 'k_s');
ALTER TABLE k_s DROP CONSTRAINT k_s_id_fkey;
CREATE UNIQUE INDEX k_uq ON k (id);
ALTER TABLE k_s ADD CONSTRAINT k_s_uq UNIQUE (id);
CREATE TABLE k_s_child (kid int REFERENCES k_s (id));
INSERT INTO k_s_child VALUES (1);
CALL hwm.swap('k', 'k_s');
-- a CHECK that both tables have is not checked twice, and holds
DROP TABLE k_s_child;
DELETE FROM k WHERE id IS NULL;
ALTER TABLE k ADD CHECK (id > 0);
ALTER TABLE k_s ADD CHECK (id > 0);
CALL hwm.swap('k', 'k_s');
SELECT (SELECT array_agg(id) FROM k) AS k, (SELECT array_agg(id) FROM k_s) AS k_s;

-- forced row security must not hide staging rows from the checks
CREATE ROLE hwm_swm_owner;
GRANT USAGE, CREATE ON SCHEMA swm TO hwm_swm_owner;
CREATE TABLE r (id int CHECK (id > 0));
CREATE TABLE r_s (id int);
INSERT INTO r_s VALUES (-5), (1);
ALTER TABLE r OWNER TO hwm_swm_owner;
ALTER TABLE r_s OWNER TO hwm_swm_owner;
ALTER TABLE r_s ENABLE ROW LEVEL SECURITY;
ALTER TABLE r_s FORCE ROW LEVEL SECURITY;
CREATE POLICY only_positive ON r_s USING (id > 0);
SET ROLE hwm_swm_owner;
CALL hwm.swap('r', 'r_s');
RESET ROLE;
SELECT count(*) AS rows_in_r FROM r;

-- planner statistics follow the rows, those of expression indexes too
CREATE TABLE st (id int, grp text);
CREATE INDEX st_lower ON st (lower(grp));
INSERT INTO st SELECT g, 'A' FROM generate_series(1, 1000) g;
CREATE TABLE st_s (LIKE st INCLUDING ALL);
INSERT INTO st_s SELECT g, 'G' || g FROM generate_series(1, 1000) g;
ANALYZE st, st_s;
SELECT tablename, attname, n_distinct FROM pg_stats
 WHERE schemaname = 'swm' AND tablename IN ('st', 'st_s', 'st_lower', 'st_s_lower_idx') AND attname IN ('grp', 'lower')
 ORDER BY 1, 2;
CALL hwm.swap('st', 'st_s');
SELECT tablename, attname, n_distinct FROM pg_stats
 WHERE schemaname = 'swm' AND tablename IN ('st', 'st_s', 'st_lower', 'st_s_lower_idx') AND attname IN ('grp', 'lower')
 ORDER BY 1, 2;

-- rollback: a swap undone by ROLLBACK TO SAVEPOINT or by an exception block
-- leaves both tables as they were, readable, their indexes and TOAST intact
CREATE TABLE big (id int PRIMARY KEY, v text);
INSERT INTO big SELECT g, repeat('o', 3000) || g FROM generate_series(1, 100) g;
SELECT hwm.create_staging('big');
INSERT INTO big_hwm_staging SELECT g, repeat('n', 3000) || g FROM generate_series(1, 200) g;
SELECT test_fingerprint('big') AS old_rows, test_fingerprint('big_hwm_staging') AS new_rows \gset
BEGIN;
SELECT count(*) FROM big;
SAVEPOINT before_swap;
CALL hwm.swap('big', 'big_hwm_staging');
INSERT INTO big VALUES (1000, repeat('x', 5000));
SELECT count(*) FROM big;
ROLLBACK TO SAVEPOINT before_swap;
SELECT test_fingerprint('big') = :'old_rows' AS target_restored,
       test_fingerprint('big_hwm_staging') = :'new_rows' AS staging_restored;
SET LOCAL enable_seqscan = off;
SELECT id, length(v) FROM big WHERE id = 100;
SELECT id, length(v) FROM big_hwm_staging WHERE id = 200;
COMMIT;
DO $$
BEGIN
  BEGIN
    CALL hwm.swap('swm.big', 'swm.big_hwm_staging');
    RAISE EXCEPTION 'changed my mind';
  EXCEPTION WHEN raise_exception THEN
    RAISE NOTICE 'caught: %', SQLERRM;
  END;
END $$;
SELECT test_fingerprint('big') = :'old_rows' AS target_unchanged,
       test_fingerprint('big_hwm_staging') = :'new_rows' AS staging_unchanged;
-- the swap then commits; amcheck finds heaps, TOAST and indexes sound
CALL hwm.swap('big', 'big_hwm_staging');
SELECT test_fingerprint('big') = :'new_rows' AS target_has_new_rows,
       test_fingerprint('big_hwm_staging') = :'old_rows' AS staging_has_old_rows;
SELECT c.relname, v.*
  FROM pg_class c, LATERAL verify_heapam(c.oid, check_toast => true) v
 WHERE c.oid IN ('big'::regclass, 'big_hwm_staging'::regclass,
                 (SELECT reltoastrelid FROM pg_class WHERE oid = 'big'::regclass),
                 (SELECT reltoastrelid FROM pg_class WHERE oid = 'big_hwm_staging'::regclass));
SELECT bt_index_check('big_pkey', true), bt_index_check('big_hwm_staging_pkey', true),
       bt_index_check(i.indexrelid, true)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class b ON b.reltoastrelid = c.oid
 WHERE b.oid = 'big'::regclass;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA swm CASCADE;
DROP ROLE hwm_swm_owner;
DROP EXTENSION amcheck;
RESET client_min_messages;
