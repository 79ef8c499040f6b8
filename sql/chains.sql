-- chains: a pipeline whose source is another pipeline's target (directly or
-- through views) never moves its watermark, nor closes an interval, past
-- the upstream's committed watermark; a sequence read through a view waits
-- for the writers of the view's tables; what hwm cannot make safe is said
-- when the pipeline is declared (README, The safe watermark, Chains).
\i test/setup.sql
CREATE SCHEMA ch;
SET search_path = ch, public;
SET datestyle = ISO;
SET timezone = 'UTC';

CREATE TABLE raw (id int, updated_at timestamptz NOT NULL, v text);
CREATE TABLE mid (id int PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE out (id int PRIMARY KEY, updated_at timestamptz, v text);
INSERT INTO raw VALUES (1, '2024-01-01 10:00', 'a'), (2, '2024-01-01 11:00', 'b');
SELECT hwm.create_pipeline('up', 'raw', 'mid', '{id}', 'updated_at');
-- down reads up's target through a view
CREATE VIEW mid_v AS SELECT id, updated_at, v FROM mid WHERE v IS NOT NULL;
SELECT hwm.create_pipeline('down', 'mid_v', 'out', '{id}', 'updated_at');

-- up has loaded nothing yet: down loads what mid holds, its watermark stays
INSERT INTO mid VALUES (9, '2024-01-01 09:00', 'by hand');
SELECT rows_upserted, watermark_after FROM hwm.run('down');
SELECT rows_upserted, watermark_after FROM hwm.run('up');
SELECT rows_upserted, watermark_after FROM hwm.run('down');
-- rows that reach mid other than through up, above up's watermark: down
-- loads them and keeps its watermark at up's (a late row up loads later
-- would lie between)
INSERT INTO mid VALUES (10, '2024-01-01 12:00', 'by hand, newer');
SELECT rows_upserted, watermark_after FROM hwm.run('down');
SELECT watermark FROM hwm.state WHERE pipeline = 'down';
-- the late row: up loads it, down follows
INSERT INTO raw VALUES (3, '2024-01-01 11:30', 'late');
SELECT rows_upserted, watermark_after FROM hwm.run('up');
SELECT rows_upserted, watermark_after FROM hwm.run('down');
INSERT INTO raw VALUES (4, '2024-01-01 13:00', 'new');
SELECT rows_upserted, watermark_after FROM hwm.run('up');
SELECT rows_upserted, watermark_after FROM hwm.run('down');
SELECT id, v FROM out ORDER BY id;
-- the upstream moved back by hand: the downstream's watermark never moves
-- back, and stays where it is until the upstream passes it again
SELECT hwm.set_watermark('up', '2024-01-01 10:30');
INSERT INTO mid VALUES (11, '2024-01-01 14:00', 'by hand, newest');
SELECT rows_upserted, watermark_after FROM hwm.run('down');

-- an interval pipeline over up's target closes no interval past up's
-- watermark: hours 10:00 and 11:00 are done, 12:00 waits for up
CREATE TABLE hourly (hour timestamptz PRIMARY KEY, n bigint);
SELECT hwm.set_watermark('up', '2024-01-01 12:30');
SELECT hwm.create_interval_pipeline('hourly', 'mid', 'updated_at', '1 hour',
  'INSERT INTO ch.hourly SELECT $1, count(*) FROM ch.mid WHERE updated_at >= $1 AND updated_at < $2',
  start_at => '2024-01-01 10:00', batched => false);
CALL hwm.catch_up('hourly');
SELECT hour, n FROM hourly ORDER BY hour;
SELECT watermark FROM hwm.state WHERE pipeline = 'hourly';

-- a dbt hwm model reads its model's SQL through a view of a SQL function
-- whose body is text (no dependency recorded): the chain is found through
-- the body too
CREATE FUNCTION mid_fn() RETURNS TABLE (id int, updated_at timestamptz, v text)
LANGUAGE sql STABLE AS $$ SELECT m.id, m.updated_at, m.v FROM ch.mid AS m $$;
CREATE VIEW mid_fn_v AS SELECT * FROM mid_fn();
CREATE TABLE out2 (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('down2', 'mid_fn_v', 'out2', '{id}', 'updated_at');
SELECT rows_upserted, watermark_after FROM hwm.run('down2');

-- a sequence watermark read through a view waits for the view's writers
-- (test/specs/chain_late_commit.spec races it); with none, it moves
CREATE TABLE seq_src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE VIEW seq_v AS SELECT id, v FROM seq_src;
CREATE TABLE seq_tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('seq_view', 'seq_v', 'seq_tgt', '{id}', 'id');
INSERT INTO seq_src (v) VALUES ('x'), ('y');
SELECT rows_upserted, watermark_after FROM hwm.run('seq_view');

-- what hwm cannot make safe is said at declaration, with the remedy
CREATE MATERIALIZED VIEW raw_mv AS SELECT id, updated_at, v FROM raw;
CREATE TABLE mv_tgt (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('mv', 'raw_mv', 'mv_tgt', '{id}', 'updated_at');
-- through a view too
CREATE VIEW raw_mv_v AS SELECT * FROM raw_mv;
SELECT hwm.alter_pipeline('mv', source => 'raw_mv_v');
SELECT watermark_caveat FROM hwm.status WHERE pipeline = 'mv';
-- a delay is the remedy: nothing is said
SELECT hwm.drop_pipeline('mv');
SELECT hwm.create_pipeline('mv', 'raw_mv', 'mv_tgt', '{id}', 'updated_at', delay => '5 minutes');
-- hwm.status says it too, as the last declaration or change found it
SELECT pipeline, watermark_caveat IS NULL AS safe FROM hwm.status WHERE pipeline = 'mv';
-- an upstream whose watermark has another type than this one's
CREATE TABLE ids_src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
CREATE TABLE ids_mid (id bigint PRIMARY KEY, updated_at timestamptz);
CREATE TABLE ids_out (id bigint PRIMARY KEY, updated_at timestamptz);
SELECT hwm.create_pipeline('ids_up', 'ids_src', 'ids_mid', '{id}', 'id');
SELECT hwm.create_pipeline('ids_down', 'ids_mid', 'ids_out', '{id}', 'updated_at');
SELECT pipeline, watermark_caveat FROM hwm.status WHERE pipeline IN ('ids_up', 'ids_down') ORDER BY 1;

SELECT count(hwm.drop_pipeline(pipeline)) AS dropped FROM hwm.state
 WHERE pipeline IN ('up', 'down', 'down2', 'hourly', 'seq_view', 'mv', 'ids_up', 'ids_down');
SET client_min_messages = warning;
DROP SCHEMA ch CASCADE;
