-- injection: hwm builds SQL from names its users give it, so every name must
-- reach SQL quoted and every value as a parameter.  A table named
-- x"; DROP TABLE t; -- loads like any other and nothing is dropped; values
-- that look like SQL are only values; and names with quotes, semicolons,
-- spaces, upper case, Unicode, dots, format directives, reserved words and
-- the maximum length (63 bytes) work as ordinary names for schemas, tables,
-- columns and pipelines, through every function.  (A pipeline name with a
-- control character, such as a newline, is refused: see the end.)
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
-- (the results say what each call did; its NOTICE would only repeat it)
SET client_min_messages = warning;
\set VERBOSITY default

-- the tables an injection would drop
CREATE TABLE public.t (x int);
INSERT INTO public.t VALUES (1);
CREATE SCHEMA inj;
CREATE TABLE inj.t (x int);
INSERT INTO inj.t VALUES (1);

--
-- the classic: every name is an attempt
--
CREATE SCHEMA """; DROP SCHEMA inj CASCADE; --";
CREATE TABLE inj."x""; DROP TABLE t; --" (
    "k""; DROP TABLE t; --" int,
    "w'); DROP TABLE t; --" timestamptz,
    "p) OR true; --" date,
    "v$$; DROP TABLE t; $$" text);
CREATE TABLE """; DROP SCHEMA inj CASCADE; --"."x""; DROP TABLE t; --" (
    "k""; DROP TABLE t; --" int PRIMARY KEY,
    "w'); DROP TABLE t; --" timestamptz,
    "p) OR true; --" date,
    "v$$; DROP TABLE t; $$" text);
INSERT INTO inj."x""; DROP TABLE t; --"
SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', DATE '2026-03-01' + g % 3, 'v' || g
  FROM generate_series(1, 6) g;

SELECT hwm.create_pipeline($$'); DROP TABLE t; --$$,
                           'inj."x""; DROP TABLE t; --"',
                           '"""; DROP SCHEMA inj CASCADE; --"."x""; DROP TABLE t; --"',
                           ARRAY['k"; DROP TABLE t; --'],
                           $$w'); DROP TABLE t; --$$,
                           'p) OR true; --', 1);
SELECT pipeline, source, target, unique_key, watermark_column, partition_column
  FROM hwm.state WHERE pipeline = $$'); DROP TABLE t; --$$;
