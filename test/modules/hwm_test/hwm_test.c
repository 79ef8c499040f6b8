/*
 * hwm_test.c
 *		hwm_test.so: the C functions that hwm's tests call and that users
 *		must not find in hwm.so.  This file is the module's entry (its
 *		magic block, _PG_init); each concern is a file of its own
 *		(grid_probe.c, clock_mock.c, pause_points.c), and what one tests of hwm is compiled
 *		in from ../../../src (see the Makefile).  Installed only by the
 *		tests' set-up, never by hwm's make install; a suite declares what
 *		it uses, AS 'hwm_test', 'name'.
 */
#include "postgres.h"

#include "hwm_test.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Loaded by a function call (sql/grid.sql), nothing to set up; preloaded
 * after hwm (a TAP cluster's shared_preload_libraries = 'hwm, hwm_test'),
 * the scheduler's mock clock and its pause points.
 */
void
_PG_init(void)
{
	hwm_test_clock_mock_init();
	hwm_test_pause_points_init();
}
