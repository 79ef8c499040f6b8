-- privileges: a pipeline runs with its owner's rights, never the caller's
-- and never a superuser's; only its owner (a member of the owner role, or a
-- superuser) can run, overwrite, move or drop it; everyone sees only the
-- pipelines and runs of roles whose rights they have; privileges are checked
-- again on every run (a revoked one makes the run fail with 42501 and
-- changes nothing), column privileges and row security on the source are
-- honoured; superuser-owned pipelines are refused unless allowed; renamed and
-- dropped owners never let a pipeline run with someone else's rights.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
-- (the results say what each call did; its NOTICE would only repeat it)
SET client_min_messages = warning;
\set VERBOSITY default

-- a data owner owns the tables; alice and bob each load their own rows into
-- their own target; carol is a member of alice; dave will be dropped
CREATE ROLE regress_hwm_data;
CREATE ROLE regress_hwm_alice;
CREATE ROLE regress_hwm_bob;
CREATE ROLE regress_hwm_carol IN ROLE regress_hwm_alice;
CREATE ROLE regress_hwm_dave;
CREATE SCHEMA priv AUTHORIZATION regress_hwm_data;
GRANT USAGE ON SCHEMA priv TO PUBLIC;

SET ROLE regress_hwm_data;
CREATE TABLE priv.events (
    id int, tenant text, ts timestamptz, day date, amount int, secret text);
INSERT INTO priv.events
SELECT g, CASE WHEN g % 2 = 0 THEN 'regress_hwm_alice' ELSE 'regress_hwm_bob' END,
       TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour',
       DATE '2026-03-01' + g % 3, g * 10, 'secret ' || g
  FROM generate_series(1, 10) g;
-- row security: each tenant reads its own rows only
ALTER TABLE priv.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON priv.events USING (tenant = current_user);
-- column privileges: every column but secret
GRANT SELECT (id, tenant, ts, day, amount) ON priv.events
   TO regress_hwm_alice, regress_hwm_bob, regress_hwm_dave;
CREATE TABLE priv.alice_tgt (id int PRIMARY KEY, tenant text, ts timestamptz, day date, amount int);
CREATE TABLE priv.bob_tgt (LIKE priv.alice_tgt INCLUDING ALL);
CREATE TABLE priv.dave_tgt (LIKE priv.alice_tgt INCLUDING ALL);
CREATE TABLE priv.secret_tgt (id int PRIMARY KEY, ts timestamptz, secret text);
GRANT SELECT, INSERT, UPDATE, DELETE ON priv.alice_tgt, priv.secret_tgt TO regress_hwm_alice;
GRANT SELECT, INSERT, UPDATE, DELETE ON priv.bob_tgt TO regress_hwm_bob;
GRANT SELECT, INSERT, UPDATE, DELETE ON priv.dave_tgt TO regress_hwm_dave;
RESET ROLE;

-- what must not change when something is refused: every catalog row, the
-- number of runs, and the rows of every target
CREATE FUNCTION priv.fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(concat_ws(' # ',
    (SELECT string_agg(s::text, ' | ' ORDER BY s.pipeline) FROM hwm.state AS s),
    (SELECT count(*) FROM hwm.runs),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM priv.alice_tgt AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM priv.bob_tgt AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM priv.secret_tgt AS t)))
$$;

--
-- each owner creates and runs a pipeline: row security on the source
-- applies to the owner, so each loads only its own tenant's rows
--
SET ROLE regress_hwm_alice;
SELECT hwm.create_pipeline('p_alice', 'priv.events', 'priv.alice_tgt', '{id}', 'ts', 'day', 1);
SELECT rows_upserted, watermark_after FROM hwm.run('p_alice');
SET ROLE regress_hwm_bob;
SELECT hwm.create_pipeline('p_bob', 'priv.events', 'priv.bob_tgt', '{id}', 'ts', 'day', 1);
SELECT rows_upserted, watermark_after FROM hwm.run('p_bob');
RESET ROLE;
SELECT tenant, count(*) FROM priv.alice_tgt GROUP BY 1 ORDER BY 1;
SELECT tenant, count(*) FROM priv.bob_tgt GROUP BY 1 ORDER BY 1;

--
-- who sees what: hwm.state, hwm.status and hwm.runs show a user the
-- pipelines of the roles whose rights it has; a superuser sees all
--
SET ROLE regress_hwm_alice;
SELECT pipeline, owner FROM hwm.state ORDER BY 1;
SELECT pipeline, owner, watermark FROM hwm.status ORDER BY 1;
SELECT pipeline, kind, owner, run_by FROM hwm.runs ORDER BY run_id;
SET ROLE regress_hwm_bob;
SELECT pipeline, owner FROM hwm.state ORDER BY 1;
SELECT pipeline, owner, watermark FROM hwm.status ORDER BY 1;
SELECT pipeline, kind, owner, run_by FROM hwm.runs ORDER BY run_id;
SET ROLE regress_hwm_carol;
SELECT pipeline, owner FROM hwm.status ORDER BY 1;
SET ROLE regress_hwm_data;
SELECT count(*) AS pipelines_seen_by_data_owner FROM hwm.status;
RESET ROLE;
SELECT pipeline, owner FROM hwm.status WHERE pipeline LIKE 'p\_%' ORDER BY 1;

