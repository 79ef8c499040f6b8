-- plan_cache: a pipeline's plan is kept between runs (plancache.c, issue
-- 31) and rebuilt when what it was built from changes.  Everything here
-- happens in one session, so every run after the first would use the kept
-- plan: after each change below, the next run shows that it used the new
-- definition (a stale plan would load the old columns, keep the fast path,
-- match on the old key, or name what no longer exists).
\i test/setup.sql
CREATE SCHEMA pc;
SET search_path = pc, public;
SET datestyle = ISO;
SET timezone = 'UTC';

CREATE TABLE src (id int, ts timestamptz NOT NULL, a int);
CREATE TABLE tgt (id int PRIMARY KEY, ts timestamptz, a int);
SELECT hwm.create_pipeline('pc', 'src', 'tgt', '{id}', 'ts');
-- a row of the source, one hour after the last
CREATE FUNCTION next_ts() RETURNS timestamptz LANGUAGE sql AS
  $$SELECT coalesce(max(ts), '2026-01-01 00:00') + interval '1 hour' FROM src$$;
INSERT INTO src VALUES (1, next_ts(), 10);
SELECT rows_upserted FROM hwm.run('pc');
-- kept: the second run's plan is the first's, and loads the same way
INSERT INTO src VALUES (2, next_ts(), 20);
SELECT rows_upserted FROM hwm.run('pc');

-- a column added to both: loaded from the next run on
ALTER TABLE src ADD COLUMN b text;
ALTER TABLE tgt ADD COLUMN b text;
INSERT INTO src VALUES (3, next_ts(), 30, 'b3');
SELECT rows_upserted FROM hwm.run('pc');
SELECT * FROM tgt ORDER BY id;

-- a column added in a transaction that a run uses, then rolled back: the
-- plan built inside it is stale after the rollback
BEGIN;
ALTER TABLE src ADD COLUMN z int;
ALTER TABLE tgt ADD COLUMN z int;
SELECT rows_upserted FROM hwm.run('pc');
ROLLBACK;
INSERT INTO src VALUES (9, next_ts(), 90, 'b9');
SELECT rows_upserted FROM hwm.run('pc');
DELETE FROM tgt WHERE id = 9;

-- a column dropped from both: no longer named
ALTER TABLE src DROP COLUMN a;
ALTER TABLE tgt DROP COLUMN a;
INSERT INTO src VALUES (4, next_ts(), 'b4');
SELECT rows_upserted FROM hwm.run('pc');
SELECT * FROM tgt ORDER BY id;

-- a trigger on the target: the fast path refused from the next run on, and
-- the trigger fires
UPDATE src SET ts = next_ts(), b = 'b1 changed' WHERE id = 1;
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('pc');
RESET client_min_messages;
CREATE FUNCTION say() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN RAISE NOTICE 'trigger: % id %', TG_OP, NEW.id; RETURN NEW; END$$;
CREATE TRIGGER say AFTER INSERT OR UPDATE ON tgt FOR EACH ROW EXECUTE FUNCTION say();
UPDATE src SET ts = next_ts(), b = 'b1 again' WHERE id = 1;
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('pc');
RESET client_min_messages;
DROP TRIGGER say ON tgt;

-- row-level security enabled on the target: the fast path refused
ALTER TABLE tgt ENABLE ROW LEVEL SECURITY;
UPDATE src SET ts = next_ts(), b = 'b1 rls' WHERE id = 1;
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('pc');
RESET client_min_messages;
ALTER TABLE tgt DISABLE ROW LEVEL SECURITY;

-- the key changed by alter_pipeline: the next run matches rows on k
ALTER TABLE src ADD COLUMN k text;
ALTER TABLE tgt ADD COLUMN k text;
UPDATE tgt SET k = 'k' || id;
CREATE UNIQUE INDEX ON tgt (k);
SELECT hwm.alter_pipeline('pc', unique_key => '{k}');
-- id 12 under the key k2: the row of k2 is updated (on the old key, id,
-- the insert would fail on the index of k)
INSERT INTO src VALUES (12, next_ts(), 'b12', 'k2');
SELECT rows_upserted FROM hwm.run('pc');
SELECT * FROM tgt ORDER BY id;

