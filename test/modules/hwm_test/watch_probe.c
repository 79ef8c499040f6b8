/*
 * watch_probe.c
 *		The writers' side of hwm.schedule_on_commit (src/watch.c), as
 *		sql/schedule_on_commit.sql probes it: a table's watch armed as the
 *		scheduler's worker arms it, and whether a commit has written it
 *		since, as the dispatcher asks.  A suite declares them itself:
 *
 *   CREATE FUNCTION hwm_test_watch_arm(regclass) RETURNS boolean
 *     LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_watch_arm';
 *   CREATE FUNCTION hwm_test_watch_written(regclass) RETURNS boolean
 *     LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_watch_written';
 *
 * hwm's two functions are looked up in the hwm.so the server preloaded
 * (load_external_function, PGDLLEXPORT there), whose shared memory holds
 * the watches: without hwm preloaded, arming gives false and every table
 * reads as written, as in hwm.
 */
#include "postgres.h"

#include "fmgr.h"

PG_FUNCTION_INFO_V1(hwm_test_watch_arm);
PG_FUNCTION_INFO_V1(hwm_test_watch_written);

typedef bool (*watch_fn) (Oid relid);

static watch_fn
hwm_function(const char *name)
{
	return (watch_fn) load_external_function("$libdir/hwm", name, true, NULL);
}

/* hwm_test_watch_arm(regclass) -> boolean: armed (false: it cannot be) */
Datum
hwm_test_watch_arm(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(hwm_function("hwm_watch_arm") (PG_GETARG_OID(0)));
}

/* hwm_test_watch_written(regclass) -> boolean: written since armed, or never armed */
Datum
hwm_test_watch_written(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(hwm_function("hwm_watch_written") (PG_GETARG_OID(0)));
}
