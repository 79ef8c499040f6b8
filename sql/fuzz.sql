-- fuzz: every public function of hwm (found in pg_proc, so functions added
-- later are fuzzed too) is called 2500 times in all, by an ordinary role,
-- with arguments drawn at random (fixed seed) from pools of valid, boundary
-- and hostile values per argument type: NULLs, empty and two-dimensional
-- arrays, 100 kB strings, out-of-range numbers, relations that are not
-- tables, catalogs, other users' tables and pipelines, numbers that are no
-- relation, and now and then an argument of the wrong type.  Each call runs
-- in its own subtransaction and its outcome (SQLSTATE) is logged.  Then:
-- the server is still up; no call failed with an internal error; the
-- catalog is consistent (every pipeline's relations, owner, columns and
-- watermark are valid; the pipelines are exactly those the successful calls
-- created and did not drop; every new run belongs to one of them); and no
-- table holds a row that the sources did not have.
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
SET client_min_messages = warning;
-- nothing else runs here: a run need not wait for writers
SET hwm.wait_timeout = 0;

CREATE ROLE regress_hwm_fuzz;
CREATE ROLE regress_hwm_fuzz_other;
CREATE SCHEMA fz AUTHORIZATION regress_hwm_fuzz;
CREATE SCHEMA fz_other AUTHORIZATION regress_hwm_fuzz_other;
GRANT USAGE ON SCHEMA fz_other TO regress_hwm_fuzz;

-- another role's pipeline and table, which the fuzzer must not touch
SET ROLE regress_hwm_fuzz_other;
CREATE TABLE fz_other.src (id int, ts timestamptz, day date);
CREATE TABLE fz_other.tgt (id int PRIMARY KEY, ts timestamptz, day date);
INSERT INTO fz_other.src SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour',
                                DATE '2026-03-01' + g % 3 FROM generate_series(1, 5) g;
SELECT hwm.create_pipeline('fz_theirs', 'fz_other.src', 'fz_other.tgt', '{id}', 'ts', 'day', 1);
SELECT rows_upserted FROM hwm.run('fz_theirs');
RESET ROLE;
CREATE TEMP TABLE theirs_before AS
SELECT (SELECT s::text FROM hwm.state AS s WHERE s.pipeline = 'fz_theirs') AS state,
       (SELECT string_agg(t::text, '|' ORDER BY t.id) FROM fz_other.tgt AS t) AS target;

