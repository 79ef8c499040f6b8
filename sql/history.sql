-- history: history => true keeps every version of a key (issue 40).  For
-- each key of a slice, in watermark order: a change in a tracked column
-- opens a version at the row's watermark value and closes the one before
-- there; a row equal in the tracked columns updates the current version's
-- other columns in place; a tombstone closes the current version and opens
-- none.  Reruns and overlapping batches apply nothing twice; a row older
-- than its key's history that disagrees with it is refused and counted.
-- Every bad input is an error that changes nothing.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
CREATE SCHEMA hi;

-- a change log: several versions of a key in one slice, a soft delete
CREATE TABLE hi.log (id int NOT NULL, ts timestamptz NOT NULL, status text, note text,
                     deleted boolean NOT NULL DEFAULT false);
CREATE TABLE hi.hist (id int NOT NULL, ts timestamptz, status text, note text,
                      valid_from timestamptz NOT NULL, valid_to timestamptz,
                      PRIMARY KEY (id, valid_from));
-- one current version per key, enforced; and the current rows' index
CREATE UNIQUE INDEX hist_current ON hi.hist (id) WHERE valid_to IS NULL;
SELECT hwm.create_pipeline('hi', 'hi.log', 'hi.hist', '{id}', 'ts', history => true,
                           history_columns => '{status}', delete_column => 'deleted');
SELECT history_columns, valid_from_column, valid_to_column FROM hwm.state WHERE pipeline = 'hi';
INSERT INTO hi.log (id, ts, status, note) VALUES
  (1, '2026-01-01 01:00', 'new', 'a'),
  (1, '2026-01-01 02:00', 'new', 'b'),      -- equal status: note updated in place
  (1, '2026-01-01 03:00', 'paid', 'c'),     -- a new version
  (2, '2026-01-01 01:00', 'new', 'x');
INSERT INTO hi.log (id, ts, status, note, deleted) VALUES
  (2, '2026-01-01 04:00', 'new', 'y', true), -- closes 2's version, opens none
  (2, '2026-01-01 05:00', 'new', 'z', false); -- back: a new version, equal status or not
SET client_min_messages = notice;
SELECT rows_upserted, rows_inserted, rows_deleted, watermark_after FROM hwm.run('hi');
SET client_min_messages = warning;
SELECT * FROM hi.hist ORDER BY id, valid_from;
SELECT rows_upserted, rows_inserted, rows_deleted, rows_refused FROM hwm.runs
 WHERE pipeline = 'hi' ORDER BY run_id DESC LIMIT 1;

-- the next slice continues each key from its current version
INSERT INTO hi.log (id, ts, status, note) VALUES
  (1, '2026-01-01 06:00', 'paid', 'd'),     -- equal: updates the current version
  (1, '2026-01-01 07:00', 'shipped', 'e'),
  (2, '2026-01-01 07:00', 'new', 'w'),      -- equal: in place
  (3, '2026-01-01 07:00', 'new', 'q');      -- a new key
SELECT rows_upserted, rows_deleted FROM hwm.run('hi');
SELECT * FROM hi.hist ORDER BY id, valid_from;
-- a tombstone closes the current version; nothing else moves
INSERT INTO hi.log (id, ts, status, deleted) VALUES (3, '2026-01-01 08:00', 'new', true),
  (9, '2026-01-01 08:00', 'never', true);   -- a key never seen: nothing
SELECT rows_upserted, rows_deleted FROM hwm.run('hi');
SELECT * FROM hi.hist WHERE id IN (3, 9) ORDER BY id, valid_from;

-- as of a time, and the current rows
SELECT id, status, note FROM hi.hist
 WHERE valid_from <= '2026-01-01 03:30' AND (valid_to IS NULL OR valid_to > '2026-01-01 03:30')
 ORDER BY id;
SELECT id, status FROM hi.hist WHERE valid_to IS NULL ORDER BY id;

-- a rerun from the start applies nothing twice: every row is in the history
SELECT * INTO TEMP before_rerun FROM hi.hist;
SELECT hwm.set_watermark('hi', NULL);
SELECT rows_upserted, rows_deleted FROM hwm.run('hi');
SELECT count(*) AS changed FROM (
  (SELECT * FROM hi.hist EXCEPT SELECT * FROM before_rerun)
  UNION ALL (SELECT * FROM before_rerun EXCEPT SELECT * FROM hi.hist)) AS d;
