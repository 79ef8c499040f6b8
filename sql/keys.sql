-- keys: one definition of a key (README, Keys).  A key is what the target's
-- unique index says it is (its columns, operator classes and collations),
-- applied to source values stored in the target columns' types.  The load,
-- the tombstones, the overwrite and the reconcile all compare keys so: none
-- deletes or keeps a row that another treats otherwise.  Each case below
-- lost a row before the definition was one.
\i test/setup.sql
CREATE SCHEMA ky;
SET search_path = ky, public;
SET datestyle = ISO;
CREATE EXTENSION IF NOT EXISTS citext SCHEMA public;
CREATE COLLATION ky.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- 1. a source numeric stored in a numeric(10,0) key: 1.4 is key 1.  The
-- reconcile (its dry run, its batches) keeps it; a second run loads nothing
-- new and the row stays.
CREATE TABLE num_src (id numeric PRIMARY KEY, v text, updated_at timestamptz NOT NULL);
CREATE TABLE num_tgt (id numeric(10,0) PRIMARY KEY, v text, updated_at timestamptz);
INSERT INTO num_src VALUES (1.4, 'one', '2024-01-01'), (2, 'two', '2024-01-01'), (7.6, 'eight', '2024-01-01');
SELECT hwm.create_pipeline('num', 'num_src', 'num_tgt', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('num');
TABLE num_tgt ORDER BY id;
CALL hwm.reconcile('num', dry_run => true);
CALL hwm.reconcile('num', batch_size => 1);
CALL hwm.reconcile('num', '1', '1');
SELECT rows_upserted FROM hwm.run('num');
TABLE num_tgt ORDER BY id;
-- a key the source lost is still deleted: 7.6 (key 8) goes, 1.4 stays
DELETE FROM num_src WHERE id = 7.6;
CALL hwm.reconcile('num', batch_size => 1);
TABLE num_tgt ORDER BY id;
-- the MERGE compares keys as written: a typmod that rounds keeps the upsert
SET client_min_messages = debug1;
UPDATE num_src SET v = 'uno', updated_at = '2024-01-02' WHERE id = 1.4;
SELECT rows_upserted FROM hwm.run('num');
RESET client_min_messages;
TABLE num_tgt ORDER BY id;

-- 2. a composite key (citext, int) whose text changed case in the source:
-- reconcile by batches of one key keeps all three rows, as its dry run says.
CREATE TABLE ci_src (name citext, n int, v int, updated_at timestamptz NOT NULL, PRIMARY KEY (name, n));
CREATE TABLE ci_tgt (name citext, n int, v int, updated_at timestamptz, PRIMARY KEY (name, n));
INSERT INTO ci_src VALUES ('Ada', 1, 1, '2024-01-01'), ('bob', 1, 2, '2024-01-01'), ('Cy', 2, 3, '2024-01-01');
SELECT hwm.create_pipeline('ci', 'ci_src', 'ci_tgt', '{name,n}', 'updated_at');
SELECT rows_upserted FROM hwm.run('ci');
-- the same keys under citext, no new watermark value (cases both ways, so
-- that text's order puts some outside a batch's bounds in any locale)
UPDATE ci_src SET name = CASE v WHEN 1 THEN 'ada' WHEN 2 THEN 'BOB' ELSE 'cY' END;
CALL hwm.reconcile('ci', dry_run => true);
SELECT * FROM hwm.reconcile_preview('ci');
CALL hwm.reconcile('ci', batch_size => 1);
SELECT name, n, v FROM ci_tgt ORDER BY v;
-- a run with nothing new writes nothing: equal keys are rewritten only by
-- the rows a slice holds
SELECT rows_upserted FROM hwm.run('ci');
SELECT name, n, v FROM ci_tgt ORDER BY v;
-- the same rows again with a new watermark value: now the target has the
-- source's spelling of each key
UPDATE ci_src SET updated_at = '2024-01-02';
SELECT rows_upserted FROM hwm.run('ci');
SELECT name, n, v FROM ci_tgt ORDER BY v;
SELECT rows_upserted FROM hwm.run('ci');
-- the batch bounds order keys as citext does: a key range by its first column
DELETE FROM ci_src WHERE v = 2;
CALL hwm.reconcile('ci', 'a', 'BZ', batch_size => 1);
SELECT name, n, v FROM ci_tgt ORDER BY v;

-- 3. a unique index with a case-insensitive collation on a column whose own
-- collation is deterministic: the upsert matches 'Ada@X.org' to the stored
-- 'ada@x.org' through the index (and writes the source's spelling, as for
-- any column), and the reconcile keeps that row.
CREATE TABLE em_src (email text PRIMARY KEY, v int, updated_at timestamptz NOT NULL, deleted boolean);
CREATE TABLE em_tgt (email text, v int, updated_at timestamptz);
CREATE UNIQUE INDEX em_tgt_email ON em_tgt (email COLLATE ky.ci);
INSERT INTO em_src VALUES ('ada@x.org', 1, '2024-01-01', false), ('bob@x.org', 2, '2024-01-01', false);
SELECT hwm.create_pipeline('em', 'em_src', 'em_tgt', '{email}', 'updated_at', delete_column => 'deleted');
SELECT rows_upserted FROM hwm.run('em');
UPDATE em_src SET email = 'Ada@X.org', v = 10, updated_at = '2024-01-02' WHERE email = 'ada@x.org';
SELECT rows_upserted FROM hwm.run('em');
SELECT email, v FROM em_tgt ORDER BY v;
CALL hwm.reconcile('em', dry_run => true);
CALL hwm.reconcile('em');
SELECT email, v FROM em_tgt ORDER BY v;
-- 4. a tombstone through the same index deletes the row it names
UPDATE em_src SET email = 'BOB@x.org', deleted = true, updated_at = '2024-01-03' WHERE email = 'bob@x.org';
SELECT rows_upserted, rows_deleted FROM hwm.run('em');
SELECT email, v FROM em_tgt ORDER BY v;

-- 5. an overwrite does not bring back a deleted key whose older live row
-- has no watermark value (NULL is older than any value), and 6. the
-- reconcile honours the delete marker of a row soft-deleted without a new
-- watermark value, as the overwrite does.
CREATE TABLE ev_src (id int, day date, v int, updated_at timestamptz, gone boolean);
CREATE TABLE ev_tgt (id int PRIMARY KEY, day date, v int, updated_at timestamptz);
INSERT INTO ev_src VALUES (1, '2024-01-01', 1, '2024-01-01', false), (2, '2024-01-01', 2, '2024-01-01', false),
                          (3, '2024-01-01', 3, '2024-01-01', false);
SELECT hwm.create_pipeline('ev', 'ev_src', 'ev_tgt', '{id}', 'updated_at', 'day', delete_column => 'gone');
SELECT rows_upserted FROM hwm.run('ev');
-- key 1: its live row loses its watermark value, and a tombstone arrives
UPDATE ev_src SET updated_at = NULL WHERE id = 1;
INSERT INTO ev_src VALUES (1, '2024-01-01', 1, '2024-01-05', true);
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('ev', '2024-01-01', '2024-01-01');
SELECT id, v FROM ev_tgt ORDER BY id;
-- key 2: soft-deleted in place, no new watermark value: no run sees it
UPDATE ev_src SET gone = true WHERE id = 2;
CALL hwm.reconcile('ev', dry_run => true);
-- the dry run as a row (dbt reads it so): the same count and keys
SELECT * FROM hwm.reconcile_preview('ev');
SELECT * FROM hwm.reconcile_preview('ev', '3', '3');
CALL hwm.reconcile('ev');
SELECT id, v FROM ev_tgt ORDER BY id;
-- and the overwrite agrees: nothing more to delete or bring back
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('ev', '2024-01-01', '2024-01-01');
SELECT id, v FROM ev_tgt ORDER BY id;

-- 7. timestamps of another precision: the source's timestamp(6) stored in
-- a timestamp(0) key; reconcile keeps what the load stored
CREATE TABLE ts_src (at timestamp(6) PRIMARY KEY, v int, updated_at timestamptz NOT NULL);
CREATE TABLE ts_tgt (at timestamp(0) PRIMARY KEY, v int, updated_at timestamptz);
INSERT INTO ts_src VALUES ('2024-01-01 10:00:00.4', 1, '2024-01-01'), ('2024-01-01 10:00:01.6', 2, '2024-01-01');
SELECT hwm.create_pipeline('ts', 'ts_src', 'ts_tgt', '{at}', 'updated_at');
SELECT rows_upserted FROM hwm.run('ts');
CALL hwm.reconcile('ts', batch_size => 1);
SELECT at, v FROM ts_tgt ORDER BY at;

-- hwm.reconcile_preview refuses what the reconcile refuses
SELECT * FROM hwm.reconcile_preview(NULL);
SELECT * FROM hwm.reconcile_preview('nosuch');
SELECT * FROM hwm.reconcile_preview('num', '5', '1');
SELECT * FROM hwm.reconcile_preview('num', 'five');
SELECT * FROM hwm.reconcile_preview('num', '');

-- refusals, at declaration, changing nothing: two unique indexes on the
-- key's columns that disagree about equality (both are the upsert's
-- arbiters)
CREATE TABLE two_tgt (email text, v int, updated_at timestamptz);
CREATE UNIQUE INDEX two_tgt_plain ON two_tgt (email);
CREATE UNIQUE INDEX two_tgt_ci ON two_tgt (email COLLATE ky.ci);
SELECT hwm.create_pipeline('two', 'em_src', 'two_tgt', '{email}', 'updated_at');
-- ... and a pipeline whose target gains one later fails its next run the same way
DROP INDEX two_tgt_ci;
SELECT hwm.create_pipeline('two', 'em_src', 'two_tgt', '{email}', 'updated_at');
CREATE UNIQUE INDEX two_tgt_ci ON two_tgt (email COLLATE ky.ci);
SELECT rows_upserted FROM hwm.run('two');
SELECT count(*) AS two_rows FROM two_tgt;
SELECT hwm.drop_pipeline('two');
-- two indexes that agree are fine
DROP INDEX two_tgt_ci;
CREATE UNIQUE INDEX two_tgt_again ON two_tgt (email);
SELECT hwm.create_pipeline('two', 'em_src', 'two_tgt', '{email}', 'updated_at');
SELECT rows_upserted FROM hwm.run('two');

SELECT count(hwm.drop_pipeline(pipeline)) AS dropped FROM hwm.state
 WHERE pipeline IN ('num', 'ci', 'em', 'ev', 'ts', 'two');
SET client_min_messages = warning;
DROP SCHEMA ky CASCADE;
