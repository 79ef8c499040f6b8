/* hwm--1.0--1.1.sql: upgrade hwm 1.0 to 1.1 (ALTER EXTENSION hwm UPDATE TO '1.1') */

\echo Use "ALTER EXTENSION hwm UPDATE TO '1.1'" to load this file. \quit

-- Each change below is also in hwm--1.1.sql; test/t/061_upgrade.pl checks
-- that an upgraded 1.0 and a fresh 1.1 end up with the same objects.
