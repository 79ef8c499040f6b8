/*
 * running.c
 *		A run owns its pipeline until it ends.
 *
 * A run executes code that is not hwm's: a command pipeline's command, the
 * functions it calls, a view read as a source.  What that code does to the
 * pipeline being run would be overwritten, or misplaced, when the run stores
 * its result: a watermark set from inside the run went backwards when the
 * run stored its own, and a pipeline dropped and declared again under the
 * same name received the result of the run of the one dropped.  So while a
 * run of a pipeline is in progress in a backend, hwm refuses there every
 * function that acts on that pipeline (hwm_pipeline_fetch calls
 * hwm_running_refuse; so does every function that declares one, and the
 * sql_drop trigger that drops one with its table), and the run stores its
 * result in the row it started from, by the pipeline's identity (its name
 * and created_at; catalog.c), never in a row that merely has its name.
 *
 * A run also must not leave anything behind in the session that called it:
 * a session-level advisory lock (pg_advisory_lock and its shared and try
 * forms) taken inside a run would stay with the caller's session after the
 * run, held by nobody who knows of it.  Such a lock is refused when the
 * function is set up to be called (the object access hook), with the
 * transaction-level lock, which the run's transaction releases, in the hint.
 *
 * The runs in progress are a stack in this backend's memory: a run pushes
 * its pipeline before it executes anything of the owner's and pops it when
 * it ends, however it ends (PG_FINALLY in the callers).
 */
#include "postgres.h"

#include "running.h"

#include "catalog/objectaccess.h"
#include "catalog/pg_proc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

static List *running = NIL;		/* char * in TopMemoryContext, innermost first */
static object_access_hook_type prev_object_access_hook = NULL;

void
hwm_running_push(const char *name)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	running = lcons(pstrdup(name), running);
	MemoryContextSwitchTo(old);
}

void
hwm_running_pop(void)
{
	MemoryContext old;
	char	   *name;

	if (running == NIL)
		return;
	name = linitial(running);
	old = MemoryContextSwitchTo(TopMemoryContext);
	running = list_delete_first(running);
	MemoryContextSwitchTo(old);
	pfree(name);
}

void
hwm_running_refuse(const char *name)
{
	ListCell   *lc;

	foreach(lc, running)
		if (strcmp(lfirst(lc), name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("pipeline \"%s\" cannot be run or changed from inside its own run", name),
					 errdetail("Its command (or a function or view it reads) acted on pipeline \"%s\" while a run of it was in progress; a run owns its pipeline until it ends, when it stores the watermark and its result.",
							   name),
					 errhint("Run, change, drop or declare the pipeline again before or after its run, not from its command.")));
}

/* Is function fn one that takes a session-level advisory lock? */
static bool
takes_session_lock(Oid fn)
{
	switch (fn)
	{
		case F_PG_ADVISORY_LOCK_INT8:
		case F_PG_ADVISORY_LOCK_SHARED_INT8:
		case F_PG_TRY_ADVISORY_LOCK_INT8:
		case F_PG_TRY_ADVISORY_LOCK_SHARED_INT8:
		case F_PG_ADVISORY_LOCK_INT4_INT4:
		case F_PG_ADVISORY_LOCK_SHARED_INT4_INT4:
		case F_PG_TRY_ADVISORY_LOCK_INT4_INT4:
		case F_PG_TRY_ADVISORY_LOCK_SHARED_INT4_INT4:
			return true;
		default:
			return false;
	}
}

/*
 * The object access hook: while a run is in progress, a function that takes
 * a session-level advisory lock is refused when an expression calling it is
 * set up (every call of a query's, at each execution).
 */
static void
running_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (running == NIL || access != OAT_FUNCTION_EXECUTE ||
		classId != ProcedureRelationId || !takes_session_lock(objectId))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a run of pipeline \"%s\" cannot take a session-level advisory lock",
					(char *) linitial(running)),
			 errdetail("%s would keep its lock after the run, in the session that called the run.",
					   get_func_name(objectId)),
			 errhint("Use pg_advisory_xact_lock or pg_try_advisory_xact_lock, whose lock the run's transaction releases.")));
}

void
hwm_running_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = running_object_access;
}
