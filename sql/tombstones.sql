-- tombstones: a delete marker column of the source (issue 32).  A row of the
-- slice carrying the marker (a boolean that is true, or a timestamp that is
-- set) deletes the target row of its key instead of upserting it, in the
-- run's transaction and under its watermark; the newest row of a key in the
-- slice wins; partition overwrites never bring a marked row back.  Every bad
-- input is an error that changes nothing.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
CREATE SCHEMA tb;

-- a boolean marker; the target has no marker column
CREATE TABLE tb.src (id int PRIMARY KEY, v text, ts timestamptz NOT NULL, deleted boolean);
CREATE TABLE tb.tgt (id int PRIMARY KEY, v text, ts timestamptz);
INSERT INTO tb.src VALUES (1, 'a', '2026-01-01 01:00', false), (2, 'b', '2026-01-01 02:00', NULL),
  (3, 'c', '2026-01-01 03:00', false);
SELECT hwm.create_pipeline('tb', 'tb.src', 'tb.tgt', '{id}', 'ts', delete_column => 'deleted');
SELECT delete_column FROM hwm.state WHERE pipeline = 'tb';
SELECT rows_upserted, rows_deleted, watermark_after FROM hwm.run('tb');
SELECT * FROM tb.tgt ORDER BY id;
-- soft-delete 2 (a NULL marker was live), and a tombstone for key 9, never loaded
UPDATE tb.src SET deleted = true, ts = '2026-01-01 04:00' WHERE id = 2;
INSERT INTO tb.src VALUES (9, 'never', '2026-01-01 05:00', true);
SELECT rows_upserted, rows_deleted, watermark_after FROM hwm.run('tb');
SELECT * FROM tb.tgt ORDER BY id;
SELECT rows_upserted, rows_deleted FROM hwm.runs WHERE pipeline = 'tb' ORDER BY run_id DESC LIMIT 1;
-- the run's NOTICE counts the tombstones
UPDATE tb.src SET deleted = true, ts = '2026-01-01 06:00' WHERE id = 3;
SET client_min_messages = notice;
SELECT rows_deleted FROM hwm.run('tb');
SET client_min_messages = warning;
-- a deleted row comes back across slices: the marker cleared, the row loads again
UPDATE tb.src SET deleted = false, v = 'b2', ts = '2026-01-01 07:00' WHERE id = 2;
SELECT rows_upserted, rows_deleted FROM hwm.run('tb');
SELECT * FROM tb.tgt ORDER BY id;
-- running again changes nothing
SELECT rows_upserted, rows_deleted FROM hwm.run('tb');

-- an event log with a timestamp marker: several rows per key in one slice,
-- the newest by the watermark column wins; the target has the marker column
CREATE TABLE tb.events (id int, v text, seq bigint NOT NULL, deleted_at timestamptz);
CREATE TABLE tb.cur (id int PRIMARY KEY, v text, deleted_at timestamptz);
SELECT hwm.create_pipeline('ev', 'tb.events', 'tb.cur', '{id}', 'seq', delete_column => 'deleted_at');
INSERT INTO tb.events VALUES (1, 'one', 1, NULL), (2, 'two', 2, NULL), (3, 'three', 3, NULL);
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
-- in one slice: 1 tombstoned then re-inserted (ends live), 2 re-inserted then
-- tombstoned (ends deleted), 4 inserted then tombstoned (never in the target)
INSERT INTO tb.events VALUES (1, NULL, 4, '2026-01-02'), (1, 'one again', 5, NULL),
  (2, 'two again', 6, NULL), (2, NULL, 7, '2026-01-02'),
  (4, 'four', 8, NULL), (4, NULL, 9, '2026-01-03');
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
SELECT * FROM tb.cur ORDER BY id;
-- across slices: 3 tombstoned, then re-inserted in the next slice
INSERT INTO tb.events VALUES (3, NULL, 10, '2026-01-04');
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
INSERT INTO tb.events VALUES (3, 'three again', 11, NULL);
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
SELECT * FROM tb.cur ORDER BY id;
-- a tie on the watermark value between a live row and a tombstone: deleted
INSERT INTO tb.events VALUES (5, 'five', 12, NULL);
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
INSERT INTO tb.events VALUES (5, 'five again', 13, NULL), (5, NULL, 13, '2026-01-05');
SELECT rows_upserted, rows_deleted FROM hwm.run('ev');
SELECT count(*) AS five FROM tb.cur WHERE id = 5;
-- an event log with a partition column: an overwrite of the partition keeps
-- out a key whose newest row is a tombstone (the older live row is not
-- brought back), and loads a key re-inserted after its tombstone
CREATE TABLE tb.pev (id int, day date NOT NULL, v text, seq int NOT NULL, deleted boolean);
CREATE TABLE tb.pcur (id int PRIMARY KEY, day date NOT NULL, v text);
INSERT INTO tb.pev VALUES (1, '2026-04-01', 'one', 1, false), (1, '2026-04-01', NULL, 2, true),
  (2, '2026-04-01', NULL, 3, true), (2, '2026-04-01', 'two again', 4, false), (3, '2026-04-01', 'three', 5, NULL);
