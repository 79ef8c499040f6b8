/*
 * schedule.c
 *		Declaring when a pipeline runs: hwm.schedule, hwm.schedule_after,
 *		hwm.schedule_on_commit, hwm.unschedule, hwm.pause, hwm.resume and
 *		hwm.set_timeout; the anchored arithmetic that turns a schedule into
 *		run times is grid.c's.
 *
 * A schedule is an interval and an anchor: runs are due at anchor + k *
 * every (k = 0, 1, 2, ...).  hwm.state.next_run_at holds the next slot; the
 * dispatcher (dispatch.c) moves it to the first slot after the current time
 * when it claims a run, so a run that is late, or a server that was down for
 * many slots, makes one catch-up run and then falls back onto the grid: runs
 * never drift and never pile up.
 *
 * The SQL functions only write the catalog (as its owner, after checking
 * that the caller may manage the pipeline) and, when what the scheduler
 * runs changed, ring the launcher's doorbell for when the transaction commits
 * (wakeup.c).  Nothing here calls into the scheduler: it reads the catalog,
 * and the dispatcher computes the next slot with grid.c.  A schedule is
 * refused when its first run, or the one after, cannot be represented.
 *
 * A pipeline scheduled after its upstreams (hwm.schedule_after) has no
 * grid: next_run_at stays NULL until a run of an upstream commits rows or
 * moves its watermark, which sets it to now in the same transaction
 * (catalog.c, wake_downstreams); the dispatcher claims it as any due
 * pipeline and leaves next_run_at NULL again.
 *
 * A pipeline scheduled on its source's commits (hwm.schedule_on_commit) has
 * no grid either: due at once when scheduled, then each time a commit
 * writes the tables its source reads, min_interval after its last run began
 * at the earliest (watch.c says which tables were written; the dispatcher
 * sets next_run_at, dispatch.c's step 2c).  A pipeline has one kind of
 * schedule: hwm.schedule, hwm.schedule_after and hwm.schedule_on_commit each
 * replace the others.
 */
#include "postgres.h"

#include "catalog.h"
#include "compat.h"
#include "grid.h"
#include "privilege.h"
#include "schedule.h"
#include "util.h"
#include "wakeup.h"
#include "watch.h"
#include "watermark.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/*
 * Refuse a schedule that the dispatcher cannot step through: it must be at
 * least one second and have no negative part (so that adding it always moves
 * forward, whatever the month lengths).
 */
void
hwm_check_schedule(const Interval *every, const char *what)
{
	if (hwm_interval_has_negative_part(every))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not have negative parts", what),
				 errdetail("Interval %s has a negative part.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(every)))),
				 errhint("Pass a plain interval such as '5 minutes' or '1 day'.")));
	if (hwm_interval_shorter_than(every, USECS_PER_SEC))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 1 second", what),
				 errhint("Pass for example '5 minutes'; the scheduler does not run pipelines more often than once a second.")));
}

/*
 * A schedule set in a database that the launcher does not serve, or on a
 * server that did not preload hwm, never runs: say so.  This depends only on
 * the settings (hwm.database), never on a running launcher.
 */
static void
warn_if_not_served(const char *pipeline)
{
	if (!hwm_scheduler_preloaded)
		ereport(WARNING,
				(errmsg("pipeline \"%s\" is scheduled, but hwm is not loaded through shared_preload_libraries", pipeline),
				 errdetail("The schedule is stored; nothing runs it until the scheduler is started."),
				 errhint("Add hwm to shared_preload_libraries in postgresql.conf and restart the server.")));
	else if (!hwm_database_listed(get_database_name(MyDatabaseId)))
		ereport(WARNING,
				(hwm_database_is_single() ?
				 errmsg("pipeline \"%s\" is scheduled, but the scheduler serves database \"%s\"", pipeline,
						hwm_database) :
				 errmsg("pipeline \"%s\" is scheduled, but hwm.database does not list this database", pipeline),
				 errdetail("The schedule is stored; nothing runs it in this database."),
				 errhint("Add this database to hwm.database in postgresql.conf, or set it to '*', and reload the server.")));
}

