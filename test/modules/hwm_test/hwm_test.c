/*
 * hwm_test.c
 *		hwm_test.so: the C functions that hwm's tests call and that users
 *		must not find in hwm.so.  This file is the module's entry (its
 *		magic block); each concern is a file of its own (grid_probe.c),
 *		and what one tests of hwm is compiled in from ../../../src (see the
 *		Makefile).  Installed only by the tests' set-up, never by hwm's
 *		make install; a suite declares what it uses, AS 'hwm_test', 'name'.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;
