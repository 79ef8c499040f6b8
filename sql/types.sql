-- types: watermark and partition columns of every ordered type hwm is meant
-- for (timestamptz, timestamp, date, integer, bigint, numeric, text, and a
-- domain over timestamptz).  For each: the first run loads everything, a
-- second run loads nothing, a new row above the watermark loads, a late row
-- below it is caught by the lookback overwrite of the newest partition, an
-- overwrite with text bounds parses them with the column's type, and the
-- stored watermark is the type's canonical text.  An initial_watermark is
-- stored in canonical form too, and one that does not parse is refused.
-- Text compares as text ('10' comes before '9') with the column's collation.
-- Last, under DateStyle 'SQL, DMY' and TimeZone America/New_York, a
-- timestamptz watermark set by hand is still stored as ISO text in UTC and
-- the next run loads exactly the rows above it.
\i test/setup.sql
CREATE SCHEMA types_test;
SET search_path = types_test, public;
SET datestyle = 'ISO, YMD';
\set VERBOSITY default

-- rows that differ between two tables of the same layout (0: same rows)
CREATE FUNCTION types_test.differences(a regclass, b regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((TABLE %1$s EXCEPT ALL TABLE %2$s)'
                   ' UNION ALL (TABLE %2$s EXCEPT ALL TABLE %1$s)) AS d', a, b)
       INTO n;
    RETURN n;
END
$$;

--
-- timestamptz: the input carries various offsets; what is stored is UTC
--
CREATE TABLE tstz_src (id int, wm timestamptz, part timestamptz, note text);
CREATE TABLE tstz_tgt (id int PRIMARY KEY, wm timestamptz, part timestamptz, note text);
INSERT INTO tstz_src VALUES
  (1, '2026-03-01 10:00+00', '2026-03-01 00:00+00', 'a'),
  (2, '2026-03-01 12:00+01', '2026-03-01 00:00+00', 'b'),
  (3, '2026-03-02 10:00+01', '2026-03-02 00:00+00', 'c');
SELECT hwm.create_pipeline('types_tstz', 'tstz_src', 'tstz_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_tstz');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_tstz');
-- a new row (12:00 UTC), a late row in the newest partition, a change in an older one
INSERT INTO tstz_src VALUES (4, '2026-03-02 07:00-05', '2026-03-02 00:00+00', 'd'),
                            (5, '2026-03-01 08:00+00', '2026-03-02 00:00+00', 'late');
UPDATE tstz_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_tstz');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_tstz', '2026-02-28 19:00-05', '2026-03-01 00:00+00');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_tstz';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_tstz' ORDER BY run_id;
SELECT differences('tstz_src', 'tstz_tgt');
-- initial_watermark: stored in UTC; one that does not parse is refused
SELECT hwm.create_pipeline('types_tstz_init', 'tstz_src', 'tstz_tgt', '{id}', 'wm',
                           initial_watermark => '2026-03-02 11:00+01');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_tstz_init';
SELECT hwm.drop_pipeline('types_tstz_init');
SELECT hwm.create_pipeline('types_tstz_init', 'tstz_src', 'tstz_tgt', '{id}', 'wm',
                           initial_watermark => 'noonish');
\echo :LAST_ERROR_SQLSTATE

--
-- timestamp without time zone: stored without an offset
--
CREATE TABLE ts_src (id int, wm timestamp, part timestamp, note text);
CREATE TABLE ts_tgt (id int PRIMARY KEY, wm timestamp, part timestamp, note text);
INSERT INTO ts_src VALUES
  (1, '2026-03-01 10:00', '2026-03-01', 'a'),
  (2, '2026-03-01 11:00', '2026-03-01', 'b'),
  (3, '2026-03-02 09:00', '2026-03-02', 'c');
SELECT hwm.create_pipeline('types_ts', 'ts_src', 'ts_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_ts');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_ts');
INSERT INTO ts_src VALUES (4, '2026-03-02 12:00', '2026-03-02', 'd'),
                          (5, '2026-03-01 08:00', '2026-03-02', 'late');
UPDATE ts_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_ts');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_ts', '2026-03-01', '2026-03-01T00:00:00');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_ts';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_ts' ORDER BY run_id;
SELECT differences('ts_src', 'ts_tgt');
SELECT hwm.create_pipeline('types_ts_init', 'ts_src', 'ts_tgt', '{id}', 'wm',
                           initial_watermark => '2026-03-02T10:00');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_ts_init';
SELECT hwm.drop_pipeline('types_ts_init');
SELECT hwm.create_pipeline('types_ts_init', 'ts_src', 'ts_tgt', '{id}', 'wm',
                           initial_watermark => 'half past ten');
\echo :LAST_ERROR_SQLSTATE

