/*
 * load.c
 *		hwm.run(pipeline): one incremental run in the caller's transaction,
 *		and CALL hwm.catch_up(pipeline), which repeats it batch by batch.
 *
 * A run, under the pipeline's lock (a concurrent run of the same pipeline
 * waits for it, then reads the watermark this run leaves):
 *	1. find the slice: W0, the greatest watermark value above the stored
 *	   one, or the end of the batch when batch_size caps the run;
 *	2. settle the watermark: ask watermark.c how far it may go given the
 *	   transactions still in flight, and take the greatest visible value
 *	   below that (at most W0);
 *	3. load: upsert every visible row above the old watermark (up to the
 *	   batch's end) on the business key, skipping rows whose values did not
 *	   change; into an empty target, by building the slice aside and
 *	   trading storage (exchange.c), else by a fast path or the upsert;
 *	4. the lookback: overwrite the lookback newest partitions (range.c) to
 *	   catch late rows;
 *	5. record the new watermark and the run's facts, in the same
 *	   transaction.
 *
 * Rows above the stored watermark are loaded at once even when the
 * watermark is held back; the next run reads them again, and the upsert
 * finds nothing to change.
 */
#include "postgres.h"

#include "catalog.h"
#include "command.h"
#include "exchange.h"
#include "interval.h"
#include "load.h"
#include "pipeline.h"
#include "privilege.h"
#include "range.h"
#include "running.h"
#include "util.h"
#include "watermark.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/*
 * What the caller of a run hands down to it: hwm.run (the SQL function),
 * the scheduler's worker (hwm_load_scheduled) or CALL hwm.catch_up.  Passed
 * as an argument, never kept in a variable of this file: a run's command,
 * a trigger on its target or a function its source calls may start another
 * run (hwm.run, CALL hwm.catch_up) inside it, which must not see this one's.
 */
typedef struct RunCall
{
	bool		nowait;			/* fail at once when another run holds the pipeline */
	TimestampTz started_at;		/* the run's start (a scheduled run: its claim check) */
	int64		scheduled_run_id;	/* the 'running' row it records itself in, 0: none */
	HwmIntervalHorizon *horizon;	/* within CALL hwm.catch_up: its horizon, else NULL */
} RunCall;

/* What a run returns, hwm.run's row, in the caller's memory */
typedef struct RunResult
{
	int64		rows_upserted;
	int32		partitions;
	int64		rows_deleted;
	int64		rows_inserted;
	char	   *watermark_before;	/* NULL: none */
	char	   *watermark_after;
	int64		run_id;
} RunResult;

/* One run of hwm.run, as its steps fill it in */
typedef struct LoadRun
{
	HwmPipeline *p;
	HwmPlan    *plan;
	Datum		old_wm;			/* the stored watermark, if p->watermark */
	Datum		reread_from;	/* where reading starts (see watermark.c) ... */
	bool		has_reread;		/* ... if anywhere but the watermark */
	List	   *carried;		/* remembered transactions still in flight */
	HwmBinding	bind;			/* the values of the watermark statements'
								 * parameters, named as the run learns them */
	Datum		w0;				/* step 1: the end of the slice */
	bool		capped;			/* ... set by batch_size */
	char	   *wm_after;		/* step 2: the new watermark (text) */
	Datum		wm_end;			/* ... the same, when it moved (wm_after set) */
	const char *held;			/* ... why it stayed below the slice, or NULL */
	HwmSafeBound bound;			/* ... and what the transactions in flight allow */
	TimestampTz as_of;			/* ... and so how far the target is complete */
	int64		upserted;		/* step 3 */
	bool		upto;			/* ... reads up to w0 */
	int64		tombstoned;		/* ... target rows deleted by tombstones
								 * (a history: versions closed by them) */
	int64		refused;		/* ... a history's source rows refused */
	int64		opened;			/* ... a history's versions opened */
	int64		null_watermarks;
	int			partitions;		/* step 4 */
	HwmOverwrite lookback;
	char	   *from_text;
	char	   *to_text;
	const char *aside_refusal;	/* why the first load aside gave up (exchange.c) */
	const RunCall *call;		/* what its caller handed down */
} LoadRun;

/*
 * Run watermark statement stmt in its first-run or later-run form with the
 * values binding names, insisting on the SPI_OK_* code expected.
 */
static void
wm_exec_bound(const LoadRun *r, HwmWmStatement stmt, const HwmBinding *binding, int expected)
{
	hwm_statement_exec(&r->plan->wm_stmt[stmt][r->p->watermark != NULL], binding, expected);
}

/* wm_exec_bound with the run's values */
static void
wm_exec(const LoadRun *r, HwmWmStatement stmt, int expected)
{
	wm_exec_bound(r, stmt, &r->bind, expected);
}

