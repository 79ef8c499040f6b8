/*
 * job.c
 *		Resumable jobs on hwm.backfills: find the unfinished one of a
 *		pipeline and range, take it over or start one, hold its lock, save
 *		its progress step by step, mark it failed.
 *
 * The lock says that a job is being worked on by a live session: a
 * non-atomic CALL holds it as a session lock, across its commits, released
 * at the end or by the backend's exit, so a job whose backend was killed can
 * be resumed at once while one that still runs elsewhere is refused; a CALL
 * inside a transaction block holds it until that transaction ends.  Jobs of
 * every kind share one lock space, since their ids come from one sequence.
 *
 * Every row is written through the catalog's one entry (catalog.c) with its
 * owner (the pipeline's) and the role that ran it.  Calls go down into
 * catalog.c and util.c; backfill.c and interval.c call in with their kind.
 */
#include "postgres.h"

#include "catalog.h"
#include "job.h"
#include "util.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/* Lock tag space of a job being worked on */
#define HWM_JOB_LOCK_SPACE 0x6862

static void
job_locktag(LOCKTAG *tag, int64 id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) ((uint64) id >> 32),
						 (uint32) id, HWM_JOB_LOCK_SPACE);
}

/*
 * A message of the job's kind: the template with {id}, {pipeline}, {from},
 * {to} and {done} replaced by the job's.
 */
static char *
job_text(const HwmJob *job, const char *template)
{
	StringInfoData buf;
	const char *c = template;

	initStringInfo(&buf);
	while (*c)
	{
		const char *end = *c == '{' ? strchr(c, '}') : NULL;
		size_t		len = end ? end - c + 1 : 0;

		if (len == 4 && strncmp(c, "{id}", len) == 0)
			appendStringInfo(&buf, INT64_FORMAT, job->id);
		else if (len == 10 && strncmp(c, "{pipeline}", len) == 0)
			appendStringInfoString(&buf, job->pipeline);
		else if (len == 6 && strncmp(c, "{from}", len) == 0)
			appendStringInfoString(&buf, job->from_text);
		else if (len == 4 && strncmp(c, "{to}", len) == 0)
			appendStringInfoString(&buf, job->to_text);
		else if (len == 6 && strncmp(c, "{done}", len) == 0)
			appendStringInfoString(&buf, job->done_through ? job->done_through : "(none)");
		else
			len = 0;
		if (len == 0)
			appendStringInfoChar(&buf, *c++);
		else
			c += len;
	}
	return buf.data;
}

bool
hwm_job_find_unfinished(HwmJob *job)
{
	HwmBackfillRow row;

	if (!hwm_backfills_find_unfinished(job->pipeline, job->kind->job, job->from_text,
									   job->to_text, &row))
		return false;
	job->id = row.backfill_id;
	job->done_through = row.done_through ? MemoryContextStrdup(job->cxt, row.done_through) : NULL;
	job->steps_done = row.partitions_done;
	job->rows_deleted = row.rows_deleted;
	job->rows_inserted = row.rows_inserted;
	return true;
}

void
hwm_job_start(HwmJob *job)
{
	hwm_prune_runs_in_loop(job->pipeline, true);	/* its steps prune as they go */
	job->resumed = hwm_job_find_unfinished(job);
	if (job->resumed)
	{
		hwm_backfills_resume(job->id, job->batch_size);
		return;
	}
	job->id = hwm_backfills_start(job->pipeline, job->kind->job, job->from_text,
								  job->to_text, job->batch_size);
	job->done_through = NULL;
	job->steps_done = 0;
	job->rows_deleted = 0;
	job->rows_inserted = 0;
}

void
hwm_job_unclaim(HwmJob *job)
{
	LOCKTAG		tag;

	if (job->locked_id != 0 && job->session_lock)
	{
		job_locktag(&tag, job->locked_id);
		LockRelease(&tag, ExclusiveLock, true);
	}
	job->locked_id = 0;
}

/*
 * Once per job: a lock held on another id (a job that finished in between)
 * is let go first.
 */
void
hwm_job_claim(HwmJob *job)
{
	LOCKTAG		tag;

	if (job->locked_id == job->id)
		return;
	hwm_job_unclaim(job);
	job_locktag(&tag, job->id);
	if (LockAcquire(&tag, ExclusiveLock, job->session_lock, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("%s", job_text(job, job->kind->busy)),
				 errdetail("%s", job_text(job, job->kind->busy_detail)),
				 errhint("Wait for it to finish; hwm.backfills shows its progress.")));
	job->locked_id = job->id;
}

