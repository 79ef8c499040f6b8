/* hwm--1.0--1.1.sql: upgrade hwm 1.0 to 1.1 (ALTER EXTENSION hwm UPDATE TO '1.1') */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.1'" to load this file. \quit

-- Each change below is also in hwm--1.1.sql; test/t/061_upgrade.pl checks
-- that an upgraded 1.0 and a fresh 1.1 end up with the same objects.

-- ---------------------------------------------------------------------------
-- Command and interval pipelines (issue 16; src/command.c, src/interval.c).
-- The same block is in hwm--1.0--1.1.sql and hwm--1.1.sql.
-- A command pipeline runs a SQL command over the range of watermark values
-- each run settles ($1 exclusive, $2 inclusive); an interval pipeline runs
-- it over each finished interval of a time column ($1 inclusive, $2
-- exclusive).  Neither has a target: the command writes wherever it writes.
ALTER TABLE hwm.state ALTER COLUMN target DROP NOT NULL;
ALTER TABLE hwm.state ADD COLUMN command text;
ALTER TABLE hwm.state ADD COLUMN time_interval interval;
ALTER TABLE hwm.state ADD COLUMN interval_anchor text;
ALTER TABLE hwm.state ADD COLUMN batched boolean NOT NULL DEFAULT false;
ALTER TABLE hwm.state ADD COLUMN skip_empty boolean NOT NULL DEFAULT false;
ALTER TABLE hwm.state ADD CONSTRAINT state_target_or_command
    CHECK (target IS NOT NULL OR command IS NOT NULL);
ALTER TABLE hwm.state ADD CONSTRAINT state_interval_has_command
    CHECK (time_interval IS NULL OR command IS NOT NULL);

COMMENT ON COLUMN hwm.state.command IS
'Command and interval pipelines: the SQL command each run executes, $1 and $2 being the range it covers (NULL: a copy pipeline into target).';
COMMENT ON COLUMN hwm.state.time_interval IS
'Interval pipelines: the length of one interval of the time column (watermark_column); the watermark is the end (exclusive) of the last interval done. NULL: not an interval pipeline.';
COMMENT ON COLUMN hwm.state.interval_anchor IS
'Interval pipelines: a boundary of the interval grid, in the time column type''s text form; intervals start at interval_anchor + k * time_interval (counted in UTC).';
COMMENT ON COLUMN hwm.state.batched IS
'Interval pipelines: run the command once over all the finished intervals of the backlog instead of once per interval.';
COMMENT ON COLUMN hwm.state.skip_empty IS
'Interval pipelines: do not run the command for an interval in which the source has no rows (the watermark still moves past it).';

CREATE FUNCTION hwm.create_command_pipeline(
    pipeline          text,
    source            regclass,
    watermark_column  name,
    command           text,
    schedule          interval DEFAULT NULL,
    initial_watermark text     DEFAULT NULL,
    delay             interval DEFAULT NULL,
    batch_size        bigint   DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_command_pipeline';

COMMENT ON FUNCTION hwm.create_command_pipeline(text, regclass, name, text, interval, text, interval, bigint) IS
'Declare a command pipeline: each run settles the new safe watermark as hwm.run does and, when the source has rows above the old one, runs command once with $1 = the old watermark (exclusive; NULL on the first run) and $2 = the new one (inclusive), both of the watermark column''s type, then stores the new watermark in the same transaction. The command runs as the pipeline''s owner with search_path pinned to pg_catalog, pg_temp, so it must qualify its names; it is parsed and its tables'' privileges checked now.';

CREATE FUNCTION hwm.create_interval_pipeline(
    pipeline      text,
    source        regclass,
    time_column   name,
    time_interval interval,
    command       text,
    anchor        text     DEFAULT NULL,
    start_at      text     DEFAULT NULL,
    batched       boolean  DEFAULT false,
    skip_empty    boolean  DEFAULT false,
    schedule      interval DEFAULT NULL,
    delay         interval DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'hwm_create_interval_pipeline';

COMMENT ON FUNCTION hwm.create_interval_pipeline(text, regclass, name, interval, text, text, text, boolean, boolean, interval, interval) IS
'Declare an interval pipeline: the time column is cut into intervals of time_interval from anchor (default 2000-01-01 00:00 UTC); once an interval has ended and no transaction still in flight can write into it (and delay has passed), a run executes command with $1 = its start (inclusive) and $2 = its end (exclusive). One interval per hwm.run (CALL hwm.catch_up commits each on its own), or the whole backlog in one command with batched; skip_empty skips intervals without rows. start_at is the first interval''s start (default: the interval of the oldest row).';

-- Not SECURITY DEFINER and no SET clause, like hwm.backfill: it commits
-- after every interval when called outside a transaction block.
CREATE PROCEDURE hwm.rerun_intervals(
    pipeline  text,
    from_time text,
    to_time   text)
LANGUAGE c
AS 'MODULE_PATHNAME', 'hwm_rerun_intervals';

COMMENT ON PROCEDURE hwm.rerun_intervals(text, text, text) IS
'Run an interval pipeline''s command again over every interval from from_time (inclusive) to to_time (exclusive), both interval boundaries no later than its watermark, one interval per transaction outside a transaction block; progress is recorded in hwm.backfills and calling it again resumes an unfinished rerun. The watermark does not move.';
-- End of command and interval pipelines.
-- ---------------------------------------------------------------------------
