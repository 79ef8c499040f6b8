/*
 * load.c
 *		hwm.run(pipeline): one incremental run in the caller's transaction,
 *		and CALL hwm.catch_up(pipeline), which repeats it batch by batch.
 *
 *	1. take the pipeline's lock (a concurrent run of the same pipeline waits
 *	   here, then reads the watermark this run leaves);
 *	2. find W0, the greatest watermark value above the stored one, or the
 *	   end of the batch when batch_size caps the run;
 *	3. ask watermark.c how far the watermark may go given the transactions
 *	   still in flight, and settle on the greatest visible value below that;
 *	4. upsert every visible row above the old watermark (up to the batch's
 *	   end) on the business key, skipping rows whose values did not change;
 *	5. overwrite the lookback newest partitions to catch late rows;
 *	6. store the new watermark and the run's facts, in the same transaction.
 *
 * Rows above the stored watermark are loaded at once even when the
 * watermark is held back; the next run reads them again, and the upsert
 * finds nothing to change.
 */
#include "postgres.h"

#include "catalog.h"
#include "overwrite.h"
#include "plan.h"
#include "privilege.h"
#include "util.h"
#include "watermark.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

/* A copy of a watermark value that outlives the SPI tuple table */
static Datum
datum_copy_of(const HwmPlan *plan, Datum d)
{
	return datumCopy(d, get_typbyval(plan->wm.type), get_typlen(plan->wm.type));
}

PG_FUNCTION_INFO_V1(hwm_run);

Datum
hwm_run(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	TimestampTz started_at = GetCurrentTimestamp();
	MemoryContext callercxt = CurrentMemoryContext;
	HwmPipeline *p;
	HwmPlanSpec spec;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	int64		upserted = 0;
	int			partitions = 0;
	int64		deleted = 0;
	int64		inserted = 0;
	char	   *wm_after;
	char	   *from_text = NULL;
	char	   *to_text = NULL;
	bool		advanced = false;
	const char *held = NULL;	/* why the watermark stayed below the slice */
	HwmSafeBound bound;
	int64		run_id;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	hwm_require_arg(fcinfo, 1, "nowait");
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hwm.run cannot run in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("Such a transaction reads with the snapshot of its first statement, so rows committed after it would be skipped for good once the watermark moved past them."),
				 errhint("Call hwm.run in a READ COMMITTED transaction (the default), or on its own.")));

	SPI_connect();
	p = hwm_pipeline_fetch(name, true, PG_GETARG_BOOL(1));

	hwm_spec_for(p, true, p->lookback > 0, &spec);

	hwm_become(p->owner, true, &sw);
	plan = hwm_plan_build(&spec);
	hwm_check_privileges(p->owner, &spec, plan);

	/* steps 2 and 3: the slice above the watermark, and how far it may go */
	{
		Oid			argtypes[2] = {plan->wm.type, plan->wm.type};
		Datum		args[2];
		int			nold = p->watermark ? 1 : 0;
		bool		isnull;
		Datum		w0;

		if (p->watermark)
			args[0] = hwm_value_in(&plan->wm, p->watermark, "stored watermark");
		hwm_spi_exec(p->watermark ? plan->max_wm_sql : plan->max_wm_first_sql,
					 nold, argtypes, args, NULL, SPI_OK_SELECT);

		wm_after = p->watermark;
		if (SPI_processed > 0)
		{
			bool		capped = false;

			w0 = datum_copy_of(plan, SPI_getbinval(SPI_tuptable->vals[0],
												   SPI_tuptable->tupdesc, 1, &isnull));

			/*
			 * A batch ends at the batch_size-th value above the watermark and
			 * takes every row with that value, so rows that share one value
			 * are never split between two batches.
			 */
			if (p->batch_size > 0)
			{
				Oid			btypes[2] = {plan->wm.type, plan->wm.type};

				btypes[nold] = INT8OID;
				args[nold] = Int64GetDatum(p->batch_size - 1);
				hwm_spi_exec(p->watermark ? plan->batch_end_sql : plan->batch_end_first_sql,
							 nold + 1, btypes, args, NULL, SPI_OK_SELECT);
				if (SPI_processed > 0)
				{
					Datum		end = datum_copy_of(plan, SPI_getbinval(SPI_tuptable->vals[0],
																		SPI_tuptable->tupdesc, 1, &isnull));

					if (hwm_value_cmp(&plan->wm, end, w0) < 0)
					{
						w0 = end;
						capped = true;
					}
				}
			}

			hwm_safe_bound(plan, p->source, p->delay, &bound);
			if (bound.hold)
				held = bound.reason;
			else if (bound.has_limit && hwm_value_cmp(&plan->wm, w0, bound.limit) >= 0)
			{
				/* the greatest visible value below the limit, if any */
				held = bound.reason;
				args[nold] = bound.limit;
				hwm_spi_exec(p->watermark ? plan->max_below_sql : plan->max_below_first_sql,
							 nold + 1, argtypes, args, NULL, SPI_OK_SELECT);
				if (SPI_processed > 0)
					wm_after = hwm_value_out(&plan->wm,
											 SPI_getbinval(SPI_tuptable->vals[0],
														   SPI_tuptable->tupdesc, 1, &isnull));
			}
			else
				wm_after = hwm_value_out(&plan->wm, w0);

			/* load everything visible above the old watermark (up to the batch's end) */
			if (capped)
			{
				args[nold] = w0;
				hwm_spi_exec(p->watermark ? plan->upsert_upto_sql : plan->upsert_upto_first_sql,
							 nold + 1, argtypes, args, NULL, SPI_OK_INSERT);
			}
			else
				hwm_spi_exec(p->watermark ? plan->upsert_sql : plan->upsert_first_sql,
							 nold, argtypes, args, NULL, SPI_OK_INSERT);
			upserted = (int64) SPI_processed;
			advanced = wm_after != p->watermark;
		}
	}

	/* step 4: the lookback */
	if (plan->has_part)
	{
		Oid			argtypes[1] = {INT4OID};
		Datum		args[1] = {Int32GetDatum(p->lookback)};
		bool		isnull;

		hwm_spi_exec(plan->newest_partitions_sql, 1, argtypes, args, NULL, SPI_OK_SELECT);
		partitions = (int) SPI_processed;
		if (partitions > 0)
		{
			SPITupleTable *tt = SPI_tuptable;
			int16		len = get_typlen(plan->part.type);
			bool		byval = get_typbyval(plan->part.type);
			Datum		newest = datumCopy(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull),
										   byval, len);
			Datum		oldest = datumCopy(SPI_getbinval(tt->vals[partitions - 1], tt->tupdesc, 1, &isnull),
										   byval, len);

			from_text = hwm_value_out(&plan->part, oldest);
			to_text = hwm_value_out(&plan->part, newest);
			hwm_overwrite_range(plan, oldest, newest, &deleted, &inserted);
		}
	}
	hwm_unbecome(&sw);

	/* step 5 */
	{
		HwmRunFacts run = HWM_RUN_FACTS_INIT(p->name, "load", started_at);

		run.rows_upserted = upserted;
		run.partitions = partitions;
		run.rows_deleted = deleted;
		run.rows_inserted = inserted;
		run.watermark_before = p->watermark;
		run.watermark_after = wm_after;
		run.from_partition = from_text;
		run.to_partition = to_text;
		run_id = hwm_record_run(&run);
	}
	hwm_update_state_after_run(p->name, run_id, started_at, advanced, wm_after,
							   upserted + deleted + inserted);

	ereport(NOTICE,
			(errmsg("hwm: pipeline \"%s\": rows upserted " INT64_FORMAT ", partitions overwritten %d (rows deleted " INT64_FORMAT ", inserted or updated " INT64_FORMAT "), watermark %s -> %s%s%s",
					p->name, upserted, partitions, deleted, inserted,
					p->watermark ? p->watermark : "(none)",
					wm_after ? wm_after : "(none)",
					held ? ", held back by " : "", held ? held : "")));

	values[0] = Int64GetDatum(upserted);
	values[1] = Int32GetDatum(partitions);
	values[2] = Int64GetDatum(deleted);
	values[3] = Int64GetDatum(inserted);
	values[6] = Int64GetDatum(run_id);
	{
		/* the texts must outlive SPI_finish */
		MemoryContext spicxt = MemoryContextSwitchTo(callercxt);

		nulls[4] = p->watermark == NULL;
		if (!nulls[4])
			values[4] = CStringGetTextDatum(p->watermark);
		nulls[5] = wm_after == NULL;
		if (!nulls[5])
			values[5] = CStringGetTextDatum(wm_after);
		MemoryContextSwitchTo(spicxt);
	}
	SPI_finish();

	MemoryContextSwitchTo(callercxt);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