--
-- date
--
CREATE TABLE date_src (id int, wm date, part date, note text);
CREATE TABLE date_tgt (id int PRIMARY KEY, wm date, part date, note text);
INSERT INTO date_src VALUES
  (1, '2026-02-27', '2026-02-01', 'a'),
  (2, '2026-02-28', '2026-02-01', 'b'),
  (3, '2026-03-02', '2026-03-01', 'c');
SELECT hwm.create_pipeline('types_date', 'date_src', 'date_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_date');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_date');
INSERT INTO date_src VALUES (4, '2026-03-03', '2026-03-01', 'd'),
                            (5, '2026-02-28', '2026-03-01', 'late');
UPDATE date_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_date');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_date', 'February 1, 2026', '2026-02-01');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_date';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_date' ORDER BY run_id;
SELECT differences('date_src', 'date_tgt');
SELECT hwm.create_pipeline('types_date_init', 'date_src', 'date_tgt', '{id}', 'wm',
                           initial_watermark => 'March 2, 2026');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_date_init';
SELECT hwm.drop_pipeline('types_date_init');
SELECT hwm.create_pipeline('types_date_init', 'date_src', 'date_tgt', '{id}', 'wm',
                           initial_watermark => 'someday');
\echo :LAST_ERROR_SQLSTATE

--
-- integer
--
CREATE TABLE int_src (id int, wm integer, part integer, note text);
CREATE TABLE int_tgt (id int PRIMARY KEY, wm integer, part integer, note text);
INSERT INTO int_src VALUES (1, 10, 1, 'a'), (2, 20, 1, 'b'), (3, 30, 2, 'c');
SELECT hwm.create_pipeline('types_int', 'int_src', 'int_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_int');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_int');
INSERT INTO int_src VALUES (4, 40, 2, 'd'), (5, 15, 2, 'late');
UPDATE int_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_int');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_int', ' 1', '+1');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_int';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_int' ORDER BY run_id;
SELECT differences('int_src', 'int_tgt');
SELECT hwm.create_pipeline('types_int_init', 'int_src', 'int_tgt', '{id}', 'wm',
                           initial_watermark => ' 025 ');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_int_init';
SELECT hwm.drop_pipeline('types_int_init');
SELECT hwm.create_pipeline('types_int_init', 'int_src', 'int_tgt', '{id}', 'wm',
                           initial_watermark => 'ten');
\echo :LAST_ERROR_SQLSTATE

--
-- bigint: values beyond the integer range
--
CREATE TABLE big_src (id int, wm bigint, part bigint, note text);
CREATE TABLE big_tgt (id int PRIMARY KEY, wm bigint, part bigint, note text);
INSERT INTO big_src VALUES
  (1, 5000000010, 100, 'a'), (2, 5000000020, 100, 'b'), (3, 5000000030, 200, 'c');
SELECT hwm.create_pipeline('types_bigint', 'big_src', 'big_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_bigint');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_bigint');
INSERT INTO big_src VALUES (4, 5000000040, 200, 'd'), (5, 5000000015, 200, 'late');
UPDATE big_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_bigint');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_bigint', '100', '100');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_bigint';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_bigint' ORDER BY run_id;
SELECT differences('big_src', 'big_tgt');
SELECT hwm.create_pipeline('types_bigint_init', 'big_src', 'big_tgt', '{id}', 'wm',
                           initial_watermark => '+5000000025');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_bigint_init';
SELECT hwm.drop_pipeline('types_bigint_init');
SELECT hwm.create_pipeline('types_bigint_init', 'big_src', 'big_tgt', '{id}', 'wm',
                           initial_watermark => '5e9');
\echo :LAST_ERROR_SQLSTATE

--
-- numeric: the stored text keeps the value's scale
--
CREATE TABLE num_src (id int, wm numeric, part numeric, note text);
CREATE TABLE num_tgt (id int PRIMARY KEY, wm numeric, part numeric, note text);
INSERT INTO num_src VALUES (1, 1.5, 1.0, 'a'), (2, 2.25, 1.0, 'b'), (3, 3.125, 2.0, 'c');
SELECT hwm.create_pipeline('types_numeric', 'num_src', 'num_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_numeric');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_numeric');
INSERT INTO num_src VALUES (4, 4.0625, 2.0, 'd'), (5, 2.0, 2.0, 'late');
UPDATE num_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_numeric');
-- 1 and 1.00 are the same partition as 1.0
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_numeric', '1', '1.00');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_numeric';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_numeric' ORDER BY run_id;
SELECT differences('num_src', 'num_tgt');
SELECT hwm.create_pipeline('types_numeric_init', 'num_src', 'num_tgt', '{id}', 'wm',
                           initial_watermark => '0003.50');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_numeric_init';
