/* hwm--1.2--1.3.sql: upgrade hwm 1.2 to 1.3 */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.3'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- 1.3, unreleased.  Each change to the catalog goes here and, in its final
-- form, into hwm--1.3.sql; test/t/061_upgrade.pl checks that a fresh 1.3
-- and a 1.2 updated by this script have the same objects.  A change that
-- adds a column to hwm.state moves CATALOG_NEWEST_COLUMN (src/catalog.c)
-- to it, so that the library refuses a 1.2 catalog from then on.
--
-- ---------------------------------------------------------------------------
-- Chains (issue 41): hwm.schedule_after's upstreams, why a schedule ended
-- without hwm.unschedule, and a freshness goal.  target_lag is the mark of
-- the 1.3 catalog (CATALOG_NEWEST_COLUMN).
ALTER TABLE hwm.state ADD COLUMN after text[];
ALTER TABLE hwm.state ADD COLUMN schedule_ended text;
ALTER TABLE hwm.state ADD COLUMN target_lag interval
    CHECK (target_lag OPERATOR(pg_catalog.>=) '1 second');
COMMENT ON COLUMN hwm.state.after IS
'The upstream pipelines (hwm.schedule_after): a run of any of them that commits rows or moves its watermark makes this pipeline due at once; one run follows any number of such commits made while it waits or runs. NULL: none.';
COMMENT ON COLUMN hwm.state.schedule_ended IS
'Why the scheduler stopped running the pipeline without hwm.unschedule (an upstream of hwm.schedule_after was dropped); cleared by hwm.schedule, hwm.schedule_after and hwm.unschedule.';
COMMENT ON COLUMN hwm.state.target_lag IS
'Freshness goal (hwm.set_target_lag): how far behind now() the time up to which the target reflects its sources (hwm.freshness.data_as_of) may fall before the pipeline counts as late. NULL: none.';
