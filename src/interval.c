/*
 * interval.c
 *		Interval pipelines: a time column cut into intervals of one length
 *		from an anchor, and a command run over each finished interval.
 *
 * The grid: interval k is [anchor + k * step, anchor + (k + 1) * step),
 * computed on the column's values as UTC timestamps (a timestamptz's
 * instant, a timestamp's or a date's wall clock), so that a day is a day
 * whatever the session's TimeZone.  The stored watermark is the end
 * (exclusive) of the last interval done, that is the start of the next.
 *
 * An interval [s, e) is ready when e is at most the safe limit that
 * watermark.c computes for the time column: every transaction still in
 * flight writes values at or above that limit (or is waited for, or holds
 * the run back), and so is delay.  hwm.run runs the command over the next
 * ready interval, or over all of them at once when the pipeline is
 * batched; skip_empty steps over intervals without rows.  CALL
 * hwm.catch_up repeats hwm.run, one committed interval at a time.
 *
 * CALL hwm.rerun_intervals runs the command again over a range of intervals
 * already done, one transaction per interval outside a transaction block,
 * with its progress in hwm.backfills so that a second call resumes.
 */
#include "postgres.h"

#include "catalog.h"
#include "command.h"
#include "grid.h"
#include "interval.h"
#include "job.h"
#include "pipeline.h"
#include "privilege.h"
#include "running.h"
#include "util.h"
#include "watermark.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* The grid of one pipeline, in UTC, and the column's type */
typedef struct Grid
{
	const HwmValueType *vt;
	HwmGrid		g;
} Grid;

/* A value of the time column as a UTC timestamp */
static Timestamp
as_ts(const HwmValueType *vt, Datum v)
{
	Timestamp	t;

	if (getBaseType(vt->type) == DATEOID)
		t = DatumGetTimestamp(DirectFunctionCall1(date_timestamp, v));
	else
		t = DatumGetTimestamp(v);	/* timestamptz: the same microseconds */
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("an interval pipeline cannot place an infinite time on its grid"),
				 errhint("Keep infinity out of the time column, or filter it out with a view as the source.")));
	return t;
}

/* A UTC timestamp as a value of the time column */
static Datum
from_ts(const HwmValueType *vt, Timestamp t)
{
	if (getBaseType(vt->type) == DATEOID)
		return DirectFunctionCall1(timestamp_date, TimestampGetDatum(t));
	return TimestampGetDatum(t);
}

/* The start of interval k */
static Timestamp
boundary(const Grid *g, int64 k)
{
	Timestamp	t;

	if (!hwm_grid_point(&g->g, k, &t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("an interval of this pipeline's grid ends past the range of timestamps"),
				 errdetail("Interval number " INT64_FORMAT " from the anchor cannot be represented.", k),
				 errhint("Keep the time column's values within the range PostgreSQL's timestamps cover.")));
	return t;
}

/* The number of the interval that holds t */
static int64
index_of(const Grid *g, Timestamp t)
{
	int64		k;

	if (!hwm_grid_index(&g->g, t, &k))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("a time is too far from the anchor of this pipeline's grid"),
				 errdetail("More intervals than a bigint can count lie between them."),
				 errhint("Choose an anchor closer to the column's values, or a longer interval.")));
	return k;
}

/*
 * The pipeline's grid; the anchor parsed with the column's type (a time
 * type: create_interval_pipeline checks it, and the plan refuses a column
 * whose type was changed since, hwm_plan_as_owner)
 */
static void
grid_init(Grid *g, const HwmPlan *plan, const Interval *step, const char *anchor)
{
	g->vt = &plan->wm;
	hwm_grid_init(&g->g, as_ts(&plan->wm, hwm_value_in(&plan->wm, anchor, "anchor")),
				  step, false);
}

/* Refuse a value that is not a boundary of the grid */
static void
check_on_grid(const Grid *g, Timestamp t, const char *what, const char *text)
{
	Timestamp	start = boundary(g, index_of(g, t));

	if (start != t)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s %s is not the start of an interval", what, text),
				 errdetail("Intervals start at the anchor plus a whole number of intervals."),
				 errhint("The interval that holds it starts at %s.",
						 hwm_value_out(g->vt, from_ts(g->vt, start)))));
}

/*
 * Refuse a watermark (what names it, for messages) that is not a boundary
 * of the pipeline's grid: set_watermark on an interval pipeline, whose
 * watermark is the start of the next interval to run.
 */
