-- plans: a run keeps the plans of its statements across runs (issue 24),
-- and what the plans were made for changing never makes a run use a stale
-- one: in one session, runs before and after an ALTER TABLE of the source
-- and of the target, a dropped and re-created index (the key's unique index
-- too), a set_watermark, a pipeline dropped and declared again with another
-- command, and a role whose row security differs.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
CREATE SCHEMA plans;
CREATE TABLE plans.src (id int PRIMARY KEY, ts timestamptz NOT NULL, v text);
CREATE INDEX ON plans.src (ts);
CREATE TABLE plans.tgt (id int PRIMARY KEY, ts timestamptz, v text);
INSERT INTO plans.src SELECT g, TIMESTAMPTZ '2026-01-01 00:00+00' + g * INTERVAL '1 minute', 'v' || g
  FROM generate_series(1, 5) g;
SELECT hwm.create_pipeline('pl', 'plans.src', 'plans.tgt', '{id}', 'ts');
SELECT rows_upserted, watermark_after FROM hwm.run('pl');
SELECT rows_upserted FROM hwm.run('pl');

-- a column added to both tables: the next run loads it
ALTER TABLE plans.src ADD COLUMN n int NOT NULL DEFAULT 7;
ALTER TABLE plans.tgt ADD COLUMN n int;
INSERT INTO plans.src VALUES (6, '2026-01-01 00:06+00', 'v6', 60);
SELECT rows_upserted, watermark_after FROM hwm.run('pl');
SELECT id, v, n FROM plans.tgt WHERE id >= 5 ORDER BY id;

-- a column's type changed in the target, one dropped from both
ALTER TABLE plans.tgt ALTER COLUMN v TYPE varchar(20);
ALTER TABLE plans.src DROP COLUMN n;
ALTER TABLE plans.tgt DROP COLUMN n;
INSERT INTO plans.src VALUES (7, '2026-01-01 00:07+00', 'v7');
SELECT rows_upserted FROM hwm.run('pl');

-- the source's watermark index dropped and created again
DROP INDEX plans.src_ts_idx;
INSERT INTO plans.src VALUES (8, '2026-01-01 00:08+00', 'v8');
SELECT rows_upserted FROM hwm.run('pl');
CREATE INDEX src_ts_idx ON plans.src (ts);
INSERT INTO plans.src VALUES (9, '2026-01-01 00:09+00', 'v9');
SELECT rows_upserted FROM hwm.run('pl');

-- the target's unique index (the upsert's conflict target) replaced by
-- another: the run uses the new one; without one, the run is refused
ALTER TABLE plans.tgt DROP CONSTRAINT tgt_pkey;
\set VERBOSITY terse
SELECT rows_upserted FROM hwm.run('pl');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
CREATE UNIQUE INDEX tgt_id ON plans.tgt (id);
INSERT INTO plans.src VALUES (10, '2026-01-01 00:10+00', 'v10');
SELECT rows_upserted FROM hwm.run('pl');

-- set_watermark: the next run reads from the new one
SELECT hwm.set_watermark('pl', '2026-01-01 00:03+00');
UPDATE plans.src SET v = 'changed' WHERE id = 4;
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('pl');
SELECT v FROM plans.tgt WHERE id = 4;
SELECT count(*) AS rows, count(*) FILTER (WHERE v LIKE 'v%' OR v = 'changed') AS ok FROM plans.tgt;

-- a command pipeline dropped and declared again with another command
CREATE TABLE plans.sums (upto timestamptz, total bigint, kind text);
SELECT hwm.create_command_pipeline('cmd', 'plans.src', 'ts', $$
    INSERT INTO plans.sums SELECT $2, count(*), 'first' FROM plans.src WHERE ts > COALESCE($1, '-infinity') AND ts <= $2
$$);
SELECT rows_upserted FROM hwm.run('cmd');
SELECT hwm.drop_pipeline('cmd');
SELECT hwm.create_command_pipeline('cmd', 'plans.src', 'ts', $$
    INSERT INTO plans.sums SELECT $2, sum(id), 'second' FROM plans.src WHERE ts > COALESCE($1, '-infinity') AND ts <= $2
$$);
SELECT rows_upserted FROM hwm.run('cmd');
SELECT total, kind FROM plans.sums ORDER BY kind;

-- the same statements run for two owners with row security on the source:
-- each run reads its own owner's rows, whoever ran first in the session
CREATE ROLE regress_hwm_plan_a;
CREATE ROLE regress_hwm_plan_b;
CREATE TABLE plans.rls_src (id int PRIMARY KEY, ts timestamptz NOT NULL, who text NOT NULL);
INSERT INTO plans.rls_src VALUES (1, '2026-01-01', 'regress_hwm_plan_a'), (2, '2026-01-01', 'regress_hwm_plan_b'),
                                 (3, '2026-01-02', 'regress_hwm_plan_b');
ALTER TABLE plans.rls_src ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON plans.rls_src USING (who = current_user);
GRANT USAGE ON SCHEMA plans TO regress_hwm_plan_a, regress_hwm_plan_b;
GRANT SELECT ON plans.rls_src TO regress_hwm_plan_a, regress_hwm_plan_b;
CREATE TABLE plans.ta (id int PRIMARY KEY, ts timestamptz, who text);
CREATE TABLE plans.tb (id int PRIMARY KEY, ts timestamptz, who text);
GRANT SELECT, INSERT, UPDATE ON plans.ta TO regress_hwm_plan_a;
GRANT SELECT, INSERT, UPDATE ON plans.tb TO regress_hwm_plan_b;
SET ROLE regress_hwm_plan_a;
SELECT hwm.create_pipeline('ra', 'plans.rls_src', 'plans.ta', '{id}', 'ts');
RESET ROLE;
SET ROLE regress_hwm_plan_b;
SELECT hwm.create_pipeline('rb', 'plans.rls_src', 'plans.tb', '{id}', 'ts');
RESET ROLE;
SELECT rows_upserted FROM hwm.run('ra');
SELECT rows_upserted FROM hwm.run('rb');
SELECT 'ta' AS t, * FROM plans.ta UNION ALL SELECT 'tb', * FROM plans.tb ORDER BY 1, 2;

SELECT hwm.drop_pipeline(pipeline) FROM hwm.state WHERE pipeline IN ('pl', 'cmd', 'ra', 'rb');
DROP SCHEMA plans CASCADE;
DROP ROLE regress_hwm_plan_a, regress_hwm_plan_b;
