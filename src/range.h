/*
 * range.h
 *		The one layer for range overwrites (range.c): make the target's rows
 *		in a range of the partition column equal to the source's, by the
 *		row-by-row diff or by partition exchange.  hwm.overwrite,
 *		hwm.overwrite_partition, backfill steps and the lookback call it; it
 *		calls exchange.c and executes what pipeline.c built.
 */
#ifndef HWM_RANGE_H
#define HWM_RANGE_H

#include "postgres.h"

#include "fmgr.h"
#include "pipeline.h"

/* What an overwrite did */
typedef struct HwmOverwrite
{
	int64		deleted;		/* rows deleted (an exchange: all old rows) */
	int64		inserted;		/* rows inserted or updated (exchange: all new) */
	const char *method;			/* "diff", "exchange" or "exchange+diff" */
} HwmOverwrite;

extern void hwm_range_overwrite(const HwmPlan *plan, Datum from, Datum to,
								bool may_exchange, HwmOverwrite *result);
extern void hwm_range_parse(const HwmPlan *plan, FunctionCallInfo fcinfo,
							int from_arg, int to_arg,
							Datum *from, Datum *to,
							char **from_text, char **to_text);

#endif							/* HWM_RANGE_H */