SELECT hwm.drop_pipeline('types_numeric_init');
SELECT hwm.create_pipeline('types_numeric_init', 'num_src', 'num_tgt', '{id}', 'wm',
                           initial_watermark => '3,5');
\echo :LAST_ERROR_SQLSTATE

--
-- text: the lesson's layout, where updated_at and load_date are TEXT; the
-- lookback of 2 partitions catches the lesson's late row id 4
--
CREATE TABLE text_src (id int, load_date text, updated_at text, amount int);
CREATE TABLE text_tgt (id int PRIMARY KEY, load_date text, updated_at text, amount int);
INSERT INTO text_src VALUES
  (1, '2026-03-01', '2026-03-01 09:00', 100),
  (2, '2026-03-02', '2026-03-02 10:00', 200),
  (3, '2026-03-03', '2026-03-03 10:00', 300);
SELECT hwm.create_pipeline('types_text', 'text_src', 'text_tgt', '{id}', 'updated_at', 'load_date', 2);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_text');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_text');
INSERT INTO text_src VALUES (4, '2026-03-02', '2026-03-02 09:00', 250),
                            (5, '2026-03-03', '2026-03-03 11:00', 500);
UPDATE text_src SET amount = 150 WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_text');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_text', '2026-03-01', '2026-03-01');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_text';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_text' ORDER BY run_id;
SELECT differences('text_src', 'text_tgt');
-- every string is a valid text value: an initial_watermark is stored as given
SELECT hwm.create_pipeline('types_text_init', 'text_src', 'text_tgt', '{id}', 'updated_at',
                           initial_watermark => '2026-03-02 10:00');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_text_init';
SELECT hwm.drop_pipeline('types_text_init');

-- text compares as text, not as numbers: '10' sorts before '9', so a row
-- with '10' is not newer than the watermark '9' (but '95' is)
CREATE TABLE digits_src (id int, wm text);
CREATE TABLE digits_tgt (id int PRIMARY KEY, wm text);
INSERT INTO digits_src VALUES (1, '7'), (2, '8'), (3, '9');
SELECT hwm.create_pipeline('types_digits', 'digits_src', 'digits_tgt', '{id}', 'wm');
SELECT rows_upserted, watermark_after FROM hwm.run('types_digits');
INSERT INTO digits_src VALUES (4, '10');
SELECT rows_upserted, watermark_after FROM hwm.run('types_digits');
INSERT INTO digits_src VALUES (5, '95');
SELECT rows_upserted, watermark_after FROM hwm.run('types_digits');
SELECT id, wm FROM digits_tgt ORDER BY id;

-- the watermark column's own collation decides: in "C", 'C' < 'b' < 'c'
CREATE TABLE c_src (id int, wm text COLLATE "C");
CREATE TABLE c_tgt (id int PRIMARY KEY, wm text COLLATE "C");
INSERT INTO c_src VALUES (1, 'a'), (2, 'b');
SELECT hwm.create_pipeline('types_collate_c', 'c_src', 'c_tgt', '{id}', 'wm');
SELECT rows_upserted, watermark_after FROM hwm.run('types_collate_c');
INSERT INTO c_src VALUES (3, 'C'), (4, 'c');
SELECT rows_upserted, watermark_after FROM hwm.run('types_collate_c');
SELECT id, wm FROM c_tgt ORDER BY id;

--
-- a domain over timestamptz, with a check constraint
--
CREATE DOMAIN types_test.event_time AS timestamptz CHECK (VALUE >= '2000-01-01 00:00+00');
CREATE TABLE dom_src (id int, wm event_time, part event_time, note text);
CREATE TABLE dom_tgt (id int PRIMARY KEY, wm event_time, part event_time, note text);
INSERT INTO dom_src VALUES
  (1, '2026-03-01 10:00+00', '2026-03-01 00:00+00', 'a'),
  (2, '2026-03-01 11:00+00', '2026-03-01 00:00+00', 'b'),
  (3, '2026-03-02 09:00+00', '2026-03-02 00:00+00', 'c');
SELECT hwm.create_pipeline('types_domain', 'dom_src', 'dom_tgt', '{id}', 'wm', 'part', 1);
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_domain');
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_domain');
INSERT INTO dom_src VALUES (4, '2026-03-02 12:00+00', '2026-03-02 00:00+00', 'd'),
                           (5, '2026-03-01 08:00+00', '2026-03-02 00:00+00', 'late');