/* stmt, or its _UPTO form when the slice ends at W0 (r->upto) */
static HwmWmStatement
slice_statement(const LoadRun *r, HwmWmStatement stmt, HwmWmStatement upto)
{
	return r->upto ? upto : stmt;
}

/* The value a watermark SELECT returned, copied; false when none */
static bool
wm_result(const LoadRun *r, Datum *value)
{
	if (!hwm_spi_first(value))
		return false;
	*value = hwm_value_copy(&r->plan->wm, *value);
	return true;
}

/*
 * Step 1: the slice above the stored watermark, up to W0; false when there
 * is nothing above it.  A batch ends at the batch_size-th value above where
 * reading starts (the watermark, or the bound the last run remembered) and
 * takes every row with that value, so rows that share one value are never
 * split between two batches.
 */
static bool
find_slice(LoadRun *r)
{
	Datum		end;

	wm_exec(r, HWM_WM_MAX, SPI_OK_SELECT);
	if (!wm_result(r, &r->w0))
		return false;
	if (r->p->batch_size > 0)
	{
		hwm_bind(&r->bind, HWM_PARAM_OFFSET, Int64GetDatum(r->p->batch_size - 1), false);
		wm_exec(r, HWM_WM_BATCH_END, SPI_OK_SELECT);
		if (wm_result(r, &end) && hwm_value_cmp(&r->plan->wm, end, r->w0) < 0)
		{
			r->w0 = end;
			r->capped = true;
		}
	}
	hwm_bind(&r->bind, HWM_PARAM_UPTO, r->w0, false);
	return true;
}

/*
 * Step 2: how far the watermark may go: W0, or the greatest visible value
 * below the limit that transactions in flight set (if any), no further than
 * the upstreams of a chain have committed (watermark.c), or nowhere.
 */
static void
settle_watermark(LoadRun *r)
{
	HwmSafeBound *bound = &r->bound;
	Datum		below;
	Datum		end = r->w0;

	hwm_safe_bound(r->plan, r->p->source, r->p->delay, r->carried, bound);
	if (bound->hold)
	{
		r->held = bound->reason;
		return;
	}
	if (bound->has_limit && hwm_value_cmp(&r->plan->wm, end, bound->limit) >= 0)
	{
		r->held = bound->reason;
		hwm_bind(&r->bind, HWM_PARAM_BELOW, bound->limit, false);
		wm_exec(r, HWM_WM_MAX_BELOW, SPI_OK_SELECT);
		if (!hwm_spi_first(&below))
			return;
		end = below;
	}
	/* a chain: no further than the upstreams have committed (never back) */
	if (bound->has_cap && hwm_value_cmp(&r->plan->wm, end, bound->cap) > 0)
	{
		r->held = HWM_CHAIN_HELD;
		if (r->p->watermark && hwm_value_cmp(&r->plan->wm, bound->cap, r->old_wm) <= 0)
			return;
		end = bound->cap;
	}
	r->wm_after = hwm_value_out(&r->plan->wm, end);
	r->wm_end = end;
}

/*
 * The fast paths of step 3, each in a subtransaction (load_slice), each
 * taken only where its result is the upsert's (pipeline.c, merge_refusal):
 *
 * - into an empty target (no block: never written, or truncated), the
 *   slice built aside and traded in (exchange.c, hwm_aside_load): a table
 *   LIKE the target filled with the rows the plain INSERT below would
 *   insert, with the same parameters, its indexes built after the rows are
 *   in, then storage traded under the target's lock.  A key twice fails
 *   the unique index's build (unique_violation); a refusal found under the
 *   lock, or the lock not granted within hwm.exchange_lock_timeout, gives
 *   it up too (hwm_aside_gave_up says why): the subtransaction takes the
 *   table aside with it and the plain INSERT runs.  No snapshot sees a row
 *   in a target without blocks, so trading its storage hides none;
 * - the slice by a plain INSERT (HWM_WM_INSERT): when every key is new, the
 *   upsert inserts every row too, and this is all it does, without the
 *   upsert's speculative insertion; a key already in the target raises
 *   unique_violation;
 * - one MERGE (HWM_WM_MERGE) that inserts the new keys as a plain INSERT
 *   does, updates the rows that changed and leaves the others alone (not
 *   even locked), planned without a hash join: the hash join of the slice
 *   with the whole target measured slower than the upsert, where index
 *   probes (nested loops, a small slice) and a merge join along the key's
 *   index (a big slice, most of its keys in the target) are faster than
 *   either.  The planner picks between those two, the target's side of the
 *   ON limited to the slice's key range (HWM_WM_KEYS, merge_key_bounds:
 *   see pipeline.c, merge_bounds); without bounds, index probes only
 *   (bench/bulk.sh).  A key that a concurrent writer inserted after the
 *   MERGE's snapshot (or a new key twice in the slice)
 *   raises unique_violation; a row updated twice, cardinality_violation.
 *   An existing key twice, of which at most one row changed, raises
 *   neither: HWM_WM_TWICE finds it and fails the MERGE with
 *   cardinality_violation, since the upsert may fail on that slice or not,
 *   depending on the order it reads the rows in.  It is read after the
 *   MERGE, so that rows inserted into the source meanwhile can only make
 *   it find a key twice the MERGE did not see (the upsert then runs).
 *
 * After either error load_slice goes on to the next path, and at last to
 * the upsert, which takes a writer's key as an update (no row lost, none
 * doubled) and does what it does today with a key twice: a slice holding
 * one loads as if there were no fast path.
 */