/*
 * Every scheduled run connects to this database as the pipeline's owner: an
 * owner without LOGIN, or without CONNECT on the database, makes every run
 * fail (SQLSTATE 28000 and 42501).  Say so when the schedule is set, not
 * at the first run.  A warning, not a refusal: the role may be given LOGIN
 * later, and a dump restores schedules before anyone fixes roles.
 */
static void
warn_if_owner_cannot_connect(const char *pipeline)
{
	Oid			owner = hwm_state_owner_as_caller(pipeline);
	HeapTuple	tup;
	char	   *rolname;
	bool		canlogin;

	if (!OidIsValid(owner))
		return;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(owner));
	if (!HeapTupleIsValid(tup))
		return;
	rolname = pstrdup(NameStr(((Form_pg_authid) GETSTRUCT(tup))->rolname));
	canlogin = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);

	if (!canlogin)
		ereport(WARNING,
				(errmsg("pipeline \"%s\" is scheduled, but its owner \"%s\" cannot log in", pipeline, rolname),
				 errdetail("Scheduled runs connect as the pipeline's owner; each would fail with SQLSTATE 28000."),
				 errhint("ALTER ROLE %s LOGIN, or run the pipeline by hand.", quote_identifier(rolname))));
	else if (object_aclcheck(DatabaseRelationId, MyDatabaseId, owner, ACL_CONNECT) != ACLCHECK_OK)
		ereport(WARNING,
				(errmsg("pipeline \"%s\" is scheduled, but its owner \"%s\" may not connect to database \"%s\"",
						pipeline, rolname, get_database_name(MyDatabaseId)),
				 errdetail("Scheduled runs connect as the pipeline's owner; each would fail with SQLSTATE 42501."),
				 errhint("GRANT CONNECT ON DATABASE %s TO %s, or run the pipeline by hand.",
						 quote_identifier(get_database_name(MyDatabaseId)), quote_identifier(rolname))));
}

/*
 * Store a schedule (anchored at start_at) and its first run time, and wake
 * the launcher at commit.  Also used by hwm.create_pipeline(schedule => ...).
 * The caller has called SPI_connect() and checked the caller's rights.
 */
TimestampTz
hwm_schedule_set(const char *pipeline, const Interval *every,
				 TimestampTz start_at)
{
	TimestampTz next;
	TimestampTz second;

	/* the first run, and one after it, must be times PostgreSQL can hold */
	if (!hwm_grid_schedule_next(start_at, every, GetCurrentTransactionStartTimestamp(),
								true, &next) ||
		!hwm_grid_schedule_next(start_at, every, next, false, &second))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("schedule of pipeline \"%s\" is too long: its runs would fall after the last time PostgreSQL can store", pipeline),
				 errdetail("Run times are timestamptz values, which end in the year 294276; every %s from %s reaches past that within two runs.",
						   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(every))),
						   DatumGetCString(DirectFunctionCall1(timestamptz_out, TimestampTzGetDatum(start_at)))),
				 errhint("Pass an interval of at most a few thousand years, such as '1 day' or '1 year'.")));

	hwm_state_set_schedule(pipeline, every, start_at, next);
	warn_if_not_served(pipeline);
	warn_if_owner_cannot_connect(pipeline);
	hwm_wakeup_at_commit();
	return next;
}

PG_FUNCTION_INFO_V1(hwm_schedule);

/* hwm.schedule(pipeline, every, start_at): returns the next run time */
Datum
hwm_schedule(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Interval   *every;
	TimestampTz start_at;
	TimestampTz next;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("every must not be null"),
				 errhint("To stop scheduling the pipeline, call hwm.unschedule(%s).", quote_literal_cstr(name))));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("start_at must not be null"),
				 errhint("Leave start_at out to start now.")));
	every = PG_GETARG_INTERVAL_P(1);
	start_at = PG_GETARG_TIMESTAMPTZ(2);
	hwm_check_schedule(every, "every");
	if (TIMESTAMP_NOT_FINITE(start_at))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("start_at must be finite")));

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	next = hwm_schedule_set(name, every, start_at);
	SPI_finish();
	PG_RETURN_TIMESTAMPTZ(next);
}

