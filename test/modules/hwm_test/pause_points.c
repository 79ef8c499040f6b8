/*
 * pause_points.c
 *		hwm's pause points (hwm_pause_hook, src/clock.h) as the tests hold
 *		them: a scheduler process that reaches an armed point waits there
 *		while a test session holds that point's advisory lock, so that a
 *		test can commit something between two steps of a dispatcher or a
 *		worker, and make a race happen in one order on purpose
 *		(test/t/078_chain_worker_race.pl, 079_reconcile_paused_race.pl,
 *		07a_wakes_schedule_race.pl, 07b_sweep_claim_race.pl).
 *
 * A point is armed by naming it in hwm_test.pause_points (a comma-separated
 * list, reloadable; empty by default, when no point waits and nothing is
 * locked).  At an armed point the process takes
 *
 *   pg_advisory_xact_lock_shared(hashtextextended('<point>', 0))
 *
 * which waits while a test session holds pg_advisory_lock of the same key,
 * and is released at the end of the process's transaction.  The test sees
 * the process waiting in pg_locks (locktype 'advisory', not granted; a
 * bigint key shows as classid, its high 32 bits, and objid, its low 32),
 * and lets it go with pg_advisory_unlock.
 *
 * It works only preloaded with hwm (shared_preload_libraries = 'hwm,
 * hwm_test'): the hook is set in the postmaster, so every scheduler
 * process has it.  hwm's hook is looked up in hwm.so by name
 * (load_external_function), as clock_mock.c looks up its own.
 */
#include "postgres.h"

#include "clock.h"
#include "hwm_test.h"

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"

static char *pause_points = NULL;

/* Is point named in hwm_test.pause_points? */
static bool
armed(const char *point)
{
	char	   *copy;
	List	   *names;
	ListCell   *lc;
	bool		found = false;

	if (pause_points == NULL || pause_points[0] == '\0')
		return false;
	copy = pstrdup(pause_points);
	/* (check_pause_points let only a list of names in) */
	if (!SplitIdentifierString(copy, ',', &names))
		elog(ERROR, "hwm_test.pause_points is not a list of names: \"%s\"", pause_points);
	foreach(lc, names)
		found |= strcmp((const char *) lfirst(lc), point) == 0;
	list_free(names);
	pfree(copy);
	return found;
}

/* hwm's hook: at an armed point, wait while a test holds its advisory lock */
static void
pause_at(const char *point)
{
	Datum		key;

	if (!armed(point))
		return;
	key = DirectFunctionCall2Coll(hashtextextended, C_COLLATION_OID,
								  CStringGetTextDatum(point), Int64GetDatum(0));
	elog(DEBUG1, "hwm_test: pause point %s", point);
	(void) DirectFunctionCall1(pg_advisory_xact_lock_shared_int8, key);
}

/* GUC check hook: a comma-separated list of names, refused when it is not */
static bool
check_pause_points(char **newval, void **extra, GucSource source)
{
	char	   *copy;
	List	   *names;
	bool		ok;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	copy = pstrdup(*newval);
	ok = SplitIdentifierString(copy, ',', &names);
	list_free(names);
	pfree(copy);
	if (!ok)
	{
		GUC_check_errdetail("hwm_test.pause_points is a comma-separated list of pause point names, such as \"dispatcher_applies_wakes, worker_applies_wakes\".");
		return false;
	}
	return true;
}

void
hwm_test_pause_points_init(void)
{
	hwm_pause_hook_type *hook;

	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomStringVariable("hwm_test.pause_points",
							   "The pause points of hwm's scheduler that wait for a test's advisory lock.",
							   "A comma-separated list of names (src/clock.h); empty: none.",
							   &pause_points, "", PGC_SIGHUP, 0, check_pause_points, NULL, NULL);
	MarkGUCPrefixReserved("hwm_test");
	hook = (hwm_pause_hook_type *)
		load_external_function("$libdir/hwm", "hwm_pause_hook", true, NULL);
	*hook = pause_at;
}
