-- load_fast: a slice loaded without speculative insertion (issue 31).  A
-- run loads its slice by a plain INSERT when every key is new, else by one
-- MERGE: new keys inserted as a plain INSERT does, changed rows updated,
-- unchanged rows untouched; else by the upsert.  Each case loads the
-- same source into two targets, one by the fast path and one by the upsert
-- (a target with a trigger keeps the upsert), and shows that both hold the
-- same rows; DEBUG1 says which path each run took, and why not the fast one.
-- A slice that holds a key twice ends as the upsert ends it.
\i test/setup.sql
CREATE SCHEMA load_fast;
SET search_path = load_fast, public;
SET datestyle = ISO;

CREATE TABLE src (id int, updated_at timestamptz, a int, b text);
CREATE TABLE fast (id int PRIMARY KEY, updated_at timestamptz, a int, b text,
                   loaded_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE ref (LIKE fast INCLUDING ALL);
-- a trigger that changes nothing: the reference target keeps the upsert
CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER keep_upsert AFTER INSERT ON ref FOR EACH STATEMENT EXECUTE FUNCTION nothing();
SELECT hwm.create_pipeline('fast', 'src', 'fast', '{id}', 'updated_at');
SELECT hwm.create_pipeline('ref', 'src', 'ref', '{id}', 'updated_at');

-- the two targets' loaded columns, compared
CREATE FUNCTION same(x regclass = 'fast', y regclass = 'ref') RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  result boolean;
BEGIN
  EXECUTE format('SELECT NOT EXISTS ((SELECT id, updated_at, a, b FROM %s EXCEPT ALL SELECT id, updated_at, a, b FROM %s)'
                 ' UNION ALL (SELECT id, updated_at, a, b FROM %2$s EXCEPT ALL SELECT id, updated_at, a, b FROM %1$s))', x, y)
    INTO result;
  RETURN result;
END
$$;
CREATE FUNCTION run_both() RETURNS TABLE (pipeline text, rows_upserted bigint)
LANGUAGE sql AS $$
  SELECT 'fast', rows_upserted FROM hwm.run('fast')
  UNION ALL SELECT 'ref', rows_upserted FROM hwm.run('ref')
$$;

INSERT INTO src SELECT g, TIMESTAMPTZ '2020-03-01 00:00+00' + g * INTERVAL '1 hour',
  CASE WHEN g % 4 = 0 THEN NULL ELSE g END, 'b' || g FROM generate_series(1, 20) g;

-- the first run: every key new, into an empty target: built aside and
-- traded in (load_aside shows that path); the reference says why it has
-- no fast path
SET client_min_messages = debug1;
SELECT * FROM run_both();
RESET client_min_messages;
SELECT same(), count(*) FROM fast;

-- new keys (one all NULL), changed rows (NULL to a value, a value to NULL,
-- a value to another, a NULL kept and only updated_at changed): the same
-- rows, the same counts, and only the changed rows rewritten
CREATE TEMP TABLE versions AS SELECT id, ctid AS row_ctid, xmin::text AS row_xmin FROM fast;
UPDATE src SET updated_at = updated_at + INTERVAL '100 days',
  a = CASE id WHEN 4 THEN 40 WHEN 5 THEN NULL WHEN 6 THEN 60 ELSE a END
  WHERE id BETWEEN 4 AND 9;
INSERT INTO src VALUES (21, '2020-07-01 00:00+00', 21, 'b21'), (22, '2020-07-01 00:00+00', NULL, NULL);
SET client_min_messages = debug1;
SELECT * FROM run_both();
RESET client_min_messages;
SELECT same();
SELECT id, a, b FROM fast WHERE id IN (4, 5, 6, 7, 8, 21, 22) ORDER BY id;
SELECT array_agg(id ORDER BY id) AS rewritten FROM fast f JOIN versions v USING (id)
 WHERE (f.ctid, f.xmin::text) IS DISTINCT FROM (v.row_ctid, v.row_xmin);

-- nothing new: nothing loaded by either
SELECT * FROM run_both();

-- the whole source re-sent unchanged (the watermark set back): nothing
-- loaded; the fast path rewrites no row and locks none, where the upsert
-- locks every row it finds (a row lock writes the row's xmax)
SELECT hwm.set_watermark('fast', '2020-01-01 00:00+00'), hwm.set_watermark('ref', '2020-01-01 00:00+00');
TRUNCATE versions;
INSERT INTO versions SELECT id, ctid, xmin::text FROM fast;
SELECT * FROM run_both();
SELECT same(), count(*) AS rewritten FROM fast f JOIN versions v USING (id)
 WHERE (f.ctid, f.xmin::text) IS DISTINCT FROM (v.row_ctid, v.row_xmin);
SELECT (SELECT count(*) FROM fast WHERE xmax::text <> '0') AS fast_locked,
       (SELECT count(*) FROM ref WHERE xmax::text <> '0') AS ref_locked;

-- a big slice (analyzed): half re-sent unchanged, a quarter changed, a
-- quarter new.  The planner now merges the slice with the target along both
-- keys (a merge join; only the hash join is off) instead of probing every
-- key: the same rows as the upsert, and only the changed and new rows
-- written
CREATE TABLE mj_src (id int PRIMARY KEY, updated_at timestamptz, a int, b text);
CREATE INDEX ON mj_src (updated_at);
INSERT INTO mj_src SELECT g, TIMESTAMPTZ '2020-01-01 00:00+00' + g * INTERVAL '1 minute', g, 'b' || g
  FROM generate_series(1, 4000) g;
CREATE TABLE mj_fast (LIKE fast INCLUDING ALL);
CREATE TABLE mj_ref (LIKE fast INCLUDING ALL);
CREATE TRIGGER keep_upsert AFTER INSERT ON mj_ref FOR EACH STATEMENT EXECUTE FUNCTION nothing();
SELECT hwm.create_pipeline('mj_fast', 'mj_src', 'mj_fast', '{id}', 'updated_at');
SELECT hwm.create_pipeline('mj_ref', 'mj_src', 'mj_ref', '{id}', 'updated_at');
SELECT (SELECT rows_upserted FROM hwm.run('mj_fast')), (SELECT rows_upserted FROM hwm.run('mj_ref'));
UPDATE mj_src SET b = b || '!' WHERE id > 3000;
INSERT INTO mj_src SELECT g, TIMESTAMPTZ '2020-01-01 00:00+00' + g * INTERVAL '1 minute', g, 'b' || g
  FROM generate_series(4001, 5000) g;
SELECT hwm.set_watermark(p, '2020-01-02 09:20+00') FROM unnest(ARRAY['mj_fast', 'mj_ref']) p;
ANALYZE mj_src, mj_fast, mj_ref;
TRUNCATE versions;
INSERT INTO versions SELECT id, ctid, xmin::text FROM mj_fast;
SET client_min_messages = debug1;
SELECT (SELECT rows_upserted FROM hwm.run('mj_fast')), (SELECT rows_upserted FROM hwm.run('mj_ref'));
RESET client_min_messages;
SELECT same('mj_fast', 'mj_ref'), count(*) FROM mj_fast;
SELECT count(*) AS rewritten, min(id), max(id) FROM mj_fast f JOIN versions v USING (id)
 WHERE (f.ctid, f.xmin::text) IS DISTINCT FROM (v.row_ctid, v.row_xmin);

-- a slice holding a key twice: the fast path fails, the upsert says what it
-- always said, nothing changes
INSERT INTO src VALUES (30, '2020-08-01 00:00+00', 1, 'x'), (30, '2020-08-01 00:01+00', 2, 'y');
SELECT test_fingerprint('fast') AS before \gset
\set SHOW_CONTEXT never
SET client_min_messages = debug1;
SELECT * FROM hwm.run('fast');
RESET client_min_messages;
\set SHOW_CONTEXT errors
SELECT test_fingerprint('fast') = :'before' AS unchanged;
DELETE FROM src WHERE id = 30 AND b = 'y';
SELECT * FROM run_both();
SELECT same();

-- a key already in the target twice in a slice (a source that keeps every
-- version of a row, re-read): the upsert fails or not depending on the
-- order it reads the rows in (it may lock a row twice, but not touch a row
-- it updated), where the MERGE, leaving unchanged rows alone, succeeds
-- either way; the fast path finds the key twice and runs the upsert, so
-- that both targets end alike, or both runs fail alike
CREATE TABLE dsrc (LIKE src);
CREATE TABLE dfast (LIKE fast INCLUDING ALL);
CREATE TABLE dref (LIKE fast INCLUDING ALL);
CREATE TRIGGER keep_upsert AFTER INSERT ON dref FOR EACH STATEMENT EXECUTE FUNCTION nothing();
INSERT INTO dsrc VALUES (1, '2024-01-01 00:00+00', 1, 'one'), (2, '2024-01-01 00:00+00', 2, 'two');
SELECT hwm.create_pipeline('dfast', 'dsrc', 'dfast', '{id}', 'updated_at');
SELECT hwm.create_pipeline('dref', 'dsrc', 'dref', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('dfast');
SELECT rows_upserted FROM hwm.run('dref');
-- key 1 unchanged, then changed: the upsert locks the row, then updates it
INSERT INTO dsrc VALUES (1, '2024-01-02 00:00+00', 10, 'one, changed');
SELECT hwm.set_watermark('dfast', '2023-12-31 00:00+00'), hwm.set_watermark('dref', '2023-12-31 00:00+00');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('dfast');
SELECT rows_upserted FROM hwm.run('dref');
RESET client_min_messages;
SELECT same('dfast', 'dref'), (SELECT b FROM dfast WHERE id = 1);
-- key 1 changed, then unchanged: the upsert updates the row, then may not
-- touch it again; the MERGE alone would have succeeded
TRUNCATE dsrc;
INSERT INTO dsrc VALUES (1, '2024-01-03 00:00+00', 100, 'one, changed again'),
                        (1, '2024-01-02 00:00+00', 10, 'one, changed'),
                        (2, '2024-01-01 00:00+00', 2, 'two');
SELECT hwm.set_watermark('dfast', '2023-12-31 00:00+00'), hwm.set_watermark('dref', '2023-12-31 00:00+00');
SELECT test_fingerprint('dfast') AS before \gset
\set SHOW_CONTEXT never
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('dfast');
SELECT rows_upserted FROM hwm.run('dref');
RESET client_min_messages;
\set SHOW_CONTEXT errors
SELECT test_fingerprint('dfast') = :'before' AS unchanged, same('dfast', 'dref');
-- both unchanged (the same row twice): both runs load nothing
DELETE FROM dsrc WHERE b = 'one, changed again';
INSERT INTO dsrc VALUES (1, '2024-01-02 00:00+00', 10, 'one, changed');
SELECT hwm.set_watermark('dfast', '2023-12-31 00:00+00'), hwm.set_watermark('dref', '2023-12-31 00:00+00');
SELECT rows_upserted FROM hwm.run('dfast');
SELECT rows_upserted FROM hwm.run('dref');
SELECT same('dfast', 'dref');
-- the same in a batch (catch_up reads up to the batch's end)
CREATE TABLE dbat (LIKE fast INCLUDING ALL);
INSERT INTO dbat SELECT * FROM dfast;
SELECT hwm.create_pipeline('dbat', 'dsrc', 'dbat', '{id}', 'updated_at', batch_size => 2,
                           initial_watermark => '2023-12-31 00:00+00');
SET client_min_messages = debug1;
CALL hwm.catch_up('dbat');
RESET client_min_messages;
SELECT same('dbat', 'dfast');
-- a source whose unique index covers the key holds no key twice: the fast
-- path does not look for one, and loads as before
CREATE TABLE usrc (LIKE src);
CREATE UNIQUE INDEX ON usrc (id);
CREATE TABLE ufast (LIKE fast INCLUDING ALL);
INSERT INTO ufast (id, updated_at, a, b) VALUES (1, '2024-01-01 00:00+00', 1, 'one'),
                                               (2, '2024-01-01 00:00+00', 2, 'two');
INSERT INTO usrc VALUES (1, '2024-01-02 00:00+00', 10, 'one, changed'),
                        (2, '2024-01-01 00:00+00', 2, 'two'), (3, '2024-01-02 00:00+00', 3, 'three');
SELECT hwm.create_pipeline('ufast', 'usrc', 'ufast', '{id}', 'updated_at');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('ufast');
RESET client_min_messages;
SELECT id, a, b FROM ufast ORDER BY id;

-- batches (catch_up reads each batch up to its end): the same rows
UPDATE src SET updated_at = updated_at + INTERVAL '1 year', b = b || '!' WHERE id % 3 = 0;
INSERT INTO src SELECT g, TIMESTAMPTZ '2021-06-01 00:00+00' + g * INTERVAL '1 hour', g, 'b' || g
  FROM generate_series(40, 60) g;
CREATE TABLE bfast (LIKE fast INCLUDING ALL);
CREATE TABLE bref (LIKE fast INCLUDING ALL);
CREATE TRIGGER keep_upsert AFTER INSERT ON bref FOR EACH STATEMENT EXECUTE FUNCTION nothing();
SELECT hwm.create_pipeline('bfast', 'src', 'bfast', '{id}', 'updated_at', batch_size => 7);
SELECT hwm.create_pipeline('bref', 'src', 'bref', '{id}', 'updated_at', batch_size => 7);
CALL hwm.catch_up('bfast');
CALL hwm.catch_up('bref');
SELECT same('bfast', 'bref'), count(*) FROM bfast;
SELECT * FROM run_both();
SELECT same(), count(*) FROM fast;

-- a key a writer inserted meanwhile (here: in the target before the run,
-- not from the source): the fast path's MERGE updates it like the upsert
INSERT INTO fast VALUES (70, '2020-01-01', 0, 'theirs');
INSERT INTO ref VALUES (70, '2020-01-01', 0, 'theirs');
INSERT INTO src VALUES (70, '2022-01-01 00:00+00', 70, 'ours');
SELECT * FROM run_both();
SELECT same(), (SELECT b FROM fast WHERE id = 70);

-- a BEFORE trigger on the target: the fast path is not taken (the upsert
-- fires BEFORE INSERT for every row of the slice, existing keys too), and
-- the run says so at DEBUG1
CREATE TABLE trig (LIKE fast INCLUDING ALL);
CREATE FUNCTION upper_b() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.b := upper(NEW.b); RETURN NEW; END$$;
CREATE TRIGGER upper_b BEFORE INSERT ON trig FOR EACH ROW EXECUTE FUNCTION upper_b();
INSERT INTO trig (id, updated_at, a, b) VALUES (1, '2020-01-01', 1, 'old');
SELECT hwm.create_pipeline('trig', 'src', 'trig', '{id}', 'updated_at');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('trig');
RESET client_min_messages;
SELECT id, b FROM trig WHERE id IN (1, 2, 70) ORDER BY id;

-- a foreign key on the target: the fast path is taken and checks it as the
-- upsert does (the same error, nothing changed; then the same rows)
CREATE TABLE parent (a int PRIMARY KEY);
INSERT INTO parent SELECT g FROM generate_series(0, 59) g;
CREATE TABLE fk_fast (LIKE fast INCLUDING ALL, FOREIGN KEY (a) REFERENCES parent);
CREATE TABLE fk_ref (LIKE fast INCLUDING ALL, FOREIGN KEY (a) REFERENCES parent);
CREATE TRIGGER keep_upsert AFTER INSERT ON fk_ref FOR EACH STATEMENT EXECUTE FUNCTION nothing();
SELECT hwm.create_pipeline('fk_fast', 'src', 'fk_fast', '{id}', 'updated_at');
SELECT hwm.create_pipeline('fk_ref', 'src', 'fk_ref', '{id}', 'updated_at');
\set SHOW_CONTEXT never
SELECT rows_upserted FROM hwm.run('fk_fast');
SELECT rows_upserted FROM hwm.run('fk_ref');
\set SHOW_CONTEXT errors
SELECT count(*) FROM fk_fast;
INSERT INTO parent SELECT g FROM generate_series(60, 70) g;
SELECT rows_upserted FROM hwm.run('fk_fast');
SELECT rows_upserted FROM hwm.run('fk_ref');
SELECT same('fk_fast', 'fk_ref');

-- a unique key that may be NULL (a unique index, not a primary key): a NULL
-- key never matches, so both paths insert it again on each run
CREATE TABLE nsrc (k int, updated_at timestamptz, v text);
CREATE TABLE nfast (k int UNIQUE, updated_at timestamptz, v text);
CREATE TABLE nref (LIKE nfast INCLUDING ALL);
CREATE TRIGGER keep_upsert AFTER INSERT ON nref FOR EACH STATEMENT EXECUTE FUNCTION nothing();
SELECT hwm.create_pipeline('nfast', 'nsrc', 'nfast', '{k}', 'updated_at');
SELECT hwm.create_pipeline('nref', 'nsrc', 'nref', '{k}', 'updated_at');
INSERT INTO nsrc VALUES (1, '2026-01-01', 'one'), (NULL, '2026-01-02', 'none');
SELECT rows_upserted FROM hwm.run('nfast');
SELECT rows_upserted FROM hwm.run('nref');
UPDATE nsrc SET updated_at = '2026-02-01';
SELECT rows_upserted FROM hwm.run('nfast');
SELECT rows_upserted FROM hwm.run('nref');
SELECT test_fingerprint('nfast') = test_fingerprint('nref') AS same, count(*) FROM nfast;

-- other targets that keep the upsert, each saying why: row security, a
-- column whose type differs from the source's
CREATE TABLE rls (LIKE fast INCLUDING ALL);
ALTER TABLE rls ENABLE ROW LEVEL SECURITY;
SELECT hwm.create_pipeline('rls', 'src', 'rls', '{id}', 'updated_at');
CREATE TABLE typed (id bigint PRIMARY KEY, updated_at timestamptz, a int, b text);
SELECT hwm.create_pipeline('typed', 'src', 'typed', '{id}', 'updated_at');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('rls');
SELECT rows_upserted FROM hwm.run('typed');
RESET client_min_messages;

-- a key that is an identity column GENERATED ALWAYS: the first load is
-- built aside (the table aside has the column without its identity), the
-- fast paths insert with OVERRIDING SYSTEM VALUE, as the upsert does
CREATE TABLE idt (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, updated_at timestamptz, a int, b text);
SELECT hwm.create_pipeline('idt', 'src', 'idt', '{id}', 'updated_at');
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('idt');
UPDATE src SET updated_at = '2023-01-01', a = -1 WHERE id = 1;
INSERT INTO src VALUES (80, '2023-01-01', 80, 'b80');
SELECT rows_upserted FROM hwm.run('idt');
RESET client_min_messages;
SELECT NOT EXISTS ((SELECT id, updated_at, a, b FROM src EXCEPT ALL SELECT id, updated_at, a, b FROM idt)
             UNION ALL (SELECT id, updated_at, a, b FROM idt EXCEPT ALL SELECT id, updated_at, a, b FROM src)) AS same_as_source;

DROP SCHEMA load_fast CASCADE;
