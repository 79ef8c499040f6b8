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

/* One backfill, as it lives across the transactions of a CALL */
typedef struct Backfill
{
	HwmJob		job;			/* its row of hwm.backfills (job.c) */
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
 * Mark the backfill failed with the error that stopped it, and record the
 * partition that failed in hwm.runs.
 */
static void
backfill_fail(Backfill *bf, ErrorData *edata, TimestampTz started_at)
{
	HwmRunFacts run = HWM_RUN_FACTS_INIT(bf->job.pipeline, "backfill", started_at);

	hwm_job_fail(&bf->job, edata);
	run.status = "failed";
	run.from_partition = bf->in_progress;
	run.to_partition = bf->in_progress;
	run.error_sqlstate = unpack_sql_state(edata->sqlerrcode);
	run.error = edata->message ? edata->message : "unknown error";
	(void) hwm_record_run(&run);
}

/*
 * One batch, in the current transaction: overwrite up to batch_size
 * partitions after done_through, record them, and save the progress.
 * Returns true when the range is finished.
 */
static bool
backfill_batch(Backfill *bf)
{
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

	plan = backfill_plan_build(bf->job.pipeline, true, &p, &sw);
	from = hwm_value_in(&plan->part, bf->job.from_text, "from_partition");
	to = hwm_value_in(&plan->part, bf->job.to_text, "to_partition");
	first = bf->job.done_through == NULL;
	after = first ? from : hwm_value_in(&plan->part, bf->job.done_through, "done_through");

	for (int i = 0; i < bf->job.batch_size; i++)
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
		bf->in_progress = MemoryContextStrdup(bf->job.cxt, d->value);
		hwm_range_overwrite(plan, v, v, true, &d->ow);
		done = lappend(done, d);
		after = v;
		first = false;
	}
	hwm_unbecome(&sw);

	/* record as the caller, like hwm.overwrite does */
	foreach(lc, done)
	{
		PartitionDone *d = lfirst(lc);
		int64		run_id;
		MemoryContext old;

		HwmRunFacts run = HWM_RUN_FACTS_INIT(p->name, "backfill", d->started_at);

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
		old = MemoryContextSwitchTo(bf->job.cxt);
		bf->job.done_through = pstrdup(d->value);
		MemoryContextSwitchTo(old);
		bf->job.steps_done++;
		bf->job.rows_deleted += d->ow.deleted;
		bf->job.rows_inserted += d->ow.inserted;
	}
	hwm_job_save(&bf->job, finished);
	return finished;
}

/* One batch, for hwm_try_subxact */
typedef struct BatchStep
{
	Backfill   *bf;
	bool		finished;
} BatchStep;

static void
batch_step(void *arg)
{
	BatchStep  *b = arg;

	b->finished = backfill_batch(b->bf);
}

/*
 * Run one batch in its own subtransaction of the current transaction, so
 * that a failure can be recorded in hwm.backfills and committed before it
 * is reported.  Returns the error (copied into bf->job.cxt), or NULL.
 */
static ErrorData *
backfill_batch_guarded(Backfill *bf, bool *finished)
{
	BatchStep	b = {.bf = bf};
	ErrorData  *edata = hwm_try_subxact(batch_step, &b, bf->job.cxt);

	*finished = b.finished;
	return edata;
}

/* The summary NOTICE of a backfill */
static void
backfill_notice(const Backfill *bf)
{
	ereport(NOTICE,
			(errmsg("hwm: backfill " INT64_FORMAT " of pipeline \"%s\" from %s to %s finished: %d partitions, " INT64_FORMAT " rows deleted, " INT64_FORMAT " rows inserted or updated",
					bf->job.id, bf->job.pipeline, bf->job.from_text, bf->job.to_text, bf->job.steps_done,
					bf->job.rows_deleted, bf->job.rows_inserted)));
}

/*
 * dry_run: one NOTICE per partition the backfill would overwrite, with the
 * rows each side has, and a summary; nothing is written.
 */
static void
backfill_dry_run(const char *name, FunctionCallInfo fcinfo)
{
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	Datum		v;
	char	   *from_text;
	char	   *to_text;
	bool		first = true;
	int			n = 0;
	int64		src_total = 0;
	int64		tgt_total = 0;

	plan = backfill_plan_build(name, false, &p, &sw);
	hwm_range_parse(plan, fcinfo, 1, 2, &from, &to, &from_text, &to_text);
	v = from;
	while (walk_next(plan, v, first, to, &v))
	{
		int64		s = walk_count(plan, 0, v);
		int64		t = walk_count(plan, 1, v);

		first = false;
		n++;
		src_total += s;
		tgt_total += t;
		ereport(NOTICE,
				(errmsg("hwm: backfill would overwrite partition %s: " INT64_FORMAT " source rows, " INT64_FORMAT " target rows",
						hwm_value_out(&plan->part, v), s, t)));
	}
	hwm_unbecome(&sw);
	{
		HwmJob		job = {.what = "backfill"};

		job.pipeline = p->name;
		job.from_text = from_text;
		job.to_text = to_text;
		job.cxt = CurrentMemoryContext;
		if (hwm_job_find_unfinished(&job))
			ereport(NOTICE,
					(errmsg("hwm: backfill " INT64_FORMAT " of this range is unfinished: a CALL without dry_run resumes it after partition %s",
							job.id, job.done_through ? job.done_through : "(none)")));
	}
	ereport(NOTICE,
			(errmsg("hwm: dry run of backfill of pipeline \"%s\" from %s to %s: %d partitions, " INT64_FORMAT " source rows, " INT64_FORMAT " target rows; nothing was changed",
					p->name, from_text, to_text, n, src_total, tgt_total)));
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
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hwm.backfill cannot run in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("Each partition must be overwritten from the source as it is now, not as a snapshot taken earlier saw it."),
				 errhint("Call hwm.backfill in a READ COMMITTED transaction (the default), or on its own.")));
}