/* The plain INSERT (see above) */
static void
insert_slice(void *arg)
{
	LoadRun    *r = arg;

	wm_exec(r, slice_statement(r, HWM_WM_INSERT, HWM_WM_INSERT_UPTO), SPI_OK_INSERT);
	r->upserted = (int64) SPI_processed;
}

/* Fill the first load's table aside (hwm_aside_load) as insert_slice fills the target */
static int64
fill_aside(const char *table, void *arg)
{
	LoadRun    *r = arg;
	HwmStatement fill;

	if (!hwm_plan_slice_fill(r->plan, table, r->upto, r->p->watermark != NULL, &fill))
		elog(ERROR, "hwm: a first load aside without a plain insert");
	return (int64) hwm_statement_fill(&fill, &r->bind);
}

/* The first load, built aside and traded in (see above) */
static void
aside_slice(void *arg)
{
	LoadRun    *r = arg;

	r->upserted = hwm_aside_load(r->plan, fill_aside, r, &r->aside_refusal);
}

/*
 * The least and greatest value of the key's first column in the MERGE's
 * slice (HWM_WM_KEYS), copied out of SPI's memory into binding; both NULL
 * when no key in the slice is.
 */
static void
merge_key_bounds(const LoadRun *r, HwmBinding *binding)
{
	static const HwmParam bound[2] = {HWM_PARAM_KEY_LO, HWM_PARAM_KEY_HI};
	int16		typlen;
	bool		typbyval;

	wm_exec(r, slice_statement(r, HWM_WM_KEYS, HWM_WM_KEYS_UPTO), SPI_OK_SELECT);
	if (SPI_processed != 1 || SPI_tuptable->tupdesc->natts != 2)
		elog(ERROR, "hwm: the slice's key bounds returned no row");
	get_typlenbyval(r->plan->merge_bound_type, &typlen, &typbyval);
	for (int i = 0; i < 2; i++)
	{
		bool		isnull;
		Datum		v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1,
									  &isnull);

		hwm_bind(binding, bound[i], isnull ? (Datum) 0 : datumCopy(v, typbyval, typlen),
				 isnull);
	}
}

/* The MERGE, then the check for an existing key twice (see above) */
static void
merge_slice(void *arg)
{
	LoadRun    *r = arg;
	int			nest = NewGUCNestLevel();
	bool		bounded = OidIsValid(r->plan->merge_bound_type);
	HwmBinding	binding = r->bind;	/* with the key bounds, for the MERGE alone */

	if (bounded)
		merge_key_bounds(r, &binding);
	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (!bounded)
		(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	wm_exec_bound(r, slice_statement(r, HWM_WM_MERGE, HWM_WM_MERGE_UPTO), &binding,
				  SPI_OK_MERGE);
	r->upserted = (int64) SPI_processed;
	AtEOXact_GUC(true, nest);
	if (r->plan->wm_stmt[HWM_WM_TWICE][0].sql == NULL)
		return;
	wm_exec(r, slice_statement(r, HWM_WM_TWICE, HWM_WM_TWICE_UPTO), SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg_internal("the slice holds a key twice")));
}

/* Run one fast path; false (and why at DEBUG1) when the next one must run */
static bool
fast_path(LoadRun *r, void (*fn) (void *), const char *what)
{
	ErrorData  *edata = hwm_try_subxact(fn, r, CurrentMemoryContext);

	if (edata == NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("hwm: pipeline \"%s\": the slice is loaded by %s",
								 r->p->name, what)));
		return true;
	}
	if (fn == aside_slice)
	{
		const char *why = hwm_aside_gave_up(edata, r->aside_refusal);

		if (why == NULL)
			ReThrowError(edata);
		ereport(DEBUG1,
				(errmsg_internal("hwm: pipeline \"%s\": the first load is not built aside: %s",
								 r->p->name, why)));
		FreeErrorData(edata);
		return false;
	}
	if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION &&
		edata->sqlerrcode != ERRCODE_CARDINALITY_VIOLATION)
		ReThrowError(edata);
	ereport(DEBUG1,
			(errmsg_internal("hwm: pipeline \"%s\": the slice's %s failed: %s",
							 r->p->name, what, edata->message)));
	FreeErrorData(edata);
	return false;
}

