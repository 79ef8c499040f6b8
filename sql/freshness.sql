-- freshness: hwm.set_target_lag (a freshness goal, every refusal changing
-- nothing), hwm.freshness (data_as_of through chains: a copy of a copy,
-- views within views, a partition, a cycle; NULL where no time is known;
-- only the pipelines the reader can see count) and hwm.metrics (runs by
-- outcome, rows, last duration, lag), and the query of
-- doc/postgres_exporter.yaml; the scheduling a target lag brings (a
-- pipeline with no schedule of its own made due, woken by a run of the
-- pipeline loading what it reads).  Nothing shown depends on the clock:
-- lags are compared with intervals, never shown, and a data_as_of within
-- the last hour shows as 'now' (fr_shown).  (Infinite target lags, 17 and
-- later: sql/intervals_infinite.sql.)
\i test/setup.sql
SET datestyle = ISO;
SET timezone = 'UTC';
-- (the results say what each call did; its NOTICE would only repeat it)
SET client_min_messages = warning;
CREATE SCHEMA fr;
SET search_path = fr, public;
-- a run that finds the source complete makes data_as_of about now()
CREATE FUNCTION fr_shown(t timestamptz) RETURNS text LANGUAGE sql
  AS $$ SELECT CASE WHEN t > now() - interval '1 hour' THEN 'now' ELSE t::text END $$;

