-- bench/sql/chain.sql: the three-stage chain of bench/chain.sh (issue 41),
-- one per mode.  psql variable: mode (commit, after, clock...).  Schema m_<mode>,
-- owned by the role bench (pipelines of superusers are refused): raw is
-- written by the writers, t1, t2 and t3 are the stages' targets; pipelines
-- <mode>_1 (raw -> t1), <mode>_2 (t1 -> t2) and <mode>_3 (t2 -> t3), each
-- on the key id and the watermark updated_at (now() of the writer's
-- transaction), copied through.  Nothing is scheduled here: bench/chain.sh
-- schedules each mode when its window starts.
--
-- One seed row is loaded through the chain by hand first, so that no stage
-- measured makes its first load into an empty target (built aside and
-- traded in: src/load.c), which a running chain never does.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT 'm_' || :'mode' AS s, :'mode' || '_' AS p \gset
CREATE SCHEMA :"s" AUTHORIZATION bench;
GRANT USAGE ON SCHEMA :"s" TO PUBLIC;
SET ROLE bench;
SET search_path = :"s", pg_catalog;

CREATE TABLE raw (id bigserial PRIMARY KEY,
                  updated_at timestamptz NOT NULL DEFAULT now(),
                  payload text NOT NULL);
CREATE INDEX ON raw (updated_at);
CREATE TABLE t1 (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, payload text NOT NULL);
CREATE INDEX ON t1 (updated_at);
CREATE TABLE t2 (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, payload text NOT NULL);
CREATE INDEX ON t2 (updated_at);
CREATE TABLE t3 (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, payload text NOT NULL);
GRANT INSERT ON raw TO PUBLIC;
GRANT USAGE ON SEQUENCE raw_id_seq TO PUBLIC;

SELECT hwm.create_pipeline(:'p' || '1', format('%I.raw', :'s')::regclass, format('%I.t1', :'s')::regclass,
                           '{id}', 'updated_at');
SELECT hwm.create_pipeline(:'p' || '2', format('%I.t1', :'s')::regclass, format('%I.t2', :'s')::regclass,
                           '{id}', 'updated_at');
SELECT hwm.create_pipeline(:'p' || '3', format('%I.t2', :'s')::regclass, format('%I.t3', :'s')::regclass,
                           '{id}', 'updated_at');

INSERT INTO raw (payload) VALUES ('seed');
SELECT rows_upserted FROM hwm.run(:'p' || '1');
SELECT rows_upserted FROM hwm.run(:'p' || '2');
SELECT rows_upserted FROM hwm.run(:'p' || '3');
SELECT count(*) = 1 AS seeded FROM t3 \gset
\if :seeded
\else
\warn 'the seed row did not reach t3'
SELECT 1 / 0;
\endif