SELECT rows_refused FROM hwm.runs WHERE pipeline = 'hi' ORDER BY run_id DESC LIMIT 1;

-- a source that rewrites an old row: refused, counted, said, never applied
INSERT INTO hi.log (id, ts, status, note) VALUES (1, '2026-01-01 02:30', 'void', 'rewritten');
SELECT hwm.set_watermark('hi', '2026-01-01 02:00');
SET client_min_messages = warning;
SELECT rows_upserted FROM hwm.run('hi');
SELECT rows_refused FROM hwm.runs WHERE pipeline = 'hi' ORDER BY run_id DESC LIMIT 1;
SELECT count(*) AS changed FROM (
  (SELECT * FROM hi.hist EXCEPT SELECT * FROM before_rerun)
  UNION ALL (SELECT * FROM before_rerun EXCEPT SELECT * FROM hi.hist)) AS d;
DELETE FROM hi.log WHERE note = 'rewritten';

-- overlapping batches (catch_up with batch_size) give the same history
CREATE TABLE hi.hist2 (LIKE hi.hist INCLUDING ALL);
SELECT hwm.create_pipeline('hi2', 'hi.log', 'hi.hist2', '{id}', 'ts', history => true,
                           history_columns => '{status}', delete_column => 'deleted',
                           batch_size => 2);
CALL hwm.catch_up('hi2');
SELECT count(*) AS differ FROM (
  (SELECT * FROM hi.hist EXCEPT SELECT * FROM hi.hist2)
  UNION ALL (SELECT * FROM hi.hist2 EXCEPT SELECT * FROM hi.hist)) AS d;

-- a rerun in batches: rows a current version absorbed (equal in the
-- tracked columns) are not applied again, so its untracked columns never go
-- back to an older row's (the target loads the watermark column: it knows
-- the last row absorbed)
INSERT INTO hi.log (id, ts, status, note) VALUES (5, '2026-01-01 10:00', 'new', 'n1'),
  (5, '2026-01-01 11:00', 'new', 'n2'), (5, '2026-01-01 12:00', 'new', 'n3'), (5, '2026-01-01 13:00', 'new', 'n4');
CALL hwm.catch_up('hi2');
SELECT id, ts, note, valid_from, valid_to FROM hi.hist2 WHERE id = 5;
SELECT hwm.set_watermark('hi2', '2026-01-01 10:00');
SELECT rows_upserted, rows_inserted FROM hwm.run('hi2');   -- a batch of two absorbed rows: nothing
SELECT id, ts, note, valid_from, valid_to FROM hi.hist2 WHERE id = 5;
CALL hwm.catch_up('hi2');
DELETE FROM hi.log WHERE id = 5;

-- default tracked columns: all but the key, the watermark and the marker;
-- other bound names
CREATE TABLE hi.src (id int, ts bigint NOT NULL, a int, b text);
CREATE TABLE hi.dim (id int, ts bigint, a int, b text, since bigint NOT NULL, until bigint,
                     PRIMARY KEY (id, since));
SELECT hwm.create_pipeline('dim', 'hi.src', 'hi.dim', '{id}', 'ts', history => true,
                           valid_from_column => 'since', valid_to_column => 'until');
