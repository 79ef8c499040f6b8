-- grid: anchor + k * step, the one arithmetic of schedules, their backoff
-- and interval pipelines' boundaries (src/grid.c), against an exact
-- reference: PostgreSQL's own timestamp + interval, with k * step formed in
-- integers (make_interval and microseconds as text, never floating point).
-- For random anchors, steps and times, in UTC (timestamp columns) and in a
-- zone with daylight saving time (schedules), and at the ends of the range
-- of timestamps, the grid's index k of a time t must satisfy
--   point(k) <= t < point(k + 1)
-- with both points equal to the reference, and its "next" must be
-- point(k + 1), or NULL exactly where the reference cannot represent it.
\i test/setup.sql
SET datestyle = ISO;
SET client_min_messages = warning;
CREATE SCHEMA grid;
-- the probe is not part of hwm: it is in the tests' own module
-- (test/modules/hwm_test, with src/grid.c compiled in), and the test declares it
CREATE FUNCTION grid.probe(anchor timestamptz, step interval, t timestamptz, local boolean,
                           OUT k bigint, OUT point timestamptz, OUT next timestamptz)
LANGUAGE c STRICT AS 'hwm_test', 'hwm_grid_probe';

-- anchor + k * (m months, d days, us microseconds), or NULL out of range
CREATE FUNCTION grid.ref(anchor timestamptz, m bigint, d bigint, us bigint, k numeric, local boolean)
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
    iv interval;
BEGIN
    iv := make_interval(months => (k * m)::int, days => (k * d)::int)
          + ((k * us)::text || ' microseconds')::interval;
    IF local THEN
        RETURN anchor + iv;
    END IF;
    RETURN ((anchor AT TIME ZONE 'UTC') + iv) AT TIME ZONE 'UTC';
EXCEPTION WHEN datetime_field_overflow OR numeric_value_out_of_range
          OR interval_field_overflow OR invalid_parameter_value THEN
    RETURN NULL;
END
$$;

