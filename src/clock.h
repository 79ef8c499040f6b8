/*
 * clock.h
 *		The scheduler's clock (clock.c): the one time by which its processes
 *		decide what is due and when to wake, and the hook through which the
 *		tests' own module moves it forward.
 */
#ifndef HWM_CLOCK_H
#define HWM_CLOCK_H

#include "postgres.h"

#include "datatype/timestamp.h"

/*
 * How far, in microseconds, the scheduler's clock is ahead of the real one
 * (GetCurrentTimestamp).  NULL, as in every server users run: not ahead at
 * all.  Only the tests' own module sets it (test/modules/hwm_test,
 * clock_mock.c), in every process of a test cluster that preloads it after
 * hwm; a value below zero counts as zero, so the scheduler's clock is never
 * behind the real one.
 */
typedef int64 (*hwm_clock_offset_hook_type) (void);
extern PGDLLEXPORT hwm_clock_offset_hook_type hwm_clock_offset_hook;

/* The scheduler's time now */
extern TimestampTz hwm_now(void);

/*
 * A time read on the real clock (SQL's now() or clock_timestamp(), a
 * row's finished_at), on the scheduler's: real plus the offset (infinite
 * times stay as they are; past the last time PostgreSQL can store, DT_NOEND)
 */
extern TimestampTz hwm_clock_of(TimestampTz real);

/* The tests' module moved the clock: the launcher looks again at once */
extern PGDLLEXPORT void hwm_clock_moved(void);

#endif							/* HWM_CLOCK_H */
