/*
 * load.c
 *		hwm.run(pipeline): one incremental run in the caller's transaction.
 *
 *	1. lock the pipeline's catalog row (a concurrent run of the same pipeline
 *	   waits here, then reads the watermark this run leaves);
 *	2. find the greatest watermark value above the stored one;
 *	3. upsert the slice (old, new] on the business key, skipping rows whose
 *	   values did not change;
 *	4. overwrite the lookback newest partitions to catch late rows;
 *	5. store the new watermark and the run's facts, in the same transaction.
 *
 * The upsert is bounded above by the value found in step 2, so what is
 * loaded is exactly what the stored watermark claims: a row committed between
 * the two statements with a greater value is left for the next run.
 */
#include "hwm.h"

#include "access/htup_details.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(hwm_run);

Datum
hwm_run(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	TimestampTz started_at = GetCurrentTimestamp();
	MemoryContext callercxt = CurrentMemoryContext;
	HwmPipeline *p;
	HwmPlanSpec spec = {0};
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
	int64		run_id;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	SPI_connect();
	p = hwm_pipeline_fetch(name, true);

	spec.source = p->source;
	spec.target = p->target;
	spec.unique_key = p->unique_key;
	spec.watermark_column = p->watermark_column;
	spec.partition_column = p->lookback > 0 ? p->partition_column : NULL;
	spec.pipeline = p->name;

	hwm_become(p->owner, true, &sw);
	plan = hwm_plan_build(&spec);
	hwm_check_privileges(p->owner, &spec, plan);

	/* steps 2 and 3: the slice above the watermark */
	{
		Oid			argtypes[2] = {plan->wm.type, plan->wm.type};
		Datum		args[2];
		bool		isnull;
		Datum		newwm;

		if (p->watermark)
		{
			args[0] = hwm_value_in(&plan->wm, p->watermark, "stored watermark");
			hwm_spi_exec(plan->max_wm_sql, 1, argtypes, args, NULL, SPI_OK_SELECT);
		}
		else
			hwm_spi_exec(plan->max_wm_first_sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);

		if (SPI_processed > 0)
		{
			newwm = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
			newwm = datumCopy(newwm, get_typbyval(plan->wm.type), get_typlen(plan->wm.type));
			if (p->watermark)
			{
				args[1] = newwm;
				hwm_spi_exec(plan->upsert_sql, 2, argtypes, args, NULL, SPI_OK_INSERT);
			}
			else
			{
				args[0] = newwm;
				hwm_spi_exec(plan->upsert_first_sql, 1, argtypes, args, NULL, SPI_OK_INSERT);
			}
			upserted = (int64) SPI_processed;
			wm_after = hwm_value_out(&plan->wm, newwm);
			advanced = true;
		}
		else
			wm_after = p->watermark;
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
	run_id = hwm_record_run(p->name, "load", started_at, upserted, partitions,
							deleted, inserted, p->watermark, wm_after,
							from_text, to_text);
	hwm_update_state_after_run(p->name, run_id, started_at, advanced, wm_after,
							   upserted + deleted + inserted);

	ereport(NOTICE,
			(errmsg("hwm: pipeline \"%s\" upserted " INT64_FORMAT " rows, overwrote %d partitions (" INT64_FORMAT " rows deleted, " INT64_FORMAT " inserted or updated), watermark %s -> %s",
					p->name, upserted, partitions, deleted, inserted,
					p->watermark ? p->watermark : "(none)",
					wm_after ? wm_after : "(none)")));

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
