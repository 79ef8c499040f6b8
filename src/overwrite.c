/*
 * overwrite.c
 *		Partition overwrite: make the target's rows in an inclusive range of
 *		the partition column equal to the source's, in one transaction.
 *
 * With a unique key the overwrite is a diff rather than a blind rewrite:
 * delete the target rows of the range whose key the source's range no
 * longer has, then upsert the source's range, skipping rows whose values did
 * not change.  The resulting rows are those of DELETE + INSERT ... SELECT;
 * a row whose key now lives in another partition is moved by the upsert
 * instead of failing on the unique index; and a second overwrite of the same
 * range writes nothing at all.  Without a key (overwrite_partition on a
 * table with no primary key) it is the plain DELETE + INSERT.  Either way
 * both statements run in the caller's transaction, so readers see the old
 * range or the new one, never an empty one.
 */
#include "hwm.h"

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

/*
 * Overwrite [from, to] of the plan's target from its source.
 */
void
hwm_overwrite_range(const HwmPlan *plan, Datum from, Datum to,
					int64 *rows_deleted, int64 *rows_inserted)
{
	Oid			argtypes[2] = {plan->part.type, plan->part.type};
	Datum		values[2] = {from, to};

	hwm_spi_exec(plan->delete_range_sql, 2, argtypes, values, NULL, SPI_OK_DELETE);
	*rows_deleted = (int64) SPI_processed;
	hwm_spi_exec(plan->insert_range_sql, 2, argtypes, values, NULL, SPI_OK_INSERT);
	*rows_inserted = (int64) SPI_processed;
}

/*
 * Read an inclusive partition range from two text arguments: both required,
 * parsed with the partition column's type, and not reversed.  Also returns
 * the bounds in canonical text form for the run history.
 */
void
hwm_parse_range(const HwmPlan *plan, FunctionCallInfo fcinfo,
				int from_arg, int to_arg, Datum *from, Datum *to,
				char **from_text, char **to_text)
{
	char	   *f = hwm_text_arg(fcinfo, from_arg, "from_partition");
	char	   *t = hwm_text_arg(fcinfo, to_arg, "to_partition");

	*from = hwm_value_in(&plan->part, f, "from_partition");
	*to = hwm_value_in(&plan->part, t, "to_partition");
	*from_text = hwm_value_out(&plan->part, *from);
	*to_text = hwm_value_out(&plan->part, *to);
	if (hwm_value_cmp(&plan->part, *from, *to) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_partition must not be greater than to_partition"),
				 errdetail("from_partition is \"%s\" and to_partition is \"%s\".",
						   *from_text, *to_text),
				 errhint("Swap the two bounds: the range is inclusive at both ends.")));
}

/* The summary row that overwrite and overwrite_partition return */
static Datum
overwrite_result(FunctionCallInfo fcinfo, int64 deleted, int64 inserted, int64 run_id)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(deleted);
	values[1] = Int64GetDatum(inserted);
	values[2] = Int64GetDatum(run_id);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

static void
overwrite_notice(const char *tgtname, const char *from, const char *to,
				 int64 deleted, int64 inserted)
{
	ereport(NOTICE,
			(errmsg("hwm: overwrote %s from %s to %s: rows deleted " INT64_FORMAT ", inserted or updated " INT64_FORMAT,
					tgtname, from, to, deleted, inserted)));
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
	HwmPlanSpec spec;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	Datum		from;
	Datum		to;
	char	   *from_text;
	char	   *to_text;
	int64		deleted;
	int64		inserted;
	int64		run_id;
	const char *method;

	hwm_require_arg(fcinfo, 3, "nowait");
	SPI_connect();
	p = hwm_pipeline_fetch(name, true, PG_GETARG_BOOL(3));
	if (p->partition_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no partition column", p->name),
				 errhint("Drop the pipeline and create it again with partition_column => '...' to overwrite partitions.")));

	hwm_spec_for(p, false, true, &spec);

	hwm_become(p->owner, true, &sw);
	plan = hwm_plan_build(&spec);
	hwm_check_privileges(p->owner, &spec, plan);
	hwm_parse_range(plan, fcinfo, 1, 2, &from, &to, &from_text, &to_text);
	method = hwm_overwrite_or_exchange(plan, from, to, &deleted, &inserted);
	hwm_unbecome(&sw);

	run_id = hwm_record_run(p->name, "overwrite", started_at, -1, -1,
							deleted, inserted, p->watermark, p->watermark,
							from_text, to_text);
	hwm_record_method(run_id, method);
	hwm_update_state_after_run(p->name, run_id, started_at, false, NULL,
							   deleted + inserted);
	overwrite_notice(hwm_qualified_name(p->target), from_text, to_text,
					 deleted, inserted);
	SPI_finish();

	MemoryContextSwitchTo(callercxt);
	return overwrite_result(fcinfo, deleted, inserted, run_id);
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
	int64		deleted;
	int64		inserted;
	int64		run_id;
	const char *method;

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
	hwm_parse_range(plan, fcinfo, 3, 4, &from, &to, &from_text, &to_text);
	method = hwm_overwrite_or_exchange(plan, from, to, &deleted, &inserted);
	hwm_unbecome(&sw);

	run_id = hwm_record_run(NULL, "overwrite", started_at, -1, -1,
							deleted, inserted, NULL, NULL, from_text, to_text);
	hwm_record_method(run_id, method);
	overwrite_notice(hwm_qualified_name(spec.target), from_text, to_text,
					 deleted, inserted);
	SPI_finish();

	MemoryContextSwitchTo(callercxt);
	return overwrite_result(fcinfo, deleted, inserted, run_id);
}