INSERT INTO hi.src VALUES (1, 10, 1, 'x'), (1, 20, 1, 'x'), (1, 30, 1, 'y'), (1, 40, 2, 'y'), (1, 50, NULL, 'y');
SELECT rows_upserted FROM hwm.run('dim');
SELECT * FROM hi.dim ORDER BY id, since;
-- running again with nothing new changes nothing
SELECT rows_upserted FROM hwm.run('dim');
-- alter_pipeline: history_columns changes what later runs track; the
-- versions kept stay; reset goes back to the default
SELECT hwm.alter_pipeline('dim', history_columns => '{b}');
SELECT history_columns FROM hwm.state WHERE pipeline = 'dim';
INSERT INTO hi.src VALUES (1, 60, 7, 'y'), (1, 70, 7, 'z');   -- a alone changes nothing now
SELECT rows_upserted FROM hwm.run('dim');
SELECT * FROM hi.dim WHERE since >= 50 ORDER BY id, since;
SELECT hwm.alter_pipeline('dim', reset => '{history_columns}');
SELECT history_columns IS NULL AS default_columns FROM hwm.state WHERE pipeline = 'dim';
-- refused: a tracked column that is not loaded, history_columns on a
-- pipeline without history (given or reset)
SELECT hwm.alter_pipeline('dim', history_columns => '{nope}');
\echo :LAST_ERROR_SQLSTATE
SELECT history_columns IS NULL AS unchanged FROM hwm.state WHERE pipeline = 'dim';
CREATE TABLE hi.flat (id int PRIMARY KEY, ts bigint, a int, b text);
SELECT hwm.create_pipeline('flat', 'hi.src', 'hi.flat', '{id}', 'ts');
SELECT hwm.alter_pipeline('flat', history_columns => '{a}');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('flat', reset => '{history_columns}');
\echo :LAST_ERROR_SQLSTATE

-- one key as the target's unique index says: source values in the
-- target's types (1.4 is key 1 of a numeric(10,0) target)
CREATE TABLE hi.nsrc (k numeric, ts int NOT NULL, v text);
CREATE TABLE hi.nhist (k numeric(10,0) NOT NULL, ts int, v text, valid_from int NOT NULL, valid_to int,
                       PRIMARY KEY (k, valid_from));
SELECT hwm.create_pipeline('nk', 'hi.nsrc', 'hi.nhist', '{k}', 'ts', history => true);
INSERT INTO hi.nsrc VALUES (1.4, 1, 'a'), (1, 2, 'b'), (2, 3, 'x'), (0.6, 4, 'b');
SELECT rows_upserted FROM hwm.run('nk');
SELECT * FROM hi.nhist ORDER BY k, valid_from;

-- the fast path (a key's only row in the slice, newer than its history,
-- no tombstone: the common slice) keeps the history the windows keep: one
-- log, a row of each key a run into fa (keys 1-3 of round 2 take the fast
-- path beside key 4's tombstone), all of it in one run into wi (every key
-- several rows).  The target has a column named t, a dropped column and
-- one the source has not.
CREATE TABLE hi.flog (id int, ts int NOT NULL, t text, u text, gone boolean);
CREATE TABLE hi.fa (id int NOT NULL, dropped int, ts int, t text, u text, extra text DEFAULT 'e',
                    valid_from int NOT NULL, valid_to int, PRIMARY KEY (id, valid_from));
ALTER TABLE hi.fa DROP COLUMN dropped;
CREATE TABLE hi.wi (LIKE hi.fa INCLUDING ALL);
SELECT hwm.create_pipeline(p, 'hi.flog', 'hi.' || p, '{id}', 'ts', history => true,
                           history_columns => '{t}', delete_column => 'gone')
  FROM unnest(ARRAY['fa', 'wi']) AS p;
INSERT INTO hi.flog VALUES (1, 1, 'a', 'x', false), (2, 1, 'a', 'x', false), (3, 1, 'a', 'x', false),
                           (4, 1, 'a', 'x', false);                    -- new keys
SELECT rows_upserted, rows_inserted, rows_deleted FROM hwm.run('fa');
INSERT INTO hi.flog VALUES (1, 2, 'b', 'x', false),                   -- tracked: closes, opens
                           (2, 2, 'a', 'y', false),                   -- untracked: in place
                           (3, 2, 'a', 'x', false),                   -- equal but ts: in place
                           (4, 2, NULL, NULL, true);                  -- a tombstone
SELECT rows_upserted, rows_inserted, rows_deleted FROM hwm.run('fa');
INSERT INTO hi.flog VALUES (4, 3, 'a', 'z', false),                   -- back, no current version
                           (1, 3, 'a', 'x', false),                   -- back to its first value
                           (5, 3, NULL, NULL, false);                 -- a new key, NULLs
SELECT rows_upserted, rows_inserted, rows_deleted FROM hwm.run('fa');
INSERT INTO hi.flog VALUES (5, 4, 'c', NULL, false), (2, 4, NULL, 'y', false);  -- from and to NULL
SELECT rows_upserted, rows_inserted, rows_deleted FROM hwm.run('fa');
SELECT rows_upserted, rows_inserted, rows_deleted FROM hwm.run('wi');
SELECT * FROM hi.fa ORDER BY id, valid_from;
SELECT (SELECT count(*) FROM (TABLE hi.fa EXCEPT ALL TABLE hi.wi) AS x) AS only_fast,
       (SELECT count(*) FROM (TABLE hi.wi EXCEPT ALL TABLE hi.fa) AS x) AS only_windows;