/*
 * The first load built aside (aside_slice), when the target is empty and
 * nothing refuses it (exchange.c); false when the plain insert must run.
 * A target with blocks is not empty, even when no row in it is live (its
 * dead rows may be what an older snapshot sees): it is no candidate, and
 * says nothing.
 */
static bool
first_load_aside(LoadRun *r)
{
	bool		empty;
	const char *why = hwm_aside_refusal(r->plan, &empty);

	if (!empty)
		return false;
	if (why)
	{
		ereport(DEBUG1,
				(errmsg_internal("hwm: pipeline \"%s\": the first load is not built aside: %s",
								 r->p->name, why)));
		return false;
	}
	r->aside_refusal = NULL;
	return fast_path(r, aside_slice, "building it aside");
}

/*
 * A history's current versions that another transaction changed after the
 * run's statement took its snapshot and before it closed or updated them:
 * the statement left them as they are (pipeline.c, history_fast_updates),
 * and a version opened after one of them would make two current versions
 * of a key, so the run fails, changing nothing; the next one reads them as
 * committed.  hwm's own runs of the pipeline never meet here (they take its
 * lock): another writer of the target does.
 */
static void
history_changed_under(const LoadRun *r, int64 n)
{
	if (n == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("pipeline \"%s\": " INT64_FORMAT " current versions of its history were changed by another transaction during the run",
					r->p->name, n),
			 errdetail("The run changed nothing."),
			 errhint("Run it again. A history's target is written by its pipeline only; look for another writer of the table.")));
}

/*
 * A history's source rows not applied: older than their key's history and
 * not in it (pipeline.c, history_statement).  The run goes on, the rows
 * are counted in its record (hwm.runs.rows_refused), and said once.
 */
static void
history_refused(const LoadRun *r)
{
	if (r->refused == 0)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("hwm: pipeline \"%s\": " INT64_FORMAT " source rows older than their key's history were not applied",
					r->p->name, r->refused),
			 errdetail("Each has a %s value at or below a bound of its key's versions, and differs from the version in force at that value: the source rewrote an old row without moving its watermark value.",
					   quote_identifier(r->p->watermark_column)),
			 errhint("A history keeps what the source said when it said it. To rewrite it, correct a copy of the target and put it in place with hwm.swap; rows refused are counted in hwm.runs.rows_refused.")));
}

/*
 * Step 3: upsert everything visible above the old watermark (up to W0 in a
 * batch): by the first fast path above that succeeds, else by the upsert
 * (and DEBUG1 says why a target has no fast path).  A plain insert that
 * fails late in a slice (a key already in the target among its last rows)
 * has cost up to one more plain insert of the slice.  Before the first
 * watermark, a run that knows where to start reading reads up to W0 too:
 * "from R up to W0" is a range the planner sends to the index even without
 * statistics, where "from R on" may become a scan of the whole source; rows
 * above W0 are read by the next run, which starts at or below W0.
 */
static void
load_slice(LoadRun *r)
{
	/*
	 * with a delete marker, one statement upserts and deletes; a history's
	 * applies the slice to the versions (pipeline.c): both return counts
	 */
	bool		counts = r->plan->has_tombstones || r->plan->history;
	int			expected = counts ? SPI_OK_SELECT : SPI_OK_INSERT;

	r->upto = r->capped || (r->p->watermark == NULL && r->has_reread);
	/*
	 * A history applies a key's versions in order, so it reads no row above
	 * the new watermark: a transaction in flight may still commit a row
	 * below such a row (an upsert can take that row now and the late one
	 * later; a history would find the late one older than its key's
	 * versions).  Nothing when the watermark stays.
	 */
	if (r->plan->history)
	{
		if (r->wm_after == r->p->watermark)
			return;
		r->w0 = r->wm_end;
		hwm_bind(&r->bind, HWM_PARAM_UPTO, r->w0, false);
		r->upto = true;
	}
	if (r->plan->wm_stmt[HWM_WM_MERGE][0].sql != NULL)
	{
		if (first_load_aside(r) ||
			fast_path(r, insert_slice, "plain insert") ||
			fast_path(r, merge_slice, "merge"))
			return;
		ereport(DEBUG1,
				(errmsg_internal("hwm: pipeline \"%s\": the slice is loaded by upsert",
								 r->p->name)));
	}
	else if (r->plan->merge_refused)
		ereport(DEBUG1,
				(errmsg_internal("hwm: pipeline \"%s\": the slice is loaded by upsert, not the fast path: %s",
								 r->p->name, r->plan->merge_refused)));
	wm_exec(r, slice_statement(r, HWM_WM_UPSERT, HWM_WM_UPSERT_UPTO), expected);
	if (counts)
	{
		/*
		 * one row of counts (never NULL: count(*)), checked all the same:
		 * upserted and deleted; a history's versions opened, updated in
		 * place, closed by a tombstone, and rows refused
		 */
		int			n = r->plan->history ? 5 : 2;
		int64		count[5];

		for (int i = 0; i < n; i++)
		{
			bool		isnull = true;
			Datum		d = (Datum) 0;

			if (SPI_processed == 1 && SPI_tuptable->tupdesc->natts == n)
				d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1, &isnull);
			if (isnull)
				elog(ERROR, "hwm: the slice's statement returned no counts");
			count[i] = DatumGetInt64(d);
		}
		r->upserted = count[0];
		r->tombstoned = count[1];
		if (r->plan->history)
		{
			r->upserted = count[0] + count[1];
			r->opened = count[0];
			r->tombstoned = count[2];
			r->refused = count[3];
			history_changed_under(r, count[4]);
			history_refused(r);
		}
	}
	else
		r->upserted = (int64) SPI_processed;
}

