/*
 * load.h
 *		hwm.run and CALL hwm.catch_up (load.c).  What the scheduler's worker
 *		calls: a scheduled run, which records itself in the 'running' row
 *		its dispatcher inserted.
 */
#ifndef HWM_LOAD_H
#define HWM_LOAD_H

#include "postgres.h"

/*
 * hwm.run(pipeline, nowait => true), recorded in its 'running' row run_id,
 * called directly (no SQL between the worker and the run); returns the
 * run_id it was recorded under
 */
extern int64 hwm_load_scheduled(const char *pipeline, int64 run_id, TimestampTz started_at);

#endif							/* HWM_LOAD_H */
