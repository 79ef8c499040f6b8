-- bad_input_more: hostile input on top of bad_input.sql, for every public
-- function: names at and past the 63-byte limit, megabyte-long strings,
-- relations given by a number that is no relation, system and hwm catalog
-- tables as targets, temporary tables, multidimensional and huge key
-- arrays, out-of-range and wrong-typed integers, bounds and watermarks, an
-- overflowing delay, a superuser owner, and callers who lack a privilege on
-- a schema or a table.  Each case shows its SQLSTATE and message (a
-- megabyte-long value would be echoed in the message: those show the
-- SQLSTATE alone), then that the catalog, the run history and every target
-- are unchanged.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
\set VERBOSITY default

CREATE SCHEMA bim;
CREATE TABLE bim.src (id int, ts timestamptz, day date, n int, code text);
INSERT INTO bim.src
SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', DATE '2026-03-01' + g % 3, g, 'c' || g
  FROM generate_series(1, 6) g;
CREATE TABLE bim.tgt (id int PRIMARY KEY, ts timestamptz, day date, n int, code text);
CREATE TABLE bim.tgt_int (id int PRIMARY KEY, n int);
SELECT hwm.create_pipeline('bim_ok', 'bim.src', 'bim.tgt', '{id}', 'ts', 'day', 1);
SELECT hwm.create_pipeline('bim_int', 'bim.src', 'bim.tgt_int', '{id}', 'n', 'n', 1);
SELECT rows_upserted FROM hwm.run('bim_ok');
SELECT rows_upserted FROM hwm.run('bim_int');
-- a pipeline whose source is dropped after it was created (hwm's event
-- trigger drops the pipeline with it; with the trigger disabled the pipeline
-- stays and points at nothing)
CREATE TABLE bim.src_gone (id int, ts timestamptz);
CREATE TABLE bim.tgt_gone (id int PRIMARY KEY, ts timestamptz);
SELECT hwm.create_pipeline('bim_gone', 'bim.src_gone', 'bim.tgt_gone', '{id}', 'ts');
ALTER EVENT TRIGGER hwm_sql_drop DISABLE;
DROP TABLE bim.src_gone;
ALTER EVENT TRIGGER hwm_sql_drop ENABLE;
CREATE TEMP TABLE bim_temp (id int PRIMARY KEY, ts timestamptz, day date, n int, code text);

-- an ordinary role, with a target of its own that it may insert into but
-- not update or delete from, and a table it may read in a schema it may not
-- use
CREATE ROLE regress_hwm_bim_plain;
GRANT USAGE ON SCHEMA bim TO regress_hwm_bim_plain;
GRANT SELECT ON bim.src TO regress_hwm_bim_plain;
CREATE TABLE bim.plain_tgt (id int PRIMARY KEY, ts timestamptz, day date, n int, code text);
GRANT SELECT, INSERT ON bim.plain_tgt TO regress_hwm_bim_plain;
CREATE SCHEMA bim_hidden;
CREATE TABLE bim_hidden.src (id int, ts timestamptz);
GRANT SELECT ON bim_hidden.src TO regress_hwm_bim_plain;
CREATE TABLE bim.plain_tgt2 (id int PRIMARY KEY, ts timestamptz);
GRANT SELECT, INSERT, UPDATE ON bim.plain_tgt2 TO regress_hwm_bim_plain;
SELECT 'bim_hidden.src'::regclass::oid AS hidden_oid \gset

-- what must not change
CREATE FUNCTION bim.fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(concat_ws(' # ',
    (SELECT string_agg(s::text, ' | ' ORDER BY s.pipeline) FROM hwm.state AS s),
    (SELECT count(*) FROM hwm.runs),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bim.tgt AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bim.tgt_int AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bim.plain_tgt AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bim.plain_tgt2 AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM pg_temp.bim_temp AS t)))
$$;
SELECT pipeline, watermark FROM hwm.state WHERE pipeline LIKE 'bim\_%' ORDER BY 1;
SELECT bim.fingerprint() AS fp \gset

--
-- hwm.create_pipeline
--

