-- bad_input: every public function (create_pipeline, run, overwrite,
-- overwrite_partition, set_watermark, drop_pipeline) refuses bad input --
-- unknown tables, columns and pipelines, a key no unique index can arbitrate,
-- incompatible or unordered column types, NULL, empty or out-of-range
-- arguments, unparsable values, reversed ranges, callers without the right
-- privileges -- with its own SQLSTATE and a clear message,
-- and changes nothing.  Valid pipelines with loaded rows exist first; after
-- each refused call, a fingerprint of the whole catalog (every column of
-- hwm.state), the number of rows in hwm.runs and the rows of every target
-- here is compared with the one taken before the first case: it must say
-- "t" every time.
\i test/setup.sql
CREATE SCHEMA bi;
SET datestyle = ISO;
\set VERBOSITY default

-- a source with columns of many types, and a valid pipeline with rows
CREATE TABLE bi.src (
    id int, day date, updated_at timestamptz, amount int,
    region text, doc jsonb, js json, pt point);
INSERT INTO bi.src
SELECT g, DATE '2026-03-01' + g % 3, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour',
       g * 10, 'r' || g % 2, jsonb_build_object('g', g), json_build_object('g', g), point(g, g)
  FROM generate_series(1, 6) g;
CREATE TABLE bi.tgt (id int PRIMARY KEY, day date, updated_at timestamptz, amount int);
SELECT hwm.create_pipeline('bi_ok', 'bi.src', 'bi.tgt', '{id}', 'updated_at', 'day', 1);
SELECT rows_upserted, partitions_overwritten, watermark_after FROM hwm.run('bi_ok');

-- a valid pipeline without a partition column
CREATE TABLE bi.tgt_np (id int PRIMARY KEY, updated_at timestamptz, amount int);
SELECT hwm.create_pipeline('bi_nopart', 'bi.src', 'bi.tgt_np', '{id}', 'updated_at');
SELECT rows_upserted, partitions_overwritten, watermark_after FROM hwm.run('bi_nopart');

-- a pipeline that was valid, then lost its watermark column
CREATE TABLE bi.src_b (id int, ts timestamptz);
CREATE TABLE bi.tgt_b (id int PRIMARY KEY, ts timestamptz);
SELECT hwm.create_pipeline('bi_broken', 'bi.src_b', 'bi.tgt_b', '{id}', 'ts');
ALTER TABLE bi.src_b DROP COLUMN ts;

-- relations that are wrong in one way each
CREATE TABLE bi.tgt_partial (id int, day date, updated_at timestamptz, amount int);
CREATE UNIQUE INDEX ON bi.tgt_partial (id) WHERE amount > 0;
CREATE TABLE bi.tgt_deferrable (id int UNIQUE DEFERRABLE INITIALLY IMMEDIATE,
                                day date, updated_at timestamptz, amount int);
CREATE TABLE bi.tgt_twice (id int, day date, updated_at timestamptz, amount int);
CREATE UNIQUE INDEX ON bi.tgt_twice (id, id);
CREATE TABLE bi.tgt_code (code text PRIMARY KEY, id int, updated_at timestamptz);
CREATE TABLE bi.tgt_doc (id int PRIMARY KEY, updated_at timestamptz, doc int);
CREATE TABLE bi.tgt_ts (id int PRIMARY KEY, day timestamp, updated_at timestamptz, amount int);
CREATE TABLE bi.tgt_json (id int PRIMARY KEY, js json, updated_at timestamptz);
CREATE TABLE bi.tgt_nn (id int PRIMARY KEY, updated_at timestamptz, batch text NOT NULL);
CREATE SEQUENCE bi.seq;
CREATE VIEW bi.tgt_view AS SELECT * FROM bi.tgt;