void
hwm_interval_check_boundary(const HwmPlan *plan, const Interval *step,
							const char *anchor, const char *value, const char *what)
{
	Grid		g;

	grid_init(&g, plan, step, anchor);
	check_on_grid(&g, as_ts(&plan->wm, hwm_value_in(&plan->wm, value, what)), what, value);
}

/*
 * Refuse a time column that an interval pipeline cannot cut into intervals
 * (anything but timestamptz, timestamp or date), naming it and its type:
 * checked before the anchor and start_at are parsed with that type.
 */
void
hwm_interval_check_column(const HwmPlan *plan, const char *column)
{
	if (!hwm_is_time_type(plan->wm.type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("time column \"%s\" of an interval pipeline must be of type timestamptz, timestamp or date",
						column),
				 errdetail("The column has type %s.", format_type_be(plan->wm.type)),
				 errhint("Use hwm.create_command_pipeline for ranges of other types.")));
}

/*
 * What create_interval_pipeline checks on top of the command and the
 * column: a positive interval (whole days for a date column), an anchor and
 * a start that parse, the start on the grid, and, as for a schedule, the
 * end of the first interval to run and of the one after it within the range
 * of timestamps.
 */
void
hwm_interval_check(const HwmPlan *plan, const Interval *step, const char *anchor,
				   const char *start_at)
{
	Grid		g;
	Timestamp	first;
	Timestamp	end;
	int64		k;

	if (hwm_grid_step_problem(step) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_interval must be positive, with no negative part"),
				 errhint("Pass an interval such as '1 hour' or '1 day'.")));
	if (getBaseType(plan->wm.type) == DATEOID && step->time != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_interval of a date column must be whole days"),
				 errhint("Pass an interval such as '1 day', '7 days' or '1 month'.")));
	grid_init(&g, plan, step, anchor);
	/* the first interval: at start_at, else the one that holds now (UTC) */
	first = start_at ? as_ts(&plan->wm, hwm_value_in(&plan->wm, start_at, "start_at"))
		: (Timestamp) GetCurrentTransactionStartTimestamp();
	if (start_at)
		check_on_grid(&g, first, "start_at", start_at);
	if (!hwm_grid_index(&g.g, first, &k) ||
		!hwm_grid_point(&g.g, k + 1, &end) || !hwm_grid_point(&g.g, k + 2, &end))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_interval is too long: its intervals would end after the last time PostgreSQL can store"),
				 errdetail("Interval boundaries are timestamps, which end in the year 294276; every %s from %s reaches past that within two intervals.",
						   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(step))),
						   start_at ? start_at : anchor),
				 errhint("Pass an interval of at most a few thousand years, such as '1 day' or '1 year'.")));
}

/* One run of an interval pipeline, as its steps fill it in */
typedef struct IntervalRun
{
	HwmPipeline *p;
	HwmPlan    *plan;
	Grid		grid;
	bool		has_start;
	Timestamp	from;			/* the next interval's start, as stored */
	Timestamp	start;			/* ... past the empty ones with skip_empty */
	Timestamp	ready_end;		/* the greatest boundary that is safe */
	const char *held;			/* why nothing is ready, or NULL */
	Timestamp	new_wm;
	bool		ran;			/* the command ran over [start, run_end) */
	Timestamp	run_end;
	int64		rows;
	int64		scheduled_run_id;	/* its 'running' row, 0: none */
	HwmIntervalHorizon *horizon;	/* its CALL hwm.catch_up's, or NULL */
} IntervalRun;

/* The next interval's start: the watermark, or the oldest row's interval */
static void
find_start(IntervalRun *r)
{
	const HwmValueType *vt = &r->plan->wm;
	HwmBinding	binding = {0};
	Datum		oldest;

	if (r->p->watermark)
	{
		r->start = as_ts(vt, hwm_value_in(vt, r->p->watermark, "stored watermark"));
		r->has_start = true;
		return;
	}
	/* the first-run form's smallest value: from everywhere (NULL), skipping none */
	hwm_bind(&binding, HWM_PARAM_FROM, (Datum) 0, true);
	hwm_bind(&binding, HWM_PARAM_OFFSET, Int64GetDatum(0), false);
	hwm_statement_exec(&r->plan->wm_stmt[HWM_WM_BATCH_END][0], &binding, SPI_OK_SELECT);
	if (!hwm_spi_first(&oldest))
		return;
	r->start = boundary(&r->grid, index_of(&r->grid, as_ts(vt, oldest)));
	r->has_start = true;
}

