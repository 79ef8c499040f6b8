/*
 * wakeup.h
 *		What the scheduler's SQL side (schedule.c) and its launcher
 *		(scheduler.c) share, so that neither calls the other: whether the
 *		scheduler runs at all and in which database, and the launcher's
 *		doorbell in shared memory (wakeup.c).  wakeup.c calls no other module
 *		of hwm.
 */
#ifndef HWM_WAKEUP_H
#define HWM_WAKEUP_H

#include "postgres.h"

/* hwm.database: the database the launcher serves (NULL: not preloaded) */
extern char *hwm_database;

/* hwm was preloaded (and not under pg_upgrade): the launcher is registered */
extern bool hwm_scheduler_preloaded;

/* while shared_preload_libraries is processed: shared memory and callbacks */
extern void hwm_wakeup_init(void);

/* the launcher: this process is the one to wake, until it exits */
extern void hwm_wakeup_register_launcher(void);

/* wake the launcher now (a worker's exit), or when this transaction commits */
extern void hwm_wakeup_launcher(void);
extern void hwm_wakeup_at_commit(void);

#endif							/* HWM_WAKEUP_H */
