/*
 * changed.c
 *		hwm.changed(VARIADIC "any"): the "did this row change" test of the
 *		generated upserts.
 *
 * An upsert must not write a new row version when the incoming row equals
 * the stored one, and "equals" must mean the same bytes: 1.0 and 1.00 are
 * equal numerics, 'A' and 'a' equal citext values, yet replacing one with
 * the other is a change the target has to receive.  PostgreSQL's
 * record_image_ne says exactly that of two rows, but it needs the rows as
 * composite values: the upsert built ROW(t.a, t.b, ...) and
 * ROW(EXCLUDED.a, ...) for every conflicting row, that is two tuples formed
 * and deformed again, which cost about 1% of a large load (bench/FINDINGS.md).
 *
 * This function takes the columns directly: the first half of its arguments
 * is the stored row, the second half the incoming one, and it answers
 * whether any pair differs in binary image (datum_image_eq, as
 * record_image_ne does), two NULLs being equal.  Nothing is formed or
 * copied; a toasted value is detoasted only when the sizes match.
 *
 * A function takes at most FUNC_MAX_ARGS (100) arguments, so the generated
 * SQL joins calls of at most 50 pairs with OR (see pipeline.c).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

/* what datum_image_eq needs to know of each pair, cached per call site */
typedef struct ChangedPair
{
	int16		typlen;
	bool		typbyval;
} ChangedPair;

PG_FUNCTION_INFO_V1(hwm_changed);

Datum
hwm_changed(PG_FUNCTION_ARGS)
{
	int			nargs = PG_NARGS();
	int			npairs = nargs / 2;
	ChangedPair *pairs = (ChangedPair *) fcinfo->flinfo->fn_extra;

	if (pairs == NULL)
	{
		if (get_fn_expr_variadic(fcinfo->flinfo))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("hwm.changed takes its values as separate arguments, not as a VARIADIC array"),
					 errhint("Call it as hwm.changed(a1, a2, b1, b2).")));
		if (nargs == 0 || nargs % 2 != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("hwm.changed needs an even number of arguments, got %d", nargs),
					 errhint("Pass the stored row's values, then the incoming row's values in the same order.")));

		pairs = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, npairs * sizeof(ChangedPair));
		for (int i = 0; i < npairs; i++)
		{
			Oid			old_type = get_fn_expr_argtype(fcinfo->flinfo, i);
			Oid			new_type = get_fn_expr_argtype(fcinfo->flinfo, i + npairs);

			if (!OidIsValid(old_type) || !OidIsValid(new_type))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("hwm.changed could not determine the types of its arguments")));
			if (old_type != new_type)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("hwm.changed compares argument %d of type %s with argument %d of type %s",
								i + 1, format_type_be(old_type),
								i + npairs + 1, format_type_be(new_type)),
						 errhint("The two halves of the arguments must have the same types, pair by pair.")));
			get_typlenbyval(old_type, &pairs[i].typlen, &pairs[i].typbyval);
		}
		fcinfo->flinfo->fn_extra = pairs;
	}

	for (int i = 0; i < npairs; i++)
	{
		bool		old_null = PG_ARGISNULL(i);
		bool		new_null = PG_ARGISNULL(i + npairs);

		if (old_null != new_null)
			PG_RETURN_BOOL(true);
		if (old_null)
			continue;
		if (!datum_image_eq(PG_GETARG_DATUM(i), PG_GETARG_DATUM(i + npairs),
							pairs[i].typbyval, pairs[i].typlen))
			PG_RETURN_BOOL(true);
	}
	PG_RETURN_BOOL(false);
}
