-- reread: what a run remembers for the next (issue 14).  A run reads from
-- where the last one got to, not from a held watermark; set_watermark
-- forgets that; hwm.status shows what held the watermark and the rows whose
-- watermark is NULL; hwm.runs keeps hwm.max_runs_per_pipeline runs of every
-- kind, runs by hand included, and by age keeps the backfill runs of an
-- unfinished backfill.  (Transactions in flight: test/specs/reread_memory.spec.)
\i test/setup.sql
CREATE SCHEMA rr;
SET search_path = rr, public;
SET datestyle = ISO;

CREATE TABLE src (id int PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE tgt (id int PRIMARY KEY, updated_at timestamptz, v text);
INSERT INTO src SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 hour', 'v' || g
  FROM generate_series(1, 10) g;
INSERT INTO src VALUES (11, NULL, 'no watermark'), (12, NULL, 'no watermark either');
SELECT hwm.create_pipeline('rr', 'src', 'tgt', '{id}', 'updated_at');

-- the first run remembers where the next may start reading: at most what
-- it saw; NULL watermarks are counted and reported
SELECT rows_upserted, watermark_after FROM hwm.run('rr');
SELECT watermark, reread_from, reread_from::timestamptz <= watermark::timestamptz AS not_above_w0,
       cardinality(reread_vxids) AS remembered, reread_epoch = pg_postmaster_start_time() AS this_server
  FROM hwm.state WHERE pipeline = 'rr';
SELECT pipeline, null_watermarks, held_by_pid, held_by_application, held_for
  FROM hwm.status WHERE pipeline = 'rr';

-- a row changed without a newer watermark value is not read again ...
UPDATE src SET v = 'changed, old' WHERE id = 2;
SELECT rows_upserted FROM hwm.run('rr');
SELECT id, v FROM tgt WHERE id = 2;

-- ... until set_watermark moves the watermark back: it also forgets what
-- the runs remembered, so the next run reads from the watermark it was given
SELECT hwm.set_watermark('rr', '2026-03-01 00:00+00');
SELECT reread_from, reread_vxids, reread_epoch FROM hwm.state WHERE pipeline = 'rr';
SELECT rows_upserted FROM hwm.run('rr');
SELECT id, v FROM tgt WHERE id = 2;

-- the NULL watermarks are fixed: the count follows at the next run
UPDATE src SET updated_at = '2026-03-03 00:00+00' WHERE updated_at IS NULL;
SELECT rows_upserted FROM hwm.run('rr');
SELECT null_watermarks FROM hwm.status WHERE pipeline = 'rr';

-- history: every kind of run is pruned, by hand too, to
-- hwm.max_runs_per_pipeline (checked every 16th run, so at most 15 more);
-- by age (hwm.history_days) the backfill runs are kept while a backfill of
-- the pipeline is unfinished, by count they are not (a long backfill or
-- rerun stays within the bound)
INSERT INTO hwm.backfills (pipeline, from_partition, to_partition, batch_size, status)
VALUES ('rr', '1', '2', 1, 'failed');
INSERT INTO hwm.runs (pipeline, kind, started_at, finished_at, status, owner)
SELECT 'rr', k, '2026-01-01', '2026-01-01', 'succeeded', s.owner
  FROM hwm.state AS s, unnest(ARRAY['backfill', 'load']) AS k WHERE s.pipeline = 'rr';
SET hwm.history_days = 1;
SET client_min_messages = warning;
SELECT count(hwm.run('rr')) FROM generate_series(1, 16);
RESET client_min_messages;
SELECT count(*) FILTER (WHERE kind = 'load' AND started_at < '2026-02-01') AS old_load_runs,
       count(*) FILTER (WHERE kind = 'backfill') AS backfill_runs_kept
  FROM hwm.runs WHERE pipeline = 'rr';
RESET hwm.history_days;
SET hwm.max_runs_per_pipeline = 3;
SET client_min_messages = warning;
SELECT count(hwm.run('rr')) FROM generate_series(1, 40);
RESET client_min_messages;
SELECT count(*) FILTER (WHERE kind <> 'backfill') BETWEEN 3 AND 3 + 15 AS other_runs_bounded,
       count(*) FILTER (WHERE kind = 'backfill') AS backfill_runs_kept
  FROM hwm.runs WHERE pipeline = 'rr';
RESET hwm.max_runs_per_pipeline;

-- the setting is a superuser's
CREATE ROLE rr_user;
SET ROLE rr_user;
SET hwm.max_runs_per_pipeline = 1;
RESET ROLE;
DROP ROLE rr_user;

SELECT hwm.drop_pipeline('rr');
DELETE FROM hwm.backfills WHERE pipeline = 'rr';
RESET search_path;
RESET datestyle;
DROP SCHEMA rr CASCADE;
