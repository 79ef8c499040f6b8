/*
 * clock.h
 *		The scheduler's clock (clock.c): the one time by which its processes
 *		decide what is due and when to wake, and the hooks through which the
 *		tests' own module moves it forward and holds the scheduler's
 *		processes at named points.
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

/*
 * A point in a scheduler process where a test may hold it, to make a race
 * between two processes happen in one order on purpose
 * (test/t/078_chain_worker_race.pl).  NULL, as in every server users run:
 * hwm_pause_point does nothing.  Only the tests' own module sets it
 * (test/modules/hwm_test, pause_points.c), which waits there while a test
 * session holds the point's advisory lock.  Called inside a transaction.
 * The points:
 *
 *   dispatcher_applies_wakes   a dispatcher's hwm_state_apply_wakes
 *                              (catalog.c), after it has read which
 *                              workers apply their runs' wakes and before
 *                              its statement reads hwm.wakes (with the
 *                              snapshot it took before: 078, 07a)
 *   worker_applies_wakes       a worker's chain_woken (worker.c), after its
 *                              run committed and before it applies that
 *                              run's wakes
 *   dispatcher_sweeps          a dispatcher's sweep of interrupted runs
 *                              (hwm_runs_sweep_interrupted, catalog.c),
 *                              after it read the runs the slots hold and
 *                              before its statement (07b)
 *   worker_starts_reconcile    a worker's serve_reconcile (worker.c), after
 *                              the reconcile was found due and that was
 *                              committed, before it takes the pipeline's
 *                              lock to start it
 *                              (test/t/079_reconcile_paused_race.pl)
 */
typedef void (*hwm_pause_hook_type) (const char *point);
extern PGDLLEXPORT hwm_pause_hook_type hwm_pause_hook;

static inline void
hwm_pause_point(const char *point)
{
	if (hwm_pause_hook != NULL)
		hwm_pause_hook(point);
}

#endif							/* HWM_CLOCK_H */