SELECT rows_upserted, partitions_overwritten, watermark_after FROM hwm.run($$'); DROP TABLE t; --$$);
SELECT rows_deleted, rows_inserted FROM hwm.overwrite($$'); DROP TABLE t; --$$, '2026-03-01', '2026-03-03');
SELECT hwm.set_watermark($$'); DROP TABLE t; --$$, '2026-03-01 02:00+00');
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run($$'); DROP TABLE t; --$$);
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('"""; DROP SCHEMA inj CASCADE; --"."x""; DROP TABLE t; --"',
                                      'inj."x""; DROP TABLE t; --"', 'p) OR true; --',
                                      '2026-03-01', '2026-03-03');
SELECT count(*) AS differences FROM (
  TABLE inj."x""; DROP TABLE t; --" EXCEPT TABLE """; DROP SCHEMA inj CASCADE; --"."x""; DROP TABLE t; --") d;

-- values that look like SQL: refused by the column type's input function,
-- or, for a text column, taken as the plain value they are
SELECT hwm.set_watermark($$'); DROP TABLE t; --$$, $$2026-03-01'); DROP TABLE t; --$$);
\echo :LAST_ERROR_SQLSTATE
SELECT rows_deleted, rows_inserted FROM hwm.overwrite($$'); DROP TABLE t; --$$, $$2026-03-01' OR true; --$$, '2026-03-03');
\echo :LAST_ERROR_SQLSTATE
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('"""; DROP SCHEMA inj CASCADE; --"."x""; DROP TABLE t; --"',
                                      'inj."x""; DROP TABLE t; --"', 'p) OR true; --',
                                      '2026-03-01', $$2026-03-03'::date); DROP TABLE t; --$$);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE inj.codes_src (code text COLLATE "C", note text);
CREATE TABLE inj.codes (code text COLLATE "C" PRIMARY KEY, note text);
INSERT INTO inj.codes_src VALUES ('a', 'first'), ('b''); DROP TABLE t; --', 'second'), ('z', 'last');
SELECT hwm.create_pipeline('codes', 'inj.codes_src', 'inj.codes', '{code}', 'code', 'code',
                           initial_watermark => $$'); DROP TABLE t; --$$);
SELECT watermark FROM hwm.state WHERE pipeline = 'codes';
SELECT rows_upserted, watermark_after FROM hwm.run('codes');
SELECT hwm.set_watermark('codes', $$b'); DROP TABLE t; --$$);
SELECT rows_upserted, watermark_after FROM hwm.run('codes');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('codes', $$a' OR '1'='1$$, $$b'); DROP TABLE t; --$$);
SELECT * FROM inj.codes ORDER BY code;

-- nothing was dropped
SELECT (SELECT count(*) FROM public.t) AS public_t, (SELECT count(*) FROM inj.t) AS inj_t,
       to_regclass('inj."x""; DROP TABLE t; --"') IS NOT NULL AS source_there;

SELECT hwm.drop_pipeline($$'); DROP TABLE t; --$$);
SELECT hwm.drop_pipeline('codes');
DROP SCHEMA """; DROP SCHEMA inj CASCADE; --" CASCADE;

--
-- the matrix: for each kind of name, a schema, a source and a target, key,
-- watermark, partition and payload columns, and a pipeline all named after
-- it; then create, run, overwrite, set_watermark, run, overwrite_partition,
-- drop, and compare the target with the source
--
CREATE FUNCTION inj.try(base text)
RETURNS TABLE (loaded bigint, overwritten bigint, reloaded bigint, differences bigint,
               watermark text, dropped boolean)
LANGUAGE plpgsql AS $$
DECLARE
    n1 text := base || '1';     -- schema, source, key column, pipeline
    n2 text := base || '2';     -- target, watermark column
    n3 text := base || '3';     -- partition column
    src text := format('%I.%I', n1, n1);
    tgt text := format('%I.%I', n1, n2);
BEGIN
    EXECUTE format('CREATE SCHEMA %I', n1);
    EXECUTE format('CREATE TABLE %s (%I int, %I timestamptz, %I date, %I text)',
                   src, n1, n2, n3, base);
    EXECUTE format('CREATE TABLE %s (%I int PRIMARY KEY, %I timestamptz, %I date, %I text)',
                   tgt, n1, n2, n3, base);
    EXECUTE format($q$INSERT INTO %s SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour',
                                          DATE '2026-03-01' + g %% 3, 'v' || g
                        FROM generate_series(1, 6) g$q$, src);
    PERFORM hwm.create_pipeline(n1, src::regclass, tgt::regclass, ARRAY[n1], n2::name, n3::name, 1);
    SELECT r.rows_upserted INTO loaded FROM hwm.run(n1) AS r;
    -- a late row and a changed row, caught by the overwrite
    EXECUTE format($q$INSERT INTO %s VALUES (7, '2026-03-01 00:30+00', '2026-03-01', 'late')$q$, src);
    EXECUTE format($q$UPDATE %s SET %I = 'changed' WHERE %I = 2$q$, src, base, n1);
    SELECT o.rows_deleted + o.rows_inserted INTO overwritten
      FROM hwm.overwrite(n1, '2026-03-01', '2026-03-03') AS o;
    -- back to 03:00, and a change to a row above that: only it is rewritten
    PERFORM hwm.set_watermark(n1, '2026-03-01 03:00+00');
    EXECUTE format($q$UPDATE %s SET %I = 'changed again' WHERE %I = 5$q$, src, base, n1);
    SELECT r.rows_upserted INTO reloaded FROM hwm.run(n1) AS r;
    PERFORM hwm.overwrite_partition(tgt::regclass, src::regclass, n3::name, '2026-03-01', '2026-03-03');
    EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT TABLE %s) UNION ALL (TABLE %s EXCEPT TABLE %s)) d',
                   src, tgt, tgt, src) INTO differences;
    SELECT s.watermark INTO watermark FROM hwm.state AS s WHERE s.pipeline = n1;
    PERFORM hwm.drop_pipeline(n1);
    dropped := NOT EXISTS (SELECT FROM hwm.state AS s WHERE s.pipeline = n1);
    EXECUTE format('DROP SCHEMA %I CASCADE', n1);
    RETURN NEXT;
END
$$;

SELECT kind, octet_length(base) + 1 AS name_bytes, r.*
  FROM (VALUES ('double quote', 'a"b'),
               ('single quote', 'it''s'),
               ('semicolon and comment', 'x; DROP TABLE t; --'),
               ('spaces', ' two  words '),
               ('upper case', 'MixedCase'),
               ('unicode', 'zählér_ü€_日本'),
               ('dots', 'public.t.'),
               ('format directives', '$1 %s %I %L'),
               ('backslash', 'back\slash'),
               ('reserved word', 'select'),
               ('max length, ascii', repeat('m', 62)),
               ('max length, unicode', repeat('é', 31))) AS f(kind, base),
       LATERAL inj.try(f.base) AS r;

-- 63 bytes is the most a name can have: a 64-byte pipeline name is refused
-- (PostgreSQL would silently truncate an identifier that long)
SELECT hwm.create_pipeline(repeat('m', 64), 'inj.codes_src', 'inj.codes', '{code}', 'code');
\echo :LAST_ERROR_SQLSTATE

-- a pipeline name is shown in logs, notifications and hwm.status: control
-- characters and names of spaces only are refused (22023), nothing is created
SELECT hwm.create_pipeline(E'new\nline', 'inj.codes_src', 'inj.codes', '{code}', 'code');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline(E'tab\there', 'inj.codes_src', 'inj.codes', '{code}', 'code');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.create_pipeline('   ', 'inj.codes_src', 'inj.codes', '{code}', 'code');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS pipelines FROM hwm.state;

-- and still nothing was dropped
SELECT (SELECT count(*) FROM public.t) AS public_t, (SELECT count(*) FROM inj.t) AS inj_t;

-- clean up
DROP SCHEMA inj CASCADE;
DROP TABLE public.t;
