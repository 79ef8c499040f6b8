-- load_aside: the first load into an empty target built aside (issue 31).
-- When the target has no block (never written, or truncated) and the
-- slice has the plain insert's fast path, the run builds the slice in a
-- table aside made LIKE the target, builds the indexes on it, and trades
-- storage with the target, as partition exchange does for a partition
-- (exchange.c).  DEBUG1 says which path a run took, or why not aside; the
-- target's relfilenode changes when its storage is traded.  The target
-- keeps its OID, indexes, grants, comment and dependent views.
\i test/setup.sql
CREATE SCHEMA load_aside;
SET search_path = load_aside, public;
SET datestyle = ISO;

CREATE TABLE src (id int, updated_at timestamptz, a int, b text);
INSERT INTO src SELECT g, TIMESTAMPTZ '2020-01-01 00:00+00' + g * INTERVAL '1 minute',
  g % 7, 'b' || g FROM generate_series(1, 1000) g;
CREATE TABLE t (id int PRIMARY KEY, updated_at timestamptz, a int, b text UNIQUE,
                loaded_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX t_a ON t (a) WHERE a > 3;
COMMENT ON TABLE t IS 'the target';
GRANT SELECT ON t TO PUBLIC;
CREATE VIEW tv AS SELECT id, b FROM t;
SELECT hwm.create_pipeline('t', 'src', 't', '{id}', 'updated_at');
CREATE TEMP TABLE before AS SELECT oid, pg_relation_filenode('t') AS node, relacl::text AS acl
  FROM pg_class WHERE oid = 't'::regclass;

-- the first run: built aside
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('t');
RESET client_min_messages;
SELECT c.oid = b.oid AS same_oid, pg_relation_filenode('t') <> b.node AS storage_traded,
       c.relacl::text = b.acl AS same_grants, has_table_privilege('public', c.oid, 'SELECT') AS public_reads,
       obj_description(c.oid, 'pg_class') AS comment, c.reltuples
  FROM pg_class c, before b WHERE c.oid = 't'::regclass;
SELECT NOT EXISTS ((SELECT id, updated_at, a, b FROM src EXCEPT ALL SELECT id, updated_at, a, b FROM t)
             UNION ALL (SELECT id, updated_at, a, b FROM t EXCEPT ALL SELECT id, updated_at, a, b FROM src)) AS same_as_source;
SELECT i.indexrelid::regclass, i.indisvalid, i.indisready, i.indisprimary
  FROM pg_index i WHERE i.indrelid = 't'::regclass ORDER BY 1::text;
SELECT count(*) AS left_aside FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%';
SELECT count(*) FROM tv;
-- the indexes are used and enforced
SET enable_seqscan = off;
SELECT id, b FROM t WHERE id = 500;
SELECT count(*) FROM t WHERE a > 5;
RESET enable_seqscan;
\set VERBOSITY terse
INSERT INTO t (id, b) VALUES (1, 'new');
INSERT INTO t (id, b) VALUES (2000, 'b7');
\set VERBOSITY default

-- a second run (the target is not empty): not aside, storage kept
TRUNCATE before;
INSERT INTO before (oid, node) SELECT 't'::regclass::oid, pg_relation_filenode('t');
INSERT INTO src VALUES (1001, '2021-01-01', 1, 'b1001');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('t');
RESET client_min_messages;
SELECT pg_relation_filenode('t') = node AS storage_kept, (SELECT count(*) FROM t) FROM before;

-- truncated, then loaded again from the start: built aside again
TRUNCATE t;
SELECT hwm.set_watermark('t', NULL);
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('t');
RESET client_min_messages;
SELECT count(*) FROM t;

-- a target with dead rows has blocks: not empty, loaded by the plain insert
CREATE TABLE dead (LIKE t INCLUDING ALL);
INSERT INTO dead (id, b) VALUES (-1, 'x');
DELETE FROM dead;
SELECT hwm.create_pipeline('dead', 'src', 'dead', '{id}', 'updated_at');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('dead');
RESET client_min_messages;

-- a key twice in the slice: the unique index build fails, the run goes on
-- to the plain insert, the MERGE, then the upsert, which ends it as it
-- does without the aside path (here: its error); nothing is left aside
CREATE TABLE dsrc (LIKE src);
INSERT INTO dsrc VALUES (1, '2024-01-01', 1, 'one'), (1, '2024-01-01', 1, 'one'), (2, '2024-01-02', 2, 'two');
CREATE TABLE twice (LIKE t INCLUDING ALL);
SELECT hwm.create_pipeline('twice', 'dsrc', 'twice', '{id}', 'updated_at');
\set SHOW_CONTEXT never
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('twice');
RESET client_min_messages;
\set SHOW_CONTEXT errors
SELECT id, b FROM twice ORDER BY id;
SELECT count(*) AS left_aside FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%';

-- a target truncated in the run's own transaction: its storage is new there
BEGIN;
TRUNCATE t;
SELECT hwm.set_watermark('t', NULL);
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('t');
RESET client_min_messages;
COMMIT;

-- a target the session has open (a cursor on it): in use, not aside
CREATE TABLE cur (LIKE t INCLUDING ALL);
SELECT hwm.create_pipeline('cur', 'src', 'cur', '{id}', 'updated_at');
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM cur;
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('cur');
RESET client_min_messages;
CLOSE c;
COMMIT;

-- a table in the way of the table aside (its name is hwm_exchange_ and the
-- target's OID): not aside, the table left alone
CREATE TABLE way (LIKE t INCLUDING ALL);
SELECT hwm.create_pipeline('way', 'src', 'way', '{id}', 'updated_at');
DO $$BEGIN EXECUTE format('CREATE TABLE load_aside.%I (x int)', 'hwm_exchange_' || 'load_aside.way'::regclass::oid); END$$;
CREATE TEMP TABLE way_node AS SELECT pg_relation_filenode('way') AS node;
SELECT rows_upserted FROM hwm.run('way');
SELECT pg_relation_filenode('way') = node AS storage_kept, (SELECT count(*) FROM way) AS rows,
       (SELECT count(*) FROM pg_class WHERE relname = 'hwm_exchange_' || 'load_aside.way'::regclass::oid) AS in_the_way
  FROM way_node;
DO $$BEGIN EXECUTE format('DROP TABLE load_aside.%I', 'hwm_exchange_' || 'load_aside.way'::regclass::oid); END$$;

-- refusals, each saying why, each loaded by the plain insert instead
-- dropped columns
CREATE TABLE dropc (LIKE t INCLUDING ALL, x int);
ALTER TABLE dropc DROP COLUMN x;
SELECT hwm.create_pipeline('dropc', 'src', 'dropc', '{id}', 'updated_at');
-- a foreign key from the target
CREATE TABLE parent (a int PRIMARY KEY);
INSERT INTO parent SELECT g FROM generate_series(0, 6) g;
CREATE TABLE fk (LIKE t INCLUDING ALL, FOREIGN KEY (a) REFERENCES parent);
SELECT hwm.create_pipeline('fk', 'src', 'fk', '{id}', 'updated_at');
-- a foreign key to the target
CREATE TABLE referred (LIKE t INCLUDING ALL);
CREATE TABLE child (id int REFERENCES referred);
SELECT hwm.create_pipeline('referred', 'src', 'referred', '{id}', 'updated_at');
-- an identity column the source does not provide
CREATE TABLE ident (LIKE t INCLUDING ALL, n bigint GENERATED ALWAYS AS IDENTITY);
SELECT hwm.create_pipeline('ident', 'src', 'ident', '{id}', 'updated_at');
-- published for logical replication
CREATE TABLE pub (LIKE t INCLUDING ALL);
SET client_min_messages = error;
CREATE PUBLICATION load_aside_pub FOR TABLE pub;
RESET client_min_messages;
SELECT hwm.create_pipeline('pub', 'src', 'pub', '{id}', 'updated_at');
-- a partition, and a partitioned table
CREATE TABLE parted (id int, updated_at timestamptz, a int, b text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE part (LIKE parted);
ALTER TABLE parted ATTACH PARTITION part FOR VALUES FROM (0) TO (100000);
SELECT hwm.create_pipeline('part', 'src', 'part', '{id}', 'updated_at');
SELECT hwm.create_pipeline('parted', 'src', 'parted', '{id}', 'updated_at');
-- a trigger: no fast path at all (the upsert), so not aside either
CREATE TABLE trig (LIKE t INCLUDING ALL);
CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER keep_upsert AFTER INSERT ON trig FOR EACH STATEMENT EXECUTE FUNCTION nothing();
SELECT hwm.create_pipeline('trig', 'src', 'trig', '{id}', 'updated_at');
CREATE TEMP TABLE nodes AS SELECT relname, pg_relation_filenode(oid::regclass) AS node
  FROM pg_class WHERE relname IN ('dropc', 'fk', 'referred', 'ident', 'pub', 'trig')
  AND relnamespace = 'load_aside'::regnamespace;

SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('dropc');
SELECT rows_upserted FROM hwm.run('fk');
SELECT rows_upserted FROM hwm.run('referred');
SELECT rows_upserted FROM hwm.run('ident');
SELECT rows_upserted FROM hwm.run('pub');
SELECT rows_upserted FROM hwm.run('part');
RESET client_min_messages;
TRUNCATE part;
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('parted');
SELECT rows_upserted FROM hwm.run('trig');
RESET client_min_messages;
SELECT relname, pg_relation_filenode(('load_aside.' || relname)::regclass) = node AS storage_kept
  FROM nodes ORDER BY relname;
SELECT count(*) FROM ident WHERE n IS NOT NULL;

-- catch_up in batches: the first batch built aside, the later ones not
CREATE TABLE bat (LIKE t INCLUDING ALL);
SELECT hwm.create_pipeline('bat', 'src', 'bat', '{id}', 'updated_at', batch_size => 400);
SET client_min_messages = debug1;
CALL hwm.catch_up('bat');
RESET client_min_messages;
SELECT NOT EXISTS ((SELECT id, updated_at, a, b FROM src EXCEPT ALL SELECT id, updated_at, a, b FROM bat)
             UNION ALL (SELECT id, updated_at, a, b FROM bat EXCEPT ALL SELECT id, updated_at, a, b FROM src)) AS same_as_source;

DROP PUBLICATION load_aside_pub;
DROP SCHEMA load_aside CASCADE;