void
hwm_job_save(const HwmJob *job, bool finished)
{
	HwmBackfillRow row = {.backfill_id = job->id, .done_through = job->done_through,
		.partitions_done = job->steps_done, .rows_deleted = job->rows_deleted,
	.rows_inserted = job->rows_inserted};

	hwm_backfills_save(&row, finished);
	/* a step done: the pipeline's history stays within its bound as the job goes */
	if (!finished)
		hwm_prune_runs_in_loop(job->pipeline, false);
}

void
hwm_job_fail(const HwmJob *job, ErrorData *edata)
{
	hwm_backfills_fail(job->id, unpack_sql_state(edata->sqlerrcode),
					   edata->message ? edata->message : "unknown error");
}

void
hwm_job_require_read_committed(const HwmJobKind *kind)
{
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot run in a REPEATABLE READ or SERIALIZABLE transaction",
						kind->procedure),
				 errdetail("%s", kind->snapshot_detail),
				 errhint("Call %s in a READ COMMITTED transaction (the default), or on its own.",
						 kind->procedure)));
}

HwmJob *
hwm_job_new(const HwmJobKind *kind, FunctionCallInfo fcinfo)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "hwm job",
											  ALLOCSET_SMALL_SIZES);
	HwmJob	   *job = MemoryContextAllocZero(cxt, sizeof(HwmJob));

	job->kind = kind;
	job->cxt = cxt;
	job->batch_size = 1;
	job->atomic = hwm_call_is_atomic(fcinfo);
	job->session_lock = !job->atomic;
	SPI_connect_ext(job->atomic ? 0 : SPI_OPT_NONATOMIC);
	return job;
}

/*
 * A job run by a background worker (job.h): in memory under parent, which
 * outlives the worker's transactions; the steps committed one by one with
 * hwm_bgw_commit and hwm_bgw_begin, as the worker's other transactions.
 */
HwmJob *
hwm_job_new_background(const HwmJobKind *kind, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "hwm job", ALLOCSET_SMALL_SIZES);
	HwmJob	   *job = MemoryContextAllocZero(cxt, sizeof(HwmJob));

	job->kind = kind;
	job->cxt = cxt;
	job->batch_size = 1;
	job->atomic = false;
	job->session_lock = true;
	job->background = true;
	return job;
}

/* The failed step as a run of hwm.runs (job.h) */
void
hwm_job_record_failed_step(const HwmJob *job, const char *from, const char *to,
						   ErrorData *edata, TimestampTz started_at)
{
	HwmRunFacts run = HWM_RUN_FACTS_INIT(job->pipeline, job->kind->job, started_at);

	run.status = HWM_RUN_FAILED;
	run.from_partition = from;
	run.to_partition = to;
	run.error_sqlstate = unpack_sql_state(edata->sqlerrcode);
	run.error = edata->message ? edata->message : "unknown error";
	(void) hwm_record_run(&run);
}

/*
 * The pipeline under its lock, as the job's steps take it: still the one the
 * job began on.  Between two steps (each commits, and lets the pipeline's
 * lock go) it may have been dropped and declared again, with the same name
 * and another target, key, grid or owner; a step would then do the old job's
 * remaining work on it (a reconcile deleting the new target's rows).
 */
static void
job_check_pipeline(const HwmJob *job)
{
	HwmPipeline *p = hwm_pipeline_fetch(job->pipeline, true, false);

	if (p->created_at != job->pipeline_created_at)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" was dropped or declared again during CALL %s",
						job->pipeline, job->kind->procedure),
				 errdetail("The pipeline of that name was declared at %s, after this job began.",
						   timestamptz_to_str(p->created_at))));
}

/* One step and its progress, in the current transaction; true when finished */
static bool
job_step(HwmJob *job)
{
	bool		finished;

	CHECK_FOR_INTERRUPTS();
	job_check_pipeline(job);
	finished = job->kind->step(job);
	hwm_job_save(job, finished);
	return finished;
}

/* One step, for hwm_try_subxact */
typedef struct JobStep
{
	HwmJob	   *job;
	bool		finished;
} JobStep;

