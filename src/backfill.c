/*
 * backfill.c
 *		CALL hwm.backfill(pipeline, from, to, batch_size, dry_run): overwrite
 *		every partition value of an inclusive range, in ascending order, one
 *		transaction per batch of partitions; and hwm.backfill_plan(), which
 *		lists what a backfill would touch.
 *
 * The partitions visited are the distinct values of the partition column
 * present in the source OR the target inside the range, so a partition that
 * the source no longer has is emptied.  They are found one at a time (the
 * smallest value above the last one done, in either table: one index probe
 * each when the column is indexed), so a long range is never listed up
 * front and a resumed backfill starts right after what it finished.
 *
 * Called outside a transaction block (a non-atomic CALL), every batch runs
 * in its own transaction and commits, so a long backfill holds no long
 * transaction, locks and snapshots are released between batches, and a
 * failure loses only the batch in progress.  Progress lives in
 * hwm.backfills (done_through is the last partition committed), so calling
 * the same backfill again after an error, a cancel or a killed backend
 * resumes after done_through.  Called inside a transaction block (a dbt hook,
 * a script's BEGIN), COMMIT is not allowed, so the same batches run in the
 * caller's transaction and commit or roll back with it.
 *
 * Each batch takes the pipeline's lock (so it never interleaves with a run
 * or an overwrite of the same pipeline), rebuilds the plan from the current
 * catalog (a table changed between batches fails with the usual clear
 * error), works as the pipeline's owner, and records one hwm.runs row of
 * kind 'backfill' per partition.
 */
#include "postgres.h"

#include "catalog.h"
#include "exchange.h"
#include "job.h"
#include "range.h"
#include "pipeline.h"
#include "privilege.h"
#include "util.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

/* What a backfill keeps besides its job (HwmJob.arg) */
typedef struct Backfill
{
	char	   *in_progress;	/* partition being overwritten, for errors */
} Backfill;

/* One partition overwritten in a batch, recorded after the batch */
typedef struct PartitionDone
{
	char	   *value;
	TimestampTz started_at;
	int64		deleted;
	int64		inserted;
	HwmOverwrite ow;
} PartitionDone;

/*
 * The smallest partition value in the source or the target that is above
 * after (or, with first, at least after) and at most to.  Returns false when
 * there is none.
 */
static bool
walk_next(const HwmPlan *plan, Datum after, bool first, Datum to, Datum *next)
{
	Oid			argtypes[2] = {plan->part.type, plan->part.type};
	Datum		values[2] = {after, to};
	bool		found = false;

	for (int i = 0; i < 2; i++)
	{
		Datum		v;

		hwm_spi_exec(first ? plan->walk_first_sql[i] : plan->walk_next_sql[i], 2,
					 argtypes, values, NULL, SPI_OK_SELECT);
		if (!hwm_spi_first(&v))
			continue;
		if (!found || hwm_value_cmp(&plan->part, v, *next) < 0)
			*next = hwm_value_copy(&plan->part, v);
		found = true;
	}
	return found;
}

/* Rows of one partition in the source (i = 0) or the target (i = 1) */
static int64
walk_count(const HwmPlan *plan, int i, Datum value)
{
	Oid			argtypes[1] = {plan->part.type};
	Datum		values[1] = {value};
	bool		isnull;

	hwm_spi_exec(plan->walk_count_sql[i], 1, argtypes, values, NULL, SPI_OK_SELECT);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									   1, &isnull));
}

/*
 * Read and lock the pipeline (with lock) and build its overwrite plan as its
 * owner, who stays current until the caller's hwm_unbecome.
 */
static HwmPlan *
backfill_plan_build(const char *name, bool lock, HwmPipeline **pp, HwmRoleSwitch *sw)
{
	HwmPipeline *p = hwm_pipeline_fetch(name, lock, false);
	HwmPlan    *plan;

	hwm_pipeline_require_partitions(p, "backfill",
									"A backfill overwrites the range one partition value at a time.");
	plan = hwm_plan_as_owner(p, false, true, true, sw);
	*pp = p;
	return plan;
}

/*
 * The partitions of a range, one after the other, with their rows in the
 * source and the target: what the dry run and hwm.backfill_plan show.
 */
typedef struct Walk
{
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		to;
	char	   *from_text;		/* the range's bounds, canonical */
	char	   *to_text;
	bool		first;
	Datum		value;			/* the current partition */
	int64		source_rows;	/* ... its rows in the source */
	int64		target_rows;	/* ... and in the target */
} Walk;

/*
 * Begin a walk of the range in arguments 1 and 2: the pipeline read and its
 * plan built as its owner, who stays current until walk_end.
 */
