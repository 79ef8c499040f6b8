-- planted: objects planted by another user are never called by hwm.  An
-- attacker (regress_hwm_mallory) plants look-alikes of what hwm's statements
-- use: public.now() and friends, operators public.> etc. on every type a
-- pipeline compares (and in a schema put first in search_path), tables named
-- like the source, the target and hwm's catalog earlier in search_path; the
-- session also has functions, an operator and tables in pg_temp.  Every
-- planted function writes a row into planted.calls.  The pipeline's owner,
-- then a superuser, run every function of hwm with that hostile search_path:
-- planted.calls stays empty and the data goes where it should.  A control
-- shows first that the planted objects do catch unqualified SQL.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
-- (the results say what each call did; its NOTICE would only repeat it)
SET client_min_messages = warning;
\set VERBOSITY default

CREATE ROLE regress_hwm_mallory;
CREATE ROLE regress_hwm_victim;
CREATE SCHEMA planted;
CREATE TABLE planted.calls (what text);
GRANT USAGE ON SCHEMA planted TO PUBLIC;
GRANT SELECT, INSERT ON planted.calls TO PUBLIC;
GRANT CREATE ON SCHEMA public TO regress_hwm_mallory;
CREATE SCHEMA early AUTHORIZATION regress_hwm_mallory;
GRANT USAGE ON SCHEMA early TO PUBLIC;

-- the victim's tables: one pipeline compares timestamptz, date and int, the
-- other bigint and text
CREATE SCHEMA data AUTHORIZATION regress_hwm_victim;
SET ROLE regress_hwm_victim;
CREATE TABLE data.src (id int, ts timestamptz, day date, v text);
CREATE TABLE data.tgt (id int PRIMARY KEY, ts timestamptz, day date, v text);
INSERT INTO data.src
SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', DATE '2026-03-01' + g % 3, 'v' || g
  FROM generate_series(1, 6) g;
CREATE TABLE data.src2 (code text COLLATE "C", seq bigint, region text COLLATE "C", v text);
CREATE TABLE data.tgt2 (code text COLLATE "C" PRIMARY KEY, seq bigint, region text COLLATE "C", v text);
INSERT INTO data.src2 SELECT 'c' || g, g, 'r' || g % 3, 'v' || g FROM generate_series(1, 6) g;
RESET ROLE;

