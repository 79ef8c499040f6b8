/*
 * clock.c
 *		The scheduler's clock: the time by which the launcher, the
 *		dispatcher and the workers decide what is due and when to wake, and
 *		the hook through which the tests' own module moves it forward, so
 *		that a test sees a schedule of an hour, a backoff of hours or a
 *		reconcile due tomorrow happen without waiting for them.
 *
 * hwm_now() is the real clock (GetCurrentTimestamp) plus an offset that only
 * hwm_clock_offset_hook gives.  The hook is NULL in every server users run:
 * then hwm_now() is GetCurrentTimestamp() and hwm_clock_of(t) is t, nothing
 * else.  The tests' module (test/modules/hwm_test, clock_mock.c, preloaded
 * after hwm in the test clusters that use it) sets it in every process,
 * with the offset in its shared memory, and calls hwm_clock_moved() after
 * moving it.
 *
 * The rule that keeps the scheduler's clock sound beside SQL's now() and
 * clock_timestamp(), which a module cannot move: the scheduler's clock is
 * the real clock plus an offset that is never below zero and only grows
 * (the module refuses to move it back; a negative offset counts as zero).
 *
 *	- On the scheduler's clock: the due times the scheduler computes (the
 *	  next slot of a claim, a failure's backoff, a failed claim's hour, a
 *	  skipped run's second, a scheduled reconcile's next slot), stored in
 *	  hwm.state.next_run_at and reconcile_next_run_at, and every time
 *	  compared with them: the dispatcher's now (which runs are due, their
 *	  next slots, the fair shares, the run slots' busy times and holds), the
 *	  launcher's (which database is due, how long to sleep, its upkeep), the
 *	  worker's (whether a reconcile is due, the end of its turn).
 *	- On the real clock, as they always were: every time a row records
 *	  (hwm.runs.started_at and finished_at, hwm.state.last_run_*,
 *	  late_since, data_as_of), and every due time a statement sets from
 *	  SQL's clock (hwm.schedule's and hwm.schedule_reconcile's first slots,
 *	  an upstream's wake, a run interrupted or handed back due again).
 *	- A due time computed from a recorded time moves onto the scheduler's
 *	  clock first (hwm_clock_of): a backoff counts from the failure's
 *	  finished_at plus the offset, and the time a pipeline becomes late
 *	  (data_as_of plus its target lag) is waited for at that time plus the
 *	  offset.
 *
 * So every comparison stays monotone: a real time is never later on the
 * scheduler's clock, so a due time SQL sets to now() is due at once, as it
 * means, and a slot between the real and the scheduler's now is a missed
 * slot (one catch-up run); moving the clock forward brings every due time
 * nearer, never farther; and a duration is always taken on one clock (a
 * run's, on the real one, from its row; a slot's hold, on the scheduler's).
 * The timers the server arms (a run's time limit, lock_timeout), the
 * launcher's reading of pg_database and its log's throttle, and wakeup.c's
 * leaving windows stay on the real clock: they decide nothing about what is
 * due.
 *
 * hwm_pause_hook (clock.h) is the tests' other hold on the scheduler: NULL
 * in every server users run, it lets the same module hold a dispatcher or a
 * worker at a named point (hwm_pause_point) while a test commits something
 * in between, so that a race between them happens in one order on purpose.
 *
 * It calls wakeup.c (the doorbell, for hwm_clock_moved).
 */
#include "postgres.h"

#include "clock.h"
#include "wakeup.h"

#include "common/int.h"
#include "utils/timestamp.h"

hwm_clock_offset_hook_type hwm_clock_offset_hook = NULL;
hwm_pause_hook_type hwm_pause_hook = NULL;

TimestampTz
hwm_now(void)
{
	return hwm_clock_of(GetCurrentTimestamp());
}

TimestampTz
hwm_clock_of(TimestampTz real)
{
	int64		offset;
	TimestampTz t;

	if (hwm_clock_offset_hook == NULL || TIMESTAMP_NOT_FINITE(real))
		return real;
	offset = hwm_clock_offset_hook();
	if (offset <= 0)
		return real;
	if (pg_add_s64_overflow(real, offset, &t) || !IS_VALID_TIMESTAMP(t))
		return DT_NOEND;
	return t;
}

/*
 * Due times have come nearer: the launcher looks at them again now rather
 * than at the end of its sleep, and dispatches this database at once.
 */
void
hwm_clock_moved(void)
{
	hwm_wakeup_launcher();
}