/*
 * Step 3 of a command pipeline (command.c): run its command once over
 * (old watermark, new watermark], when the watermark moves.
 */
static void
run_command(LoadRun *r)
{
	if (r->wm_after == NULL || r->wm_after == r->p->watermark)
		return;
	r->upserted = hwm_command_exec(r->p->name, r->p->command, r->plan->wm.type,
								   r->old_wm, r->p->watermark == NULL,
								   hwm_value_in(&r->plan->wm, r->wm_after, "new watermark"));
}

/* Step 4: overwrite the lookback newest partitions, by the diff */
static void
overwrite_newest(LoadRun *r)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(r->p->lookback)};
	SPITupleTable *tt;
	bool		isnull;
	Datum		newest;
	Datum		oldest;

	hwm_spi_exec(r->plan->newest_partitions_sql, 1, argtypes, args, NULL, SPI_OK_SELECT);
	r->partitions = (int) SPI_processed;
	if (r->partitions == 0)
		return;
	tt = SPI_tuptable;
	newest = hwm_value_copy(&r->plan->part, SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
	oldest = hwm_value_copy(&r->plan->part, SPI_getbinval(tt->vals[r->partitions - 1],
														  tt->tupdesc, 1, &isnull));
	r->from_text = hwm_value_out(&r->plan->part, oldest);
	r->to_text = hwm_value_out(&r->plan->part, newest);
	hwm_range_overwrite(r->plan, oldest, newest, false, &r->lookback);
}