/*
 * A non-atomic CALL: commit the set-up, then one transaction per batch; a
 * batch that fails is recorded and committed as failed.  Returns its error
 * (copied into bf->job.cxt), or NULL when the range is done.  Leaves SPI
 * connected.
 */
static ErrorData *
backfill_committed_batches(Backfill *bf)
{
	ErrorData  *edata = NULL;
	bool		finished = false;

	SPI_commit();
	SPI_start_transaction();
	SPI_finish();
	while (!finished)
	{
		TimestampTz batch_started = GetCurrentTimestamp();

		SPI_connect_ext(SPI_OPT_NONATOMIC);
		bf->in_progress = NULL;
		edata = backfill_batch_guarded(bf, &finished);
		if (edata)
			backfill_fail(bf, edata, batch_started);
		SPI_commit();
		SPI_start_transaction();
		if (edata)
			break;
		if (!finished)
			SPI_finish();
	}
	return edata;
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
	bool		atomic = hwm_call_is_atomic(fcinfo);
	Backfill   *bf;
	MemoryContext cxt;
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	char	   *from_text;
	char	   *to_text;
	ErrorData  *volatile edata = NULL;

	backfill_check_args(fcinfo);

	if (PG_GETARG_BOOL(4))
	{
		SPI_connect();
		backfill_dry_run(name, fcinfo);
		SPI_finish();
		PG_RETURN_VOID();
	}

	/* what must outlive the CALL's transactions */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "hwm backfill",
								ALLOCSET_SMALL_SIZES);
	bf = MemoryContextAllocZero(cxt, sizeof(Backfill));
	bf->job.what = "backfill";
	bf->job.cxt = cxt;
	bf->job.batch_size = PG_GETARG_INT32(3);

	/*
	 * Set-up: validate everything; refuse at once a backfill of this range
	 * that another session is working on (before queueing for the pipeline's
	 * lock, which that session may hold for a while); then, under the
	 * pipeline's lock, take over the unfinished backfill or start a new one.
	 * An error here changes nothing.
	 */
	SPI_connect_ext(atomic ? 0 : SPI_OPT_NONATOMIC);
	plan = backfill_plan_build(name, false, &p, &sw);
	hwm_range_parse(plan, fcinfo, 1, 2, &from, &to, &from_text, &to_text);
	hwm_unbecome(&sw);
	bf->job.pipeline = MemoryContextStrdup(cxt, p->name);
	bf->job.from_text = MemoryContextStrdup(cxt, from_text);
	bf->job.to_text = MemoryContextStrdup(cxt, to_text);
	bf->job.session_lock = !atomic;

	PG_TRY();
	{
		if (hwm_job_find_unfinished(&bf->job))
			hwm_job_claim(&bf->job);
		(void) hwm_pipeline_fetch(bf->job.pipeline, true, false);
		hwm_job_start(&bf->job);
		hwm_job_claim(&bf->job);
		if (bf->job.resumed)
			ereport(NOTICE,
					(errmsg("hwm: resuming backfill " INT64_FORMAT " of pipeline \"%s\" from %s to %s after partition %s",
							bf->job.id, bf->job.pipeline, bf->job.from_text, bf->job.to_text,
							bf->job.done_through ? bf->job.done_through : "(none)")));

		if (atomic)
		{
			/* inside the caller's transaction: all batches, no commit */
			while (!backfill_batch(bf))
				;
		}
		else
			edata = backfill_committed_batches(bf);
	}
	PG_CATCH();
	{
		hwm_job_unclaim(&bf->job);
		PG_RE_THROW();
	}
	PG_END_TRY();
	hwm_job_unclaim(&bf->job);
	SPI_finish();

	if (edata)
	{
		edata->detail = psprintf("Backfill " INT64_FORMAT " stopped; partitions up to %s are done and committed.",
								 bf->job.id, bf->job.done_through ? bf->job.done_through : "(none)");
		edata->hint = psprintf("Fix the cause and CALL hwm.backfill(%s, %s, %s) again: it resumes after the last partition done.",
							   quote_literal_cstr(bf->job.pipeline),
							   quote_literal_cstr(bf->job.from_text),
							   quote_literal_cstr(bf->job.to_text));
		ReThrowError(edata);
	}
	backfill_notice(bf);
	MemoryContextDelete(cxt);
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
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	Datum		v;
	char	   *from_text;
	char	   *to_text;
	bool		first = true;
	MemoryContext callercxt = CurrentMemoryContext;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	plan = backfill_plan_build(name, false, &p, &sw);
	hwm_range_parse(plan, fcinfo, 1, 2, &from, &to, &from_text, &to_text);
	v = from;
	while (walk_next(plan, v, first, to, &v))
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		int64		s = walk_count(plan, 0, v);
		int64		t = walk_count(plan, 1, v);
		MemoryContext old;

		first = false;
		old = MemoryContextSwitchTo(callercxt);
		values[0] = CStringGetTextDatum(hwm_value_out(&plan->part, v));
		values[1] = Int64GetDatum(s);
		values[2] = Int64GetDatum(t);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(old);
	}
	hwm_unbecome(&sw);
	SPI_finish();
	return (Datum) 0;
}
