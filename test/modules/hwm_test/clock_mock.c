/*
 * clock_mock.c
 *		The scheduler's clock as the tests move it: hwm's
 *		hwm_clock_offset_hook (src/clock.c) set in every process of a test
 *		cluster, the offset in shared memory, and the SQL functions that
 *		move it forward and read it, which a test declares itself:
 *
 *   CREATE FUNCTION hwm_test_advance_clock(interval) RETURNS timestamptz
 *     LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_advance_clock';
 *   CREATE FUNCTION hwm_test_clock_offset() RETURNS interval
 *     LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_clock_offset';
 *
 * (test/perl/HwmTest.pm has them: new_node(..., mock_clock => 1) preloads
 * the module, $HwmTest::MOCK_CLOCK_SQL declares them.)
 *
 * It works only preloaded with hwm (shared_preload_libraries = 'hwm,
 * hwm_test'): the hook is set in the postmaster, so every process it starts
 * (the launcher, dispatchers, workers, sessions) has it, and the offset is
 * in shared memory, so every one of them reads the same clock.  Loaded by a
 * function call instead (sql/grid.sql), the module sets nothing, and moving
 * the clock is refused.
 *
 * The clock only moves forward (hwm's rule, src/clock.c): the scheduler's
 * time is the real time plus the offset, which starts at zero with the
 * server and grows by what hwm_test_advance_clock adds; it refuses to take
 * any back.  After moving it, it rings hwm's doorbell (hwm_clock_moved), so
 * that the launcher compares its due times with the new time at once and
 * dispatches this database; the test then polls for what it expects (a run,
 * a row), never sleeps.
 *
 * hwm's two symbols are looked up in hwm.so (load_external_function), which
 * the preload has loaded already: the module is never linked against hwm,
 * and loads without it.
 */
#include "postgres.h"

#include "clock.h"
#include "hwm_test.h"

#include "common/int.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(hwm_test_advance_clock);
PG_FUNCTION_INFO_V1(hwm_test_clock_offset);

typedef struct ClockMock
{
	pg_atomic_uint64 offset;	/* microseconds, never below zero */
} ClockMock;

static ClockMock *mock = NULL;
static void (*clock_moved) (void) = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* hwm's hook: how far the scheduler's clock is ahead of the real one */
static int64
mock_offset(void)
{
	return mock ? (int64) pg_atomic_read_u64(&mock->offset) : 0;
}

static void
clock_mock_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ClockMock)));
}

static void
clock_mock_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	mock = ShmemInitStruct("hwm_test mock clock", sizeof(ClockMock), &found);
	if (!found)
		pg_atomic_init_u64(&mock->offset, 0);
	LWLockRelease(AddinShmemInitLock);
}

void
hwm_test_clock_mock_init(void)
{
	hwm_clock_offset_hook_type *hook;

	if (!process_shared_preload_libraries_in_progress)
		return;
	hook = (hwm_clock_offset_hook_type *)
		load_external_function("$libdir/hwm", "hwm_clock_offset_hook", true, NULL);
	clock_moved = (void (*) (void))
		load_external_function("$libdir/hwm", "hwm_clock_moved", true, NULL);
	*hook = mock_offset;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = clock_mock_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = clock_mock_shmem_startup;
}

/* The offset as an interval (of hours, minutes and seconds) */
static Interval *
offset_interval(int64 usecs)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = usecs;
	return iv;
}

/*
 * hwm_test_advance_clock(by interval) -> timestamptz: the scheduler's clock
 * moved forward by `by` (days count 24 hours; months, which have no fixed
 * length, and anything negative are refused), hwm's launcher told; returns
 * the scheduler's time now.
 */
Datum
hwm_test_advance_clock(PG_FUNCTION_ARGS)
{
	Interval   *by = PG_GETARG_INTERVAL_P(0);
	int64		usecs;
	uint64		old;
	int64		now;

	if (mock == NULL || clock_moved == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the mock clock needs hwm_test preloaded with hwm"),
				 errhint("Set shared_preload_libraries = 'hwm, hwm_test' and restart.")));
	if (by->month != 0 ||
		pg_mul_s64_overflow((int64) by->day, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, by->time, &usecs) || usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the mock clock moves forward by days, hours, minutes and seconds only")));
	old = pg_atomic_read_u64(&mock->offset);
	for (;;)
	{
		int64		next;

		/* (the scheduler's time stays one PostgreSQL can store) */
		if (pg_add_s64_overflow((int64) old, usecs, &next) ||
			pg_add_s64_overflow(GetCurrentTimestamp(), next, &now) ||
			!IS_VALID_TIMESTAMP(now))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("the mock clock cannot move that far")));
		if (pg_atomic_compare_exchange_u64(&mock->offset, &old, (uint64) next))
			break;
	}
	clock_moved();
	PG_RETURN_TIMESTAMPTZ(now);
}

/* hwm_test_clock_offset() -> interval: how far the scheduler's clock is ahead */
Datum
hwm_test_clock_offset(PG_FUNCTION_ARGS)
{
	PG_RETURN_INTERVAL_P(offset_interval(mock_offset()));
}
