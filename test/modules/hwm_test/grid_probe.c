/*
 * grid_probe.c
 *		hwm_grid_probe: src/grid.c's grid, as the scheduler and interval
 *		pipelines see it, for the property test of sql/grid.sql, which
 *		declares it itself.  grid.c is compiled into this module.
 */
#include "postgres.h"

#include "grid.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(hwm_grid_probe);

/*
 * hwm_grid_probe(anchor, step, t, local) -> (index, point, next): the grid's
 * index of t, its point there and the first point after t.  NULL point or
 * next: not representable.
 */
Datum
hwm_grid_probe(PG_FUNCTION_ARGS)
{
	HwmGrid		g;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	TimestampTz p = 0;
	int64		k = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "hwm_grid_probe must return a record");
	if (hwm_grid_step_problem(PG_GETARG_INTERVAL_P(1)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a grid's step cannot be used: %s", hwm_grid_step_problem(PG_GETARG_INTERVAL_P(1)))));
	hwm_grid_init(&g, PG_GETARG_TIMESTAMPTZ(0), PG_GETARG_INTERVAL_P(1), PG_GETARG_BOOL(3));
	nulls[0] = !hwm_grid_index(&g, PG_GETARG_TIMESTAMPTZ(2), &k);
	values[0] = Int64GetDatum(k);
	nulls[1] = nulls[0] || !hwm_grid_point(&g, k, &p);
	values[1] = TimestampTzGetDatum(p);
	nulls[2] = !hwm_grid_next(&g, PG_GETARG_TIMESTAMPTZ(2), false, &p);
	values[2] = TimestampTzGetDatum(p);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
