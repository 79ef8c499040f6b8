-- backfill: CALL hwm.backfill overwrites every partition of a range, one
-- transaction per batch outside a transaction block, in the caller's
-- transaction inside one; records its progress in hwm.backfills; resumes
-- after a failure; a second run changes nothing; dry_run and
-- hwm.backfill_plan touch nothing.  Every refusal changes nothing.
\i test/setup.sql
CREATE SCHEMA bf;
SET search_path = bf, public;
SET datestyle = ISO;

CREATE TABLE raw (id int, day date, v text);
INSERT INTO raw SELECT g, DATE '2026-03-01' + (g % 5), 'v' || g FROM generate_series(1, 50) g;
CREATE TABLE wh (id int PRIMARY KEY, day date NOT NULL, v text);
-- the warehouse: Feb 28 and Mar 10 outside the range, ghosts inside it
-- (Mar 3 has a ghost, Mar 8 has only ghosts: the source has no Mar 8)
INSERT INTO wh VALUES (900, '2026-02-28', 'keep'), (901, '2026-03-10', 'keep'),
                      (902, '2026-03-03', 'ghost'), (903, '2026-03-08', 'ghost');
SELECT hwm.create_pipeline('bf', 'raw', 'wh', '{id}', 'id', 'day');
SELECT hwm.create_pipeline('bf_nopart', 'raw', 'wh', '{id}', 'id');

-- refusals, each changing nothing
CALL hwm.backfill(NULL, '2026-03-01', '2026-03-09');
CALL hwm.backfill('bf', NULL, '2026-03-09');
CALL hwm.backfill('bf', '2026-03-01', NULL);
CALL hwm.backfill('bf', '2026-03-09', '2026-03-01');
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 0);
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => NULL);
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', dry_run => NULL);
CALL hwm.backfill('nosuch', '2026-03-01', '2026-03-09');
CALL hwm.backfill('bf_nopart', '2026-03-01', '2026-03-09');
CALL hwm.backfill('bf', 'March', '2026-03-09');
SELECT * FROM hwm.backfill_plan('bf', '2026-03-09', '2026-03-01');
SELECT * FROM hwm.backfill_plan('bf_nopart', '2026-03-01', '2026-03-09');
BEGIN ISOLATION LEVEL REPEATABLE READ;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09');
ROLLBACK;
-- someone else's pipeline
CREATE ROLE hwm_bf_other;
SET ROLE hwm_bf_other;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09');
RESET ROLE;
DROP ROLE hwm_bf_other;
SELECT count(*) AS backfills, (SELECT count(*) FROM hwm.runs WHERE pipeline = 'bf') AS runs FROM hwm.backfills;
SELECT test_fingerprint('wh') AS before \gset

-- dry run: the partitions of the source OR the target inside the range, in
-- order, with their row counts; nothing is written
SELECT * FROM hwm.backfill_plan('bf', '2026-03-01', '2026-03-09');
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', dry_run => true);
SELECT test_fingerprint('wh') = :'before' AS unchanged_by_dry_run,
       (SELECT count(*) FROM hwm.backfills) AS backfills,
       (SELECT count(*) FROM hwm.runs WHERE pipeline = 'bf') AS runs;

-- the backfill, two partitions per transaction
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 2);
SELECT backfill_id, pipeline, from_partition, to_partition, batch_size, done_through,
       status, partitions_done, rows_deleted, rows_inserted, finished_at IS NOT NULL AS finished,
       error FROM hwm.backfills;
-- one run of kind 'backfill' per partition, in ascending order
SELECT kind, status, from_partition, to_partition, partitions_overwritten, rows_deleted, rows_inserted
  FROM hwm.runs WHERE pipeline = 'bf' ORDER BY run_id;
-- the range equals the source's; the ghosts are gone, Mar 8 is empty;
-- outside the range nothing moved
SELECT count(*) AS differences FROM (
  (SELECT * FROM wh WHERE day BETWEEN '2026-03-01' AND '2026-03-09' EXCEPT SELECT * FROM raw)
  UNION ALL
  (SELECT * FROM raw EXCEPT SELECT * FROM wh)) d;
SELECT id, day, v FROM wh WHERE id >= 900 ORDER BY id;
-- one transaction per batch of two partitions: three batches wrote rows
SELECT count(DISTINCT xmin::text) AS transactions FROM wh WHERE id < 900;
SELECT test_fingerprint('wh') AS once \gset

-- a finished backfill called again runs again and changes nothing
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 2);
SELECT backfill_id, status, partitions_done, rows_deleted, rows_inserted
  FROM hwm.backfills ORDER BY backfill_id;
SELECT test_fingerprint('wh') = :'once' AS same_rows_after_rerun;