/*
 * The greatest boundary that no transaction in flight can write below.  An
 * interval pipeline keeps no load memory (its range is the grid, not what
 * the last run read), so no remembered transaction is carried.
 */
static bool
find_ready_end(IntervalRun *r)
{
	HwmSafeBound bound;

	hwm_safe_bound(r->plan, r->p->source, r->p->delay, NIL, &bound);
	r->held = bound.reason;
	if (bound.hold || !bound.has_limit)
		return false;
	r->ready_end = boundary(&r->grid, index_of(&r->grid, as_ts(&r->plan->wm, bound.limit)));
	/* a chain: no interval past what the upstreams have committed */
	if (bound.has_cap)
	{
		TimestampTz capped = boundary(&r->grid, index_of(&r->grid, as_ts(&r->plan->wm, bound.cap)));

		if (capped < r->ready_end)
		{
			r->ready_end = capped;
			r->held = HWM_CHAIN_HELD;
		}
	}
	/* within CALL hwm.catch_up: no further than what was ready at its first run */
	if (r->horizon && r->horizon->set)
		r->ready_end = Min(r->ready_end, r->horizon->end);
	else if (r->horizon)
	{
		r->horizon->end = r->ready_end;
		r->horizon->set = true;
	}
	return r->ready_end > r->start;
}

/*
 * With skip_empty: move the start past the intervals without rows, up to
 * the ready end; false when no ready interval has rows.
 */
static bool
skip_empty_intervals(IntervalRun *r)
{
	const HwmValueType *vt = &r->plan->wm;
	Oid			argtypes[1] = {vt->type};
	Datum		args[1] = {from_ts(vt, r->start)};
	Datum		next;
	Timestamp	next_start;

	hwm_spi_exec(r->plan->first_from_sql, 1, argtypes, args, NULL, SPI_OK_SELECT);
	if (!hwm_spi_first(&next))
	{
		r->new_wm = r->ready_end;
		return false;
	}
	next_start = boundary(&r->grid, index_of(&r->grid, as_ts(vt, next)));
	if (next_start >= r->ready_end)
	{
		r->new_wm = r->ready_end;
		return false;
	}
	r->start = next_start;
	return true;
}

/* Run the command over the next ready interval, or the whole backlog */
static void
run_intervals(IntervalRun *r)
{
	const HwmValueType *vt = &r->plan->wm;

	r->new_wm = r->start;
	if (r->p->skip_empty && !skip_empty_intervals(r))
		return;
	r->run_end = r->p->batched ? r->ready_end
		: boundary(&r->grid, index_of(&r->grid, r->start) + 1);
	r->rows = hwm_command_exec(r->p->name, r->p->command, vt->type,
							   from_ts(vt, r->start), false, from_ts(vt, r->run_end));
	r->ran = true;
	r->new_wm = r->run_end;
}

/* The run in hwm.runs and the pipeline's state; returns the run_id */
static int64
record_interval_run(IntervalRun *r, TimestampTz started_at, char **after)
{
	const HwmValueType *vt = &r->plan->wm;
	HwmRunFacts run = HWM_RUN_FACTS_INIT(r->p->name, "load", started_at);
	bool		moved = r->has_start && r->new_wm != r->from;
	char	   *from_text = r->ran ? hwm_value_out(vt, from_ts(vt, r->start)) : NULL;
	char	   *to_text = r->ran ? hwm_value_out(vt, from_ts(vt, r->run_end)) : NULL;
	int64		run_id;

	if (moved)
		*after = hwm_value_out(vt, from_ts(vt, r->new_wm));
	run.rows_upserted = r->rows;
	run.watermark_before = r->p->watermark;
	run.watermark_after = *after;
	run.from_partition = from_text;
	run.to_partition = to_text;
	run.scheduled_run_id = r->scheduled_run_id;
	run_id = hwm_record_run(&run);
	hwm_update_state_after_run(r->p, run_id, started_at, *after != r->p->watermark,
							   *after, r->rows, &r->p->memory);
	ereport(NOTICE,
			(errmsg("hwm: pipeline \"%s\": %s, rows %s " INT64_FORMAT ", watermark %s -> %s%s%s",
					r->p->name,
					r->ran ? psprintf("command ran over [%s, %s)", from_text, to_text) :
					"no interval ready with rows",
					"processed", r->rows,
					r->p->watermark ? r->p->watermark : "(none)",
					*after ? *after : "(none)",
					!r->ran && r->held ? ", held back by " : "",
					!r->ran && r->held ? r->held : "")));
	return run_id;
}

