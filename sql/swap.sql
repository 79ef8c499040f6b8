-- swap: CALL hwm.swap validates a staging table and exchanges its storage
-- with the target's.  The target keeps its OID, so a view, a grant, foreign
-- keys, a trigger, a policy and a comment on it keep working; the staging
-- table then holds the previous contents, and a second swap restores them.
-- Every refusal says what failed and changes nothing.
\i test/setup.sql
CREATE EXTENSION amcheck;
CREATE SCHEMA sw;
SET search_path = sw, public;

CREATE TABLE dim (id int PRIMARY KEY, name text NOT NULL, note text, CHECK (id > 0));
CREATE INDEX dim_name_idx ON dim (lower(name)) WHERE note IS NOT NULL;
INSERT INTO dim SELECT g, 'old' || g, repeat('o', 3000) || g FROM generate_series(1, 100) g;
-- a column added with a default that the 100 rows do not store
ALTER TABLE dim ADD COLUMN grade int NOT NULL DEFAULT 7;
CREATE TABLE fact (fid int PRIMARY KEY, dim_id int REFERENCES dim (id));
INSERT INTO fact VALUES (1, 5), (2, 7);
CREATE VIEW dim_v AS SELECT id, name FROM dim;
CREATE ROLE hwm_sw_reader;
GRANT USAGE ON SCHEMA sw TO hwm_sw_reader;
GRANT SELECT ON dim_v TO hwm_sw_reader;
GRANT SELECT ON dim TO hwm_sw_reader;
COMMENT ON TABLE dim IS 'the dimension';
CREATE TABLE audit (what text);
CREATE FUNCTION dim_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO sw.audit VALUES (TG_OP || ' ' || NEW.id); RETURN NEW; END $$;
CREATE TRIGGER dim_audit AFTER INSERT ON dim FOR EACH ROW EXECUTE FUNCTION dim_audit();
SELECT 'dim'::regclass::oid AS dim_oid, 'dim_pkey'::regclass::oid AS pkey_oid \gset

-- the staging table: same columns, indexes, constraints and owner
SELECT hwm.create_staging('dim');
SELECT hwm.create_staging('dim');
\d dim_hwm_staging
SELECT obj_description('dim_hwm_staging'::regclass, 'pg_class') AS comment;
INSERT INTO dim_hwm_staging (id, name, note, grade)
SELECT g, 'new' || g, repeat('n', 3000) || g, 1 FROM generate_series(1, 120) g;
SELECT test_fingerprint('dim') AS old_rows, test_fingerprint('dim_hwm_staging') AS new_rows \gset

-- refusals
CALL hwm.swap(NULL, 'dim_hwm_staging');
CALL hwm.swap('dim', NULL);
CALL hwm.swap('dim', 'dim_hwm_staging', lock_timeout => NULL);
CALL hwm.swap('dim', 'dim');
CALL hwm.swap('dim', 'dim_hwm_staging', min_rows => -1);
CALL hwm.swap('dim', 'dim_hwm_staging', min_ratio => -0.5);
CALL hwm.swap('dim_v', 'dim_hwm_staging');
CALL hwm.swap('dim', 'dim_hwm_staging', min_rows => 1000);
CALL hwm.swap('dim', 'dim_hwm_staging', min_ratio => 1.5);
CALL hwm.swap('dim', 'dim_hwm_staging', check_query => 'SELECT count(*) > 500 FROM sw.dim_hwm_staging');
CALL hwm.swap('dim', 'dim_hwm_staging', check_query => 'SELECT NULL::boolean');
CALL hwm.swap('dim', 'dim_hwm_staging', check_query => 'SELECT 1');
-- the check query runs read-only
CALL hwm.swap('dim', 'dim_hwm_staging', check_query => 'DELETE FROM sw.dim_hwm_staging RETURNING true');
-- a staging table that lacks what the target has
CREATE TABLE s_cols (id int NOT NULL, name text NOT NULL, note text);
CALL hwm.swap('dim', 's_cols');
CREATE TABLE s_type (id bigint NOT NULL, name text NOT NULL, note text, grade int NOT NULL);
CALL hwm.swap('dim', 's_type');
CREATE TABLE s_null (id int NOT NULL, name text, note text, grade int NOT NULL);
CALL hwm.swap('dim', 's_null');
CREATE TABLE s_name (id int NOT NULL, label text NOT NULL, note text, grade int NOT NULL);
CALL hwm.swap('dim', 's_name');
CREATE TABLE s_noidx (id int NOT NULL, name text NOT NULL, note text, grade int NOT NULL);
CALL hwm.swap('dim', 's_noidx');
CREATE TABLE s_extra (LIKE dim INCLUDING ALL);
CREATE INDEX ON s_extra (note);
CALL hwm.swap('dim', 's_extra');
-- the target's constraints must hold for the staging rows
CREATE TABLE s_check (LIKE dim INCLUDING INDEXES);
INSERT INTO s_check VALUES (-1, 'negative', NULL, 1);
CALL hwm.swap('dim', 's_check');
TRUNCATE s_check;
INSERT INTO s_check SELECT g, 'x', NULL, 1 FROM generate_series(6, 10) g;
CALL hwm.swap('dim', 's_check');
CREATE TABLE fact_staging (LIKE fact INCLUDING ALL);
INSERT INTO fact_staging VALUES (1, 999);
CALL hwm.swap('fact', 'fact_staging');
-- only the owner of both tables
CREATE ROLE hwm_sw_other;
GRANT USAGE ON SCHEMA sw TO hwm_sw_other;
CREATE TABLE other_staging (LIKE dim INCLUDING ALL);
ALTER TABLE other_staging OWNER TO hwm_sw_other;
CALL hwm.swap('dim', 'other_staging');
SET ROLE hwm_sw_other;
CALL hwm.swap('dim', 'other_staging');
CALL hwm.swap('other_staging', 'dim');
SELECT hwm.create_staging('sw.dim');
RESET ROLE;
-- storage made in the current transaction cannot trade places
BEGIN;
TRUNCATE s_extra;
DROP INDEX s_extra_note_idx;
CALL hwm.swap('dim', 's_extra');
ROLLBACK;
-- partitioned tables and partitions have their own ways
CREATE TABLE parted (id int, d date) PARTITION BY RANGE (d);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE parted_s (LIKE parted_1);
CALL hwm.swap('parted', 'parted_s');
CALL hwm.swap('parted_1', 'parted_s');
-- nothing changed
SELECT test_fingerprint('dim') = :'old_rows' AS target_unchanged,
       test_fingerprint('dim_hwm_staging') = :'new_rows' AS staging_unchanged,
       (SELECT count(*) FROM hwm.runs WHERE kind = 'swap') AS swaps;

