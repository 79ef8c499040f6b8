/*
 * launcher.h
 *		The background scheduler's launcher (launcher.c): registered at
 *		server start, it serves every database that hwm.database lets it
 *		serve, starting a dispatcher (dispatch.c) and the runs' workers
 *		(worker.c) by name.  Only hwm.c calls in, to register it; the SQL side reaches it
 *		through wakeup.h and the catalog tables.
 */
#ifndef HWM_LAUNCHER_H
#define HWM_LAUNCHER_H

#include "postgres.h"

/* hwm.max_workers */
extern int	hwm_max_workers;

/* from _PG_init: while preloading, register the launcher (true: registered) */
extern bool hwm_scheduler_init(void);

#endif							/* HWM_LAUNCHER_H */