/*
 * hwm.run of an interval pipeline (called by load.c under the pipeline's
 * lock): the rows the command processed and the new watermark in *rows and
 * *after (which holds the old one); returns the run_id.  A scheduled run
 * records itself in its 'running' row scheduled_run_id (0: none).  Within
 * CALL hwm.catch_up, horizon is that catch-up's (see interval.h), else
 * NULL: handed down by the caller, so that a run which the command starts
 * (hwm.run, CALL hwm.catch_up of another pipeline) is held to its own.
 */
int64
hwm_interval_run(HwmPipeline *p, TimestampTz started_at, int64 scheduled_run_id,
				 HwmIntervalHorizon *horizon, int64 *rows, char **after)
{
	IntervalRun r = {0};
	HwmRoleSwitch sw;
	int64		run_id;

	r.p = p;
	r.scheduled_run_id = scheduled_run_id;
	r.horizon = horizon;
	r.plan = hwm_plan_as_owner(p, true, false, true, &sw);
	grid_init(&r.grid, r.plan, p->time_interval, p->interval_anchor);
	find_start(&r);
	r.from = r.start;
	if (r.has_start && find_ready_end(&r))
		run_intervals(&r);
	else
		r.new_wm = r.start;
	hwm_unbecome(&sw);
	run_id = record_interval_run(&r, started_at, after);
	*rows = r.rows;
	return run_id;
}

/* Has p an interval, its anchor and a command (hwm.create_interval_pipeline)? */
static bool
is_interval_pipeline(const HwmPipeline *p)
{
	return p->time_interval != NULL && p->interval_anchor != NULL && p->command != NULL;
}

/*
 * As the owner: the pipeline's plan and grid, and the range parsed and
 * checked (on the grid, ascending, no later than the watermark).
 */
static void
rerun_parse(HwmJob *rr, FunctionCallInfo fcinfo)
{
	HwmPipeline *p = hwm_pipeline_fetch(rr->pipeline, false, false);
	HwmRoleSwitch sw;
	HwmPlan    *plan;
	Grid		g;
	char	   *from_in = hwm_text_arg(fcinfo, 1, "from_time");
	char	   *to_in = hwm_text_arg(fcinfo, 2, "to_time");
	Timestamp	from;
	Timestamp	to;

	if (!is_interval_pipeline(p))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pipeline \"%s\" is not an interval pipeline", p->name),
				 errhint("hwm.rerun_intervals reruns the command of a pipeline made with hwm.create_interval_pipeline; use hwm.backfill for a copy pipeline.")));
	plan = hwm_plan_as_owner(p, true, false, false, &sw);
	grid_init(&g, plan, p->time_interval, p->interval_anchor);
	from = as_ts(&plan->wm, hwm_value_in(&plan->wm, from_in, "from_time"));
	to = as_ts(&plan->wm, hwm_value_in(&plan->wm, to_in, "to_time"));
	check_on_grid(&g, from, "from_time", from_in);
	check_on_grid(&g, to, "to_time", to_in);
	if (from >= to)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_time must be before to_time"),
				 errdetail("The range is from %s (inclusive) to %s (exclusive).", from_in, to_in),
				 errhint("Pass the start of the first interval and the end of the last.")));
	if (p->watermark == NULL ||
		to > as_ts(&plan->wm, hwm_value_in(&plan->wm, p->watermark, "stored watermark")))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("to_time %s is past the intervals pipeline \"%s\" has done", to_in, p->name),
				 errdetail("The pipeline's watermark is %s.", p->watermark ? p->watermark : "(none)"),
				 errhint("Rerun only intervals that ended before the watermark; hwm.run does the later ones.")));
	rr->from_text = MemoryContextStrdup(rr->cxt, hwm_value_out(&plan->wm, from_ts(&plan->wm, from)));
	rr->to_text = MemoryContextStrdup(rr->cxt, hwm_value_out(&plan->wm, from_ts(&plan->wm, to)));
	hwm_unbecome(&sw);
}

/*
 * The step of a rerun: the next interval of the range, under the pipeline's
 * lock, and its record; true when the range is done.
 */
