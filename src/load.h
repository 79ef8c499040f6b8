/*
 * load.h
 *		hwm.run and CALL hwm.catch_up (load.c).  What the scheduler's worker
 *		calls: a scheduled run, which records itself in the 'running' row
 *		its dispatcher inserted.
 */
#ifndef HWM_LOAD_H
#define HWM_LOAD_H

#include "postgres.h"

/* SELECT * FROM hwm.run(pipeline, nowait => true), its row run_id; the result in SPI_tuptable */
extern void hwm_load_scheduled(const char *pipeline, int64 run_id, TimestampTz started_at);

#endif							/* HWM_LOAD_H */
