/*
 * freshness.c
 *		A pipeline's freshness goal: hwm.set_target_lag.
 *
 * A target lag says how far behind now() the time up to which a pipeline's
 * target reflects its sources (hwm.freshness.data_as_of: the later of its
 * watermark, where that is a time, and how far its last run found the source
 * complete, and through a chain the oldest of its upstreams') may fall
 * before the pipeline counts as late.  hwm.freshness and hwm.metrics (SQL
 * views, hwm--1.3.sql) read it, the dispatcher notes lateness
 * (dispatch.c, note_late), and a pipeline with neither a schedule nor
 * upstreams is run by the scheduler half of it after each of its runs, and
 * after each run of an upstream (catalog.c, SQL_EVERY, wake_downstreams).
 * This file checks the goal and that the caller may manage the pipeline, as
 * hwm.set_timeout does (schedule.c); catalog.c stores it and makes such a
 * pipeline due at once.
 *
 * A goal is a length of time of at least one second, as the CHECK on
 * hwm.state.target_lag has it; an infinite one (17), one with a negative
 * part, or a shorter one is refused here with a message that says why, before
 * the CHECK would refuse it in its own words.
 */
#include "postgres.h"

#include "catalog.h"
#include "util.h"
#include "compat.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* The interval as text, for messages */
static char *
shown(const Interval *iv)
{
	return DatumGetCString(DirectFunctionCall1(interval_out,
											   IntervalPGetDatum(unconstify(Interval *, iv))));
}

/* Refuse a target lag that is infinite, has a negative part or is under 1 second */
static void
check_target_lag(const Interval *lag)
{
	if (INTERVAL_NOT_FINITE(lag))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target_lag must be finite"),
				 errdetail("target_lag is %s.", shown(lag)),
				 errhint("Pass how far behind now() the pipeline's data may fall, for example '5 minutes', or NULL for no target.")));
	if (hwm_interval_has_negative_part(lag))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target_lag must not have negative parts"),
				 errdetail("target_lag is %s.", shown(lag)),
				 errhint("Pass a plain interval such as '5 minutes' or '1 hour', or NULL for no target.")));
	if (hwm_interval_shorter_than(lag, USECS_PER_SEC))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target_lag must be at least 1 second"),
				 errdetail("target_lag is %s.", shown(lag)),
				 errhint("Pass for example '30 seconds' or '5 minutes'; freshness is measured in seconds.")));
}

PG_FUNCTION_INFO_V1(hwm_set_target_lag);

/* hwm.set_target_lag(pipeline, target_lag): NULL removes the goal */
Datum
hwm_set_target_lag(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Interval   *target_lag = NULL;

	if (!PG_ARGISNULL(1))
	{
		target_lag = PG_GETARG_INTERVAL_P(1);
		check_target_lag(target_lag);
	}

	SPI_connect();
	(void) hwm_pipeline_fetch(name, false, false);
	hwm_state_set_target_lag(name, target_lag);
	SPI_finish();
	PG_RETURN_VOID();
}