static bool
rerun_step(HwmJob *rr)
{
	TimestampTz started_at = GetCurrentTimestamp();
	HwmPipeline *p = hwm_pipeline_fetch(rr->pipeline, true, false);
	HwmRunFacts run = HWM_RUN_FACTS_INIT(p->name, "backfill", started_at);
	HwmRoleSwitch sw;
	HwmPlan    *plan;
	Grid		g;
	Timestamp	s;
	Timestamp	e;
	volatile int64 rows = 0;

	/*
	 * Read again under the lock: between two steps, or between the CALL's
	 * first read and its first step, the pipeline may have been dropped and
	 * declared again as another kind, which has no grid or command.
	 */
	if (!is_interval_pipeline(p))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pipeline \"%s\" is no longer an interval pipeline", p->name),
				 errdetail("It was dropped and declared again, as a copy or command pipeline, while the rerun of its intervals ran."),
				 errhint("Rerun only an interval pipeline's intervals; hwm.backfill reloads a copy pipeline's partitions.")));
	plan = hwm_plan_as_owner(p, true, false, true, &sw);
	grid_init(&g, plan, p->time_interval, p->interval_anchor);
	s = as_ts(&plan->wm, hwm_value_in(&plan->wm, rr->done_through ? rr->done_through : rr->from_text, "from_time"));
	if (s >= as_ts(&plan->wm, hwm_value_in(&plan->wm, rr->to_text, "to_time")))
	{
		hwm_unbecome(&sw);
		return true;
	}
	e = boundary(&g, index_of(&g, s) + 1);
	/* the rerun owns its pipeline while the command runs (running.c) */
	hwm_running_push(p->name);
	PG_TRY();
	{
		rows = hwm_command_exec(p->name, p->command, plan->wm.type,
								from_ts(&plan->wm, s), false, from_ts(&plan->wm, e));
	}
	PG_FINALLY();
	{
		hwm_running_pop();
	}
	PG_END_TRY();
	run.from_partition = hwm_value_out(&plan->wm, from_ts(&plan->wm, s));
	run.to_partition = hwm_value_out(&plan->wm, from_ts(&plan->wm, e));
	hwm_unbecome(&sw);
	run.rows_upserted = rows;
	(void) hwm_record_run(&run);
	rr->done_through = MemoryContextStrdup(rr->cxt, run.to_partition);
	rr->steps_done++;
	rr->rows_inserted += rows;
	return false;
}

/* A rerun of a range of intervals is a job of hwm.backfills (job.c) */
static const HwmJobKind rerun_kind = {
	.procedure = "hwm.rerun_intervals",
	.job = "rerun_intervals",
	.step_name = "interval",
	.snapshot_detail = "Each interval must be read from the source as it is now, not as a snapshot taken earlier saw it.",
	.busy = "a rerun of these intervals of pipeline \"{pipeline}\" is running in another session",
	.busy_detail = "Rerun {id} of the intervals from {from} to {to} is being run by another CALL that has not finished.",
	.resuming = "hwm: resuming rerun {id} of pipeline \"{pipeline}\" from {from} to {to} after {done}",
	.stopped = "The rerun stopped; intervals up to {done} are done and committed.",
	.step = rerun_step,
};

PG_FUNCTION_INFO_V1(hwm_rerun_intervals);

/*
 * CALL hwm.rerun_intervals(pipeline, from_time, to_time): the command again
 * over every interval of [from_time, to_time), one transaction per interval
 * outside a transaction block (all in the caller's inside one).  A failure
 * keeps the intervals committed before it; calling again resumes after them.
 */
Datum
hwm_rerun_intervals(PG_FUNCTION_ARGS)
{
	HwmJob	   *rr;
	char	   *name;

	hwm_job_require_read_committed(&rerun_kind);
	name = hwm_text_arg(fcinfo, 0, "pipeline");
	rr = hwm_job_new(&rerun_kind, fcinfo);
	rr->pipeline = MemoryContextStrdup(rr->cxt, name);
	rerun_parse(rr, fcinfo);
	hwm_job_run(rr);
	ereport(NOTICE,
			(errmsg("hwm: rerun " INT64_FORMAT " of pipeline \"%s\" from %s to %s done: intervals %d, rows processed " INT64_FORMAT,
					rr->id, rr->pipeline, rr->from_text, rr->to_text,
					rr->steps_done, rr->rows_inserted)));
	hwm_job_free(rr);
	PG_RETURN_VOID();
}
