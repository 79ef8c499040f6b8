/*
 * schedule.h
 *		When a pipeline runs: the checks of a schedule, and storing one
 *		(schedule.c, which also holds hwm.schedule, hwm.unschedule,
 *		hwm.pause, hwm.resume and hwm.set_timeout).  Called by manage.c
 *		(create_pipeline's schedule); the anchored arithmetic, and so the
 *		next slot, is grid.c's.
 */
#ifndef HWM_SCHEDULE_H
#define HWM_SCHEDULE_H

#include "postgres.h"

#include "datatype/timestamp.h"

/* refuse a schedule with a negative part or shorter than a second */
extern void hwm_check_schedule(const Interval *every, const char *what);

/* store a schedule and its first run time; returns that time */
extern TimestampTz hwm_schedule_set(const char *pipeline, const Interval *every,
									TimestampTz start_at);

#endif							/* HWM_SCHEDULE_H */