-- a name one byte too long, a megabyte-long name
SELECT hwm.create_pipeline(repeat('n', 64), 'bim.src', 'bim.tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline(repeat('n', 1000000), 'bim.src', 'bim.tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- relations given by a number that is no relation
SELECT hwm.create_pipeline('bim_x', 4294967295::oid::regclass, 'bim.tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 0::regclass, '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a system catalog or hwm's own catalog as the target (even for a superuser)
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'pg_catalog.pg_class', '{oid}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'hwm.runs', '{run_id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a temporary table as the target, or as the source
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'pg_temp.bim_temp', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'pg_temp.bim_temp', 'bim.tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- unique_key: two-dimensional, a megabyte-long name, 2000 names, an empty name
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{{id},{day}}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
\set VERBOSITY sqlstate
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', ARRAY[repeat('k', 1000000)], 'ts');
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt',
                           ARRAY(SELECT 'k' || g FROM generate_series(1, 2000) g), 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{""}', 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a watermark column name longer than a name can be (truncated to 63 bytes)
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', repeat('w', 200));
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- lookback out of the range of integer, or not a number at all
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', 'ts', 'day', 2147483648);
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', 'ts', 'day', 'two');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a schedule that is not an interval
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', 'ts', schedule => 5);
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a delay so large that now() - delay is no timestamp
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', 'ts', delay => '300000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- initial_watermark: a megabyte long; out of range for an integer column
\set VERBOSITY sqlstate
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', 'ts',
                           initial_watermark => repeat('9', 1000000));
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt_int', '{id}', 'n',
                           initial_watermark => '2147483648');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a superuser owner while hwm.allow_superuser_pipelines is off
SET hwm.allow_superuser_pipelines = off;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
RESET hwm.allow_superuser_pipelines;
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- an ordinary role: a source in a schema it may not use (given by OID, so
-- that the name lookup does not stop it first)
SET ROLE regress_hwm_bim_plain;
SELECT hwm.create_pipeline('bim_x', :hidden_oid::regclass, 'bim.plain_tgt2', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- ... a target it may insert into but not update (the upsert needs both)
SET ROLE regress_hwm_bim_plain;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.plain_tgt', '{id}', 'ts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- ... a lookback without DELETE on the target (the overwrite needs it)
GRANT UPDATE ON bim.plain_tgt TO regress_hwm_bim_plain;
SET ROLE regress_hwm_bim_plain;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'bim.plain_tgt', '{id}', 'ts', 'day', 1);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- ... hwm's catalog as the target
SET ROLE regress_hwm_bim_plain;
SELECT hwm.create_pipeline('bim_x', 'bim.src', 'hwm.state', '{pipeline}', 'ts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bim.fingerprint() = :'fp' AS unchanged;

--
-- hwm.run
--

-- a megabyte-long name; an argument of the wrong type
\set VERBOSITY sqlstate
SELECT * FROM hwm.run(repeat('p', 1000000));
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.run(42);
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a pipeline whose source table was dropped (the message names its OID)
\set VERBOSITY sqlstate
SELECT * FROM hwm.run('bim_gone');
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT regexp_replace(:'LAST_ERROR_MESSAGE', 'OID [0-9]+', 'OID N') AS message;
SELECT bim.fingerprint() = :'fp' AS unchanged;

--
-- hwm.overwrite
--

-- bounds: out of range for the integer partition column; not a date; a
-- megabyte long; infinite and reversed
SELECT * FROM hwm.overwrite('bim_int', '-2147483649', '3');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite('bim_ok', '2026-02-30', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
\set VERBOSITY sqlstate
SELECT * FROM hwm.overwrite('bim_ok', '2026-03-01', repeat('2', 1000000));
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite('bim_ok', 'infinity', '-infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

--
-- hwm.set_watermark
--

-- out of range and not a number for the integer watermark; a megabyte
-- long; arguments of the wrong types
SELECT hwm.set_watermark('bim_int', '2147483648');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.set_watermark('bim_int', ' 12abc');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
\set VERBOSITY sqlstate
SELECT hwm.set_watermark('bim_ok', repeat('2', 1000000));
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
-- (a value of the column's own type is accepted: see typed_bounds.sql; one of
-- another type is the error its text form gives)
SELECT hwm.set_watermark('bim_int', DATE '2026-03-01');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

--
-- hwm.overwrite_partition
--

-- a target given by a number that is no relation (was an internal error)
SELECT * FROM hwm.overwrite_partition(4294967295::oid::regclass, 'bim.src', 'day', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a system catalog as the target
SELECT * FROM hwm.overwrite_partition('pg_catalog.pg_namespace', 'bim.src', 'nspname', 'a', 'z');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- a partition column name longer than a name can be
SELECT * FROM hwm.overwrite_partition('bim.tgt', 'bim.src', repeat('d', 100), '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- an ordinary role overwriting a table it may insert into, but not delete from
SET ROLE regress_hwm_bim_plain;
SELECT * FROM hwm.overwrite_partition('bim.plain_tgt', 'bim.src', 'day', '2026-03-01', '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bim.fingerprint() = :'fp' AS unchanged;

--
-- hwm.drop_pipeline
--

-- a megabyte-long name; an argument of the wrong type
\set VERBOSITY sqlstate
SELECT hwm.drop_pipeline(repeat('p', 1000000));
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;
SELECT hwm.drop_pipeline(ARRAY['bim_ok']);
\echo :LAST_ERROR_SQLSTATE
SELECT bim.fingerprint() = :'fp' AS unchanged;

-- after all of that the pipelines still run: nothing new, watermark as before
SELECT rows_upserted, watermark_before = watermark_after AS same_watermark FROM hwm.run('bim_ok');
SELECT rows_upserted, watermark_before = watermark_after AS same_watermark FROM hwm.run('bim_int');

-- clean up
SELECT hwm.drop_pipeline('bim_ok');
SELECT hwm.drop_pipeline('bim_int');
SELECT hwm.drop_pipeline('bim_gone');
DROP SCHEMA bim, bim_hidden CASCADE;
DROP OWNED BY regress_hwm_bim_plain;
DROP ROLE regress_hwm_bim_plain;
SELECT count(*) AS pipelines_left FROM hwm.state WHERE pipeline LIKE 'bim\_%';