static void
walk_begin(Walk *w, const char *name, FunctionCallInfo fcinfo)
{
	w->plan = backfill_plan_build(name, false, &w->p, &w->sw);
	hwm_range_parse(w->plan, fcinfo, 1, 2, &w->value, &w->to, &w->from_text, &w->to_text);
	w->first = true;
}

/* The next partition and its counts; false when the range has no more */
static bool
walk_next_counted(Walk *w)
{
	if (!walk_next(w->plan, w->value, w->first, w->to, &w->value))
		return false;
	w->first = false;
	w->source_rows = walk_count(w->plan, 0, w->value);
	w->target_rows = walk_count(w->plan, 1, w->value);
	return true;
}

/* The walk is over: back to the caller's role */
static void
walk_end(Walk *w)
{
	hwm_unbecome(&w->sw);
}

/*
 * Record the partition that failed in hwm.runs (job.c marks the backfill
 * failed with the error that stopped it).
 */
static void
backfill_failed(HwmJob *job, ErrorData *edata, TimestampTz started_at)
{
	Backfill   *bf = job->arg;

	hwm_job_record_failed_step(job, bf->in_progress, bf->in_progress, edata, started_at);
}

/*
 * A partition overwritten: its run in hwm.runs and the pipeline's state, and
 * the job's progress.
 */
static void
partition_record(HwmJob *job, const HwmPipeline *p, const PartitionDone *d)
{
	HwmRunFacts run = HWM_RUN_FACTS_INIT(p->name, "backfill", d->started_at);
	int64		run_id;

	run.partitions = 1;
	run.rows_deleted = d->ow.deleted;
	run.rows_inserted = d->ow.inserted;
	run.watermark_before = p->watermark;
	run.watermark_after = p->watermark;
	run.from_partition = d->value;
	run.to_partition = d->value;
	run.method = d->ow.method;
	run_id = hwm_record_run(&run);
	hwm_update_state_after_run(p, run_id, d->started_at, false, NULL,
							   d->ow.deleted + d->ow.inserted, NULL);
	job->done_through = MemoryContextStrdup(job->cxt, d->value);
	job->steps_done++;
	job->rows_deleted += d->ow.deleted;
	job->rows_inserted += d->ow.inserted;
}

/*
 * One batch, the step of a backfill, in the current transaction: overwrite up
 * to batch_size partitions after done_through and record them.  Returns true
 * when the range is finished.
 */
static bool
backfill_batch(HwmJob *job)
{
	Backfill   *bf = job->arg;
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	Datum		after;
	bool		first;
	bool		finished = false;
	List	   *done = NIL;
	ListCell   *lc;

	bf->in_progress = NULL;
	plan = backfill_plan_build(job->pipeline, true, &p, &sw);
	from = hwm_value_in(&plan->part, job->from_text, "from_partition");
	to = hwm_value_in(&plan->part, job->to_text, "to_partition");
	first = job->done_through == NULL;
	after = first ? from : hwm_value_in(&plan->part, job->done_through, "done_through");

	for (int i = 0; i < job->batch_size; i++)
	{
		Datum		v;
		PartitionDone *d;

		CHECK_FOR_INTERRUPTS();
		if (!walk_next(plan, after, first, to, &v))
		{
			finished = true;
			break;
		}
		d = palloc(sizeof(PartitionDone));
		d->started_at = GetCurrentTimestamp();
		d->value = hwm_value_out(&plan->part, v);
		bf->in_progress = MemoryContextStrdup(job->cxt, d->value);
		hwm_range_overwrite(plan, v, v, true, &d->ow);
		done = lappend(done, d);
		after = v;
		first = false;
	}
	hwm_unbecome(&sw);

	/* record as the caller, like hwm.overwrite does */
	foreach(lc, done)
		partition_record(job, p, lfirst(lc));
	return finished;
}

/* A backfill is a job of hwm.backfills (job.c), a batch of partitions its step */
static const HwmJobKind backfill_kind = {
	.procedure = "hwm.backfill",
	.job = "backfill",
	.step_name = "partition",
	.snapshot_detail = "Each partition must be overwritten from the source as it is now, not as a snapshot taken earlier saw it.",
	.busy = "backfill {id} is running in another session",
	.busy_detail = "The same pipeline and range are being backfilled by another CALL that has not finished.",
	.resuming = "hwm: resuming backfill {id} of pipeline \"{pipeline}\" from {from} to {to} after partition {done}",
	.stopped = "Backfill {id} stopped; partitions up to {done} are done and committed.",
	.step = backfill_batch,
	.failed = backfill_failed,
};

