-- dependencies: a pipeline goes with its source or target table, the way an
-- index or a trigger does (an sql_drop event trigger), whoever drops it, so
-- hwm.state never keeps the OID of a table that no longer exists (pg_dump
-- would write it out as a number that may name another table after a
-- restore).  The run history stays.
\i test/setup.sql
CREATE SCHEMA deps;
SET search_path = deps, public;
CREATE TABLE src (id int, n int);
CREATE TABLE tgt (id int PRIMARY KEY, n int);
CREATE TABLE tgt2 (id int PRIMARY KEY, n int);
INSERT INTO src VALUES (1, 1);
-- a pipeline over other tables, which nothing below may touch
CREATE TABLE keep_src (id int, n int);
CREATE TABLE keep_tgt (id int PRIMARY KEY, n int);
SELECT hwm.create_pipeline('deps_keep', 'keep_src', 'keep_tgt', '{id}', 'n');
SELECT hwm.create_pipeline('deps_a', 'src', 'tgt', '{id}', 'n');
SELECT hwm.create_pipeline('deps_b', 'src', 'tgt2', '{id}', 'n');
SELECT rows_upserted FROM hwm.run('deps_a');

-- dropping a target drops its pipeline only
DROP TABLE tgt2;
SELECT pipeline FROM hwm.state WHERE pipeline LIKE 'deps%' ORDER BY 1;

-- dropping a source drops every pipeline reading it; history stays
CREATE TABLE tgt2 (id int PRIMARY KEY, n int);
SELECT hwm.create_pipeline('deps_b', 'src', 'tgt2', '{id}', 'n');
DROP TABLE src;
SELECT pipeline FROM hwm.state WHERE pipeline LIKE 'deps%' ORDER BY 1;
SELECT pipeline, kind, rows_upserted FROM hwm.runs WHERE pipeline LIKE 'deps%' ORDER BY run_id;

-- a view as the source, dropped with the schema it lives in
CREATE SCHEMA deps_v;
CREATE TABLE src (id int, n int);
CREATE VIEW deps_v.src_v AS SELECT * FROM src;
SELECT hwm.create_pipeline('deps_c', 'deps_v.src_v', 'tgt', '{id}', 'n');
DROP SCHEMA deps_v CASCADE;
SELECT count(*) AS deps_c_left FROM hwm.state WHERE pipeline = 'deps_c';

-- an ordinary role dropping its own table drops its own pipeline, though it
-- cannot write hwm.state itself
CREATE ROLE regress_hwm_deps;
GRANT USAGE, CREATE ON SCHEMA deps TO regress_hwm_deps;
SET ROLE regress_hwm_deps;
CREATE TABLE deps.own_src (id int, n int);
CREATE TABLE deps.own_tgt (id int PRIMARY KEY, n int);
SELECT hwm.create_pipeline('deps_own', 'deps.own_src', 'deps.own_tgt', '{id}', 'n');
DELETE FROM hwm.state WHERE pipeline = 'deps_own';
DROP TABLE deps.own_src;
SELECT count(*) AS deps_own_left FROM hwm.state WHERE pipeline = 'deps_own';
RESET ROLE;

-- the pipeline over other tables is still there
SELECT pipeline FROM hwm.state WHERE pipeline LIKE 'deps%' ORDER BY 1;
SELECT hwm.drop_pipeline('deps_keep');
DROP TABLE deps.own_tgt;
REVOKE ALL ON SCHEMA deps FROM regress_hwm_deps;
DROP ROLE regress_hwm_deps;
RESET search_path;
DROP SCHEMA deps CASCADE;
