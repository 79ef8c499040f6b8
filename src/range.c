/*
 * range.c
 *		The one layer for range overwrites: make the target's rows in an
 *		inclusive range of the partition column equal to the source's, in the
 *		caller's transaction.  hwm.overwrite, hwm.overwrite_partition, every
 *		backfill step and the lookback of hwm.run come here; this module
 *		decides between partition exchange (exchange.c) and the diff, and
 *		executes the statements pipeline.c built.  It calls nothing above it.
 *
 * The diff: with a unique key, delete the target rows of the range whose
 * key the source's range no longer has, then upsert the source's range,
 * skipping rows whose values did not change.  The resulting rows are those
 * of DELETE + INSERT ... SELECT; a row whose key now lives in another
 * partition is moved by the upsert instead of failing on the unique index;
 * and a second overwrite of the same range writes nothing at all.  Without
 * a key (overwrite_partition on a table with no primary key) it is the plain
 * DELETE + INSERT.  Both statements run in the caller's transaction, so
 * readers see the old range or the new one, never an empty one.
 *
 * The exchange: when the target is declaratively partitioned on the column
 * and the range covers whole partitions, their new contents are built aside
 * and traded in (see exchange.c).  The order keeps the partitions'
 * exclusive locks short: first every new partition is built, then the rest
 * of the range is diffed, and only then is each partition locked and
 * exchanged; one whose lock is not granted in time is diffed after all.
 */
#include "postgres.h"

#include "exchange.h"
#include "pipeline.h"
#include "range.h"
#include "util.h"

#include "executor/spi.h"

/* Is the range empty (lo above hi, or lo = hi with an end excluded)? */
static bool
range_is_empty(const HwmValueType *vt, const HwmRange *r)
{
	int			c = hwm_value_cmp(vt, r->lo, r->hi);

	return c > 0 || (c == 0 && !(r->lo_incl && r->hi_incl));
}

/*
 * The diff of one piece of the range; false when the piece is empty and
 * nothing ran.
 */
static bool
diff_piece(const HwmPlan *plan, const HwmRange *r, HwmOverwrite *result)
{
	Oid			argtypes[2] = {plan->part.type, plan->part.type};
	Datum		values[2] = {r->lo, r->hi};

	if (range_is_empty(&plan->part, r))
		return false;
	hwm_spi_exec(plan->delete_range_sql[r->lo_incl][r->hi_incl], 2, argtypes, values,
				 NULL, SPI_OK_DELETE);
	result->deleted += (int64) SPI_processed;
	hwm_spi_exec(plan->insert_range_sql[r->lo_incl][r->hi_incl], 2, argtypes, values,
				 NULL, SPI_OK_INSERT);
	result->inserted += (int64) SPI_processed;
	return true;
}

/* The diff of each piece of a list; true when any was not empty */
static bool
diff_pieces(const HwmPlan *plan, List *pieces, HwmOverwrite *result)
{
	ListCell   *lc;
	bool		any = false;

	foreach(lc, pieces)
		any |= diff_piece(plan, (HwmRange *) lfirst(lc), result);
	return any;
}

/*
 * Overwrite [from, to] of the plan's target from its source.  With
 * may_exchange, the partitions the range covers are exchanged when
 * hwm.partition_exchange allows it (see the file header).  The counts are,
 * for an exchanged partition, all of its old rows (deleted) and all of its
 * new rows (inserted); the method is "diff", "exchange" (every row of the
 * range was in an exchanged partition) or "exchange+diff".
 */
void
hwm_range_overwrite(const HwmPlan *plan, Datum from, Datum to, bool may_exchange,
					HwmOverwrite *result)
{
	HwmRange	whole = {from, to, true, true};
	HwmExchange *x = may_exchange ? hwm_exchange_build(plan, from, to) : NULL;
	List	   *leftover = NIL;
	bool		diffed;
	int			exchanged;

	result->deleted = 0;
	result->inserted = 0;
	result->method = "diff";
	if (x == NULL)
	{
		(void) diff_piece(plan, &whole, result);
		return;
	}
	diffed = diff_pieces(plan, hwm_exchange_gaps(x), result);
	exchanged = hwm_exchange_finish(x, &result->deleted, &result->inserted, &leftover);
	diffed |= diff_pieces(plan, leftover, result);
	if (exchanged > 0)
		result->method = diffed ? "exchange+diff" : "exchange";
}

/*
 * Read an inclusive partition range from two text arguments: both required,
 * parsed with the partition column's type, and not reversed.  Also returns
 * the bounds in canonical text form for the run history.
 */
void
hwm_range_parse(const HwmPlan *plan, FunctionCallInfo fcinfo,
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