PG_FUNCTION_INFO_V1(hwm_catch_up);

/*
 * CALL hwm.catch_up(pipeline): run the pipeline again and again until its
 * watermark stops moving.  Called outside a transaction block, each run (one
 * batch of at most batch_size rows) commits on its own, so a large backlog
 * never makes one long transaction and a stop in the middle keeps every batch
 * done so far.  Inside a transaction block, the runs share the caller's
 * transaction.
 */
Datum
hwm_catch_up(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	bool		atomic = !(fcinfo->context && IsA(fcinfo->context, CallContext) &&
						   !castNode(CallContext, fcinfo->context)->atomic);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int64		total = 0;
	int			runs = 0;

	args[0] = CStringGetTextDatum(name);
	SPI_connect_ext(atomic ? 0 : SPI_OPT_NONATOMIC);
	(void) hwm_pipeline_fetch(name, false, false);	/* exists, and may be run by us */
	for (;;)
	{
		bool		isnull;
		bool		moved;

		char	   *before;
		char	   *after;

		/*
		 * Compared here rather than with IS DISTINCT FROM in the query, which
		 * would look up "=" through the caller's search_path.
		 */
		hwm_spi_exec("SELECT r.rows_upserted, r.watermark_before, r.watermark_after"
					 " FROM hwm.run($1) AS r",
					 1, argtypes, args, NULL, SPI_OK_SELECT);
		total += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		before = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		after = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		moved = (before == NULL) != (after == NULL) ||
			(before != NULL && strcmp(before, after) != 0);
		runs++;
		if (!atomic)
			SPI_commit();
		if (!moved)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	SPI_finish();

	ereport(NOTICE,
			(errmsg("hwm: pipeline \"%s\" caught up: runs %d, rows upserted " INT64_FORMAT "%s",
					name, runs, total, atomic ? " (in the caller's transaction)" : "")));
	PG_RETURN_VOID();
}