SELECT hwm.create_pipeline('pev', 'tb.pev', 'tb.pcur', '{id}', 'seq', partition_column => 'day', lookback => 1,
                           delete_column => 'deleted');
SELECT rows_upserted, rows_deleted, rows_inserted FROM hwm.run('pev');
SELECT * FROM tb.pcur ORDER BY id;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pev', '2026-04-01', '2026-04-01');
SELECT * FROM tb.pcur ORDER BY id;
-- a date marker is accepted too
CREATE TABLE tb.dsrc (id int, v text, seq int NOT NULL, gone date);
SELECT hwm.create_pipeline('dt', 'tb.dsrc', 'tb.cur', '{id}', 'seq', delete_column => 'gone');
SELECT hwm.drop_pipeline('dt');

-- a partitioned pipeline with a lookback: the overwrite deletes what is
-- marked and never re-inserts a tombstoned row
CREATE TABLE tb.psrc (id int PRIMARY KEY, day date NOT NULL, v text, ts timestamptz NOT NULL, deleted boolean NOT NULL DEFAULT false);
CREATE TABLE tb.ptgt (id int PRIMARY KEY, day date NOT NULL, v text);
INSERT INTO tb.psrc (id, day, v, ts) SELECT g, DATE '2026-02-01' + g % 3, 'p' || g, TIMESTAMPTZ '2026-02-01' + g * INTERVAL '1 minute'
  FROM generate_series(1, 9) g;
SELECT hwm.create_pipeline('pt', 'tb.psrc', 'tb.ptgt', '{id}', 'ts', partition_column => 'day', lookback => 3,
                           delete_column => 'deleted');
SELECT rows_upserted, partitions_overwritten, rows_deleted, rows_inserted FROM hwm.run('pt');
SELECT count(*) FROM tb.ptgt;
UPDATE tb.psrc SET deleted = true, ts = ts + INTERVAL '1 day' WHERE id IN (3, 4);
SELECT rows_upserted, partitions_overwritten, rows_deleted, rows_inserted FROM hwm.run('pt');
SELECT id FROM tb.ptgt ORDER BY id;
-- the lookback overwrites those partitions again: 3 and 4 stay deleted
SELECT rows_upserted, partitions_overwritten, rows_deleted, rows_inserted FROM hwm.run('pt');
-- hwm.overwrite of the whole range does not resurrect them either (without the
-- filter on the marker it would insert 3 and 4 again)
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pt', '2026-02-01', '2026-02-04');
SELECT id FROM tb.ptgt ORDER BY id;
-- a hard delete in the source still goes by the overwrite, as before
DELETE FROM tb.psrc WHERE id = 5;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pt', '2026-02-01', '2026-02-04');
SELECT id FROM tb.ptgt ORDER BY id;

-- a declaratively partitioned target: an overwrite that exchanges whole
-- partitions, and a backfill, build them without the marked rows
CREATE TABLE tb.xsrc (id int, day date NOT NULL, v text, ts int NOT NULL, gone timestamptz);
INSERT INTO tb.xsrc SELECT g, DATE '2026-03-01' + g % 4, 'x' || g, g, CASE WHEN g % 5 = 0 THEN timestamptz '2026-03-09' END
  FROM generate_series(1, 40) g;
