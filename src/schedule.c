/*
 * schedule.c
 *		Declaring when a pipeline runs: hwm.schedule, hwm.unschedule,
 *		hwm.pause, hwm.resume and hwm.set_timeout, and the anchored arithmetic
 *		that turns a schedule into the next run time.
 *
 * A schedule is an interval and an anchor: runs are due at anchor + k *
 * every (k = 0, 1, 2, ...).  hwm.state.next_run_at holds the next slot; the
 * launcher (scheduler.c) moves it to the first slot after the current time
 * when it starts a run, so a run that is late, or a server that was down for
 * many slots, makes one catch-up run and then falls back onto the grid: runs
 * never drift and never pile up.
 *
 * The SQL functions only write the catalog (as its owner, after checking
 * that the caller may manage the pipeline) and, when what the launcher
 * schedules changed, ring its doorbell for when the transaction commits
 * (wakeup.c).  Nothing here calls into the launcher: it reads the catalog,
 * and calls hwm_schedule_next here for the next slot.
 */
#include "postgres.h"

#include "catalog.h"
#include "privilege.h"
#include "schedule.h"
#include "util.h"
#include "wakeup.h"

#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* Has the interval a negative part (months, days or time)? */
static bool
has_negative_part(const Interval *iv)
{
	return iv->month < 0 || iv->day < 0 || iv->time < 0;
}

/* Is the interval shorter than usecs microseconds (as interval < does)? */
static bool
shorter_than(const Interval *iv, int64 usecs)
{
	Interval	limit = {0};

	limit.time = usecs;
	return DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(iv),
											IntervalPGetDatum(&limit)));
}

/*
 * Refuse a schedule that the launcher cannot step through: it must be at
 * least one second and have no negative part (so that adding it always moves
 * forward, whatever the month lengths).
 */
void
hwm_check_schedule(const Interval *every, const char *what)
{
	if (has_negative_part(every))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not have negative parts", what),
				 errdetail("Interval %s has a negative part.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(every)))),
				 errhint("Pass a plain interval such as '5 minutes' or '1 day'.")));
	if (shorter_than(every, USECS_PER_SEC))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 1 second", what),
				 errhint("Pass for example '5 minutes'; the scheduler does not run pipelines more often than once a second.")));
}

/* anchor + k * every */
static TimestampTz
grid_point(TimestampTz anchor, const Interval *every, int64 k)
{
	Datum		step;

	step = DirectFunctionCall2(interval_mul, IntervalPGetDatum(every),
							   Float8GetDatum((double) k));
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(anchor),
												   step));
}

/*
 * The first slot anchor + k * every (k >= 0) that is after `after` (or at
 * it, with inclusive).  k is estimated from the interval's nominal length
 * (months of 30 days) and then corrected, so months and daylight saving time
 * are stepped through exactly as timestamptz + interval does.
 */
TimestampTz
hwm_schedule_next(TimestampTz anchor, const Interval *every, TimestampTz after,
				  bool inclusive)
{
	int64		span = hwm_interval_usecs(every);
	int64		k;
	TimestampTz t;

#define HWM_PAST(t) (inclusive ? (t) >= after : (t) > after)
	if (HWM_PAST(anchor) || span <= 0)
		return anchor;
	k = (after - anchor) / span;
	if (k > 0)
		k--;
	/* step back over an overestimate (months shorter than 30 days) */
	while (k > 0 && HWM_PAST(grid_point(anchor, every, k - 1)))
		k--;
	for (;;)
	{
		t = grid_point(anchor, every, k);
		if (HWM_PAST(t))
			break;
		k++;
	}
#undef HWM_PAST
	return t;
}

/* Run an UPDATE of one pipeline's hwm.state row as the catalog owner */
static void
update_state(const char *sql, int nargs, Oid *argtypes, Datum *values,
			 const char *nulls)
{
	HwmRoleSwitch sw;

	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec(sql, nargs, argtypes, values, nulls, SPI_OK_UPDATE);
	hwm_unbecome(&sw);
}

/*
 * A schedule set in a database that the launcher does not serve, or on a
 * server that did not preload hwm, never runs: say so.  This depends only on
 * how the server was started (hwm.database), never on a running launcher.
 */
static void
warn_if_not_served(const char *pipeline)
{
	if (!hwm_scheduler_preloaded)
		ereport(WARNING,
				(errmsg("pipeline \"%s\" is scheduled, but hwm is not loaded through shared_preload_libraries", pipeline),
				 errdetail("The schedule is stored; nothing runs it until the scheduler is started."),
				 errhint("Add hwm to shared_preload_libraries in postgresql.conf and restart the server.")));
	else if (hwm_database == NULL || strcmp(hwm_database, get_database_name(MyDatabaseId)) != 0)
		ereport(WARNING,
				(errmsg("pipeline \"%s\" is scheduled, but the scheduler serves database \"%s\"", pipeline,
						hwm_database ? hwm_database : ""),
				 errdetail("The schedule is stored; nothing runs it in this database."),
				 errhint("Set hwm.database in postgresql.conf to this database and restart the server.")));
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
	TimestampTz next = hwm_schedule_next(start_at, every,
										 GetCurrentTransactionStartTimestamp(),
										 true);
	Oid			argtypes[4] = {TEXTOID, INTERVALOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[4];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = IntervalPGetDatum(every);
	values[2] = TimestampTzGetDatum(start_at);
	values[3] = TimestampTzGetDatum(next);
	update_state("UPDATE hwm.state SET schedule = $2, schedule_anchor = $3, next_run_at = $4"
				 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
				 4, argtypes, values, NULL);
	warn_if_not_served(pipeline);
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
				 errhint("To stop scheduling the pipeline, call hwm.unschedule('%s').", name)));
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

PG_FUNCTION_INFO_V1(hwm_unschedule);

Datum
hwm_unschedule(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	values[0] = CStringGetTextDatum(name);
	update_state("UPDATE hwm.state SET schedule = NULL, schedule_anchor = NULL, next_run_at = NULL"
				 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
	SPI_finish();
	hwm_wakeup_at_commit();
	PG_RETURN_VOID();
}

/* hwm.pause and hwm.resume: set the enabled flag */
static void
set_enabled(FunctionCallInfo fcinfo, bool enabled)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Oid			argtypes[2] = {TEXTOID, BOOLOID};
	Datum		values[2];

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	values[0] = CStringGetTextDatum(name);
	values[1] = BoolGetDatum(enabled);
	update_state("UPDATE hwm.state SET enabled = $2 WHERE pipeline OPERATOR(pg_catalog.=) $1",
				 2, argtypes, values, NULL);
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
	Oid			argtypes[2] = {TEXTOID, INTERVALOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (!PG_ARGISNULL(1))
	{
		Interval   *timeout = PG_GETARG_INTERVAL_P(1);

		if (has_negative_part(timeout) || shorter_than(timeout, 1000))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("timeout must be a positive interval of at least 1 millisecond"),
					 errhint("Pass for example '10 minutes', or NULL for no limit.")));
		values[1] = IntervalPGetDatum(timeout);
	}
	else
		nulls[1] = 'n';

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	values[0] = CStringGetTextDatum(name);
	update_state("UPDATE hwm.state SET timeout = $2 WHERE pipeline OPERATOR(pg_catalog.=) $1",
				 2, argtypes, values, nulls);
	SPI_finish();
	PG_RETURN_VOID();
}