--
-- the attacker plants
--
SET ROLE regress_hwm_mallory;
CREATE FUNCTION public.planted_log(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO planted.calls VALUES (what);
    RETURN true;
END
$$;
-- comparison operators on every type hwm compares, in public and in early
DO $$
DECLARE
    sch text;
    typ text;
    ops text[] := ARRAY['>', '>=', '<', '<=', '=', '<>'];
    names text[] := ARRAY['gt', 'ge', 'lt', 'le', 'eq', 'ne'];
BEGIN
    FOREACH sch IN ARRAY ARRAY['public', 'early'] LOOP
        FOREACH typ IN ARRAY ARRAY['timestamptz', 'date', 'integer', 'bigint', 'text'] LOOP
            FOR i IN 1 .. 6 LOOP
                EXECUTE format('CREATE FUNCTION %I.%I(%s, %s) RETURNS boolean LANGUAGE plpgsql'
                               ' AS $f$BEGIN RETURN public.planted_log(%L); END$f$',
                               sch, 'planted_' || names[i] || '_' || typ, typ, typ,
                               sch || '.' || ops[i] || ' on ' || typ);
                EXECUTE format('CREATE OPERATOR %I.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %I.%I)',
                               sch, ops[i], typ, typ, sch, 'planted_' || names[i] || '_' || typ);
            END LOOP;
        END LOOP;
    END LOOP;
END
$$;
CREATE FUNCTION public.planted_plus(integer, integer) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    PERFORM public.planted_log('public.+ on integer');
    RETURN $1 OPERATOR(pg_catalog.+) $2;
END
$$;
CREATE OPERATOR public.+ (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.planted_plus);
-- functions hwm's SQL calls (or could), in public and in early
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN PERFORM public.planted_log('public.now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION early.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN PERFORM public.planted_log('early.now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN PERFORM public.planted_log('public.clock_timestamp()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION public.record_image_ne(record, record) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN public.planted_log('public.record_image_ne()'); END $$;
CREATE FUNCTION public.pg_has_role(name, oid, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN public.planted_log('public.pg_has_role()'); END $$;
CREATE FUNCTION public.pg_advisory_xact_lock(bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN PERFORM public.planted_log('public.pg_advisory_xact_lock()'); END $$;
-- tables named like the victim's and like hwm's catalog, earlier in
-- search_path: a view whose every read is logged, tables whose every write is
CREATE FUNCTION public.planted_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM public.planted_log(TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME || ' ' || TG_OP);
    RETURN NULL;
END
$$;
CREATE VIEW early.src AS
SELECT 99 AS id, pg_catalog.now() AS ts, DATE '2026-03-01' AS day, 'planted' AS v
 WHERE public.planted_log('early.src read');
CREATE TABLE early.tgt (id int PRIMARY KEY, ts timestamptz, day date, v text);
CREATE TABLE early.state (LIKE hwm.state);
CREATE TABLE early.runs (LIKE hwm.runs);
CREATE TRIGGER log BEFORE INSERT OR UPDATE OR DELETE ON early.tgt
    FOR EACH ROW EXECUTE FUNCTION public.planted_trigger();
CREATE TRIGGER log BEFORE INSERT OR UPDATE OR DELETE ON early.state
    FOR EACH ROW EXECUTE FUNCTION public.planted_trigger();
CREATE TRIGGER log BEFORE INSERT OR UPDATE OR DELETE ON early.runs
    FOR EACH ROW EXECUTE FUNCTION public.planted_trigger();
GRANT SELECT ON early.src TO PUBLIC;
GRANT ALL ON early.tgt, early.state, early.runs TO PUBLIC;
RESET ROLE;

-- the session's own pg_temp: functions and an operator (never looked up
-- unqualified), and tables named like the source, the target and the catalog
CREATE FUNCTION pg_temp.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN PERFORM public.planted_log('pg_temp.now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION pg_temp.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN PERFORM public.planted_log('pg_temp.clock_timestamp()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION pg_temp.planted_gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RETURN public.planted_log('pg_temp.> on timestamptz'); END $$;
CREATE OPERATOR pg_temp.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = pg_temp.planted_gt);
CREATE TEMP TABLE src (id int, ts timestamptz, day date, v text);
INSERT INTO pg_temp.src VALUES (98, '2030-01-01 00:00+00', '2026-03-01', 'temp');
CREATE TEMP TABLE tgt (id int PRIMARY KEY, ts timestamptz, day date, v text);
CREATE TEMP TABLE state (LIKE hwm.state);
CREATE TEMP TABLE runs (LIKE hwm.runs);
GRANT ALL ON pg_temp.src, pg_temp.tgt, pg_temp.state, pg_temp.runs TO PUBLIC;

--
-- control: unqualified SQL under the hostile search_path does call them
--
SET search_path = early, public, pg_catalog;
SELECT now() IS NOT NULL AS now_called, 2 > 1 AS gt_called, 'a' = 'a' AS eq_called,
       pg_temp.now() IS NOT NULL AS temp_now_called, (SELECT count(*) FROM early.src) AS early_src_rows;
RESET search_path;
SELECT what FROM planted.calls ORDER BY what;
TRUNCATE planted.calls;

--
-- the victim, with the hostile search_path, uses every function of hwm
--
SET ROLE regress_hwm_victim;
SET search_path = early, public, pg_catalog;
SELECT hwm.create_pipeline('pl_time', 'data.src', 'data.tgt', '{id}', 'ts', 'day', 2,
                           initial_watermark => '2026-03-01 01:00+00', delay => '1 minute');
SELECT hwm.create_pipeline('pl_text', 'data.src2', 'data.tgt2', '{code}', 'seq', 'region', 2);
SELECT rows_upserted, partitions_overwritten, watermark_after FROM hwm.run('pl_time');
SELECT rows_upserted, partitions_overwritten, watermark_after FROM hwm.run('pl_text');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pl_time', '2026-03-01', '2026-03-03');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pl_text', 'r0', 'r2');
SELECT hwm.set_watermark('pl_time', NULL);
SELECT hwm.set_watermark('pl_text', '3');
CALL hwm.catch_up('pl_text');
SELECT hwm.set_watermark('pl_text', '3');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('pl_time');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('pl_text');
SELECT rows_deleted, rows_inserted
  FROM hwm.overwrite_partition('data.tgt', 'data.src', 'day', '2026-03-01', '2026-03-03');
SELECT pipeline, watermark, lag IS NOT NULL AS has_lag FROM hwm.status ORDER BY 1;
RESET search_path;
RESET ROLE;
SELECT count(*) AS planted_calls FROM planted.calls;

--
-- a superuser runs them with the same search_path: still nothing planted
-- is called (a superuser calling a planted function is how a privilege
-- escalation starts)
--
SET search_path = early, public, pg_catalog;
SELECT rows_upserted, watermark_after FROM hwm.run('pl_time');
SELECT rows_upserted, watermark_after FROM hwm.run('pl_text');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pl_text', 'r0', 'r2');
SELECT hwm.set_watermark('pl_text', '2');
CALL hwm.catch_up('pl_text');
SELECT hwm.set_watermark('pl_time', '2026-03-01 00:00+00');
SELECT rows_upserted FROM hwm.run('pl_time');
SELECT hwm.drop_pipeline('pl_text');
RESET search_path;
SELECT count(*) AS planted_calls FROM planted.calls;

-- the data went where it should: the targets equal their sources, and
-- nothing reached the look-alike tables
SELECT count(*) AS differences FROM (
  (TABLE data.src EXCEPT TABLE data.tgt) UNION ALL (TABLE data.tgt EXCEPT TABLE data.src)) d;
SELECT count(*) AS differences FROM (
  (TABLE data.src2 EXCEPT TABLE data.tgt2) UNION ALL (TABLE data.tgt2 EXCEPT TABLE data.src2)) d;
SELECT (SELECT count(*) FROM early.tgt) AS early_tgt, (SELECT count(*) FROM early.state) AS early_state,
       (SELECT count(*) FROM early.runs) AS early_runs, (SELECT count(*) FROM pg_temp.tgt) AS temp_tgt,
       (SELECT count(*) FROM pg_temp.state) AS temp_state, (SELECT count(*) FROM pg_temp.runs) AS temp_runs;

-- clean up
SELECT hwm.drop_pipeline('pl_time');
DROP SCHEMA planted, early, data CASCADE;
DROP OWNED BY regress_hwm_mallory, regress_hwm_victim;
DROP ROLE regress_hwm_mallory, regress_hwm_victim;