/* Source rows whose watermark is NULL: no incremental run ever loads them */
static void
count_null_watermarks(LoadRun *r)
{
	Datum		n;

	hwm_spi_exec(r->plan->wm_null_count_sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	r->null_watermarks = hwm_spi_first(&n) ? DatumGetInt64(n) : 0;
}

/*
 * What this run remembers for the next (see watermark.c): rows it did not
 * load are above W0 (the greatest value it saw, or the batch's end), or at
 * least the floor, or belong to a transaction remembered before and still in
 * flight, or to one in flight now.  Without a slice nothing was read: the
 * memory stays as it was.  A command pipeline remembers no place to read
 * from: its command covers exactly (old watermark, new watermark], so the
 * next run starts from the watermark (only what held it back is kept, for
 * hwm.status).
 */
static void
remember_load(const LoadRun *r, bool sliced, HwmLoadMemory *mem)
{
	const HwmSafeBound *b = &r->bound;
	Datum		from = r->w0;
	ListCell   *lc;

	*mem = r->p->memory;
	mem->as_of = r->as_of;
	mem->held_by_pid = 0;
	mem->null_watermarks = r->null_watermarks;
	if (r->held && b->oldest_pid != 0)
	{
		mem->held_by_pid = b->oldest_pid;
		mem->held_by_application = b->oldest_application;
		mem->held_since = b->oldest_start;
	}
	if (!sliced || r->p->command)
		return;
	/*
	 * A chain whose upstream has loaded nothing: that upstream may still
	 * load rows of any value, below all this run saw.  No place to read
	 * from: the next run reads from the watermark.
	 */
	if (b->upstream_empty)
	{
		mem->reread_from = NULL;
		mem->xacts = NIL;
		return;
	}
	if (b->has_floor && hwm_value_cmp(&r->plan->wm, b->floor, from) < 0)
		from = b->floor;
	/* rows an upstream loads later are above what it had committed */
	if (b->has_cap && hwm_value_cmp(&r->plan->wm, b->cap, from) < 0)
		from = b->cap;
	mem->reread_from = hwm_value_out(&r->plan->wm, from);
	mem->xacts = list_copy(r->carried);
	foreach(lc, b->xacts)
	{
		HwmXact    *x = lfirst(lc);
		ListCell   *c;
		bool		known = false;

		foreach(c, r->carried)
			known = known || strcmp(((HwmXact *) lfirst(c))->vxid, x->vxid) == 0;
		if (!known)
			mem->xacts = lappend(mem->xacts, x);
	}
	mem->epoch = hwm_memory_epoch();
}

/* The run's NOTICE: what it did, what held the watermark, what it cannot load */
static void
load_notice(const LoadRun *r, const HwmLoadMemory *mem)
{
	char	   *holder = NULL;
	char	   *nulls = NULL;
	char	   *tombstones = "";

	if (mem->held_by_pid != 0)
		holder = psprintf("The oldest transaction holding it back is process %d (application \"%s\"), open for %s; pg_stat_activity shows it.",
						  mem->held_by_pid, mem->held_by_application,
						  DatumGetCString(DirectFunctionCall1(interval_out,
															  DirectFunctionCall2(timestamp_mi,
																				  TimestampTzGetDatum(GetCurrentTimestamp()),
																				  TimestampTzGetDatum(mem->held_since)))));
	if (r->null_watermarks > 0)
		nulls = psprintf("Source rows whose %s is NULL, which no run loads: " INT64_FORMAT ".",
						 quote_identifier(r->p->watermark_column), r->null_watermarks);
	if (r->plan && r->plan->history)
		tombstones = psprintf(" (versions opened " INT64_FORMAT ", closed by tombstones " INT64_FORMAT ", source rows refused " INT64_FORMAT ")",
							  r->opened, r->tombstoned, r->refused);
	else if (r->plan && r->plan->has_tombstones)
		tombstones = psprintf(", rows deleted by tombstones " INT64_FORMAT, r->tombstoned);
	ereport(NOTICE,
			(errmsg("hwm: pipeline \"%s\": rows upserted " INT64_FORMAT "%s, partitions overwritten %d (rows deleted " INT64_FORMAT ", inserted or updated " INT64_FORMAT "), watermark %s -> %s%s%s",
					r->p->name, r->upserted, tombstones, r->partitions, r->lookback.deleted,
					r->lookback.inserted,
					r->p->watermark ? r->p->watermark : "(none)",
					r->wm_after ? r->wm_after : "(none)",
					r->held ? ", held back by " : "", r->held ? r->held : ""),
			 (holder || nulls) ?
			 errdetail_internal("%s%s%s", holder ? holder : "", holder && nulls ? "\n" : "",
								nulls ? nulls : "") : 0));
}

/* Step 5: the run in hwm.runs and the pipeline's state; returns the run_id */
static int64
record_load(const LoadRun *r, bool sliced, TimestampTz started_at)
{
	HwmRunFacts run = HWM_RUN_FACTS_INIT(r->p->name, "load", started_at);
	HwmLoadMemory mem;
	int64		run_id;

	run.rows_upserted = r->upserted;
	run.partitions = r->partitions;
	run.rows_deleted = r->lookback.deleted + r->tombstoned;
	run.rows_inserted = r->lookback.inserted;
	if (r->plan && r->plan->history)
	{
		run.rows_inserted = r->opened;
		run.rows_refused = r->refused;
	}
	run.watermark_before = r->p->watermark;
	run.watermark_after = r->wm_after;
	run.from_partition = r->from_text;
	run.to_partition = r->to_text;
	run.scheduled_run_id = r->call->scheduled_run_id;
	run_id = hwm_record_run(&run);
	remember_load(r, sliced, &mem);
	hwm_update_state_after_run(r->p, run_id, started_at,
							   r->wm_after != r->p->watermark, r->wm_after,
							   r->upserted + r->tombstoned + r->lookback.deleted + r->lookback.inserted,
							   &mem);
	load_notice(r, &mem);
	return run_id;
}

/*
 * A time watermark's freshness (hwm.state.data_as_of, hwm.freshness): how
 * far this run found the source complete.  A row below the safe bound's
 * limit that the run did not see belongs to no transaction that can still
 * commit, so every such row is loaded, unless a batch ended the slice below
 * (the watermark then says how far), and no further than its upstreams
 * had theirs complete (a chain: what they load later is older than their
 * own time, which may be now).  A run with nothing new asks the bound
 * too, so that an idle source does not make its target look stale, but
 * only when the stored time is more than hwm.start_margin behind the best
 * the bound could give now (now less hwm.start_margin and the delay), or
 * beyond it: runs
 * back to back with nothing new then cost what they cost before
 * (bench/noop.sh).  0: not known, or not asked (the stored time stays).
 */
static TimestampTz
complete_below(LoadRun *r, bool sliced)
{
	HwmSafeBound *b = &r->bound;
	Oid			type = r->plan->wm.type;

	if (!hwm_is_time_type(type) || r->capped)
		return 0;
	if (!sliced)
	{
		TimestampTz best = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), -hwm_start_margin);

		if (r->p->delay)
			best = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														   TimestampTzGetDatum(best),
														   IntervalPGetDatum(r->p->delay)));
		/* (a stored time beyond that: the delay grew; ask again) */
		if (r->p->data_as_of <= best &&
			r->p->data_as_of > TimestampTzPlusMilliseconds(best, -hwm_start_margin))
			return 0;
		hwm_safe_bound(r->plan, r->p->source, r->p->delay, r->carried, b);
	}
	if (b->hold || !b->has_limit)
		return 0;
	if (b->has_upstreams)
		return Min(hwm_time_value_timestamptz(type, b->limit), b->upstreams_as_of);
	return hwm_time_value_timestamptz(type, b->limit);
}

