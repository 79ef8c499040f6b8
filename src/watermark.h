/*
 * watermark.h
 *		The safe watermark bound: how far a run may move the watermark
 *		given the transactions in flight (watermark.c).
 */
#ifndef HWM_WATERMARK_H
#define HWM_WATERMARK_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "plan.h"

/* What hwm_safe_bound() found */
typedef struct HwmSafeBound
{
	bool		hold;			/* keep the watermark where it is */
	bool		has_limit;		/* else keep it strictly below limit */
	Datum		limit;			/* in the watermark column's type */
	int			in_flight;		/* transactions that mattered */
	int			still_running;	/* ... of those, still running after the wait */
	const char *reason;			/* what holds the watermark back, for messages */
} HwmSafeBound;

/* hwm.wait_timeout, hwm.start_margin */
extern int	hwm_wait_timeout;
extern int	hwm_start_margin;

extern bool hwm_is_time_type(Oid type);
extern void hwm_safe_bound(const HwmPlan *plan, Oid source, const Interval *delay,
						   HwmSafeBound *b);

#endif							/* HWM_WATERMARK_H */
