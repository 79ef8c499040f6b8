-- install: CREATE EXTENSION makes the schema, the catalog, the run history,
-- the status view and the functions; every object it makes has a comment;
-- ordinary users can read the catalog but not write it.
CREATE EXTENSION hwm;

SELECT e.extname, e.extversion, n.nspname AS schema, e.extrelocatable
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = 'hwm';

-- the SQL interface
SELECT p.oid::regprocedure AS function, p.prosecdef AS security_definer, p.proisstrict AS strict
  FROM pg_proc p WHERE p.pronamespace = 'hwm'::regnamespace ORDER BY p.oid::regprocedure::text;
SELECT c.relname, c.relkind FROM pg_class c
 WHERE c.relnamespace = 'hwm'::regnamespace AND c.relkind IN ('r', 'v') ORDER BY 1;

-- every object of the extension has a comment (no rows)
SELECT pg_describe_object(d.classid, d.objid, 0) AS without_comment
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'hwm')
   AND d.deptype = 'e'
   AND d.classid IN ('pg_class'::regclass, 'pg_proc'::regclass, 'pg_namespace'::regclass)
   AND NOT (d.classid = 'pg_class'::regclass AND (SELECT relkind FROM pg_class WHERE oid = d.objid) IN ('S', 'i'))
   AND obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)) IS NULL;

-- pg_dump keeps pipelines, watermarks and history
SELECT dumped FROM (SELECT unnest(extconfig)::regclass AS dumped FROM pg_extension WHERE extname = 'hwm') AS x ORDER BY dumped::text;

-- an ordinary user reads the catalog but cannot write it directly
CREATE ROLE hwm_install_plain;
SET ROLE hwm_install_plain;
SELECT count(*) FROM hwm.state;
SELECT count(*) FROM hwm.status;
INSERT INTO hwm.state (pipeline, source, target, unique_key, watermark_column, watermark_type, owner)
VALUES ('x', 'pg_class', 'pg_class', '{oid}', 'oid', 'oid', 'hwm_install_plain');
UPDATE hwm.state SET watermark = NULL;
DELETE FROM hwm.runs;
RESET ROLE;
DROP ROLE hwm_install_plain;