/*
 * The run itself, under the pipeline's lock (r->p read under it): an
 * interval pipeline's (interval.c), or a load or a command pipeline's
 * command, recorded; returns the run_id.
 */
static int64
run_locked(LoadRun *r)
{
	HwmRoleSwitch sw;
	bool		sliced;

	if (r->p->time_interval)
	{
		/* an interval pipeline: one interval (or the backlog), interval.c */
		r->wm_after = r->p->watermark;
		return hwm_interval_run(r->p, r->call->started_at, r->call->scheduled_run_id,
								r->call->horizon, &r->upserted, &r->wm_after);
	}
	r->plan = hwm_plan_as_owner(r->p, true, r->p->lookback > 0, true, &sw);
	if (r->p->watermark)
	{
		r->old_wm = hwm_value_in(&r->plan->wm, r->p->watermark, "stored watermark");
		hwm_bind(&r->bind, HWM_PARAM_WATERMARK, r->old_wm, false);
	}
	/*
	 * A copy pipeline reads from where the last run got to; a command
	 * pipeline's range is (old watermark, new watermark] and nothing else,
	 * so its bound is the safe bound alone, with nothing carried.
	 */
	if (r->p->command == NULL)
		r->has_reread = hwm_reread_from(r->plan, &r->p->memory,
										r->p->watermark ? &r->old_wm : NULL,
										&r->reread_from, &r->carried);
	/* from the watermark or where the last run got to; (first run) NULL: everything */
	hwm_bind(&r->bind, HWM_PARAM_FROM, r->has_reread ? r->reread_from : r->old_wm,
			 !r->has_reread && r->p->watermark == NULL);
	r->wm_after = r->p->watermark;

	sliced = find_slice(r);
	if (sliced)
	{
		settle_watermark(r);
		if (r->p->command)
			run_command(r);
		else
			load_slice(r);
	}
	r->as_of = complete_below(r, sliced);
	count_null_watermarks(r);
	if (r->plan->has_part)
		overwrite_newest(r);
	hwm_unbecome(&sw);
	return record_load(r, sliced, r->call->started_at);
}

/*
 * One run of pipeline name, as its caller (call) asks: hwm.run's body, in
 * an SPI connection of its own.  Its result goes to *out, in the caller's
 * memory context.
 */
static void
run_pipeline(const char *name, const RunCall *call, RunResult *out)
{
	MemoryContext callercxt = CurrentMemoryContext;
	LoadRun		r = {0};
	volatile int64 run_id = 0;

	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hwm.run cannot run in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("Such a transaction reads with the snapshot of its first statement, so rows committed after it would be skipped for good once the watermark moved past them."),
				 errhint("Call hwm.run in a READ COMMITTED transaction (the default), or on its own.")));
	r.call = call;
	SPI_connect();
	r.p = hwm_pipeline_fetch(name, true, call->nowait);
	/* the run owns its pipeline until it ends (running.c) */
	hwm_running_push(r.p->name);
	PG_TRY();
	{
		run_id = run_locked(&r);
	}
	PG_FINALLY();
	{
		hwm_running_pop();
	}
	PG_END_TRY();

	/* the result must outlive SPI_finish */
	MemoryContextSwitchTo(callercxt);
	out->rows_upserted = r.upserted;
	out->partitions = r.partitions;
	out->rows_deleted = r.lookback.deleted + r.tombstoned;
	/* a history's versions opened, as in its record (record_load) */
	out->rows_inserted = r.lookback.inserted + r.opened;
	out->watermark_before = r.p->watermark ? pstrdup(r.p->watermark) : NULL;
	out->watermark_after = r.wm_after ? pstrdup(r.wm_after) : NULL;
	out->run_id = run_id;
	SPI_finish();
}

