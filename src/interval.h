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
extern int64 hwm_interval_run(HwmPipeline *p, TimestampTz started_at,
							  int64 scheduled_run_id, int64 *rows, char **after);

/* CALL hwm.catch_up begins (true) or ends (false): runs stop at what was ready first */
extern void hwm_interval_catch_up(bool active);

#endif							/* HWM_INTERVAL_H */
