/*
 * hwm_test.h
 *		What the files of hwm_test.so call of one another: the module's
 *		entry (hwm_test.c) sets up each concern that needs it.
 */
#ifndef HWM_TEST_H
#define HWM_TEST_H

/* clock_mock.c: while shared_preload_libraries is processed, its hook and shared memory */
extern void hwm_test_clock_mock_init(void);

/* pause_points.c: while shared_preload_libraries is processed, its hook and setting */
extern void hwm_test_pause_points_init(void);

#endif							/* HWM_TEST_H */