-- resume after a failure: a trigger on the target fails Mar 4
UPDATE raw SET v = v || '+';
CREATE FUNCTION fail_mar4() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.day = '2026-03-04' THEN
        RAISE EXCEPTION 'simulated failure on %', NEW.day;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER fail_mar4 BEFORE INSERT OR UPDATE ON wh FOR EACH ROW EXECUTE FUNCTION fail_mar4();
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09');
-- Mar 1-3 are done and committed, Mar 4 onwards are not
SELECT backfill_id, status, done_through, partitions_done, rows_deleted, rows_inserted,
       error_sqlstate, error FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;
SELECT day, count(*) FILTER (WHERE v LIKE '%+') AS new_rows, count(*) AS all_rows
  FROM wh WHERE id < 900 GROUP BY day ORDER BY day;
SELECT from_partition, status, error FROM hwm.runs WHERE pipeline = 'bf' AND status = 'failed';
-- the dry run says what a CALL would resume
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', dry_run => true);
-- fixed: the same call resumes the same backfill after Mar 3
DROP TRIGGER fail_mar4 ON wh;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09');
SELECT backfill_id, status, done_through, partitions_done, rows_deleted, rows_inserted,
       error_sqlstate, error FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;
SELECT from_partition, rows_inserted FROM hwm.runs
 WHERE pipeline = 'bf' AND kind = 'backfill' AND status = 'succeeded' ORDER BY run_id DESC LIMIT 4;
SELECT count(*) AS not_backfilled FROM wh WHERE id < 900 AND v NOT LIKE '%+';

-- a batch that fails after some of its partitions is rolled back whole:
-- the error says only what was committed (Mar 1-2, the first batch; Mar 3
-- was overwritten in the batch that failed, and rolled back with it), and
-- the next call resumes after it
UPDATE raw SET v = v || '#';
CREATE TRIGGER fail_mar4 BEFORE INSERT OR UPDATE ON wh FOR EACH ROW EXECUTE FUNCTION fail_mar4();
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 2);
SELECT status, done_through, partitions_done FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;
SELECT day, count(*) FILTER (WHERE v LIKE '%#') AS new_rows
  FROM wh WHERE id < 900 AND day <= '2026-03-04' GROUP BY day ORDER BY day;
DROP TRIGGER fail_mar4 ON wh;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 2);
SELECT status, done_through, partitions_done FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;

-- inside a transaction block: no "invalid transaction termination", one
-- transaction for all batches, and a ROLLBACK takes everything back
UPDATE raw SET v = v || '*';
SELECT test_fingerprint('wh') AS before_block \gset
SELECT count(*) AS backfills_before FROM hwm.backfills \gset
BEGIN;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 1);
SELECT count(DISTINCT xmin::text) AS transactions FROM wh WHERE v LIKE '%*';
ROLLBACK;
SELECT test_fingerprint('wh') = :'before_block' AS unchanged_after_rollback,
       (SELECT count(*) FROM hwm.backfills) = :backfills_before AS no_backfill_row;
BEGIN;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-09', batch_size => 1);
COMMIT;
SELECT status, partitions_done, rows_inserted FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;
SELECT count(*) AS not_backfilled FROM wh WHERE id < 900 AND v NOT LIKE '%*';
-- from a function (always atomic) too
SELECT count(*) AS backfill_runs_before FROM hwm.runs WHERE pipeline = 'bf' AND kind = 'backfill' \gset
CREATE FUNCTION run_backfill() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CALL hwm.backfill('bf', '2026-03-02', '2026-03-03');
END
$$;
SELECT run_backfill();
SELECT count(*) - :backfill_runs_before AS new_backfill_runs FROM hwm.runs WHERE pipeline = 'bf' AND kind = 'backfill';

-- a range with no partition at all finishes at once
CALL hwm.backfill('bf', '2027-01-01', '2027-12-31');
SELECT status, done_through, partitions_done FROM hwm.backfills ORDER BY backfill_id DESC LIMIT 1;

-- a partition column renamed after the pipeline was created: backfill,
-- backfill_plan and overwrite say the same thing in the same words
ALTER TABLE raw RENAME COLUMN day TO load_day;
ALTER TABLE wh RENAME COLUMN day TO load_day;
CALL hwm.backfill('bf', '2026-03-01', '2026-03-02');
SELECT * FROM hwm.backfill_plan('bf', '2026-03-01', '2026-03-02');
SELECT * FROM hwm.overwrite('bf', '2026-03-01', '2026-03-02');
ALTER TABLE raw RENAME COLUMN load_day TO day;
ALTER TABLE wh RENAME COLUMN load_day TO day;

SELECT hwm.drop_pipeline('bf');
SELECT hwm.drop_pipeline('bf_nopart');
RESET search_path;
RESET datestyle;
DROP SCHEMA bf CASCADE;
