\set ECHO none
-- What every regression file (sql/*.sql) needs, included by its first line
-- (\i test/setup.sql, from the directory make installcheck runs in) so that
-- each file also runs alone (make installcheck REGRESS=X): the extension,
-- and test_fingerprint(), which the files use to show that running
-- something twice leaves the same rows.  Nothing is shown of it in the
-- expected output but the include.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS hwm;

-- order-independent fingerprint of a table's rows: count and checksum
CREATE OR REPLACE FUNCTION public.test_fingerprint(rel regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE format('SELECT count(*) || '' rows, md5 '' || coalesce(md5(string_agg(r::text, ''|'' ORDER BY r::text)), ''-'') FROM %s AS r', rel)
       INTO result;
    RETURN result;
END
$$;
RESET client_min_messages;
\set ECHO all
