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
#include "range.h"
#include "plan.h"
#include "privilege.h"
#include "util.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

/* Lock tag space of a running backfill (see backfill_lock) */
#define HWM_BACKFILL_LOCK_SPACE 0x6862

/* One backfill, as it lives across the transactions of a CALL */
typedef struct Backfill
{
	char	   *pipeline;
	char	   *from_text;		/* canonical text of the bounds */
	char	   *to_text;
	int			batch_size;
	int64		id;				/* hwm.backfills.backfill_id */
	int64		locked_id;		/* whose lock this CALL holds, 0: none */
	bool		session_lock;	/* a session lock (non-atomic CALL) */
	bool		resumed;
	char	   *done_through;	/* last partition done, NULL: none yet */
	char	   *in_progress;	/* partition being overwritten, for errors */
	int			partitions_done;
	int64		rows_deleted;
	int64		rows_inserted;
	MemoryContext cxt;			/* lives as long as the CALL */
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
	HwmPlanSpec spec;
	HwmPlan    *plan;

	if (p->command)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pipeline \"%s\" runs a command and has no target to backfill", p->name),
				 errhint("To run the command again over a range: hwm.rerun_intervals for an interval pipeline, hwm.set_watermark back then hwm.run for a command pipeline.")));
	if (p->partition_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no partition column", p->name),
				 errdetail("A backfill overwrites the range one partition value at a time."),
				 errhint("Drop the pipeline and create it again with partition_column => '...' to backfill partitions.")));
	hwm_spec_for(p, false, true, &spec);

	hwm_become(p->owner, true, sw);
	plan = hwm_plan_build(&spec);
	hwm_check_privileges(p->owner, &spec, plan);
	*pp = p;
	return plan;
}

/*
 * The lock that says a backfill is being worked on by a live session.  A
 * non-atomic CALL holds it as a session lock, across its commits, released
 * at the end or by the backend's exit, so a backfill whose backend was
 * killed can be resumed at once while one that still runs elsewhere is
 * refused; a CALL inside a transaction block holds it until that
 * transaction ends.
 */
typedef enum BackfillLockMode
{
	BACKFILL_LOCK_SESSION,
	BACKFILL_LOCK_XACT,
	BACKFILL_UNLOCK_SESSION
} BackfillLockMode;

static void
backfill_lock(int64 id, BackfillLockMode mode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) ((uint64) id >> 32), (uint32) id,
						 HWM_BACKFILL_LOCK_SPACE);
	if (mode == BACKFILL_UNLOCK_SESSION)
	{
		LockRelease(&tag, ExclusiveLock, true);
		return;
	}
	if (LockAcquire(&tag, ExclusiveLock, mode == BACKFILL_LOCK_SESSION, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("backfill " INT64_FORMAT " is running in another session", id),
				 errdetail("The same pipeline and range are being backfilled by another CALL that has not finished."),
				 errhint("Wait for it to finish; hwm.backfills shows its progress.")));
}

static void backfill_unclaim(Backfill *bf);

/*
 * Hold the lock of backfill bf->id for this CALL (see backfill_lock), once;
 * a lock held on another id (a backfill that finished in between) is let go.
 */
static void
backfill_claim(Backfill *bf)
{
	if (bf->locked_id == bf->id)
		return;
	backfill_unclaim(bf);
	backfill_lock(bf->id, bf->session_lock ? BACKFILL_LOCK_SESSION : BACKFILL_LOCK_XACT);
	bf->locked_id = bf->id;
}

/* Let go of the session lock, if any (a transaction lock goes by itself) */
static void
backfill_unclaim(Backfill *bf)
{
	if (bf->locked_id != 0 && bf->session_lock)
		backfill_lock(bf->locked_id, BACKFILL_UNLOCK_SESSION);
	bf->locked_id = 0;
}

/*
 * Look for the unfinished backfill (status running or failed) of this
 * pipeline and range, the newest one; on success fill in bf's id and
 * progress.  Runs as the catalog owner.
 */
static bool
backfill_find_unfinished(Backfill *bf)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	HwmRoleSwitch sw;
	bool		isnull;
	bool		found = false;

	values[0] = CStringGetTextDatum(bf->pipeline);
	values[1] = CStringGetTextDatum(bf->from_text);
	values[2] = CStringGetTextDatum(bf->to_text);
	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("SELECT b.backfill_id, b.status, b.done_through, b.partitions_done,"
				 " b.rows_deleted, b.rows_inserted FROM hwm.backfills AS b"
				 " WHERE b.pipeline OPERATOR(pg_catalog.=) $1"
				 " AND b.from_partition OPERATOR(pg_catalog.=) $2"
				 " AND b.to_partition OPERATOR(pg_catalog.=) $3"
				 " ORDER BY b.backfill_id DESC LIMIT 1",
				 3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		if (strcmp(SPI_getvalue(tup, desc, 2), "succeeded") != 0)
		{
			char	   *done = SPI_getvalue(tup, desc, 3);

			found = true;
			bf->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
			bf->done_through = done ? MemoryContextStrdup(bf->cxt, done) : NULL;
			bf->partitions_done = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
			bf->rows_deleted = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
			bf->rows_inserted = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
		}
	}
	hwm_unbecome(&sw);
	return found;
}

