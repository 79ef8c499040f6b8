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
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	HeapTuple	tup;
	TupleDesc	desc;
	char	   *done;
	bool		isnull;

	values[0] = CStringGetTextDatum(job->pipeline);
	values[1] = CStringGetTextDatum(job->from_text);
	values[2] = CStringGetTextDatum(job->to_text);
	hwm_catalog_exec("SELECT b.backfill_id, b.status, b.done_through, b.partitions_done,"
					 " b.rows_deleted, b.rows_inserted FROM hwm.backfills AS b"
					 " WHERE b.pipeline OPERATOR(pg_catalog.=) $1"
					 " AND b.from_partition OPERATOR(pg_catalog.=) $2"
					 " AND b.to_partition OPERATOR(pg_catalog.=) $3"
					 " ORDER BY b.backfill_id DESC LIMIT 1",
					 3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (strcmp(SPI_getvalue(tup, desc, 2), "succeeded") == 0)
		return false;			/* done: calling it again runs it again */
	done = SPI_getvalue(tup, desc, 3);
	job->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	job->done_through = done ? MemoryContextStrdup(job->cxt, done) : NULL;
	job->steps_done = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	job->rows_deleted = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	job->rows_inserted = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
	return true;
}

void
hwm_job_start(HwmJob *job)
{
	Datum		run_by = DirectFunctionCall1(namein,
											 CStringGetDatum(GetUserNameFromId(GetUserId(), false)));
	bool		isnull;

	hwm_prune_runs_in_loop(job->pipeline, true);	/* its steps prune as they go */
	job->resumed = hwm_job_find_unfinished(job);
	if (job->resumed)
	{
		Oid			argtypes[3] = {INT8OID, INT4OID, NAMEOID};
		Datum		values[3] = {Int64GetDatum(job->id), Int32GetDatum(job->batch_size), run_by};

		hwm_catalog_exec("UPDATE hwm.backfills SET status = 'running', batch_size = $2,"
						 " finished_at = NULL, error_sqlstate = NULL, error = NULL, run_by = $3"
						 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
						 3, argtypes, values, NULL, SPI_OK_UPDATE);
		return;
	}
	{
		Oid			argtypes[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, NAMEOID};
		Datum		values[5];

		values[0] = CStringGetTextDatum(job->pipeline);
		values[1] = CStringGetTextDatum(job->from_text);
		values[2] = CStringGetTextDatum(job->to_text);
		values[3] = Int32GetDatum(job->batch_size);
		values[4] = run_by;
		hwm_catalog_exec(hwm_catalog_version() >= 12 ?
						 "INSERT INTO hwm.backfills (pipeline, from_partition, to_partition,"
						 " batch_size, status, run_by, owner)"
						 " SELECT $1, $2, $3, $4, 'running', $5, s.owner FROM hwm.state AS s"
						 " WHERE s.pipeline OPERATOR(pg_catalog.=) $1 RETURNING backfill_id" :
						 "INSERT INTO hwm.backfills (pipeline, from_partition, to_partition,"
						 " batch_size, status, run_by)"
						 " VALUES ($1, $2, $3, $4, 'running', $5) RETURNING backfill_id",
						 5, argtypes, values, NULL, SPI_OK_INSERT_RETURNING);
	}
	job->id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
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
	Oid			argtypes[6] = {INT8OID, TEXTOID, INT4OID, INT8OID, INT8OID, BOOLOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(job->id);
	if (job->done_through)
		values[1] = CStringGetTextDatum(job->done_through);
	else
		nulls[1] = 'n';
	values[2] = Int32GetDatum(job->steps_done);
	values[3] = Int64GetDatum(job->rows_deleted);
	values[4] = Int64GetDatum(job->rows_inserted);
	values[5] = BoolGetDatum(finished);
	hwm_catalog_exec("UPDATE hwm.backfills SET done_through = $2, partitions_done = $3,"
					 " rows_deleted = $4, rows_inserted = $5,"
					 " status = CASE WHEN $6 THEN 'succeeded' ELSE 'running' END,"
					 " finished_at = CASE WHEN $6 THEN pg_catalog.clock_timestamp() END"
					 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
					 6, argtypes, values, nulls, SPI_OK_UPDATE);
	/* a step done: the pipeline's history stays within its bound as the job goes */
	if (!finished)
		hwm_prune_runs_in_loop(job->pipeline, false);
}

void
hwm_job_fail(const HwmJob *job, ErrorData *edata)
{
	Oid			argtypes[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3];

	values[0] = Int64GetDatum(job->id);
	values[1] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
	values[2] = CStringGetTextDatum(hwm_clip_error(edata->message ? edata->message : "unknown error"));
	hwm_catalog_exec("UPDATE hwm.backfills SET status = 'failed',"
					 " finished_at = pg_catalog.clock_timestamp(),"
					 " error_sqlstate = $2, error = $3"
					 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
					 3, argtypes, values, NULL, SPI_OK_UPDATE);
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

/* One step and its progress, in the current transaction; true when finished */
static bool
job_step(HwmJob *job)
{
	bool		finished;

	CHECK_FOR_INTERRUPTS();
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
	ErrorData  *edata = hwm_try_subxact(job_step_subxact, &st, job->cxt);

	if (edata)
	{
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
		(void) hwm_pipeline_fetch(job->pipeline, true, false);
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
	SPI_finish();

	if (edata && job->kind->stopped)
	{
		edata->detail = job_text(job, job->kind->stopped);
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
