-- changed: the change test of the generated upserts, hwm.changed.  A row
-- that re-arrives with the same bytes in every loaded column writes no new
-- row version; a row whose bytes differ is written, even when the type's
-- "=" calls the two values equal (numeric 1.0 and 1.00, float 0 and -0),
-- for types without "=" (json), for NULL against a value, and for toasted
-- values that differ in their last byte.  A target with more non-key columns
-- than one function call takes (50) is compared in several calls.  Then the
-- function itself, and what it refuses.
\i test/setup.sql
CREATE SCHEMA changed_test;
SET search_path = changed_test, public;
\set VERBOSITY default

-- The source has a version column (the watermark) that the target lacks,
-- so a re-sent row differs from the stored one only where its payload does.
CREATE TABLE src (id int, version int, n numeric, f float8, j json, b jsonb, t text);
CREATE TABLE tgt (id int PRIMARY KEY, n numeric, f float8, j json, b jsonb, t text);
ALTER TABLE tgt ALTER COLUMN t SET STORAGE EXTERNAL;
-- a value that is stored out of line (about 64 kB)
CREATE FUNCTION big(last text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT string_agg(md5(i::text), '' ORDER BY i) || last FROM generate_series(1, 2000) AS i $$;
INSERT INTO src VALUES
  (1, 1, 1.0, 0, '{"a":1}', '{"a":1}', 'x'),
  (2, 1, 2, 2, '[]', '[]', NULL),
  (3, 1, 3, 3, '[]', '[]', big('a')),
  (4, 1, 4, 4, '[]', '[]', 'y');
SELECT hwm.create_pipeline('changed', 'src', 'tgt', '{id}', 'version');
SELECT rows_upserted FROM hwm.run('changed');
SELECT pg_column_size(t) > 60000 AS stored_big FROM tgt WHERE id = 3;

-- which rows got a new version since the last call
CREATE TABLE seen AS SELECT id, xmin::text AS x FROM tgt;
CREATE FUNCTION rewritten() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    SELECT coalesce(string_agg(t.id::text, ',' ORDER BY t.id), 'none') INTO r
      FROM tgt AS t LEFT JOIN seen AS s USING (id)
     WHERE s.x IS DISTINCT FROM t.xmin::text;
    DELETE FROM seen;
    INSERT INTO seen SELECT id, xmin::text FROM tgt;
    RETURN r;
END
$$;

-- every row re-sent with the same payload: nothing is rewritten
UPDATE src SET version = 2;
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();

-- the same under "=", not the same bytes: each is a change
UPDATE src SET version = 3, n = 1.00 WHERE id = 1;            -- 1.0 = 1.00
UPDATE src SET version = 3, f = '-0' WHERE id = 2;            -- 0 = -0
UPDATE src SET version = 3, j = '[ ]' WHERE id = 4;           -- json has no "="
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();
SELECT id, n, f, j FROM tgt WHERE id IN (1, 2, 4) ORDER BY id;

-- jsonb normalizes its input: the same bytes, so no change
UPDATE src SET version = 4, b = '{"a": 1}' WHERE id = 1;
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();

-- NULL against a value, both ways; NULL against NULL is no change
UPDATE src SET version = 5, t = 'now set' WHERE id = 2;
UPDATE src SET version = 5, t = NULL WHERE id = 4;
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();
UPDATE src SET version = 6 WHERE id = 4;
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();

-- a toasted value: the same is no change, one byte more at the end is
UPDATE src SET version = 7, t = big('a') WHERE id = 3;
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();
UPDATE src SET version = 8, t = big('b') WHERE id = 3;
SELECT rows_upserted FROM hwm.run('changed');
SELECT rewritten();
SELECT right(t, 3) FROM tgt WHERE id = 3;

--
-- 60 non-key columns: compared in two calls of at most 50 pairs
--
DO $$
BEGIN
    EXECUTE 'CREATE TABLE wide_src (id int, version int, '
         || (SELECT string_agg(format('c%s int', i), ', ' ORDER BY i) FROM generate_series(1, 60) AS i) || ')';
    EXECUTE 'CREATE TABLE wide_tgt (id int PRIMARY KEY, '
         || (SELECT string_agg(format('c%s int', i), ', ' ORDER BY i) FROM generate_series(1, 60) AS i) || ')';
END
$$;
INSERT INTO wide_src (id, version) VALUES (1, 1);
SELECT hwm.create_pipeline('changed_wide', 'wide_src', 'wide_tgt', '{id}', 'version');
SELECT rows_upserted FROM hwm.run('changed_wide');
SELECT xmin::text AS wide_x FROM wide_tgt \gset
-- re-sent unchanged: no new version
UPDATE wide_src SET version = 2;
SELECT rows_upserted FROM hwm.run('changed_wide');
SELECT xmin::text = :'wide_x' AS same_version FROM wide_tgt;
-- a change in column 55 only, which the second call compares
UPDATE wide_src SET version = 3, c55 = 55;
SELECT rows_upserted FROM hwm.run('changed_wide');
SELECT xmin::text = :'wide_x' AS same_version, c55 FROM wide_tgt;
-- and in column 1 only, which the first call compares
SELECT xmin::text AS wide_x FROM wide_tgt \gset
UPDATE wide_src SET version = 4, c1 = 1;
SELECT rows_upserted FROM hwm.run('changed_wide');
SELECT xmin::text = :'wide_x' AS same_version, c1, c55 FROM wide_tgt;

--
-- the function itself
--
SELECT hwm.changed(1, 1) AS int_same,
       hwm.changed(1, 2) AS int_other,
       hwm.changed(NULL::int, NULL::int) AS nulls,
       hwm.changed(NULL::int, 1) AS null_value,
       hwm.changed(1.0, 1.00) AS numeric_scale,
       hwm.changed('a'::text, 'x'::text, 'a'::text, 'x'::text) AS two_pairs_same,
       hwm.changed('a'::text, 'x'::text, 'a'::text, 'y'::text) AS second_pair_differs,
       hwm.changed('lit', 'lit') AS unknown_literals,
       hwm.changed(ROW(1, 'a'), ROW(1, 'a')) AS records;
-- what it refuses
SELECT hwm.changed(1);
SELECT hwm.changed(1, 2, 3);
SELECT hwm.changed(1, 'x'::text);
SELECT hwm.changed(1::int, 1::bigint);
SELECT hwm.changed(VARIADIC ARRAY[1, 1]);

SELECT hwm.drop_pipeline('changed');
SELECT hwm.drop_pipeline('changed_wide');
DROP SCHEMA changed_test CASCADE;