/*
 * dry_run: one NOTICE per partition the backfill would overwrite, with the
 * rows each side has, and a summary; nothing is written.
 */
static void
backfill_dry_run(const char *name, FunctionCallInfo fcinfo)
{
	Walk		w;
	int			n = 0;
	int64		src_total = 0;
	int64		tgt_total = 0;
	HwmJob		job = {.kind = &backfill_kind};

	walk_begin(&w, name, fcinfo);
	while (walk_next_counted(&w))
	{
		n++;
		src_total += w.source_rows;
		tgt_total += w.target_rows;
		ereport(NOTICE,
				(errmsg("hwm: backfill would overwrite partition %s: " INT64_FORMAT " source rows, " INT64_FORMAT " target rows",
						hwm_value_out(&w.plan->part, w.value), w.source_rows, w.target_rows)));
	}
	walk_end(&w);
	job.pipeline = w.p->name;
	job.from_text = w.from_text;
	job.to_text = w.to_text;
	job.cxt = CurrentMemoryContext;
	if (hwm_job_find_unfinished(&job))
		ereport(NOTICE,
				(errmsg("hwm: backfill " INT64_FORMAT " of this range is unfinished: a CALL without dry_run resumes it after partition %s",
						job.id, job.done_through ? job.done_through : "(none)")));
	ereport(NOTICE,
			(errmsg("hwm: dry run of backfill of pipeline \"%s\" from %s to %s: %d partitions, " INT64_FORMAT " source rows, " INT64_FORMAT " target rows; nothing was changed",
					w.p->name, w.from_text, w.to_text, n, src_total, tgt_total)));
}

/* The arguments of hwm.backfill that need no catalog: batch_size, dry_run */
static void
backfill_check_args(FunctionCallInfo fcinfo)
{
	hwm_require_arg(fcinfo, 3, "batch_size");
	if (PG_GETARG_INT32(3) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_size must be at least 1"),
				 errdetail("batch_size is %d.", PG_GETARG_INT32(3)),
				 errhint("batch_size is the number of partitions overwritten per transaction.")));
	hwm_require_arg(fcinfo, 4, "dry_run");
	hwm_job_require_read_committed(&backfill_kind);
}

PG_FUNCTION_INFO_V1(hwm_backfill);

/*
 * CALL hwm.backfill(pipeline, from_partition, to_partition, batch_size,
 * dry_run)
 */
Datum
hwm_backfill(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	HwmJob	   *job;
	Walk		w;

	backfill_check_args(fcinfo);

	if (PG_GETARG_BOOL(4))
	{
		SPI_connect();
		backfill_dry_run(name, fcinfo);
		SPI_finish();
		PG_RETURN_VOID();
	}

	/*
	 * Set-up: validate everything (an error here changes nothing); then the
	 * job's driver (job.c) takes over the unfinished backfill of this range
	 * or starts one, and runs its batches.
	 */
	job = hwm_job_new(&backfill_kind, fcinfo);
	job->batch_size = PG_GETARG_INT32(3);
	job->arg = MemoryContextAllocZero(job->cxt, sizeof(Backfill));
	walk_begin(&w, name, fcinfo);
	walk_end(&w);
	job->pipeline = MemoryContextStrdup(job->cxt, w.p->name);
	job->from_text = MemoryContextStrdup(job->cxt, w.from_text);
	job->to_text = MemoryContextStrdup(job->cxt, w.to_text);
	hwm_job_run(job);

	ereport(NOTICE,
			(errmsg("hwm: backfill " INT64_FORMAT " of pipeline \"%s\" from %s to %s finished: %d partitions, " INT64_FORMAT " rows deleted, " INT64_FORMAT " rows inserted or updated",
					job->id, job->pipeline, job->from_text, job->to_text, job->steps_done,
					job->rows_deleted, job->rows_inserted)));
	hwm_job_free(job);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_backfill_plan);

/*
 * hwm.backfill_plan(pipeline, from, to): the partitions a backfill of the
 * range would overwrite, with their row counts in the source and the
 * target.  Reads only.
 */
Datum
hwm_backfill_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Walk		w;
	MemoryContext callercxt = CurrentMemoryContext;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	walk_begin(&w, name, fcinfo);
	while (walk_next_counted(&w))
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		MemoryContext old = MemoryContextSwitchTo(callercxt);

		values[0] = CStringGetTextDatum(hwm_value_out(&w.plan->part, w.value));
		values[1] = Int64GetDatum(w.source_rows);
		values[2] = Int64GetDatum(w.target_rows);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(old);
	}
	walk_end(&w);
	SPI_finish();
	return (Datum) 0;
}
