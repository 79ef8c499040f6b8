/*
 * overwrite.c
 *		hwm.overwrite(pipeline, from, to) and hwm.overwrite_partition(target,
 *		source, column, from, to): the SQL entry points of a partition
 *		overwrite.  Each checks its arguments and rights, builds the plan,
 *		and leaves the overwrite itself (partition exchange where it can, the
 *		diff elsewhere) to range.c; the run goes into hwm.runs with its method.
 */
#include "postgres.h"

#include "catalog.h"
#include "exchange.h"
#include "range.h"
#include "pipeline.h"
#include "privilege.h"
#include "util.h"
#include "compat.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "access/relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "utils/syscache.h"
#include "access/htup_details.h"

/* The summary row that overwrite and overwrite_partition return */
static Datum
overwrite_result(FunctionCallInfo fcinfo, const HwmOverwrite *ow, int64 run_id)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(ow->deleted);
	values[1] = Int64GetDatum(ow->inserted);
	values[2] = Int64GetDatum(run_id);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/* The hwm.runs row of an overwrite */
static int64
record_overwrite(const char *pipeline, TimestampTz started_at, const char *watermark,
				 const char *from_text, const char *to_text, const HwmOverwrite *ow)
{
	HwmRunFacts run = HWM_RUN_FACTS_INIT(pipeline, "overwrite", started_at);

	run.rows_deleted = ow->deleted;
	run.rows_inserted = ow->inserted;
	run.watermark_before = watermark;
	run.watermark_after = watermark;
	run.from_partition = from_text;
	run.to_partition = to_text;
	run.method = ow->method;
	return hwm_record_run(&run);
}

static void
overwrite_notice(const char *tgtname, const char *from, const char *to,
				 const HwmOverwrite *ow)
{
	ereport(NOTICE,
			(errmsg("hwm: overwrote %s from %s to %s: rows deleted " INT64_FORMAT ", inserted or updated " INT64_FORMAT,
					tgtname, from, to, ow->deleted, ow->inserted)));
}

PG_FUNCTION_INFO_V1(hwm_overwrite);

/*
 * hwm.overwrite(pipeline, from_partition, to_partition): overwrite a range
 * of a pipeline's partitions, as its owner, one run of the pipeline at a
 * time.
 */
Datum
hwm_overwrite(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	TimestampTz started_at = GetCurrentTimestamp();
	MemoryContext callercxt = CurrentMemoryContext;
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	char	   *from_text;
	char	   *to_text;
	HwmOverwrite ow;
	int64		run_id;

	hwm_require_arg(fcinfo, 3, "nowait");
	SPI_connect();
	p = hwm_pipeline_fetch(name, true, PG_GETARG_BOOL(3));
	hwm_pipeline_require_partitions(p, "overwrite", NULL);
	plan = hwm_plan_as_owner(p, false, true, true, &sw);
	hwm_range_parse(plan, fcinfo, 1, 2, &from, &to, &from_text, &to_text);
	hwm_range_overwrite(plan, from, to, true, &ow);
	hwm_unbecome(&sw);

	run_id = record_overwrite(p->name, started_at, p->watermark, from_text, to_text, &ow);
	hwm_update_state_after_run(p, run_id, started_at, false, NULL,
							   ow.deleted + ow.inserted, NULL);
	overwrite_notice(hwm_qualified_name(p->target), from_text, to_text, &ow);
	SPI_finish();

	MemoryContextSwitchTo(callercxt);
	return overwrite_result(fcinfo, &ow, run_id);
}

/* The target's primary key columns (NIL without one) */
static List *
primary_key_columns(Oid relid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	Oid			pk;
	List	   *cols = NIL;

	if (rel == NULL)
		return NIL;				/* hwm_plan_build says what is wrong */
	pk = RelationGetPrimaryKeyIndex(rel, false);

	if (OidIsValid(pk))
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pk));
		Form_pg_index idx;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", pk);
		idx = (Form_pg_index) GETSTRUCT(tup);
		for (int i = 0; i < idx->indnkeyatts; i++)
			cols = lappend(cols, get_attname(relid, idx->indkey.values[i], false));
		ReleaseSysCache(tup);
	}
	relation_close(rel, NoLock);
	return cols;
}

PG_FUNCTION_INFO_V1(hwm_overwrite_partition);

/*
 * hwm.overwrite_partition(target, source, partition_column, from, to): the
 * same overwrite without a pipeline, with the caller's rights, upserting on
 * the target's primary key when it has one.
 */
Datum
hwm_overwrite_partition(PG_FUNCTION_ARGS)
{
	TimestampTz started_at = GetCurrentTimestamp();
	MemoryContext callercxt = CurrentMemoryContext;
	HwmPlanSpec spec = {0};
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	char	   *from_text;
	char	   *to_text;
	HwmOverwrite ow;
	int64		run_id;

	hwm_require_arg(fcinfo, 0, "target");
	hwm_require_arg(fcinfo, 1, "source");
	hwm_require_arg(fcinfo, 2, "partition_column");
	spec.target = PG_GETARG_OID(0);
	spec.source = PG_GETARG_OID(1);
	spec.partition_column = NameStr(*PG_GETARG_NAME(2));

	SPI_connect();
	hwm_become(GetUserId(), true, &sw);
	spec.unique_key = primary_key_columns(spec.target);
	plan = hwm_plan_build(&spec);
	hwm_check_privileges(GetUserId(), &spec, plan);
	hwm_range_parse(plan, fcinfo, 3, 4, &from, &to, &from_text, &to_text);
	hwm_range_overwrite(plan, from, to, true, &ow);
	hwm_unbecome(&sw);

	run_id = record_overwrite(NULL, started_at, NULL, from_text, to_text, &ow);
	overwrite_notice(hwm_qualified_name(spec.target), from_text, to_text, &ow);
	SPI_finish();

	MemoryContextSwitchTo(callercxt);
	return overwrite_result(fcinfo, &ow, run_id);
}
