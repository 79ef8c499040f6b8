-- catch_up: a pipeline can cap the rows of one run (batch_size), and
-- CALL hwm.catch_up loads a backlog batch after batch.  Outside a transaction
-- block each batch commits with its watermark, so a failure in the middle
-- keeps the batches before it; a batch never splits rows that share one
-- watermark value; inside a transaction block the batches share the caller's
-- transaction.
\i test/setup.sql
CREATE SCHEMA catch_up;
SET search_path = catch_up, public;

CREATE TABLE src (id int, n int, v text);
CREATE TABLE tgt (id int PRIMARY KEY, n int, v text);
-- 10 rows; four of them share watermark value 3
INSERT INTO src VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 3, 'd'), (5, 3, 'e'),
                       (6, 3, 'f'), (7, 4, 'g'), (8, 5, 'h'), (9, 6, 'i'), (10, 7, 'j');
SELECT hwm.create_pipeline('catch_up', 'src', 'tgt', '{id}', 'n', batch_size => 3);

-- one run loads one batch: values 1..3 (the 3rd row is the first n = 3, and
-- all four rows with n = 3 come along)
SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('catch_up');

-- catch_up does the rest, one committed batch at a time
CALL hwm.catch_up('catch_up');
SELECT watermark_before, watermark_after, rows_upserted
  FROM hwm.runs WHERE pipeline = 'catch_up' ORDER BY run_id;
SELECT count(*) AS differences FROM (TABLE src EXCEPT TABLE tgt) d;

-- a failure in the middle: batches committed before it stay, nothing is lost
INSERT INTO src SELECT g, g, 'new' FROM generate_series(11, 20) g;
CREATE FUNCTION refuse_15() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 15 THEN
        RAISE EXCEPTION 'refusing row 15';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_15 BEFORE INSERT ON tgt FOR EACH ROW EXECUTE FUNCTION refuse_15();
\set SHOW_CONTEXT never
CALL hwm.catch_up('catch_up');
\set SHOW_CONTEXT errors
SELECT watermark FROM hwm.state WHERE pipeline = 'catch_up';
SELECT max(id) AS loaded_through FROM tgt;
DROP TRIGGER refuse_15 ON tgt;
CALL hwm.catch_up('catch_up');
SELECT watermark FROM hwm.state WHERE pipeline = 'catch_up';
SELECT count(*) AS differences FROM (TABLE src EXCEPT TABLE tgt) d;

-- inside a transaction block the batches run in the caller's transaction
INSERT INTO src SELECT g, g, 'newer' FROM generate_series(21, 27) g;
BEGIN;
CALL hwm.catch_up('catch_up');
ROLLBACK;
SELECT watermark FROM hwm.state WHERE pipeline = 'catch_up';
BEGIN;
CALL hwm.catch_up('catch_up');
COMMIT;
SELECT watermark FROM hwm.state WHERE pipeline = 'catch_up';
SELECT count(*) AS differences FROM (TABLE src EXCEPT TABLE tgt) d;

-- refusals
SELECT hwm.create_pipeline('catch_up_bad', 'src', 'tgt', '{id}', 'n', batch_size => 0);
CALL hwm.catch_up(NULL);
CALL hwm.catch_up('no_such_pipeline');

-- an interval pipeline's catch-up goes no further than the intervals ready
-- at its first run (its horizon), and that horizon is its own: a run of
-- another interval pipeline that its command makes is held to that
-- pipeline's ready intervals alone (issue 39: the horizon was kept in a
-- variable of interval.c that any interval run during a catch-up read).
-- iv_a: one row in 1900 and a delay of 100 years, so its horizon is a
-- century ago; its command runs iv_b, whose rows are in 2020 and ready.
CREATE TABLE ev_a (t timestamptz);
CREATE TABLE ev_b (t timestamptz);
CREATE TABLE b_done (lo timestamptz, hi timestamptz, n bigint);
INSERT INTO ev_a VALUES ('1900-01-01 12:00+00');
INSERT INTO ev_b VALUES ('2020-01-01 12:00+00'), ('2020-01-02 12:00+00');
SELECT hwm.create_interval_pipeline('iv_b', 'ev_b', 't', '1 day', $$
  INSERT INTO catch_up.b_done SELECT $1, $2, count(*) FROM catch_up.ev_b AS e
   WHERE e.t >= $1 AND e.t < $2$$);
SELECT hwm.create_interval_pipeline('iv_a', 'ev_a', 't', '1 day', $$
  SELECT $1, $2, r.watermark_after FROM hwm.run('iv_b') AS r$$,
  batched => true, delay => '100 years');
-- (the NOTICEs name iv_a's horizon, which follows the clock)
SET client_min_messages = warning;
CALL hwm.catch_up('iv_a');
RESET client_min_messages;
-- iv_b ran its first day, [2020-01-01, 2020-01-02), not nothing
SELECT lo AT TIME ZONE 'UTC' AS lo_utc, hi AT TIME ZONE 'UTC' AS hi_utc, n
  FROM b_done ORDER BY lo;
SELECT pipeline, watermark FROM hwm.state WHERE pipeline = 'iv_b';
-- iv_a did its one batch, then stopped at its horizon
SELECT count(*) AS iv_a_runs, count(from_partition) AS iv_a_commands
  FROM hwm.runs WHERE pipeline = 'iv_a';
SELECT hwm.drop_pipeline('iv_a');
SELECT hwm.drop_pipeline('iv_b');

SELECT hwm.drop_pipeline('catch_up');
RESET search_path;
DROP SCHEMA catch_up CASCADE;