-- a pipeline owned by an ordinary role, and a role that owns no pipeline
-- and may read no table here
CREATE ROLE regress_hwm_bi_owner;
CREATE ROLE regress_hwm_bi_plain;
GRANT USAGE ON SCHEMA bi TO regress_hwm_bi_owner, regress_hwm_bi_plain;
CREATE TABLE bi.tgt_own (id int PRIMARY KEY, updated_at timestamptz, amount int);
GRANT SELECT ON bi.src TO regress_hwm_bi_owner;
GRANT SELECT, INSERT, UPDATE ON bi.tgt_own TO regress_hwm_bi_owner;
SET ROLE regress_hwm_bi_owner;
SELECT hwm.create_pipeline('bi_owned', 'bi.src', 'bi.tgt_own', '{id}', 'updated_at');
SELECT rows_upserted, watermark_after FROM hwm.run('bi_owned');
RESET ROLE;

-- what must not change: the catalog, the run count and every target's rows
CREATE FUNCTION bi.fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(concat_ws(' # ',
    (SELECT string_agg(s::text, ' | ' ORDER BY s.pipeline) FROM hwm.state AS s),
    (SELECT count(*) FROM hwm.runs),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bi.tgt AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bi.tgt_np AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bi.tgt_b AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bi.tgt_ts AS t),
    (SELECT string_agg(t::text, ' | ' ORDER BY t.id) FROM bi.tgt_own AS t)))
$$;
SELECT count(*) AS target_rows FROM bi.tgt;
SELECT pipeline, watermark FROM hwm.state WHERE pipeline LIKE 'bi\_%' ORDER BY 1;
SELECT bi.fingerprint() AS fp \gset

--
-- hwm.create_pipeline
--

-- unknown source or target table
SELECT hwm.create_pipeline('bi_x', 'bi.nosuch', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.nosuch', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- unknown watermark column (names are case-sensitive)
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'Updated_At');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- unknown partition column: in neither table, then only in the source
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', 'region');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- unknown key column: not in the target, then in the target but not the source
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{nope}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_code', '{code}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- no unique index covers exactly the key: none at all, a superset of the
-- primary key, a partial unique index, a deferrable unique constraint, an
-- index of as many columns that repeats one of them
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_twice', '{id,day}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{amount}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id,day}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_partial', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_deferrable', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- incompatible column types: jsonb in the source, integer in the target
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_doc', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- partition column of type date in the source but timestamp in the target
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_ts', '{id}', 'updated_at', 'day');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- watermark or partition column without a btree ordering (json, point)
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'js');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'pt');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_json', '{id}', 'updated_at', 'js');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a target column that is NOT NULL without a default and missing from the source
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_nn', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- NULL for each required argument
SELECT hwm.create_pipeline(NULL, 'bi.src', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', NULL, 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', NULL, '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', NULL, 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', 'day', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- unique_key empty, with a NULL element, with a repeated column
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', ARRAY['id', NULL], 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id,id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- negative lookback; lookback without a partition column
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', 'day', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', lookback => 2);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- schedule zero or negative
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', schedule => '0');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', schedule => '-5 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- negative delay; delay on a watermark column that is not time-typed
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at', delay => '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'amount', delay => '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- initial_watermark that does not parse as the watermark column's type
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at',
                           initial_watermark => 'last tuesday');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at',
                           initial_watermark => '');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- source and target are the same table