UPDATE dom_src SET note = 'a2' WHERE id = 1;
SELECT rows_upserted, partitions_overwritten, rows_inserted, watermark_after FROM hwm.run('types_domain');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('types_domain', '2026-03-01 01:00+01', '2026-03-01 00:00+00');
SELECT watermark_type, watermark FROM hwm.state WHERE pipeline = 'types_domain';
SELECT kind, from_partition, to_partition FROM hwm.runs WHERE pipeline = 'types_domain' ORDER BY run_id;
SELECT differences('dom_src', 'dom_tgt');
SELECT hwm.create_pipeline('types_domain_init', 'dom_src', 'dom_tgt', '{id}', 'wm',
                           initial_watermark => '2026-03-02 11:00+01');
SELECT watermark FROM hwm.state WHERE pipeline = 'types_domain_init';
SELECT hwm.drop_pipeline('types_domain_init');
SELECT hwm.create_pipeline('types_domain_init', 'dom_src', 'dom_tgt', '{id}', 'wm',
                           initial_watermark => 'whenever');
\echo :LAST_ERROR_SQLSTATE
-- a value of the base type that the domain's constraint refuses
SELECT hwm.create_pipeline('types_domain_init', 'dom_src', 'dom_tgt', '{id}', 'wm',
                           initial_watermark => '1999-12-31 00:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS init_pipelines_left FROM hwm.state WHERE pipeline LIKE 'types\_%\_init';

--
-- canonical storage: a session with another DateStyle and TimeZone reads
-- and writes the same watermark text
--
CREATE TABLE style_src (id int, wm timestamptz, note text);
CREATE TABLE style_tgt (id int PRIMARY KEY, wm timestamptz, note text);
INSERT INTO style_src VALUES
  (1, '2026-03-02 09:00+00', 'a'), (2, '2026-03-02 10:00+00', 'b'), (3, '2026-03-02 11:00+00', 'c');
SELECT hwm.create_pipeline('types_style', 'style_src', 'style_tgt', '{id}', 'wm');
SELECT rows_upserted, watermark_after FROM hwm.run('types_style');
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'America/New_York';
-- this session shows 2 March 10:00 UTC as 02/03/2026 05:00 EST
SELECT id, wm FROM style_src ORDER BY id;
-- so that is how the watermark is given here: day first, New York time
SELECT hwm.set_watermark('types_style', '02/03/2026 05:00');
-- stored as ISO text in UTC all the same
SELECT watermark FROM hwm.state WHERE pipeline = 'types_style';
SELECT watermark_before, watermark_after FROM hwm.runs
 WHERE pipeline = 'types_style' AND kind = 'set_watermark';
-- every row changes; the run reloads only the one strictly above 10:00 UTC
UPDATE style_src SET note = note || '2';
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('types_style');
SELECT id, note FROM style_tgt ORDER BY id;
RESET DateStyle;
RESET TimeZone;
SELECT watermark FROM hwm.state WHERE pipeline = 'types_style';

--
-- the watermark column's type changed after the pipeline was declared
--
CREATE TABLE retype_src (id bigint PRIMARY KEY, note text);
CREATE TABLE retype_tgt (id bigint PRIMARY KEY, note text);
INSERT INTO retype_src SELECT g, 'n' FROM generate_series(1, 9) g;
SELECT hwm.create_pipeline('types_retype', 'retype_src', 'retype_tgt', '{id}', 'id');
SELECT rows_upserted, watermark_after FROM hwm.run('types_retype');
-- to text: the watermark 9 compared as text, '10' sorts below it and would
-- never be loaded: every run is refused, nothing loaded, the watermark kept
ALTER TABLE retype_src ALTER COLUMN id TYPE text;
ALTER TABLE retype_tgt ALTER COLUMN id TYPE text;
INSERT INTO retype_src VALUES ('10', 'n');
SELECT rows_upserted FROM hwm.run('types_retype');
SELECT hwm.alter_pipeline('types_retype', lookback => 0);
SELECT watermark, watermark_type FROM hwm.state WHERE pipeline = 'types_retype';
-- a number again, wider than before: the stored 9 reads as the same number
-- and numbers order alike, so the runs go on (the row of 10 is loaded)
ALTER TABLE retype_src ALTER COLUMN id TYPE numeric USING id::numeric;
ALTER TABLE retype_tgt ALTER COLUMN id TYPE bigint USING id::bigint;
SELECT rows_upserted, watermark_after FROM hwm.run('types_retype');
SELECT count(*) AS loaded FROM retype_tgt;
-- alter_pipeline takes the column's type as it is now
SELECT hwm.alter_pipeline('types_retype', lookback => 0);
SELECT watermark, watermark_type FROM hwm.state WHERE pipeline = 'types_retype';

-- clean up
SELECT pipeline, hwm.drop_pipeline(pipeline) FROM hwm.state WHERE pipeline LIKE 'types\_%' ORDER BY pipeline;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA types_test CASCADE;
RESET client_min_messages;
SELECT count(*) AS pipelines_left FROM hwm.state WHERE pipeline LIKE 'types\_%';