-- hwm.status says which pipelines keep a history
SELECT pipeline, kind FROM hwm.status WHERE pipeline IN ('fa', 'flat') ORDER BY 1;
-- a rerun of fa from the start: every row a replay, nothing applied
SELECT hwm.set_watermark('fa', NULL);
SELECT rows_upserted, rows_inserted, rows_deleted FROM hwm.run('fa');
SELECT rows_refused FROM hwm.runs WHERE pipeline = 'fa' ORDER BY run_id DESC LIMIT 1;
SELECT (SELECT count(*) FROM (TABLE hi.fa EXCEPT ALL TABLE hi.wi) AS x) AS only_fast;

-- what a history pipeline refuses, each an error that changes nothing
CALL hwm.reconcile('hi');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.schedule_reconcile('hi', '1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('hi', partition_column => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT partition_column FROM hwm.state WHERE pipeline = 'hi';
CREATE TABLE hi.t (id int NOT NULL, ts timestamptz, status text, note text,
                   valid_from timestamptz NOT NULL, valid_to timestamptz,
                   PRIMARY KEY (id, valid_from));
-- history_columns, valid_from_column or valid_to_column without history
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history_columns => '{status}');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', valid_from_column => 'valid_from');
\echo :LAST_ERROR_SQLSTATE
-- a partition column, a lookback
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', partition_column => 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
-- a tracked column that does not exist, one of the key, one named twice, a NULL
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history => true, history_columns => '{nope}');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history => true, history_columns => '{id}');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history => true, history_columns => '{status,status}');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history => true, history_columns => ARRAY[NULL]);
\echo :LAST_ERROR_SQLSTATE
-- the bounds: missing, of another type, the same column, in the key, NULL-able start, NOT NULL end
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history => true, valid_to_column => 'ends');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE hi.t2 (id int NOT NULL, ts timestamptz, valid_from date NOT NULL, valid_to date, PRIMARY KEY (id, valid_from));
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t2', '{id}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id}', 'ts', history => true,
                           valid_from_column => 'valid_from', valid_to_column => 'valid_from');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t', '{id,valid_from}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE hi.t3 (id int NOT NULL, ts timestamptz, valid_from timestamptz, valid_to timestamptz);
CREATE UNIQUE INDEX ON hi.t3 (id, valid_from);
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t3', '{id}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE hi.t4 (id int NOT NULL, ts timestamptz, valid_from timestamptz NOT NULL, valid_to timestamptz NOT NULL,
                    PRIMARY KEY (id, valid_from));
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t4', '{id}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
-- no unique key on the key and valid_from (the key alone is not one)
CREATE TABLE hi.t5 (id int PRIMARY KEY, ts timestamptz, valid_from timestamptz NOT NULL, valid_to timestamptz);
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t5', '{id}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
-- a key that may be NULL
CREATE TABLE hi.t6 (id int, ts timestamptz, valid_from timestamptz NOT NULL, valid_to timestamptz);
CREATE UNIQUE INDEX ON hi.t6 (id, valid_from);
SELECT hwm.create_pipeline('x', 'hi.log', 'hi.t6', '{id}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
-- a source with a column of the bound's name
CREATE VIEW hi.v AS SELECT id, ts, status, ts AS valid_from FROM hi.log;
SELECT hwm.create_pipeline('x', 'hi.v', 'hi.t', '{id}', 'ts', history => true);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM hwm.state WHERE pipeline = 'x';

-- a tracked column dropped from the target after the pipeline was created
ALTER TABLE hi.hist DROP COLUMN status;
SELECT * FROM hwm.run('hi');
\echo :LAST_ERROR_SQLSTATE

DROP SCHEMA hi CASCADE;
SELECT pipeline FROM hwm.state WHERE pipeline IN ('hi', 'hi2', 'dim', 'flat', 'nk', 'fa', 'wi', 'x') ORDER BY 1;