SELECT hwm.create_pipeline('bi_x', 'bi.tgt', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a view as the target
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt_view', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a sequence as the source
SELECT hwm.create_pipeline('bi_x', 'bi.seq', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a name that is taken, an empty name
SELECT hwm.create_pipeline('bi_ok', 'bi.src', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.create_pipeline('', 'bi.src', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

--
-- hwm.run
--

-- unknown pipeline, empty name, NULL
SELECT * FROM hwm.run('bi_nosuch');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.run('');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.run(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- NULL nowait
SELECT * FROM hwm.run('bi_ok', nowait => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- inside a REPEATABLE READ transaction
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM hwm.run('bi_ok');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a pipeline whose watermark column was dropped after it was created
SELECT * FROM hwm.run('bi_broken');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

--
-- hwm.overwrite
--

-- unknown pipeline, NULL pipeline
SELECT * FROM hwm.overwrite('bi_nosuch', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite(NULL, '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a pipeline without a partition column
SELECT * FROM hwm.overwrite('bi_nopart', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- reversed range
SELECT * FROM hwm.overwrite('bi_ok', '2026-03-03', '2026-03-01');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- bounds that do not parse as the partition column's type (date)
SELECT * FROM hwm.overwrite('bi_ok', 'March 1st', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite('bi_ok', '2026-03-01', '2026-02-30');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- NULL bounds, NULL nowait
SELECT * FROM hwm.overwrite('bi_ok', NULL, '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite('bi_ok', '2026-03-01', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite('bi_ok', '2026-03-01', '2026-03-02', nowait => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

--
-- hwm.overwrite_partition
--

-- unknown table
SELECT * FROM hwm.overwrite_partition('bi.nosuch', 'bi.src', 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- NULL target, source, partition column
SELECT * FROM hwm.overwrite_partition(NULL, 'bi.src', 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt', NULL, 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', NULL, '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- unknown partition column; partition column of different types
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', 'nope', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt_ts', 'bi.src', 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- source = target; a view as the target
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.tgt', 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt_view', 'bi.src', 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- reversed range, unparsable bound, NULL bounds
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', 'day', '2026-03-02', '2026-03-01');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', 'day', '2026-03-01', 'tomorrow-ish');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', 'day', NULL, '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', 'day', '2026-03-01', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

--
-- hwm.set_watermark
--

-- unknown pipeline, NULL pipeline
SELECT hwm.set_watermark('bi_nosuch', '2026-03-01 00:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.set_watermark(NULL, '2026-03-01 00:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a value that does not parse as the watermark column's type (timestamptz)
SELECT hwm.set_watermark('bi_ok', 'soon');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.set_watermark('bi_ok', '2026-02-30 00:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

--
-- hwm.drop_pipeline
--

-- unknown pipeline, NULL
SELECT hwm.drop_pipeline('bi_nosuch');
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;
SELECT hwm.drop_pipeline(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT bi.fingerprint() = :'fp' AS unchanged;

--
-- privileges
--

-- only the pipeline's owner (or a superuser) may run or change it
SET ROLE regress_hwm_bi_plain;
SELECT * FROM hwm.run('bi_owned');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bi.fingerprint() = :'fp' AS unchanged;
SET ROLE regress_hwm_bi_plain;
SELECT * FROM hwm.overwrite('bi_owned', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bi.fingerprint() = :'fp' AS unchanged;
SET ROLE regress_hwm_bi_plain;
SELECT hwm.set_watermark('bi_owned', NULL);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bi.fingerprint() = :'fp' AS unchanged;
SET ROLE regress_hwm_bi_plain;
SELECT hwm.drop_pipeline('bi_owned');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- a role that may not read the source declares a pipeline over it, or
-- overwrites a partition from it
SET ROLE regress_hwm_bi_plain;
SELECT hwm.create_pipeline('bi_x', 'bi.src', 'bi.tgt', '{id}', 'updated_at');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bi.fingerprint() = :'fp' AS unchanged;
SET ROLE regress_hwm_bi_plain;
SELECT * FROM hwm.overwrite_partition('bi.tgt', 'bi.src', 'day', '2026-03-01', '2026-03-02');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT bi.fingerprint() = :'fp' AS unchanged;

-- after all of that the pipelines still run: nothing new, watermark as before
SELECT rows_upserted, watermark_before = watermark_after AS same_watermark FROM hwm.run('bi_ok');

-- clean up
SELECT hwm.drop_pipeline('bi_ok');
SELECT hwm.drop_pipeline('bi_nopart');
SELECT hwm.drop_pipeline('bi_broken');
SELECT hwm.drop_pipeline('bi_owned');
SET client_min_messages = warning;
DROP SCHEMA bi CASCADE;
RESET client_min_messages;
DROP ROLE regress_hwm_bi_owner, regress_hwm_bi_plain;
SELECT count(*) AS pipelines_left FROM hwm.state WHERE pipeline LIKE 'bi\_%';
