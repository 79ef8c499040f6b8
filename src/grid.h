/*
 * grid.h
 *		anchor + k * step: the one arithmetic of schedules (schedule.c, the
 *		dispatcher's next slot and its backoff) and of interval pipelines'
 *		grids (interval.c), in integers, every step checked for overflow
 *		(grid.c).  grid.c calls no other module of hwm.
 */
#ifndef HWM_GRID_H
#define HWM_GRID_H

#include "postgres.h"

#include "datatype/timestamp.h"

/*
 * A grid: the points anchor + k * step for every integer k, where k * step
 * is the interval with each of step's parts (months, days, microseconds)
 * multiplied by k, added as timestamptz + interval adds it: months, then
 * days, then microseconds.  With local, months and days are counted in the
 * session's time zone (timestamptz + interval); without, in UTC (timestamp
 * + interval, the wall clock of a timestamp or date column).  The step has
 * no negative part and is not zero, so the points rise with k.
 */
typedef struct HwmGrid
{
	TimestampTz anchor;
	Interval	step;
	bool		local;
} HwmGrid;

extern void hwm_grid_init(HwmGrid *g, TimestampTz anchor, const Interval *step,
						  bool local);

/* Why step cannot be a grid's step (negative part, zero), else NULL */
extern const char *hwm_grid_step_problem(const Interval *step);

/* anchor + k * step; false when it is not a finite timestamp */
extern bool hwm_grid_point(const HwmGrid *g, int64 k, TimestampTz *result);

/* the greatest k with point(k) <= t (t finite); false when k is beyond int64 */
extern bool hwm_grid_index(const HwmGrid *g, TimestampTz t, int64 *k);

/*
 * The first point at or after the anchor (k >= 0) that is after `after` (at
 * it too, with inclusive); false when it is not a finite timestamp.
 */
extern bool hwm_grid_next(const HwmGrid *g, TimestampTz after, bool inclusive,
						  TimestampTz *result);

/*
 * Schedules: runs are due at start + k * every (k >= 0), counted in the
 * session's time zone.  The first slot after `after` (at it, with
 * inclusive), and when to retry after the n-th consecutive failure
 * (every * 2^(n-1) after finished, at most one hour or one schedule,
 * whichever is longer); false when no such time can be represented.
 */
extern bool hwm_grid_schedule_next(TimestampTz start, const Interval *every,
								   TimestampTz after, bool inclusive,
								   TimestampTz *result);
extern bool hwm_grid_retry_at(TimestampTz finished, const Interval *every,
							  int failures, TimestampTz *result);

/*
 * Microseconds of an interval with months of 30 days, as interval
 * comparison counts them, saturated to the range of int64.
 */
extern int64 hwm_interval_usecs(const Interval *iv);

#endif							/* HWM_GRID_H */
