/*
 * scheduler.h
 *		The background scheduler: the launcher that starts due runs and the
 *		worker that runs one (scheduler.c).  Only hwm.c calls in, to register
 *		it; the SQL side reaches it through wakeup.h and the catalog tables.
 */
#ifndef HWM_SCHEDULER_H
#define HWM_SCHEDULER_H

#include "postgres.h"

/* hwm.enabled, hwm.max_workers, hwm.max_runs_per_pipeline, hwm.history_days */
extern bool hwm_enabled;
extern int	hwm_max_workers;

/* from _PG_init: while preloading, register the launcher */
extern void hwm_scheduler_init(void);

#endif							/* HWM_SCHEDULER_H */