/*
 * On demand only from now on: no schedule, no next run, and a run claimed
 * under the old schedule is not run (see claimed_run_id).  The caller has
 * checked the rights and holds an SPI connection.
 */
void
hwm_schedule_clear(const char *pipeline)
{
	hwm_state_clear_schedule(pipeline);
	hwm_wakeup_at_commit();
}

/*
 * The upstreams of hwm.schedule_after: the array's names, each once and in
 * order, as a text[]; refused when empty or holding a NULL.
 */
static ArrayType *
upstream_names(FunctionCallInfo fcinfo, const char *pipeline)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			kept = 0;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("upstreams must not be null"),
				 errhint("To stop scheduling the pipeline, call hwm.unschedule(%s).", quote_literal_cstr(pipeline))));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("upstreams must name at least one pipeline"),
				 errhint("To stop scheduling the pipeline, call hwm.unschedule(%s).", quote_literal_cstr(pipeline))));
	for (int i = 0; i < n; i++)
	{
		bool		seen = false;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("upstreams must not contain null"),
					 errhint("Name each upstream pipeline.")));
		for (int j = 0; j < kept && !seen; j++)
			seen = DatumGetBool(DirectFunctionCall2Coll(texteq, C_COLLATION_OID,
													   elems[j], elems[i]));
		if (!seen)
			elems[kept++] = elems[i];
	}
	return construct_array(elems, kept, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * May pipeline p run after upstream?  It must exist and be p's owner's, or
 * load a target that p's owner may read.  Both refusals read the same, so
 * that nobody learns of another owner's pipeline by naming it.
 */
static void
check_upstream(const HwmPipeline *p, const char *upstream)
{
	Oid			owner;
	Oid			target;

	if (!hwm_state_upstream(upstream, &owner, &target) ||
		!(has_privs_of_role(p->owner, owner) ||
		  (OidIsValid(target) &&
		   pg_class_aclcheck(target, p->owner, ACL_SELECT) == ACLCHECK_OK)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("upstream pipeline \"%s\" does not exist, or its target is not readable by the owner of pipeline \"%s\"",
						upstream, p->name),
				 errhint("Name a pipeline of the same owner, or one whose target the owner of \"%s\" may SELECT from.",
						 p->name)));
}

PG_FUNCTION_INFO_V1(hwm_schedule_after);

/*
 * hwm.schedule_after(pipeline, upstreams): run the pipeline after a run of
 * any of upstreams commits rows or moves its watermark, instead of every
 * so often.
 */
Datum
hwm_schedule_after(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	ArrayType  *upstreams = upstream_names(fcinfo, name);
	Datum	   *elems;
	int			n;
	HwmPipeline *p;

	SPI_connect();
	p = hwm_pipeline_fetch(name, false, false);
	deconstruct_array(upstreams, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
	for (int i = 0; i < n; i++)
		check_upstream(p, TextDatumGetCString(elems[i]));
	hwm_after_graph_lock();
	if (hwm_state_after_cycle(name, PointerGetDatum(upstreams)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("pipeline \"%s\" cannot run after its own runs", name),
				 errdetail("It is among the upstreams named, or among theirs: the pipelines would start each other forever."),
				 errhint("Leave out the upstream that runs after \"%s\", or call hwm.unschedule on it first.", name)));
	hwm_state_set_after(name, PointerGetDatum(upstreams));
	warn_if_not_served(name);
	warn_if_owner_cannot_connect(name);
	hwm_wakeup_at_commit();
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * The tables whose commits wake a pipeline scheduled on commit: have their
 * writers look for them from now on (watch.c), and warn of a source whose
 * rows change without a commit here that writes them (a foreign table, a
 * materialized view, refreshed by a utility statement).
 */
static void
watch_source(const HwmPipeline *p)
{
	ListCell   *lc;

	foreach(lc, hwm_source_relations(p->source))
	{
		Oid			relid = lfirst_oid(lc);
		char		kind = get_rel_relkind(relid);

		if (kind == RELKIND_FOREIGN_TABLE || kind == RELKIND_MATVIEW)
			ereport(WARNING,
					(errmsg("pipeline \"%s\" is scheduled on commit, but its source reads %s \"%s\", whose changes no commit here announces",
							p->name, kind == RELKIND_MATVIEW ? "materialized view" : "foreign table",
							get_rel_name(relid)),
					 errdetail("A run is woken only by transactions of this server that insert, update, delete or copy into the source's tables."),
					 errhint("Schedule it every so often instead (hwm.schedule), or after the pipeline that loads that table (hwm.schedule_after).")));
		else if (kind == RELKIND_RELATION || kind == RELKIND_PARTITIONED_TABLE)
			(void) hwm_watch_register(relid);
	}
}

PG_FUNCTION_INFO_V1(hwm_schedule_on_commit);

/*
 * hwm.schedule_on_commit(pipeline, min_interval): run the pipeline when a
 * transaction that wrote its source's tables commits, at most once per
 * min_interval, instead of every so often; once at once, to begin.
 */
Datum
hwm_schedule_on_commit(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Interval   *min_interval;
	HwmPipeline *p;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("min_interval must not be null"),
				 errhint("Pass for example '1 second', or '0' to run after every commit (never two runs at once).")));
	min_interval = PG_GETARG_INTERVAL_P(1);
	if (hwm_interval_has_negative_part(min_interval))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_interval must not have negative parts"),
				 errdetail("Interval %s has a negative part.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(min_interval)))),
				 errhint("Pass for example '1 second', or '0' to run after every commit (never two runs at once).")));
	hwm_check_timer_interval(min_interval, "min_interval",
							 "Pass for example '1 second' or '1 hour'; to run less often than that, use hwm.schedule.");

	SPI_connect();
	p = hwm_pipeline_fetch(name, false, false);
	hwm_state_set_on_commit(name, min_interval, GetCurrentTransactionStartTimestamp());
	watch_source(p);
	warn_if_not_served(name);
	warn_if_owner_cannot_connect(name);
	hwm_wakeup_at_commit();
	SPI_finish();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_unschedule);