/*
 * Take over the unfinished backfill of this pipeline and range, or start a
 * new one (a finished one is run again from the start: a new row).  The
 * caller holds the pipeline's lock.
 */
static void
backfill_start(Backfill *bf)
{
	HwmRoleSwitch sw;
	bool		isnull;
	Datum		run_by = DirectFunctionCall1(namein,
											 CStringGetDatum(GetUserNameFromId(GetUserId(), false)));

	bf->resumed = backfill_find_unfinished(bf);
	hwm_become(hwm_catalog_owner(), false, &sw);
	if (bf->resumed)
	{
		Oid			argtypes[3] = {INT8OID, INT4OID, NAMEOID};
		Datum		values[3] = {Int64GetDatum(bf->id), Int32GetDatum(bf->batch_size), run_by};

		hwm_spi_exec("UPDATE hwm.backfills SET status = 'running', batch_size = $2,"
					 " finished_at = NULL, error_sqlstate = NULL, error = NULL, run_by = $3"
					 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
					 3, argtypes, values, NULL, SPI_OK_UPDATE);
	}
	else
	{
		Oid			argtypes[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, NAMEOID};
		Datum		values[5];

		values[0] = CStringGetTextDatum(bf->pipeline);
		values[1] = CStringGetTextDatum(bf->from_text);
		values[2] = CStringGetTextDatum(bf->to_text);
		values[3] = Int32GetDatum(bf->batch_size);
		values[4] = run_by;
		hwm_spi_exec(hwm_catalog_version() >= 12 ?
					 "INSERT INTO hwm.backfills (pipeline, from_partition, to_partition,"
					 " batch_size, status, run_by, owner)"
					 " SELECT $1, $2, $3, $4, 'running', $5, s.owner FROM hwm.state AS s"
					 " WHERE s.pipeline OPERATOR(pg_catalog.=) $1 RETURNING backfill_id" :
					 "INSERT INTO hwm.backfills (pipeline, from_partition, to_partition,"
					 " batch_size, status, run_by)"
					 " VALUES ($1, $2, $3, $4, 'running', $5) RETURNING backfill_id",
					 5, argtypes, values, NULL, SPI_OK_INSERT_RETURNING);
		bf->id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
		bf->done_through = NULL;
		bf->partitions_done = 0;
		bf->rows_deleted = 0;
		bf->rows_inserted = 0;
	}
	hwm_unbecome(&sw);
}