-- a copy (fr_up: raw -> mid) of which fr_down makes a copy (mid -> out)
CREATE TABLE raw (id int, updated_at timestamptz NOT NULL, v text);
CREATE TABLE mid (id int PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE out (id int PRIMARY KEY, updated_at timestamptz, v text);
INSERT INTO raw VALUES (1, '2024-01-01 10:00', 'a'), (2, '2024-01-01 11:00', 'b');
SELECT hwm.create_pipeline('fr_up', 'raw', 'mid', '{id}', 'updated_at');
SELECT hwm.create_pipeline('fr_down', 'mid', 'out', '{id}', 'updated_at');

--
-- hwm.set_target_lag
--
SELECT hwm.set_target_lag('fr_up', '1 hour');
SELECT hwm.set_target_lag('fr_down', '90 seconds');
SELECT pipeline, target_lag FROM hwm.state WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
-- exactly one second is the shortest
SELECT hwm.set_target_lag('fr_down', '1 second');
SELECT target_lag FROM hwm.state WHERE pipeline = 'fr_down';
-- NULL clears it
SELECT hwm.set_target_lag('fr_down', NULL);
SELECT target_lag FROM hwm.state WHERE pipeline = 'fr_down';
SELECT hwm.set_target_lag('fr_down', '90 seconds');

-- every refusal changes nothing
CREATE TEMP TABLE before AS SELECT * FROM hwm.state;
SELECT hwm.set_target_lag('fr_up', '999 milliseconds');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_target_lag('fr_up', '0');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_target_lag('fr_up', '-5 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_target_lag('fr_up', '1 day -1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_target_lag('fr_up', '-1 month 40 days');
\echo :LAST_ERROR_SQLSTATE
SELECT hwm.set_target_lag(NULL, '1 hour');
SELECT hwm.set_target_lag('nope', '1 hour');
-- only the owner (or a member, or a superuser) sets it, as hwm.set_timeout
CREATE ROLE regress_hwm_fr_alice;
CREATE ROLE regress_hwm_fr_bob;
GRANT USAGE ON SCHEMA fr TO regress_hwm_fr_alice, regress_hwm_fr_bob;
SET ROLE regress_hwm_fr_alice;
SELECT hwm.set_target_lag('fr_up', '1 minute');
SELECT hwm.set_target_lag('fr_up', NULL);
RESET ROLE;
SELECT count(*) AS changed_rows FROM (
  SELECT * FROM hwm.state EXCEPT SELECT * FROM before) d;
-- nor can anyone write the column by hand
SET ROLE regress_hwm_fr_alice;
UPDATE hwm.state SET target_lag = '1 minute' WHERE pipeline = 'fr_up';
RESET ROLE;

--
-- hwm.freshness: data_as_of is the watermark where it is a time, or how
-- far the last run found the source complete (hwm.state.data_as_of) if
-- later, and through a chain the oldest of the pipeline's and its
-- upstreams'
--
-- nothing loaded yet: no time is known
SELECT pipeline, fr_shown(data_as_of) AS data_as_of, lag, target_lag, late
  FROM hwm.freshness WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
-- fr_up has loaded, fr_down not yet: fr_down still knows no time
SELECT rows_upserted, watermark_after FROM hwm.run('fr_up');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of, lag IS NULL AS no_lag, late
  FROM hwm.freshness WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
SELECT rows_upserted, watermark_after FROM hwm.run('fr_down');
-- both found their sources complete: their data is as of now, though the
-- newest row is from 2024; the lag is now() - data_as_of
SELECT pipeline, fr_shown(data_as_of) AS data_as_of, lag = now() - data_as_of AS lag_is_now_minus_data_as_of,
       lag > interval '1 day' AS over_a_day, target_lag, late
  FROM hwm.freshness WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
-- fr_up loads a row stamped 12:00 but written now: hwm takes rows as
-- stamped when written (a time set by an application needs a delay, as for
-- the watermark: see README), so both still read as of now, and fr_down,
-- which has not run, keeps its own watermark of 11:00
INSERT INTO raw VALUES (3, '2024-01-01 12:00', 'c');
SELECT rows_upserted, watermark_after FROM hwm.run('fr_up');
SELECT pipeline, watermark, (SELECT fr_shown(data_as_of) FROM hwm.freshness f WHERE f.pipeline = s.pipeline)
  FROM hwm.state s WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
-- fr_up set back to 09:00 by hand (which forgets how far it found raw
-- complete): fr_down's own watermark stays at 11:00, but its target
-- reflects raw only up to fr_up's 09:00
SELECT hwm.set_watermark('fr_up', '2024-01-01 09:00+00');
SELECT pipeline, data_as_of IS NULL AS forgotten FROM hwm.state WHERE pipeline = 'fr_up';
SELECT rows_upserted, watermark_after FROM hwm.run('fr_down');
SELECT pipeline, watermark, (SELECT fr_shown(data_as_of) FROM hwm.freshness f WHERE f.pipeline = s.pipeline)
  FROM hwm.state s WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
SELECT rows_upserted, watermark_after FROM hwm.run('fr_up');
SELECT rows_upserted, watermark_after FROM hwm.run('fr_down');
-- a target lag longer than the lag: not late
SELECT hwm.set_target_lag('fr_down', '100 years');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of, late FROM hwm.freshness WHERE pipeline LIKE 'fr\_%' ORDER BY 1;

-- through views within views: fr_view reads a view of a view of mid, and
-- fr_deep reads fr_view's target through a view that joins two tables
CREATE VIEW mid_v AS SELECT id, updated_at, v FROM mid WHERE v IS NOT NULL;
CREATE VIEW mid_vv AS SELECT id, updated_at, upper(v) AS v FROM mid_v;
CREATE TABLE out_v (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('fr_view', 'mid_vv', 'out_v', '{id}', 'updated_at');
CREATE TABLE labels (v text);
CREATE VIEW out_v_joined AS
  SELECT o.id, o.updated_at, l.v FROM out_v AS o LEFT JOIN labels AS l USING (v);
CREATE TABLE out_deep (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('fr_deep', 'out_v_joined', 'out_deep', '{id}', 'updated_at');
SELECT rows_upserted, watermark_after FROM hwm.run('fr_view');
SELECT rows_upserted, watermark_after FROM hwm.run('fr_deep');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
-- fr_up set back again: everything downstream of it shows 10:30
SELECT hwm.set_watermark('fr_up', '2024-01-01 10:30+00');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
SELECT rows_upserted FROM hwm.run('fr_up');

-- a table of the source's: fr_part_up loads a partition of the table
-- fr_part reads
CREATE TABLE parts (id int, updated_at timestamptz, v text) PARTITION BY RANGE (updated_at);
CREATE TABLE parts_2024 PARTITION OF parts FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
ALTER TABLE parts_2024 ADD PRIMARY KEY (id);
CREATE TABLE out_parts (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('fr_part_up', 'raw', 'parts_2024', '{id}', 'updated_at');
SELECT hwm.create_pipeline('fr_part', 'parts', 'out_parts', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('fr_part_up');
SELECT rows_upserted FROM hwm.run('fr_part');
SELECT hwm.set_watermark('fr_part_up', '2024-01-01 10:15+00');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline LIKE 'fr\_part%' ORDER BY 1;

-- a watermark that is not a time gives none, and a time-typed pipeline
-- downstream of it knows no time either (the WARNING says its watermark
-- cannot be held below what the upstream loaded)
CREATE TABLE raw_ids (id bigserial, updated_at timestamptz NOT NULL, v text);
CREATE TABLE ids_tgt (id bigint PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE ids_out (id bigint PRIMARY KEY, updated_at timestamptz, v text);
INSERT INTO raw_ids (updated_at, v) VALUES ('2024-01-01 10:00', 'a');
SELECT hwm.create_pipeline('fr_ids', 'raw_ids', 'ids_tgt', '{id}', 'id');
SELECT hwm.create_pipeline('fr_ids_down', 'ids_tgt', 'ids_out', '{id}', 'updated_at');
SELECT rows_upserted, watermark_after FROM hwm.run('fr_ids');
SELECT rows_upserted, watermark_after FROM hwm.run('fr_ids_down');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of, lag, late FROM hwm.freshness WHERE pipeline LIKE 'fr\_ids%' ORDER BY 1;

-- a cycle: fr_ca loads what fr_cb reads and fr_cb what fr_ca reads; the
-- view answers, and each has the older of the two watermarks
CREATE TABLE ca (id int PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE cb (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('fr_ca', 'cb', 'ca', '{id}', 'updated_at');
SELECT hwm.create_pipeline('fr_cb', 'ca', 'cb', '{id}', 'updated_at');
SELECT hwm.set_watermark('fr_ca', '2024-01-01 08:00+00');
SELECT hwm.set_watermark('fr_cb', '2024-01-01 07:00+00');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline IN ('fr_ca', 'fr_cb') ORDER BY 1;
-- and a pipeline downstream of the cycle through a view of both
CREATE VIEW cab AS SELECT * FROM ca UNION ALL SELECT * FROM cb;
CREATE TABLE cab_out (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('fr_cab', 'cab', 'cab_out', '{id}', 'updated_at');
SELECT hwm.set_watermark('fr_cab', '2024-01-02 00:00+00');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline LIKE 'fr\_c%' ORDER BY 1;
-- an upstream of hwm.schedule_after counts though the source does not read
-- its target: fr_sched runs after fr_cb, so its data is no newer than
-- fr_cb's chain (07:00)
CREATE TABLE sched_src (id int PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE sched_out (id int PRIMARY KEY, updated_at timestamptz, v text);
SELECT hwm.create_pipeline('fr_sched', 'sched_src', 'sched_out', '{id}', 'updated_at');
SELECT hwm.set_watermark('fr_sched', '2024-01-03 00:00+00');
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline = 'fr_sched';
SET client_min_messages = error;  -- (the schedule's warning: nothing runs here)
SELECT hwm.schedule_after('fr_sched', '{fr_cb}');
SET client_min_messages = warning;
SELECT pipeline, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness WHERE pipeline = 'fr_sched';

--
-- a target lag schedules a pipeline with no schedule of its own: due at
-- once, then half its target lag after each run (the dispatcher reads the
-- same columns), woken by each run of a pipeline loading what it reads;
-- with a schedule the goal changes nothing of it; hwm.unschedule clears it
--
CREATE TABLE lag_src (id int, updated_at timestamptz NOT NULL);
CREATE TABLE lag_mid (id int PRIMARY KEY, updated_at timestamptz);
CREATE VIEW lag_mid_v AS SELECT * FROM lag_mid;
CREATE TABLE lag_out (id int PRIMARY KEY, updated_at timestamptz);
SELECT hwm.create_pipeline('fr_lag_up', 'lag_src', 'lag_mid', '{id}', 'updated_at');
SELECT hwm.create_pipeline('fr_lag', 'lag_mid_v', 'lag_out', '{id}', 'updated_at');
SELECT hwm.set_target_lag('fr_lag', '10 minutes');
SELECT pipeline, schedule, next_run_at <= now() AS due_now, schedule_anchor BETWEEN now() - interval '1 minute' AND now() + interval '5 minutes' AS anchored_within_half_the_goal
  FROM hwm.state WHERE pipeline LIKE 'fr\_lag%' ORDER BY 1;
SELECT pipeline, not_scheduled_because FROM hwm.status WHERE pipeline = 'fr_lag';
-- a run of fr_lag_up wakes the pipelines that read its target (hwm.wakes,
-- which the scheduler's dispatcher applies: test/t/074_target_lag.pl), even
-- one that loads nothing: it found lag_src complete up to now, so a run of
-- fr_lag (which reads lag_mid through a view) makes fr_lag's data fresher (a
-- pipeline run after its upstreams, hwm.schedule_after, waits for rows:
-- sql/schedule_after.sql)
SELECT rows_upserted FROM hwm.run('fr_lag_up');
SELECT upstream, target::regclass, changed FROM hwm.wakes WHERE upstream = 'fr_lag_up' ORDER BY 3;
INSERT INTO lag_src VALUES (1, '2024-01-01 10:00');
SELECT rows_upserted FROM hwm.run('fr_lag_up');
SELECT upstream, target::regclass, changed FROM hwm.wakes WHERE upstream = 'fr_lag_up' ORDER BY 3;
-- a pipeline with a schedule of its own keeps it: woken by nobody, its next
-- run untouched by a new goal
SELECT hwm.schedule('fr_lag', '1 hour', '2030-01-01 00:00+00') AS next_run;
SELECT hwm.set_target_lag('fr_lag', '20 minutes');
INSERT INTO lag_src VALUES (2, '2024-01-01 10:05');
SELECT rows_upserted FROM hwm.run('fr_lag_up');
SELECT schedule, next_run_at FROM hwm.state WHERE pipeline = 'fr_lag';
-- unscheduled: the goal goes with the schedule, and nothing runs it
SELECT hwm.unschedule('fr_lag');
SELECT schedule, target_lag, next_run_at FROM hwm.state WHERE pipeline = 'fr_lag';
-- the goal alone again, then cleared: due no more
SELECT hwm.set_target_lag('fr_lag', '20 minutes');
SELECT next_run_at IS NOT NULL AS due FROM hwm.state WHERE pipeline = 'fr_lag';
SELECT hwm.set_target_lag('fr_lag', NULL);
SELECT next_run_at, schedule_anchor IS NOT NULL AS anchor_kept FROM hwm.state WHERE pipeline = 'fr_lag';
-- a delay keeps how far the source is complete that far behind now(): with
-- a two-hour delay and a one-hour goal the pipeline is late after its run
SELECT hwm.alter_pipeline('fr_lag_up', delay => '2 hours');
SELECT rows_upserted FROM hwm.run('fr_lag_up');
SELECT hwm.set_target_lag('fr_lag_up', '1 hour');
SELECT pipeline, lag > interval '1 hour 59 minutes' AS two_hours_behind, late
  FROM hwm.freshness WHERE pipeline = 'fr_lag_up';
SELECT hwm.set_target_lag('fr_lag_up', '3 hours');
SELECT pipeline, late FROM hwm.freshness WHERE pipeline = 'fr_lag_up';
SELECT hwm.drop_pipeline('fr_lag'), hwm.drop_pipeline('fr_lag_up');

--
-- hwm.metrics: load runs by outcome, rows, the last run's duration, lag
--
-- (failed, skipped and interrupted runs come from the scheduler, which does
-- not serve this database: their rows are written here as it writes them;
-- hwm.state's consecutive_failures, which it counts too, stays 0)
INSERT INTO hwm.runs (pipeline, kind, started_at, finished_at, status, owner, error_sqlstate, error)
SELECT 'fr_down', 'load', now(), now(), st, s.owner, CASE WHEN st = 'failed' THEN '57014' END,
       CASE WHEN st = 'failed' THEN 'canceling statement due to statement timeout' END
  FROM hwm.state AS s, unnest(ARRAY['failed', 'failed', 'skipped', 'interrupted']) AS st
 WHERE s.pipeline = 'fr_down';
-- a run in progress counts in none of them
INSERT INTO hwm.runs (pipeline, kind, started_at, status, owner)
SELECT 'fr_down', 'load', now(), 'running', s.owner FROM hwm.state AS s WHERE s.pipeline = 'fr_down';
SELECT pipeline, runs_succeeded, runs_failed, runs_skipped, runs_interrupted, rows_loaded,
       last_duration_seconds >= 0 AS has_duration, consecutive_failures,
       lag_seconds > 86400 AS lag_over_a_day, target_lag_seconds, late
  FROM hwm.metrics WHERE pipeline LIKE 'fr\_%' ORDER BY 1;
-- the counts agree with hwm.runs, and lag_seconds with hwm.freshness
SELECT m.pipeline
  FROM hwm.metrics AS m JOIN hwm.freshness AS f USING (pipeline)
 WHERE m.runs_succeeded <> (SELECT count(*) FROM hwm.runs AS r
                             WHERE r.pipeline = m.pipeline AND r.kind = 'load' AND r.status = 'succeeded')
    OR m.lag_seconds IS DISTINCT FROM date_part('epoch', f.lag);
-- a pipeline dropped and declared again under its name starts from zero
SELECT hwm.drop_pipeline('fr_ids_down');
SELECT hwm.create_pipeline('fr_ids_down', 'ids_tgt', 'ids_out', '{id}', 'updated_at');
SELECT runs_succeeded, rows_loaded, last_duration_seconds FROM hwm.metrics WHERE pipeline = 'fr_ids_down';

-- doc/postgres_exporter.yaml's query (test/t/080_docs.pl runs the file's
-- own text and checks its columns against the metrics it lists)
SELECT pipeline,
       owner::text AS owner,
       runs_succeeded,
       runs_failed,
       runs_skipped,
       runs_interrupted,
       rows_loaded,
       last_duration_seconds,
       consecutive_failures,
       lag_seconds,
       target_lag_seconds,
       late::integer AS late
  FROM hwm.metrics
 ORDER BY pipeline LIMIT 0;

--
-- row security: a role sees only the pipelines of roles whose rights it
-- has, in both views, and only those count in a chain
--
GRANT SELECT ON mid, raw TO regress_hwm_fr_alice, regress_hwm_fr_bob;
CREATE TABLE alice_out (id int PRIMARY KEY, updated_at timestamptz, v text);
CREATE TABLE bob_out (id int PRIMARY KEY, updated_at timestamptz, v text);
ALTER TABLE alice_out OWNER TO regress_hwm_fr_alice;
ALTER TABLE bob_out OWNER TO regress_hwm_fr_bob;
SET ROLE regress_hwm_fr_alice;
-- alice reads mid, which fr_up (the superuser's) loads
SELECT hwm.create_pipeline('fr_alice', 'mid', 'alice_out', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('fr_alice');
SELECT hwm.set_target_lag('fr_alice', '1 day');
SET ROLE regress_hwm_fr_bob;
SELECT hwm.create_pipeline('fr_bob', 'raw', 'bob_out', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('fr_bob');
-- alice sees her pipeline; its data_as_of is its own time alone, since
-- fr_up is not hers to see
SET ROLE regress_hwm_fr_alice;
SELECT pipeline, owner, fr_shown(data_as_of) AS data_as_of, target_lag, late FROM hwm.freshness ORDER BY 1;
SELECT pipeline, owner, runs_succeeded, rows_loaded FROM hwm.metrics ORDER BY 1;
SET ROLE regress_hwm_fr_bob;
SELECT pipeline, owner, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness ORDER BY 1;
SELECT pipeline, owner, runs_succeeded, rows_loaded FROM hwm.metrics ORDER BY 1;
-- the superuser sees every pipeline, and fr_up's older time in fr_alice's
RESET ROLE;
SELECT hwm.set_watermark('fr_up', '2024-01-01 09:30+00');
SELECT pipeline, owner, fr_shown(data_as_of) AS data_as_of FROM hwm.freshness
 WHERE pipeline IN ('fr_up', 'fr_alice', 'fr_bob') ORDER BY 1;
SELECT count(*) AS pipelines FROM hwm.metrics WHERE pipeline LIKE 'fr\_%';

-- clean up
SELECT count(hwm.drop_pipeline(pipeline)) AS dropped FROM hwm.state WHERE pipeline LIKE 'fr\_%';
DROP SCHEMA fr CASCADE;
DROP ROLE regress_hwm_fr_alice, regress_hwm_fr_bob;
