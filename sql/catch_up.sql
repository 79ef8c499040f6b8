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

SELECT hwm.drop_pipeline('catch_up');
RESET search_path;
DROP SCHEMA catch_up CASCADE;