/* Write a batch's progress (and, with finished, the end) into hwm.backfills */
static void
backfill_save(Backfill *bf, bool finished)
{
	Oid			argtypes[6] = {INT8OID, TEXTOID, INT4OID, INT8OID, INT8OID, BOOLOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	HwmRoleSwitch sw;

	values[0] = Int64GetDatum(bf->id);
	if (bf->done_through)
		values[1] = CStringGetTextDatum(bf->done_through);
	else
		nulls[1] = 'n';
	values[2] = Int32GetDatum(bf->partitions_done);
	values[3] = Int64GetDatum(bf->rows_deleted);
	values[4] = Int64GetDatum(bf->rows_inserted);
	values[5] = BoolGetDatum(finished);

	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("UPDATE hwm.backfills SET done_through = $2, partitions_done = $3,"
				 " rows_deleted = $4, rows_inserted = $5,"
				 " status = CASE WHEN $6 THEN 'succeeded' ELSE 'running' END,"
				 " finished_at = CASE WHEN $6 THEN pg_catalog.clock_timestamp() END"
				 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
				 6, argtypes, values, nulls, SPI_OK_UPDATE);
	hwm_unbecome(&sw);
}

/*
 * Mark the backfill failed with the error that stopped it, and record the
 * partition that failed in hwm.runs.
 */
static void
backfill_fail(Backfill *bf, ErrorData *edata, TimestampTz started_at)
{
	Oid			argtypes[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	HwmRoleSwitch sw;

	values[0] = Int64GetDatum(bf->id);
	values[1] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
	values[2] = CStringGetTextDatum(hwm_clip_error(edata->message ? edata->message : "unknown error"));
	values[3] = CStringGetTextDatum(bf->in_progress ? bf->in_progress : "");
	if (bf->in_progress == NULL)
		nulls[3] = 'n';
	values[4] = TimestampTzGetDatum(started_at);

	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("UPDATE hwm.backfills SET status = 'failed',"
				 " finished_at = pg_catalog.clock_timestamp(),"
				 " error_sqlstate = $2, error = $3"
				 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
				 5, argtypes, values, nulls, SPI_OK_UPDATE);
	hwm_spi_exec(hwm_catalog_is_1_0() ?
				 "INSERT INTO hwm.runs (pipeline, kind, started_at, finished_at, status,"
				 " from_partition, to_partition, run_by, error_sqlstate, error)"
				 " SELECT b.pipeline, 'backfill', $5, pg_catalog.clock_timestamp(), 'failed',"
				 " $4, $4, b.run_by, $2, $3"
				 " FROM hwm.backfills AS b WHERE b.backfill_id OPERATOR(pg_catalog.=) $1" :
				 "INSERT INTO hwm.runs (pipeline, kind, started_at, finished_at, status,"
				 " from_partition, to_partition, run_by, error_sqlstate, error, owner)"
				 " SELECT b.pipeline, 'backfill', $5, pg_catalog.clock_timestamp(), 'failed',"
				 " $4, $4, b.run_by, $2, $3, s.owner"
				 " FROM hwm.backfills AS b JOIN hwm.state AS s"
				 "  ON s.pipeline OPERATOR(pg_catalog.=) b.pipeline"
				 " WHERE b.backfill_id OPERATOR(pg_catalog.=) $1",
				 5, argtypes, values, nulls, SPI_OK_INSERT);
	hwm_unbecome(&sw);
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

	plan = backfill_plan_build(bf->pipeline, true, &p, &sw);
	from = hwm_value_in(&plan->part, bf->from_text, "from_partition");
	to = hwm_value_in(&plan->part, bf->to_text, "to_partition");
	first = bf->done_through == NULL;
	after = first ? from : hwm_value_in(&plan->part, bf->done_through, "done_through");

	for (int i = 0; i < bf->batch_size; i++)
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
		bf->in_progress = MemoryContextStrdup(bf->cxt, d->value);
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
		hwm_update_state_after_run(p->name, run_id, d->started_at, false, NULL,
								   d->ow.deleted + d->ow.inserted, NULL);
		old = MemoryContextSwitchTo(bf->cxt);
		bf->done_through = pstrdup(d->value);
		MemoryContextSwitchTo(old);
		bf->partitions_done++;
		bf->rows_deleted += d->ow.deleted;
		bf->rows_inserted += d->ow.inserted;
	}
	backfill_save(bf, finished);
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
 * is reported.  Returns the error (copied into bf->cxt), or NULL.
 */
static ErrorData *
backfill_batch_guarded(Backfill *bf, bool *finished)
{
	BatchStep	b = {.bf = bf};
	ErrorData  *edata = hwm_try_subxact(batch_step, &b, bf->cxt);

	*finished = b.finished;
	return edata;
}

/* The summary NOTICE of a backfill */
static void
backfill_notice(const Backfill *bf)
{
	ereport(NOTICE,
			(errmsg("hwm: backfill " INT64_FORMAT " of pipeline \"%s\" from %s to %s finished: %d partitions, " INT64_FORMAT " rows deleted, " INT64_FORMAT " rows inserted or updated",
					bf->id, bf->pipeline, bf->from_text, bf->to_text, bf->partitions_done,
					bf->rows_deleted, bf->rows_inserted)));
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
		Backfill	bf = {0};

		bf.pipeline = p->name;
		bf.from_text = from_text;
		bf.to_text = to_text;
		bf.cxt = CurrentMemoryContext;
		if (backfill_find_unfinished(&bf))
			ereport(NOTICE,
					(errmsg("hwm: backfill " INT64_FORMAT " of this range is unfinished: a CALL without dry_run resumes it after partition %s",
							bf.id, bf.done_through ? bf.done_through : "(none)")));
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
 * (copied into bf->cxt), or NULL when the range is done.  Leaves SPI
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
	bf->cxt = cxt;
	bf->batch_size = PG_GETARG_INT32(3);

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
	bf->pipeline = MemoryContextStrdup(cxt, p->name);
	bf->from_text = MemoryContextStrdup(cxt, from_text);
	bf->to_text = MemoryContextStrdup(cxt, to_text);
	bf->session_lock = !atomic;

	PG_TRY();
	{
		if (backfill_find_unfinished(bf))
			backfill_claim(bf);
		(void) hwm_pipeline_fetch(bf->pipeline, true, false);
		backfill_start(bf);
		backfill_claim(bf);
		if (bf->resumed)
			ereport(NOTICE,
					(errmsg("hwm: resuming backfill " INT64_FORMAT " of pipeline \"%s\" from %s to %s after partition %s",
							bf->id, bf->pipeline, bf->from_text, bf->to_text,
							bf->done_through ? bf->done_through : "(none)")));

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
		backfill_unclaim(bf);
		PG_RE_THROW();
	}
	PG_END_TRY();
	backfill_unclaim(bf);
	SPI_finish();

	if (edata)
	{
		edata->detail = psprintf("Backfill " INT64_FORMAT " stopped; partitions up to %s are done and committed.",
								 bf->id, bf->done_through ? bf->done_through : "(none)");
		edata->hint = psprintf("Fix the cause and CALL hwm.backfill(%s, %s, %s) again: it resumes after the last partition done.",
							   quote_literal_cstr(bf->pipeline),
							   quote_literal_cstr(bf->from_text),
							   quote_literal_cstr(bf->to_text));
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