-- the fuzzer's tables: every row any of them may ever hold is in universe,
-- which the fuzzer may read and not write (it is among the relations it
-- passes: an overwrite of it by its owner would be no fault of hwm's)
CREATE TABLE fz.universe (id int, ts timestamptz, day date, n int, code text COLLATE "C");
INSERT INTO fz.universe
SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', DATE '2026-03-01' + g % 4,
       g % 7, 'c' || g
  FROM generate_series(1, 40) g;
GRANT SELECT ON fz.universe TO regress_hwm_fuzz;
SET ROLE regress_hwm_fuzz;
CREATE TABLE fz.s1 AS SELECT * FROM fz.universe WHERE id <= 30;
CREATE TABLE fz.s2 AS SELECT * FROM fz.universe WHERE id > 10;
CREATE TABLE fz.t1 (id int PRIMARY KEY, ts timestamptz, day date, n int, code text COLLATE "C");
CREATE TABLE fz.t2 (LIKE fz.t1 INCLUDING ALL);
CREATE TABLE fz.t3 (id int, ts timestamptz, day date, n int, code text COLLATE "C" PRIMARY KEY);
CREATE TABLE fz.noindex (LIKE fz.universe);
CREATE VIEW fz.v AS SELECT * FROM fz.s1;
CREATE SEQUENCE fz.seq;
CREATE TABLE fz.dropped (id int);
CREATE TABLE fz.gone AS SELECT 'fz.dropped'::regclass::oid AS dropped_oid;
DROP TABLE fz.dropped;
SELECT md5(string_agg(u::text, '|' ORDER BY u.id)) AS universe_fp FROM fz.universe AS u \gset

-- the log: one row per call
CREATE TABLE fz.log (
    call_no int PRIMARY KEY, fn text, arg1 text, call text, sqlstate text);

-- a random element of an array
CREATE FUNCTION fz.pick(a text[]) RETURNS text LANGUAGE sql AS
$$ SELECT a[1 + floor(random() * array_length(a, 1))::int] $$;

-- a hostile argument of type typ, as an SQL expression: from the type's
-- pool of valid, boundary and hostile values, now and then NULL, once in
-- twenty of a wrong type
CREATE FUNCTION fz.hostile_arg(typ regtype) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    names text[] := ARRAY['''fz_p1''', '''fz_p2''', '''fz_p3''', '''fz_p4''', '''fz_theirs''',
                          '''''', 'repeat(''p'', 100000)', '''x""; DROP TABLE fz.universe; --''',
                          '''Ünï€ødé ''', 'repeat(''p'', 63)', 'repeat(''p'', 64)'];
    values_ text[] := ARRAY['''2026-03-01''', '''2026-03-02 05:00+00''', '''2026-03-04''',
                            '''infinity''', '''-infinity''', '''NaN''', '''0''', '''7''', '''-1''',
                            '''2147483648''', '''-2147483649''', '''c15''', '''c9''', '''''',
                            'repeat(''9'', 100000)', '''2026-02-30''', '''now''',
                            '''1''''; DROP TABLE fz.universe; --'''];
    rels text[] := ARRAY['''fz.s1''', '''fz.s2''', '''fz.t1''', '''fz.t2''', '''fz.t3''',
                         '''fz.noindex''', '''fz.v''', '''fz.seq''', '''fz.universe''',
                         '''pg_catalog.pg_class''', '''hwm.state''', '''hwm.runs''',
                         '''fz_other.tgt''', '''fz_other.src''', '0::oid', '4294967295::oid',
                         (SELECT g.dropped_oid FROM fz.gone AS g) || '::oid'];
    keys text[] := ARRAY['''{id}''', '''{code}''', '''{}''', '''{NULL}''', '''{id,id}''',
                         '''{{id}}''', '''{n}''', '''{id,day}''', '''{""}''',
                         'ARRAY[repeat(''k'', 100000)]',
                         'ARRAY(SELECT ''k'' || g FROM generate_series(1, 1000) g)'];
    cols text[] := ARRAY['''ts''', '''day''', '''n''', '''code''', '''id''', '''''',
                         'repeat(''c'', 100)', '''TS'''];
    ints text[] := ARRAY['0', '1', '2', '3', '-1', '2147483647', '-2147483648'];
    bigints text[] := ARRAY['0', '1', '-1', '9223372036854775807', '-9223372036854775808'];
    intervals text[] := ARRAY['''0''', '''-1 second''', '''1 minute''', '''1 microsecond''',
                              '''300000 years''', '''-178000000 years''', '''1 day'''];
    wrong text[] := ARRAY['42', 'point(1, 2)', '''\x00''::bytea', 'ARRAY[1, 2]', 'true'];
BEGIN
    IF random() < 0.05 THEN
        RETURN fz.pick(wrong);
    END IF;
    IF random() < 0.08 THEN
        RETURN format('NULL::%s', typ);
    END IF;
    RETURN CASE typ
        WHEN 'text'::regtype THEN (CASE WHEN random() < 0.5 THEN fz.pick(names) ELSE fz.pick(values_) END) || '::text'
        WHEN 'regclass'::regtype THEN fz.pick(rels) || '::regclass'
        WHEN 'text[]'::regtype THEN fz.pick(keys) || '::text[]'
        WHEN 'name'::regtype THEN fz.pick(cols) || '::name'
        WHEN 'integer'::regtype THEN fz.pick(ints) || '::integer'
        WHEN 'bigint'::regtype THEN fz.pick(bigints) || '::bigint'
        WHEN 'interval'::regtype THEN fz.pick(intervals) || '::interval'
        WHEN 'boolean'::regtype THEN fz.pick(ARRAY['true', 'false']) || '::boolean'
        WHEN 'anyelement'::regtype THEN fz.pick(ARRAY['''2026-03-02''::date', '''infinity''::date',
                                                      '''2026-03-01 05:00+00''::timestamptz', '7', '-1',
                                                      '2147483648', '''c15''::text', 'point(1, 2)'])
        ELSE format('NULL::%s', typ)
    END;
END
$f$;

-- a plausible argument of type typ for the parameter called argname, so
-- that calls also succeed (and leave pipelines, runs and loaded rows behind
-- for later calls to work on)
CREATE FUNCTION fz.good_arg(typ regtype, argname text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
    RETURN CASE
        WHEN typ = 'text'::regtype AND argname = 'pipeline' THEN
            fz.pick(ARRAY['''fz_p1''', '''fz_p2''', '''fz_p3''', '''fz_p4''']) || '::text'
        WHEN typ = 'text'::regtype THEN
            fz.pick(ARRAY['''2026-03-01''', '''2026-03-02''', '''2026-03-04''', '''2026-03-01 05:00+00''',
                          '''3''', '''7''', 'NULL']) || '::text'
        WHEN typ = 'regclass'::regtype AND argname = 'source' THEN
            fz.pick(ARRAY['''fz.s1''', '''fz.s2''', '''fz.v''']) || '::regclass'
        WHEN typ = 'regclass'::regtype THEN
            fz.pick(ARRAY['''fz.t1''', '''fz.t2''', '''fz.t3''', '''fz.s1''']) || '::regclass'
        WHEN typ = 'text[]'::regtype THEN '''{id}''::text[]'
        WHEN typ = 'name'::regtype THEN fz.pick(ARRAY['''ts''', '''day''', '''n''', 'NULL']) || '::name'
        WHEN typ = 'integer'::regtype THEN fz.pick(ARRAY['0', '1', '2']) || '::integer'
        WHEN typ = 'bigint'::regtype THEN fz.pick(ARRAY['1', '10', '1000']) || '::bigint'
        WHEN typ = 'interval'::regtype THEN fz.pick(ARRAY['NULL', '''1 minute''', '''1 day''']) || '::interval'
        WHEN typ = 'boolean'::regtype THEN fz.pick(ARRAY['true', 'false']) || '::boolean'
        WHEN typ = 'anyelement'::regtype THEN
            fz.pick(ARRAY['''2026-03-01''::date', '''2026-03-02''::date', '''2026-03-04''::date',
                          '''2026-03-01 05:00+00''::timestamptz', '3', '7'])
        ELSE format('NULL::%s', typ)
    END;
END
$f$;

-- an argument: in a plausible call mostly plausible, otherwise hostile
CREATE FUNCTION fz.arg(typ regtype, argname text, plausible boolean) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN plausible AND random() < 0.9 THEN fz.good_arg(typ, argname)
                ELSE fz.hostile_arg(typ) END
$$;

-- the functions to call, in a fixed order, each once per unit of weight:
-- create_pipeline is drawn most often and drop_pipeline least, so that
-- pipelines exist for the other functions to work on
CREATE TABLE fz.fns AS
SELECT row_number() OVER (ORDER BY p.oid::regprocedure::text, w.n)::int AS idx,
       p.oid::regprocedure::text AS sig, p.proname::text AS proname, p.prokind,
       p.pronargs::int AS pronargs, p.pronargdefaults::int AS pronargdefaults,
       coalesce(p.proallargtypes, string_to_array(p.proargtypes::text, ' ')::oid[]) AS alltypes,
       coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[p.pronargs::int])) AS modes,
       coalesce(p.proargnames, '{}') AS argnames
  FROM pg_proc AS p,
       generate_series(1, CASE p.proname WHEN 'create_pipeline' THEN 6 WHEN 'drop_pipeline' THEN 1
                                         ELSE 2 END) AS w(n)
 WHERE p.pronamespace = 'hwm'::regnamespace AND p.prokind IN ('f', 'p');

-- the fuzzer: calls_total calls, each of a function drawn at random
CREATE FUNCTION fz.fuzz(calls_total int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    nfns int := (SELECT count(*) FROM fz.fns);
    f fz.fns;
    args text[];
    nargs int;
    nin int;
    k int;
    call text;
    state text;
    plausible boolean;
BEGIN
    FOR i IN 1 .. calls_total LOOP
        -- half of the calls are plausible, half hostile
        plausible := random() < 0.5;
        k := 1 + floor(random() * nfns)::int;
        SELECT * INTO STRICT f FROM fz.fns WHERE idx = k;
        args := '{}';
        -- a function: leave out some of the arguments that have defaults
        nargs := CASE WHEN f.prokind = 'f'
                      THEN f.pronargs - floor(random() * (f.pronargdefaults + 1))::int
                      ELSE f.pronargs END;
        nin := 0;
        FOR j IN 1 .. coalesce(array_length(f.alltypes, 1), 0) LOOP
            IF f.modes[j] IN ('o', 't') THEN
                -- a procedure's OUT arguments are passed as NULL
                IF f.prokind = 'p' THEN
                    args := args || 'NULL'::text;
                END IF;
                CONTINUE;
            END IF;
            nin := nin + 1;
            EXIT WHEN nin > nargs;
            args := args || fz.arg(f.alltypes[j]::regtype, f.argnames[j], plausible);
        END LOOP;
        call := format('%s hwm.%I(%s)', CASE f.prokind WHEN 'p' THEN 'CALL' ELSE 'SELECT' END,
                       f.proname, array_to_string(args, ', ', '?'));
        BEGIN
            EXECUTE call;
            state := '00000';
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
        END;
        INSERT INTO fz.log VALUES (i, f.sig, args[1], left(call, 500), state);
    END LOOP;
END
$f$;

RESET ROLE;
SELECT coalesce(max(run_id), 0) AS runs_before FROM hwm.runs \gset
SET ROLE regress_hwm_fuzz;
SELECT setseed(0.6);
-- (only the outcome of each call matters: no messages)
SET client_min_messages = error;
SELECT fz.fuzz(2500);
SET client_min_messages = warning;
RESET ROLE;

--
-- the server is up, every function was called many times, with many
-- different outcomes, and none of them an internal error
--
SELECT 'alive' AS server;
SELECT count(*) AS calls FROM fz.log;
SELECT bool_and(n >= 30) AS every_function_called_often
  FROM (SELECT p.oid, count(l.*) AS n
          FROM pg_proc AS p LEFT JOIN fz.log AS l ON l.fn = p.oid::regprocedure::text
         WHERE p.pronamespace = 'hwm'::regnamespace AND p.prokind IN ('f', 'p')
         GROUP BY p.oid) AS c;
SELECT count(*) FILTER (WHERE sqlstate = '00000') > 50 AS many_succeeded,
       count(DISTINCT sqlstate) > 10 AS many_different_errors
  FROM fz.log;
-- (no rows: no internal error, no crash-class error)
SELECT fn, sqlstate, call FROM fz.log
 WHERE sqlstate LIKE 'XX%' OR sqlstate LIKE '58%' OR sqlstate LIKE '57%'
 ORDER BY call_no;

--
-- the catalog is consistent
--
-- (no rows: every pipeline's relations, owner, columns, types and watermark
-- are valid)
CREATE FUNCTION fz.parses(v text, typ regtype) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT %L::%s', v, typ);
    RETURN true;
EXCEPTION WHEN OTHERS THEN
    RETURN false;
END
$$;
SELECT s.pipeline, problem
  FROM hwm.state AS s,
       LATERAL (VALUES
         ('source missing', NOT EXISTS (SELECT FROM pg_class AS c WHERE c.oid = s.source)),
         ('target missing', NOT EXISTS (SELECT FROM pg_class AS c WHERE c.oid = s.target)),
         ('source is target', s.source = s.target),
         ('owner missing', NOT EXISTS (SELECT FROM pg_roles AS r WHERE r.oid = s.owner)),
         ('watermark column missing or retyped',
          NOT EXISTS (SELECT FROM pg_attribute AS a
                       WHERE a.attrelid = s.source AND a.attname = s.watermark_column
                         AND NOT a.attisdropped AND a.atttypid = s.watermark_type)),
         ('partition column missing',
          s.partition_column IS NOT NULL
          AND (NOT EXISTS (SELECT FROM pg_attribute AS a WHERE a.attrelid = s.source
                             AND a.attname = s.partition_column AND NOT a.attisdropped)
               OR NOT EXISTS (SELECT FROM pg_attribute AS a WHERE a.attrelid = s.target
                                AND a.attname = s.partition_column AND NOT a.attisdropped))),
         ('key column missing',
          cardinality(s.unique_key) = 0
          OR EXISTS (SELECT FROM unnest(s.unique_key) AS k
                      WHERE NOT EXISTS (SELECT FROM pg_attribute AS a WHERE a.attrelid = s.target
                                          AND a.attname = k AND NOT a.attisdropped))),
         ('lookback without partition column', s.lookback > 0 AND s.partition_column IS NULL),
         ('watermark does not parse', s.watermark IS NOT NULL AND NOT fz.parses(s.watermark, s.watermark_type)),
         ('name too long or empty', octet_length(s.pipeline) NOT BETWEEN 1 AND 63),
         ('temporary or catalog relation',
          EXISTS (SELECT FROM pg_class AS c WHERE c.oid IN (s.source, s.target)
                    AND (c.relpersistence = 't' OR c.relnamespace IN ('pg_catalog'::regnamespace, 'hwm'::regnamespace))))
       ) AS v(problem, bad)
 WHERE bad
 ORDER BY 1, 2;

-- the fuzzer's pipelines are exactly those its successful calls created and
-- did not drop again, replayed in order
CREATE FUNCTION fz.expected_pipelines(OUT live text[], OUT ever text[]) LANGUAGE plpgsql AS $$
DECLARE
    r record;
    name text;
BEGIN
    live := '{}';
    ever := '{}';
    FOR r IN SELECT * FROM fz.log WHERE sqlstate = '00000'
              AND fn LIKE ANY (ARRAY['hwm.create_pipeline(%', 'hwm.drop_pipeline(%'])
              ORDER BY call_no LOOP
        EXECUTE 'SELECT ' || r.arg1 INTO name;
        IF r.fn LIKE 'hwm.create_pipeline(%' THEN
            live := live || name;
            ever := ever || name;
        ELSE
            live := array_remove(live, name);
        END IF;
    END LOOP;
END
$$;
SELECT cardinality(ever) > 0 AS some_created, cardinality(live) > 0 AS some_left,
       (SELECT count(*) FROM fz.log WHERE sqlstate = '00000' AND fn LIKE 'hwm.drop_pipeline(%') > 0 AS some_dropped,
       ARRAY(SELECT unnest(live) ORDER BY 1)
         = ARRAY(SELECT s.pipeline FROM hwm.state AS s
                  WHERE s.owner = 'regress_hwm_fuzz'::regrole ORDER BY 1) AS catalog_matches_calls
  FROM fz.expected_pipelines();
-- (no rows: every run recorded since belongs to a pipeline that existed, or
-- to no pipeline, and is finished)
SELECT r.run_id, r.pipeline, r.kind, r.status
  FROM hwm.runs AS r, fz.expected_pipelines() AS e
 WHERE r.run_id > :runs_before
   AND ((r.pipeline IS NOT NULL AND r.pipeline <> ALL (e.ever)) OR r.status <> 'succeeded')
 ORDER BY 1;
-- the other role's pipeline and its target are as they were
SELECT (SELECT s::text FROM hwm.state AS s WHERE s.pipeline = 'fz_theirs') = b.state AS their_pipeline_unchanged,
       (SELECT string_agg(t::text, '|' ORDER BY t.id) FROM fz_other.tgt AS t) = b.target AS their_target_unchanged
  FROM theirs_before AS b;

--
-- no table holds a row that the sources did not have, and the sources are
-- intact
--
SELECT md5(string_agg(u::text, '|' ORDER BY u.id)) = :'universe_fp' AS universe_intact FROM fz.universe AS u;
SELECT rel, count(*) AS foreign_rows
  FROM (SELECT 's1' AS rel, t::text AS r FROM fz.s1 AS t UNION ALL
        SELECT 's2', t::text FROM fz.s2 AS t UNION ALL
        SELECT 't1', t::text FROM fz.t1 AS t UNION ALL
        SELECT 't2', t::text FROM fz.t2 AS t UNION ALL
        SELECT 't3', t::text FROM fz.t3 AS t UNION ALL
        SELECT 'noindex', t::text FROM fz.noindex AS t) AS x
 WHERE r NOT IN (SELECT u::text FROM fz.universe AS u)
 GROUP BY rel ORDER BY rel;
SELECT count(*) > 0 AS targets_were_loaded FROM (TABLE fz.t1 UNION ALL TABLE fz.t2 UNION ALL TABLE fz.t3) AS t;

-- clean up
DO $$
DECLARE
    p text;
BEGIN
    FOR p IN SELECT pipeline FROM hwm.state
              WHERE owner IN ('regress_hwm_fuzz'::regrole, 'regress_hwm_fuzz_other'::regrole) LOOP
        PERFORM hwm.drop_pipeline(p);
    END LOOP;
END
$$;
DROP SCHEMA fz, fz_other CASCADE;
DROP OWNED BY regress_hwm_fuzz, regress_hwm_fuzz_other;
DROP ROLE regress_hwm_fuzz, regress_hwm_fuzz_other;
SELECT 'alive' AS server;