static void
job_step_subxact(void *arg)
{
	JobStep    *st = arg;

	st->finished = job_step(st->job);
}

/*
 * One step in its own subtransaction, so that a failure can be recorded in
 * hwm.backfills (and by the kind) and committed before it is reported.
 * Returns the error (copied into job->cxt), or NULL.
 */
static ErrorData *
job_step_guarded(HwmJob *job, bool *finished)
{
	TimestampTz started_at = GetCurrentTimestamp();
	JobStep		st = {.job = job};
	/* the progress committed before the step (see below) */
	char	   *done_through = job->done_through;
	int			steps_done = job->steps_done;
	int64		rows_deleted = job->rows_deleted;
	int64		rows_inserted = job->rows_inserted;
	ErrorData  *edata = hwm_try_subxact(job_step_subxact, &st, job->cxt);

	if (edata)
	{
		/*
		 * The step counts its progress as it goes (a backfill's batch,
		 * partition by partition); rolled back, none of it was committed,
		 * and the error's detail must not say it was.
		 */
		job->done_through = done_through;
		job->steps_done = steps_done;
		job->rows_deleted = rows_deleted;
		job->rows_inserted = rows_inserted;
		hwm_job_fail(job, edata);
		if (job->kind->failed)
			job->kind->failed(job, edata, started_at);
	}
	*finished = st.finished;
	return edata;
}

/*
 * A non-atomic CALL: commit the set-up, then one transaction per step; a step
 * that fails is recorded and committed as failed.  Returns its error, or NULL
 * when the range is done.  Leaves SPI connected.
 */
static ErrorData *
job_committed_steps(HwmJob *job)
{
	ErrorData  *edata = NULL;
	bool		finished = false;

	if (job->background)
	{
		/* a background worker's own transactions (util.c's skeleton) */
		hwm_bgw_commit();
		while (!finished)
		{
			hwm_bgw_begin();
			edata = job_step_guarded(job, &finished);
			hwm_bgw_commit();
			if (edata)
				break;
		}
		hwm_bgw_begin();
		return edata;
	}
	SPI_commit();
	SPI_start_transaction();
	SPI_finish();
	while (!finished)
	{
		SPI_connect_ext(SPI_OPT_NONATOMIC);
		edata = job_step_guarded(job, &finished);
		SPI_commit();
		SPI_start_transaction();
		if (edata)
			break;
		if (!finished)
			SPI_finish();
	}
	return edata;
}

/*
 * Under the pipeline's lock, take over the unfinished job of this range or
 * start one, and claim it: a job another session is working on is refused at
 * once, before queueing for the pipeline's lock (which that session may hold
 * for a while).  Then the steps: inside a transaction block all of them in the
 * caller's transaction (an error rolls everything back, so there is nothing
 * to record), outside one each in its own.
 */
void
hwm_job_run(HwmJob *job)
{
	ErrorData  *volatile edata = NULL;

	PG_TRY();
	{
		if (hwm_job_find_unfinished(job))
			hwm_job_claim(job);
		job->pipeline_created_at = hwm_pipeline_fetch(job->pipeline, true, false)->created_at;
		hwm_job_start(job);
		hwm_job_claim(job);
		if (job->resumed)
			ereport(NOTICE, (errmsg("%s", job_text(job, job->kind->resuming))));
		if (job->atomic)
		{
			while (!job_step(job))
				;
		}
		else
			edata = job_committed_steps(job);
	}
	PG_CATCH();
	{
		hwm_job_unclaim(job);
		PG_RE_THROW();
	}
	PG_END_TRY();
	hwm_job_unclaim(job);
	if (!job->background)
		SPI_finish();

	if (edata && job->kind->stopped)
	{
		edata->detail = job_text(job, job->kind->stopped);
		if (job->kind->again)
			edata->hint = job_text(job, job->kind->again);
		else
			edata->hint = psprintf("Fix the cause and CALL %s(%s, %s, %s) again: it resumes after the last %s done.",
							   job->kind->procedure,
							   quote_literal_cstr(job->pipeline),
							   quote_literal_cstr(job->from_text),
							   quote_literal_cstr(job->to_text),
							   job->kind->step_name);
	}
	if (edata)
		ReThrowError(edata);
}

void
hwm_job_free(HwmJob *job)
{
	MemoryContextDelete(job->cxt);
}
