-- reconcile: CALL hwm.reconcile deletes the target rows whose key the source
-- no longer has, over the whole table or a key range, batch_size keys per
-- transaction outside a transaction block, in the caller's transaction
-- inside one; records its progress in hwm.backfills (kind reconcile) and
-- its batches in hwm.runs; resumes after a failure; dry_run touches
-- nothing.  Every refusal changes nothing.
\i test/setup.sql
CREATE SCHEMA rc;
SET search_path = rc, public;
SET datestyle = ISO;

CREATE TABLE src (id int PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE tgt (id int PRIMARY KEY, v text, updated_at timestamptz);
INSERT INTO src (id, v) SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT hwm.create_pipeline('rc', 'src', 'tgt', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('rc');
-- rows deleted in the source: no watermark sees them
DELETE FROM src WHERE id % 10 = 0;
SELECT rows_upserted FROM hwm.run('rc');
SELECT count(*) AS target_rows FROM tgt;

-- refusals, each changing nothing
CALL hwm.reconcile(NULL);
CALL hwm.reconcile('nosuch');
CALL hwm.reconcile('rc', batch_size => 0);
CALL hwm.reconcile('rc', batch_size => NULL);
CALL hwm.reconcile('rc', dry_run => NULL);
CALL hwm.reconcile('rc', '50', '10');
CALL hwm.reconcile('rc', 'fifty');
CALL hwm.reconcile('rc', '', '10');
BEGIN ISOLATION LEVEL REPEATABLE READ;
CALL hwm.reconcile('rc');
ROLLBACK;
-- a command pipeline has no target hwm knows
CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY, n int);
SELECT hwm.create_command_pipeline('rc_cmd', 'events', 'id', $$SELECT 1$$);
CALL hwm.reconcile('rc_cmd');
-- an owner who may not delete from the target: refused before any batch
CREATE ROLE hwm_rc_nodelete;
GRANT USAGE ON SCHEMA rc TO hwm_rc_nodelete;
GRANT SELECT ON src TO hwm_rc_nodelete;
GRANT SELECT, INSERT, UPDATE ON tgt TO hwm_rc_nodelete;
SET ROLE hwm_rc_nodelete;
SELECT hwm.create_pipeline('rc_nodelete', 'src', 'tgt', '{id}', 'updated_at');
CALL hwm.reconcile('rc_nodelete');
SELECT hwm.drop_pipeline('rc_nodelete');
RESET ROLE;
REVOKE ALL ON src, tgt FROM hwm_rc_nodelete;
REVOKE ALL ON SCHEMA rc FROM hwm_rc_nodelete;
DROP ROLE hwm_rc_nodelete;
-- someone else's pipeline
CREATE ROLE hwm_rc_other;
SET ROLE hwm_rc_other;
CALL hwm.reconcile('rc');
RESET ROLE;
DROP ROLE hwm_rc_other;
SELECT count(*) AS target_rows,
       (SELECT count(*) FROM hwm.backfills WHERE pipeline = 'rc') AS reconciles,
       (SELECT count(*) FROM hwm.runs WHERE pipeline = 'rc' AND kind = 'reconcile') AS runs
  FROM tgt;

-- dry run: how many, which keys; nothing written or recorded
CALL hwm.reconcile('rc', dry_run => true);
CALL hwm.reconcile('rc', '1', '35', dry_run => true);
SELECT count(*) AS target_rows,
       (SELECT count(*) FROM hwm.backfills WHERE pipeline = 'rc') AS reconciles,
       (SELECT count(*) FROM hwm.runs WHERE pipeline = 'rc' AND kind = 'reconcile') AS runs
  FROM tgt;

-- a key range, 10 keys per transaction: 10, 20 and 30 go, 40 stays
CALL hwm.reconcile('rc', '1', '35', batch_size => 10);
SELECT id FROM tgt WHERE id % 10 = 0 ORDER BY id;
SELECT kind, from_partition, to_partition, batch_size, done_through, status,
       partitions_done AS batches, rows_deleted, finished_at IS NOT NULL AS finished
  FROM hwm.backfills WHERE pipeline = 'rc' ORDER BY backfill_id;
-- a run row for every batch that deleted rows, and for the last
SELECT kind, status, from_partition, to_partition, rows_deleted
  FROM hwm.runs WHERE pipeline = 'rc' AND kind = 'reconcile' ORDER BY run_id;
-- the same range again: a new reconcile, nothing left to delete
CALL hwm.reconcile('rc', '1', '35', batch_size => 10);

-- the whole table in small batches: the rest go
CALL hwm.reconcile('rc', batch_size => 7);
SELECT count(*) AS target_rows,
       (SELECT count(*) FROM (SELECT id FROM tgt EXCEPT SELECT id FROM src) x) AS extra,
       (SELECT count(*) FROM (SELECT id FROM src EXCEPT SELECT id FROM tgt) x) AS lost
  FROM tgt;
-- the reconcile changed neither the watermark nor the last run
SELECT last_status, last_rows FROM hwm.status WHERE pipeline = 'rc';

-- inside a transaction block: the caller's transaction, all or nothing
DELETE FROM src WHERE id BETWEEN 1 AND 3;
BEGIN;
CALL hwm.reconcile('rc', batch_size => 2);
SELECT count(*) AS target_rows_inside FROM tgt;
ROLLBACK;
SELECT count(*) AS target_rows_after_rollback FROM tgt;
BEGIN;
CALL hwm.reconcile('rc', batch_size => 2);
COMMIT;
SELECT count(*) AS target_rows_after_commit FROM tgt;

-- resume after a failure: a trigger on the target refuses to delete id 55
CREATE FUNCTION keep_55() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.id = 55 THEN
        RAISE EXCEPTION 'simulated failure deleting %', OLD.id;
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER keep_55 BEFORE DELETE ON tgt FOR EACH ROW EXECUTE FUNCTION keep_55();
DELETE FROM src WHERE id % 10 = 5;
CALL hwm.reconcile('rc', batch_size => 20);
-- the batches before it are committed: 5 .. 45 are gone, 55 .. 95 are there
SELECT array_agg(id ORDER BY id) AS fives_left FROM tgt WHERE id % 10 = 5;
SELECT status, done_through, partitions_done AS batches, rows_deleted, error
  FROM hwm.backfills WHERE pipeline = 'rc' ORDER BY backfill_id DESC LIMIT 1;
SELECT status, from_partition, to_partition, error FROM hwm.runs
 WHERE pipeline = 'rc' AND kind = 'reconcile' AND status = 'failed';
-- the dry run says what a CALL would resume
CALL hwm.reconcile('rc', dry_run => true);
-- fixed: the same call resumes the same reconcile after its last batch
DROP TRIGGER keep_55 ON tgt;
CALL hwm.reconcile('rc', batch_size => 20);
SELECT status, done_through, partitions_done AS batches, rows_deleted, error
  FROM hwm.backfills WHERE pipeline = 'rc' ORDER BY backfill_id DESC LIMIT 1;
SELECT count(*) AS target_rows,
       (SELECT count(*) FROM (SELECT id FROM tgt EXCEPT SELECT id FROM src) x) AS extra,
       (SELECT count(*) FROM (SELECT id FROM src EXCEPT SELECT id FROM tgt) x) AS lost
  FROM tgt;

-- a cancel (statement_timeout) stops it the same way, and CALL resumes
DELETE FROM src WHERE id IN (61, 62, 63, 64);
CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.id = 63 THEN
        PERFORM pg_sleep(5);
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER slow_delete BEFORE DELETE ON tgt FOR EACH ROW EXECUTE FUNCTION slow_delete();
SET statement_timeout = '1s';
CALL hwm.reconcile('rc', batch_size => 62);
RESET statement_timeout;
SELECT array_agg(id ORDER BY id) AS sixties_left FROM tgt WHERE id BETWEEN 61 AND 64;
SELECT status, done_through, error_sqlstate
  FROM hwm.backfills WHERE pipeline = 'rc' ORDER BY backfill_id DESC LIMIT 1;
DROP TRIGGER slow_delete ON tgt;
CALL hwm.reconcile('rc', batch_size => 62);
SELECT array_agg(id ORDER BY id) AS sixties_left FROM tgt WHERE id BETWEEN 61 AND 64;

-- hwm.status shows the last reconcile
SELECT last_reconcile_at IS NOT NULL AS reconciled, last_reconcile_status,
       last_reconcile_rows_deleted
  FROM hwm.status WHERE pipeline = 'rc';
SELECT pipeline, last_reconcile_at, last_reconcile_status FROM hwm.status WHERE pipeline = 'rc_cmd';

-- a key of two columns, walked as a row through the index
CREATE TABLE src2 (region text, id int, v text, updated_at timestamptz NOT NULL DEFAULT now(),
                   PRIMARY KEY (region, id));
CREATE TABLE tgt2 (region text, id int, v text, updated_at timestamptz, PRIMARY KEY (region, id));
INSERT INTO src2 (region, id, v)
SELECT r, g, r || g FROM unnest(ARRAY['eu', 'us', 'asia']) r, generate_series(1, 4) g;
SELECT hwm.create_pipeline('rc2', 'src2', 'tgt2', '{region,id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('rc2');
DELETE FROM src2 WHERE (region, id) IN (('asia', 4), ('eu', 1), ('eu', 2), ('us', 3));
CALL hwm.reconcile('rc2', dry_run => true);
CALL hwm.reconcile('rc2', 'eu', 'eu', batch_size => 1);
SELECT done_through, partitions_done AS batches, rows_deleted
  FROM hwm.backfills WHERE pipeline = 'rc2' ORDER BY backfill_id DESC LIMIT 1;
CALL hwm.reconcile('rc2', batch_size => 3);
SELECT region, id FROM tgt2 ORDER BY region, id;

-- a source key of another collation than the target's: matched under the
-- target's (as the load's upsert matches), the source not bounded by the range
CREATE TABLE src3 (k text COLLATE "POSIX" PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE tgt3 (k text COLLATE "C" PRIMARY KEY, updated_at timestamptz);
INSERT INTO src3 (k) VALUES ('a'), ('B'), ('c'), ('D'), ('e'), ('F');
SELECT hwm.create_pipeline('rc3', 'src3', 'tgt3', '{k}', 'updated_at');
SELECT rows_upserted FROM hwm.run('rc3');
DELETE FROM src3 WHERE k IN ('c', 'D');
CALL hwm.reconcile('rc3', batch_size => 2);
SELECT k FROM tgt3 ORDER BY k;

DROP SCHEMA rc CASCADE;
