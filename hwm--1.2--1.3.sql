/* hwm--1.2--1.3.sql: upgrade hwm 1.2 to 1.3 */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.3'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- 1.3, unreleased.  Each change to the catalog goes here and, in its final
-- form, into hwm--1.3.sql; test/t/061_upgrade.pl checks that a fresh 1.3
-- and a 1.2 updated by this script have the same objects.  A change that
-- adds a column to hwm.state moves CATALOG_NEWEST_COLUMN (src/catalog.c)
-- to it, so that the library refuses a 1.2 catalog from then on.
--
-- No change yet: 1.3's catalog is 1.2's.