CREATE FUNCTION grid.check(anchor timestamptz, m bigint, d bigint, us bigint, t timestamptz, local boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    p record;
    r0 timestamptz;
    r1 timestamptz;
BEGIN
    p := grid.probe(anchor, make_interval(months => m::int, days => d::int)
                            + (us::text || ' microseconds')::interval, t, local);
    r0 := grid.ref(anchor, m, d, us, p.k, local);
    r1 := grid.ref(anchor, m, d, us, p.k + 1, local);
    IF p.k IS NULL THEN
        -- no bigint index: only when more microseconds than a bigint lie between
        RETURN CASE WHEN abs(extract(epoch FROM t) - extract(epoch FROM anchor)) * 1e6 / us > 9223372036854775807
                    THEN 'ok (no bigint index)' ELSE 'no index' END;
    END IF;
    IF r0 IS NULL OR p.point IS DISTINCT FROM r0 THEN
        RETURN format('point(%s) is %s, reference %s', p.k, p.point, r0);
    ELSIF r0 > t THEN
        RETURN format('point(%s) = %s is after %s', p.k, r0, t);
    ELSIF r1 IS NOT NULL AND r1 <= t THEN
        RETURN format('point(%s) = %s is not after %s', p.k + 1, r1, t);
    ELSIF r1 IS DISTINCT FROM p.next AND (anchor <= t) THEN
        RETURN format('next is %s, reference %s', p.next, r1);
    END IF;
    RETURN 'ok';
END
$$;

-- 1. random grids: 1,200 cases, half of them in a zone with DST
SELECT setseed(0.2026);
SET timezone = 'Europe/Berlin';
CREATE TABLE grid.cases AS
SELECT i,
       TIMESTAMPTZ '1900-01-01 00:00+00' + random() * INTERVAL '200 years' AS anchor,
       CASE i % 4 WHEN 0 THEN 0 WHEN 1 THEN 0 WHEN 2 THEN (random() * 24)::bigint ELSE (random() * 3)::bigint END AS m,
       CASE i % 4 WHEN 0 THEN 0 WHEN 1 THEN (random() * 400)::bigint ELSE (random() * 40)::bigint END AS d,
       CASE i % 4 WHEN 0 THEN 1 + (random() * 10 ^ (random() * 12))::bigint
                  ELSE (random() * 86400e6)::bigint END AS us,
       random() < 0.5 AS local,
       (random() - 0.3) * 300 AS years_away
  FROM generate_series(1, 1200) AS i;
-- a step must not be zero
UPDATE grid.cases SET us = 1 WHERE m = 0 AND d = 0 AND us = 0;
SELECT count(*) AS cases,
       count(*) FILTER (WHERE outcome LIKE 'ok%') AS ok,
       count(DISTINCT local) AS zones
  FROM (SELECT grid.check(anchor, m, d, us, anchor + years_away * INTERVAL '1 year', local) AS outcome, local
          FROM grid.cases) AS c;
-- (any case that failed, to read)
SELECT i, anchor, m, d, us, local, years_away, grid.check(anchor, m, d, us, anchor + years_away * INTERVAL '1 year', local)
  FROM grid.cases
 WHERE grid.check(anchor, m, d, us, anchor + years_away * INTERVAL '1 year', local) NOT LIKE 'ok%'
 LIMIT 5;

-- 2. the extremes of the range, exact at the microsecond
SET timezone = 'UTC';
SELECT label, grid.check(anchor, m, d, us, t, local) AS outcome, (grid.probe(anchor,
       make_interval(months => m::int, days => d::int) + (us::text || ' microseconds')::interval, t, local)).*
  FROM (VALUES
    ('1 microsecond, t at the end of time', TIMESTAMPTZ '2000-01-01 00:00+00', 0, 0, 1,
     TIMESTAMPTZ '294276-12-31 23:59:59.999999+00', false),
    ('1 microsecond, t at the start of time', TIMESTAMPTZ '2000-01-01 00:00+00', 0, 0, 1,
     TIMESTAMPTZ '4714-11-24 00:00:00+00 BC', false),
    ('1 microsecond, anchor at the end, t at the start', TIMESTAMPTZ '294276-12-31 23:59:59.999999+00', 0, 0, 1,
     TIMESTAMPTZ '4714-11-24 00:00:00+00 BC', false),
    ('1 microsecond, far from the anchor', TIMESTAMPTZ '1900-01-01 00:00+00', 0, 0, 1,
     TIMESTAMPTZ '200000-06-01 12:34:56.789012+00', false),
    ('1 month from a 31st', TIMESTAMPTZ '2024-01-31 12:00+00', 1, 0, 0,
     TIMESTAMPTZ '2024-03-30 00:00+00', false),
    ('1000 years', TIMESTAMPTZ '2000-01-01 00:00+00', 12000, 0, 0,
     TIMESTAMPTZ '294000-01-01 00:00+00', false),
    ('292260 years: nothing after the anchor', TIMESTAMPTZ '2026-01-01 00:00+00', 3507120, 0, 0,
     TIMESTAMPTZ '2026-06-01 00:00+00', true),
    ('106751992 days: nothing after the anchor', TIMESTAMPTZ '2026-01-01 00:00+00', 0, 106751992, 0,
     TIMESTAMPTZ '2026-06-01 00:00+00', true),
    ('max microseconds: nothing after the anchor', TIMESTAMPTZ '2026-01-01 00:00+00', 0, 0, 9223372036854775807,
     TIMESTAMPTZ '2026-06-01 00:00+00', true)
  ) AS x(label, anchor, m, d, us, t, local);

-- 3. a step the grid refuses
SELECT * FROM grid.probe(now(), INTERVAL '0 seconds', now(), true);
SELECT * FROM grid.probe(now(), INTERVAL '1 day -1 second', now(), true);

-- 4. an interval pipeline on a 1-microsecond grid, far from its anchor, with
-- skip_empty: CALL hwm.catch_up runs the command once per interval that
-- holds rows (one probe jumps over the empty ones), each interval exactly
-- 1 microsecond wide, and returns
CREATE TABLE grid.ev (id int PRIMARY KEY, t timestamptz NOT NULL);
CREATE INDEX ON grid.ev (t);
INSERT INTO grid.ev SELECT g, TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '29.000003 seconds'
  FROM generate_series(1, 20) g;
CREATE TABLE grid.seen (s timestamptz PRIMARY KEY, e timestamptz NOT NULL, n bigint NOT NULL);
SELECT hwm.create_interval_pipeline('micro', 'grid.ev', 't', '1 microsecond', $$
    INSERT INTO grid.seen SELECT $1, $2, count(*) FROM grid.ev WHERE t >= $1 AND t < $2
$$, skip_empty => true, start_at => '2026-03-01 00:00:00+00');
-- (the newest interval is not ready until a later row or its end is safe)
CALL hwm.catch_up('micro');
SELECT count(*) AS commands, count(*) FILTER (WHERE e - s = INTERVAL '1 microsecond') AS one_usec_wide,
       sum(n) AS rows_seen
  FROM grid.seen;
SELECT count(*) AS load_runs FROM hwm.runs WHERE pipeline = 'micro';
SELECT hwm.drop_pipeline('micro');

DROP SCHEMA grid CASCADE;