-- the swap
CALL hwm.swap('dim', 'dim_hwm_staging', min_rows => 100, min_ratio => 0.9,
              check_query => 'SELECT count(DISTINCT id) = count(*) FROM sw.dim_hwm_staging');
SELECT 'dim'::regclass::oid = :dim_oid AS same_oid, 'dim_pkey'::regclass::oid = :pkey_oid AS same_pkey_oid,
       test_fingerprint('dim') = :'new_rows' AS target_has_new_rows,
       test_fingerprint('dim_hwm_staging') = :'old_rows' AS staging_has_old_rows;
SELECT kind, status, rows_deleted, rows_inserted FROM hwm.runs WHERE kind = 'swap';
-- the old rows kept the default they never stored (grade was added later)
SELECT count(*) FILTER (WHERE grade = 7) AS grade_7 FROM dim_hwm_staging;
SELECT attrelid::regclass, atthasmissing FROM pg_attribute
 WHERE attrelid IN ('dim'::regclass, 'dim_hwm_staging'::regclass) AND attname = 'grade' ORDER BY 1::text;
-- indexes (the expression one too), TOAST and the view, grant, comment,
-- trigger and foreign keys of the target all work on the new rows
SELECT bt_index_parent_check('dim_pkey', true), bt_index_parent_check('dim_name_idx', true),
       bt_index_parent_check('dim_hwm_staging_pkey', true);
SET enable_seqscan = off;
SELECT id, name, length(note) FROM dim WHERE id = 110;
SELECT id, name FROM dim WHERE lower(name) = 'new42' AND note IS NOT NULL;
RESET enable_seqscan;
SET ROLE hwm_sw_reader;
SELECT count(*), min(name) FROM dim_v;
RESET ROLE;
SELECT obj_description('dim'::regclass, 'pg_class') AS comment;
INSERT INTO dim VALUES (500, 'added', NULL, 1);
SELECT * FROM audit;
INSERT INTO fact VALUES (3, 115);
INSERT INTO fact VALUES (4, 9999);
-- swapping back needs the children to agree: 115 is not in the old rows
CALL hwm.swap('dim', 'dim_hwm_staging');
DELETE FROM fact WHERE fid = 3;
DELETE FROM dim WHERE id = 500;
CALL hwm.swap('dim', 'dim_hwm_staging');
SELECT test_fingerprint('dim') = :'old_rows' AS restored,
       test_fingerprint('dim_hwm_staging') = :'new_rows' AS staging_has_new_rows_again,
       'dim'::regclass::oid = :dim_oid AS same_oid;
SELECT c.relname, t.relname = 'pg_toast_' || c.oid AS toast_named_after_owner
  FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid
 WHERE c.oid IN ('dim'::regclass, 'dim_hwm_staging'::regclass) ORDER BY 1;

RESET search_path;
DROP SCHEMA sw CASCADE;
DROP ROLE hwm_sw_reader;
DROP ROLE hwm_sw_other;
DROP EXTENSION amcheck;