--
-- each is refused on the other's pipeline: run, overwrite, set_watermark,
-- drop; nothing changes
--
SELECT priv.fingerprint() AS fp \gset
SET ROLE regress_hwm_bob;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM hwm.run('p_alice', nowait => true);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM hwm.overwrite('p_alice', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_watermark('p_alice', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.drop_pipeline('p_alice');
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_hwm_alice;
SELECT * FROM hwm.run('p_bob');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM hwm.overwrite('p_bob', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_watermark('p_bob', '2026-03-01 00:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.drop_pipeline('p_bob');
\echo :LAST_ERROR_SQLSTATE
-- the data owner, who owns both tables, is not the pipeline's owner either
SET ROLE regress_hwm_data;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
-- nor may bob overwrite alice's target directly
SET ROLE regress_hwm_bob;
SELECT * FROM hwm.overwrite_partition('priv.alice_tgt', 'priv.events', 'day', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;

--
-- the catalog is not writable directly, not even one's own row
--
SET ROLE regress_hwm_alice;
UPDATE hwm.state SET watermark = NULL WHERE pipeline = 'p_alice';
\echo :LAST_ERROR_SQLSTATE
UPDATE hwm.state SET owner = 'regress_hwm_alice' WHERE pipeline = 'p_bob';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO hwm.state (pipeline, source, target, unique_key, watermark_column, watermark_type, owner)
VALUES ('p_forged', 'priv.events', 'priv.bob_tgt', '{id}', 'ts', 'timestamptz', 'regress_hwm_bob');
\echo :LAST_ERROR_SQLSTATE
DELETE FROM hwm.state;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO hwm.runs (pipeline, kind, started_at, status) VALUES ('p_alice', 'load', now(), 'succeeded');
\echo :LAST_ERROR_SQLSTATE
UPDATE hwm.runs SET status = 'failed';
\echo :LAST_ERROR_SQLSTATE
TRUNCATE hwm.runs;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE hwm.state DISABLE ROW LEVEL SECURITY;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;

--
-- a member of the owner role runs the pipeline, with the owner's rights:
-- the run loads the owner's rows, and a superuser's run does too
--
SET ROLE regress_hwm_data;
INSERT INTO priv.events VALUES
    (11, 'regress_hwm_bob', '2026-03-02 00:00+00', '2026-03-03', 110, 's11'),
    (12, 'regress_hwm_alice', '2026-03-02 01:00+00', '2026-03-03', 120, 's12'),
    (13, 'regress_hwm_carol', '2026-03-02 02:00+00', '2026-03-03', 130, 's13');
SET ROLE regress_hwm_carol;
SELECT rows_upserted, watermark_after FROM hwm.run('p_alice');
RESET ROLE;
SELECT pipeline, owner, run_by FROM hwm.runs ORDER BY run_id DESC LIMIT 1;
SET ROLE regress_hwm_data;
INSERT INTO priv.events VALUES
    (14, 'regress_hwm_bob', '2026-03-02 03:00+00', '2026-03-03', 140, 's14'),
    (16, 'regress_hwm_alice', '2026-03-02 04:00+00', '2026-03-03', 160, 's16');
RESET ROLE;
SELECT rows_upserted, watermark_after FROM hwm.run('p_alice');
SELECT tenant, count(*) FROM priv.alice_tgt GROUP BY 1 ORDER BY 1;

--
-- privileges are checked on every run: revoke one after creation and the
-- run fails with 42501, leaving target and watermark as they were
--
SET ROLE regress_hwm_data;
INSERT INTO priv.events VALUES
    (18, 'regress_hwm_alice', '2026-03-02 05:00+00', '2026-03-03', 180, 's18');
RESET ROLE;
SELECT priv.fingerprint() AS fp \gset
SELECT watermark AS watermark_before_revokes FROM hwm.state WHERE pipeline = 'p_alice';
-- SELECT on the source
SET ROLE regress_hwm_data;
REVOKE SELECT ON priv.events FROM regress_hwm_alice;
SET ROLE regress_hwm_alice;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;
-- one column of the source
SET ROLE regress_hwm_data;
GRANT SELECT (id, tenant, ts, day) ON priv.events TO regress_hwm_alice;
SET ROLE regress_hwm_alice;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;
SET ROLE regress_hwm_data;
GRANT SELECT (amount) ON priv.events TO regress_hwm_alice;
-- UPDATE on the target (needed to upsert)
REVOKE UPDATE ON priv.alice_tgt FROM regress_hwm_alice;
SET ROLE regress_hwm_alice;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;
-- DELETE on the target (needed to overwrite the lookback partitions), also
-- when a superuser runs the pipeline
SET ROLE regress_hwm_data;
GRANT UPDATE ON priv.alice_tgt TO regress_hwm_alice;
REVOKE DELETE ON priv.alice_tgt FROM regress_hwm_alice;
RESET ROLE;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
SELECT priv.fingerprint() = :'fp' AS unchanged;
SET ROLE regress_hwm_alice;
SELECT * FROM hwm.overwrite('p_alice', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;
-- granted back, the next run loads what was waiting
SET ROLE regress_hwm_data;
GRANT DELETE ON priv.alice_tgt TO regress_hwm_alice;
SET ROLE regress_hwm_alice;
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('p_alice');
RESET ROLE;

--
-- column privileges at creation: a target column the owner may not read
-- from the source is refused up front
--
SELECT priv.fingerprint() AS fp \gset
SET ROLE regress_hwm_alice;
SELECT hwm.create_pipeline('p_secret', 'priv.events', 'priv.secret_tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;

--
-- superuser-owned pipelines are refused unless hwm.allow_superuser_pipelines
-- is on (the test instances turn it on in test/hwm.conf; only a superuser
-- can change it)
--
SET hwm.allow_superuser_pipelines = off;
SELECT hwm.create_pipeline('p_super', 'priv.events', 'priv.bob_tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT priv.fingerprint() = :'fp' AS unchanged;
-- an owner that became superuser after creating the pipeline is refused at
-- run time, whoever runs it
ALTER ROLE regress_hwm_alice SUPERUSER;
SELECT * FROM hwm.run('p_alice');
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_hwm_alice;
SELECT * FROM hwm.overwrite('p_alice', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT priv.fingerprint() = :'fp' AS unchanged;
ALTER ROLE regress_hwm_alice NOSUPERUSER;
SELECT rows_upserted FROM hwm.run('p_alice');
-- ordinary roles cannot turn the setting on
SET ROLE regress_hwm_bob;
SET hwm.allow_superuser_pipelines = on;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- a superuser can, and may then own pipelines
SET hwm.allow_superuser_pipelines = on;
SELECT hwm.create_pipeline('p_super', 'priv.events', 'priv.bob_tgt', '{id}', 'ts');
SELECT hwm.drop_pipeline('p_super');

--
-- a renamed owner keeps its pipelines (the owner is stored by OID)
--
ALTER ROLE regress_hwm_bob RENAME TO regress_hwm_bob2;
SELECT pipeline, owner FROM hwm.status WHERE pipeline = 'p_bob';
SET ROLE regress_hwm_bob2;
SELECT rows_upserted FROM hwm.run('p_bob');
RESET ROLE;
ALTER ROLE regress_hwm_bob2 RENAME TO regress_hwm_bob;

--
-- a dropped owner: its pipeline runs for nobody, not even a superuser;
-- the other pipelines and everyone's view of the catalog are unaffected;
-- only a superuser can drop it
--
SET ROLE regress_hwm_dave;
SELECT hwm.create_pipeline('p_dave', 'priv.events', 'priv.dave_tgt', '{id}', 'ts');
RESET ROLE;
-- (DROP OWNED BY in this database would drop p_dave with the role's other
-- objects, and DROP ROLE here is refused while it owns p_dave: see
-- roles.sql.  Dropped from another database, where hwm cannot see its
-- pipelines, the role leaves p_dave without an owner.)
REVOKE ALL ON priv.events, priv.dave_tgt FROM regress_hwm_dave;
\set regress_db :DBNAME
\c postgres
DROP ROLE regress_hwm_dave;
\c :regress_db
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
SELECT pipeline, pg_get_userbyid(owner::oid) LIKE 'unknown (OID=%)' AS owner_gone
  FROM hwm.state WHERE pipeline = 'p_dave';
-- (terse: the message's detail names the role's OID, which varies)
\set VERBOSITY terse
SELECT * FROM hwm.run('p_dave');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_watermark('p_dave', NULL);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT rows_upserted FROM hwm.run('p_bob');
SET ROLE regress_hwm_alice;
SELECT pipeline FROM hwm.state ORDER BY 1;
SELECT rows_upserted FROM hwm.run('p_alice');
\set VERBOSITY terse
SELECT hwm.drop_pipeline('p_dave');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
RESET ROLE;
SELECT hwm.drop_pipeline('p_dave');
SELECT count(*) AS p_dave_left FROM hwm.state WHERE pipeline = 'p_dave';

--
-- each owner drops its own pipeline; history stays, still visible to them
--
SET ROLE regress_hwm_alice;
SELECT hwm.drop_pipeline('p_alice');
SELECT count(*) > 0 AS sees_own_history, bool_and(pipeline = 'p_alice') AS only_own FROM hwm.runs;
SET ROLE regress_hwm_bob;
SELECT hwm.drop_pipeline('p_bob');
RESET ROLE;

-- clean up
DROP SCHEMA priv CASCADE;
DROP OWNED BY regress_hwm_alice, regress_hwm_bob, regress_hwm_carol, regress_hwm_data;
DROP ROLE regress_hwm_alice, regress_hwm_bob, regress_hwm_carol, regress_hwm_data;
SELECT count(*) AS pipelines_left FROM hwm.state WHERE pipeline LIKE 'p\_%';