CREATE TABLE tb.xtgt (id int, day date NOT NULL, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE tb.xtgt_a PARTITION OF tb.xtgt FOR VALUES FROM ('2026-03-01') TO ('2026-03-03');
CREATE TABLE tb.xtgt_b PARTITION OF tb.xtgt FOR VALUES FROM ('2026-03-03') TO ('2026-03-05');
SELECT hwm.create_pipeline('xp', 'tb.xsrc', 'tb.xtgt', '{id,day}', 'ts', partition_column => 'day',
                           delete_column => 'gone');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('xp', '2026-03-01', '2026-03-04');
SELECT method FROM hwm.runs WHERE pipeline = 'xp' ORDER BY run_id DESC LIMIT 1;
SELECT count(*) AS rows, count(*) FILTER (WHERE id % 5 = 0) AS marked FROM tb.xtgt;
TRUNCATE tb.xtgt;
CALL hwm.backfill('xp', '2026-03-01', '2026-03-04');
SELECT count(*) AS rows, count(*) FILTER (WHERE id % 5 = 0) AS marked FROM tb.xtgt;

-- alter_pipeline: adding the marker, then resetting it
CREATE TABLE tb.asrc (id int PRIMARY KEY, v text, ts int NOT NULL, dead boolean);
CREATE TABLE tb.atgt (id int PRIMARY KEY, v text, dead boolean);
INSERT INTO tb.asrc VALUES (1, 'x', 1, false), (2, 'y', 2, false);
SELECT hwm.create_pipeline('al', 'tb.asrc', 'tb.atgt', '{id}', 'ts');
SELECT rows_upserted FROM hwm.run('al');
SELECT hwm.alter_pipeline('al', delete_column => 'dead');
SELECT delete_column FROM hwm.state WHERE pipeline = 'al';
UPDATE tb.asrc SET dead = true, ts = 3 WHERE id = 1;
SELECT rows_upserted, rows_deleted FROM hwm.run('al');
SELECT * FROM tb.atgt ORDER BY id;
SELECT hwm.alter_pipeline('al', reset => '{delete_column}');
SELECT delete_column FROM hwm.state WHERE pipeline = 'al';
-- without the marker, a marked row is an ordinary row: it is upserted
UPDATE tb.asrc SET ts = 4 WHERE id = 1;
SELECT rows_upserted, rows_deleted FROM hwm.run('al');
SELECT * FROM tb.atgt ORDER BY id;

-- bad input: each an error that changes nothing
SET client_min_messages = notice;
CREATE TABLE tb.bad (id int PRIMARY KEY, v text, ts int NOT NULL, flag int, note text, dead boolean);
CREATE TABLE tb.badt (id int PRIMARY KEY, v text);
-- a column not in the source
SELECT hwm.create_pipeline('bad', 'tb.bad', 'tb.badt', '{id}', 'ts', delete_column => 'nope');
\echo :LAST_ERROR_SQLSTATE
-- a type that cannot mark
SELECT hwm.create_pipeline('bad', 'tb.bad', 'tb.badt', '{id}', 'ts', delete_column => 'flag');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('bad', 'tb.bad', 'tb.badt', '{id}', 'ts', delete_column => 'note');
\echo :LAST_ERROR_SQLSTATE
-- a key column
SELECT hwm.create_pipeline('bad', 'tb.bad', 'tb.badt', '{id}', 'ts', delete_column => 'id');
\echo :LAST_ERROR_SQLSTATE
-- the watermark column
CREATE TABLE tb.badts (id int PRIMARY KEY, v text, ts timestamptz NOT NULL);
SELECT hwm.create_pipeline('bad', 'tb.badts', 'tb.badt', '{id}', 'ts', delete_column => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM hwm.state WHERE pipeline = 'bad';
-- alter: the same checks, and the pipeline is unchanged
SELECT hwm.alter_pipeline('al', delete_column => 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('al', delete_column => 'v');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.alter_pipeline('al', delete_column => 'dead', reset => '{delete_column}');
\echo :LAST_ERROR_SQLSTATE
SELECT delete_column FROM hwm.state WHERE pipeline = 'al';
-- a command pipeline has no target: no marker
SELECT hwm.create_command_pipeline('cmd', 'tb.bad', 'ts', 'SELECT 1');
SELECT hwm.alter_pipeline('cmd', delete_column => 'dead');
\echo :LAST_ERROR_SQLSTATE
SELECT delete_column FROM hwm.state WHERE pipeline = 'cmd';
-- the owner needs DELETE on the target for tombstones
CREATE ROLE tb_nodelete;
GRANT USAGE ON SCHEMA tb TO tb_nodelete;
GRANT SELECT ON tb.bad TO tb_nodelete;
GRANT SELECT, INSERT, UPDATE ON tb.badt TO tb_nodelete;
SET ROLE tb_nodelete;
SELECT hwm.create_pipeline('bad', 'tb.bad', 'tb.badt', '{id}', 'ts', delete_column => 'dead');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT count(*) FROM hwm.state WHERE pipeline = 'bad';
-- the source's marker column dropped after the pipeline was created
ALTER TABLE tb.src DROP COLUMN deleted;
SELECT * FROM hwm.run('tb');
\echo :LAST_ERROR_SQLSTATE
SET client_min_messages = warning;
SELECT watermark FROM hwm.state WHERE pipeline = 'tb';
DROP SCHEMA tb CASCADE;
DROP ROLE tb_nodelete;
SELECT pipeline FROM hwm.state WHERE pipeline IN ('tb', 'ev', 'pev', 'pt', 'xp', 'al', 'cmd') ORDER BY 1;
