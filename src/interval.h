/*
 * interval.h
 *		Interval pipelines: the interval grid of a time column, a run over
 *		the next finished interval (or the backlog), and reruns of a range
 *		of intervals (interval.c).
 */
#ifndef HWM_INTERVAL_H
#define HWM_INTERVAL_H

#include "postgres.h"

#include "catalog.h"
#include "pipeline.h"

extern void hwm_interval_check_column(const HwmPlan *plan, const char *column);
extern void hwm_interval_check(const HwmPlan *plan, const Interval *step,
							   const char *anchor, const char *start_at);
extern void hwm_interval_check_boundary(const HwmPlan *plan, const Interval *step,
										const char *anchor, const char *value,
										const char *what);

/*
 * CALL hwm.catch_up repeats hwm.run until the watermark stops moving.  On
 * an interval grid the end of what is ready follows the clock, so with
 * short intervals it would never stop: within a catch-up, runs go no
 * further than the end the first of them found ready, its horizon.  The
 * catch-up owns it (zeroed: not set yet) and hands it to each of its runs.
 */
typedef struct HwmIntervalHorizon
{
	bool		set;
	Timestamp	end;
} HwmIntervalHorizon;

extern int64 hwm_interval_run(HwmPipeline *p, TimestampTz started_at,
							  int64 scheduled_run_id, HwmIntervalHorizon *horizon,
							  int64 *rows, char **after);

#endif							/* HWM_INTERVAL_H */