/*
 * One run of pipeline name called from C (the worker, CALL hwm.catch_up)
 * rather than by a statement: with the active snapshot that a statement
 * calling hwm.run would have, taken now.
 */
static void
run_pipeline_direct(const char *name, const RunCall *call, RunResult *out)
{
	PushActiveSnapshot(GetTransactionSnapshot());
	run_pipeline(name, call, out);
	PopActiveSnapshot();
}

PG_FUNCTION_INFO_V1(hwm_run);

/* hwm.run(pipeline, nowait): a run by hand, or one a run's command makes */
Datum
hwm_run(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	RunCall		call = {0};
	RunResult	res;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};

	call.started_at = GetCurrentTimestamp();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	hwm_require_arg(fcinfo, 1, "nowait");
	call.nowait = PG_GETARG_BOOL(1);
	run_pipeline(name, &call, &res);

	values[0] = Int64GetDatum(res.rows_upserted);
	values[1] = Int32GetDatum(res.partitions);
	values[2] = Int64GetDatum(res.rows_deleted);
	values[3] = Int64GetDatum(res.rows_inserted);
	nulls[4] = res.watermark_before == NULL;
	if (!nulls[4])
		values[4] = CStringGetTextDatum(res.watermark_before);
	nulls[5] = res.watermark_after == NULL;
	if (!nulls[5])
		values[5] = CStringGetTextDatum(res.watermark_after);
	values[6] = Int64GetDatum(res.run_id);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/*
 * A scheduled run (the scheduler's worker, worker.c): hwm.run(pipeline,
 * nowait => true), which records the run in its 'running' row run_id of
 * hwm.runs rather than a row of its own (when that row is still 'running'
 * and the pipeline's), started at started_at (the claim check's time,
 * worker.c).  Returns the run_id the run recorded itself under.
 */
int64
hwm_load_scheduled(const char *pipeline, int64 run_id, TimestampTz started_at)
{
	RunCall		call = {.nowait = true, .started_at = started_at,
		.scheduled_run_id = run_id};
	RunResult	res;

	run_pipeline_direct(pipeline, &call, &res);
	return res.run_id;
}

/*
 * Run pipeline name until its watermark stops moving; the runs and rows
 * upserted into *runs and *total.  Each run's result is freed as it goes: a
 * long catch-up holds no more memory than one run.  Its interval horizon
 * (interval.h) is this loop's, handed to each of its runs.
 */
static void
catch_up_loop(const char *name, bool atomic, int *runs, int64 *total)
{
	HwmIntervalHorizon horizon = {0};
	RunCall		call = {.horizon = &horizon};

	for (;;)
	{
		RunResult	res;
		bool		moved;

		call.started_at = GetCurrentTimestamp();
		run_pipeline_direct(name, &call, &res);
		*total += res.rows_upserted;
		moved = (res.watermark_before == NULL) != (res.watermark_after == NULL) ||
			(res.watermark_before != NULL &&
			 strcmp(res.watermark_before, res.watermark_after) != 0);
		if (res.watermark_before)
			pfree(res.watermark_before);
		if (res.watermark_after)
			pfree(res.watermark_after);
		(*runs)++;
		hwm_prune_runs_in_loop(name, *runs == 1);	/* history within its bound */
		if (!atomic)
			SPI_commit();
		if (!moved)
			break;
		CHECK_FOR_INTERRUPTS();
	}
}

PG_FUNCTION_INFO_V1(hwm_catch_up);

/*
 * CALL hwm.catch_up(pipeline): run the pipeline again and again until its
 * watermark stops moving.  Called outside a transaction block, each run (one
 * batch of at most batch_size rows) commits on its own, so a large backlog
 * never makes one long transaction and a stop in the middle keeps every batch
 * done so far.  Inside a transaction block, the runs share the caller's
 * transaction.  An interval pipeline goes no further than the intervals
 * that were ready at its first run (else, with intervals shorter than a run,
 * it would chase the clock for ever).
 */
Datum
hwm_catch_up(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	bool		atomic = hwm_call_is_atomic(fcinfo);
	int64		total = 0;
	int			runs = 0;

	SPI_connect_ext(atomic ? 0 : SPI_OPT_NONATOMIC);
	(void) hwm_pipeline_fetch(name, false, false);	/* exists, and may be run by us */
	catch_up_loop(name, atomic, &runs, &total);
	SPI_finish();

	ereport(NOTICE,
			(errmsg("hwm: pipeline \"%s\" caught up: runs %d, rows upserted " INT64_FORMAT "%s",
					name, runs, total, atomic ? " (in the caller's transaction)" : "")));
	PG_RETURN_VOID();
}