Datum
hwm_unschedule(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	hwm_schedule_clear(name);
	SPI_finish();
	PG_RETURN_VOID();
}

/* hwm.pause and hwm.resume: set the enabled flag */
static void
set_enabled(FunctionCallInfo fcinfo, bool enabled)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	hwm_state_set_enabled(name, enabled);
	/* resumed here by its owner: a pipeline copied from elsewhere is at home */
	if (enabled)
		hwm_pipeline_set_home(name);
	SPI_finish();
	hwm_wakeup_at_commit();
}

PG_FUNCTION_INFO_V1(hwm_pause);

Datum
hwm_pause(PG_FUNCTION_ARGS)
{
	set_enabled(fcinfo, false);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_resume);

Datum
hwm_resume(PG_FUNCTION_ARGS)
{
	set_enabled(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_set_timeout);

/* hwm.set_timeout(pipeline, timeout): NULL removes the limit */
Datum
hwm_set_timeout(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Interval   *timeout = NULL;

	if (!PG_ARGISNULL(1))
	{
		timeout = PG_GETARG_INTERVAL_P(1);
		if (hwm_interval_has_negative_part(timeout) || hwm_interval_shorter_than(timeout, 1000))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("timeout must be a positive interval of at least 1 millisecond"),
					 errhint("Pass for example '10 minutes', or NULL for no limit.")));
		/* (a longer one used to wrap around to 1 ms) */
		hwm_check_timer_interval(timeout, "timeout",
								 "Pass for example '10 minutes' or '1 day', or NULL for no limit.");
	}

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	hwm_state_set_timeout(name, timeout);
	SPI_finish();
	PG_RETURN_VOID();
}