-- a delete marker set by alter_pipeline: the next run deletes
ALTER TABLE src ADD COLUMN gone boolean;
SELECT hwm.alter_pipeline('pc', delete_column => 'gone');
INSERT INTO src VALUES (3, next_ts(), 'b3', 'k3', true);
SELECT rows_upserted, rows_deleted FROM hwm.run('pc');
SELECT * FROM tgt ORDER BY id;

-- the target renamed, then its schema: the statements spell the new names
ALTER TABLE tgt RENAME TO tgt2;
INSERT INTO src VALUES (5, next_ts(), 'b5', 'k5', false);
SELECT rows_upserted FROM hwm.run('pc');
ALTER SCHEMA pc RENAME TO pc2;
SET search_path = pc2, public;
INSERT INTO src VALUES (6, next_ts(), 'b6', 'k6', false);
SELECT rows_upserted FROM hwm.run('pc');
SELECT id, b, k FROM pc2.tgt2 ORDER BY id;

-- a type the statements spell (a cast to the target's domain), renamed
CREATE DOMAIN amount AS int;
ALTER TABLE src ADD COLUMN n int;
ALTER TABLE tgt2 ADD COLUMN n amount;
INSERT INTO src VALUES (7, next_ts(), 'b7', 'k7', false, 70);
SELECT rows_upserted FROM hwm.run('pc');
ALTER DOMAIN amount RENAME TO amount2;
INSERT INTO src VALUES (8, next_ts(), 'b8', 'k8', false, 80);
SELECT rows_upserted FROM hwm.run('pc');
SELECT id, k, n FROM tgt2 WHERE id >= 7 ORDER BY id;

-- the pipeline dropped and created again under its name, on other tables
SELECT hwm.drop_pipeline('pc');
CREATE TABLE other_src (id int, ts timestamptz NOT NULL, x text);
CREATE TABLE other_tgt (id int PRIMARY KEY, ts timestamptz, x text);
INSERT INTO other_src VALUES (100, '2026-01-01 00:00', 'other');
SELECT hwm.create_pipeline('pc', 'other_src', 'other_tgt', '{id}', 'ts');
SELECT rows_upserted FROM hwm.run('pc');
SELECT * FROM other_tgt;
SELECT count(*) AS tgt2_rows FROM tgt2;

-- a column dropped from the target alone, then from the source: the run
-- that cannot build its statements says why, as before
ALTER TABLE other_tgt DROP COLUMN x;
INSERT INTO other_src VALUES (101, '2026-01-02 00:00', 'x');
SELECT rows_upserted FROM hwm.run('pc');
SELECT * FROM other_tgt ORDER BY id;
ALTER TABLE other_src DROP COLUMN ts;
SELECT rows_upserted FROM hwm.run('pc');

-- a key collated differently in the target: its match names the target's
-- collation, so renaming that collation makes the kept plan stale
CREATE COLLATION pc_coll FROM "C";
CREATE TABLE coll_src (k text COLLATE "POSIX" PRIMARY KEY, ts timestamptz NOT NULL, v int);
CREATE TABLE coll_tgt (k text COLLATE pc_coll PRIMARY KEY, ts timestamptz, v int);
INSERT INTO coll_src VALUES ('a', '2026-01-01 00:00', 1), ('b', '2026-01-01 00:00', 2);
SELECT hwm.create_pipeline('pc_coll', 'coll_src', 'coll_tgt', '{k}', 'ts');
SELECT rows_upserted FROM hwm.run('pc_coll');
UPDATE coll_src SET v = 10, ts = '2026-01-02 00:00' WHERE k = 'a';
INSERT INTO coll_src VALUES ('c', '2026-01-02 00:00', 3);
SELECT rows_upserted FROM hwm.run('pc_coll');
ALTER COLLATION pc_coll RENAME TO pc_coll2;
UPDATE coll_src SET v = 20, ts = '2026-01-03 00:00' WHERE k = 'b';
INSERT INTO coll_src VALUES ('d', '2026-01-03 00:00', 4);
SELECT rows_upserted FROM hwm.run('pc_coll');
SELECT k, v FROM coll_tgt ORDER BY k;
SELECT hwm.drop_pipeline('pc_coll');
DELETE FROM hwm.runs WHERE pipeline = 'pc_coll';

SELECT hwm.drop_pipeline('pc');
DELETE FROM hwm.runs WHERE pipeline = 'pc';
DROP SCHEMA pc2 CASCADE;
