/*
 * running.h
 *		A run owns its pipeline until it ends: the pipelines whose run is in
 *		progress in this backend, what their runs may not do (running.c).
 */
#ifndef HWM_RUNNING_H
#define HWM_RUNNING_H

#include "postgres.h"

/* called by _PG_init: the object access hook that refuses session locks */
extern void hwm_running_init(void);

/* a run of pipeline name begins (pushed) and ends (popped), nested runs inside */
extern void hwm_running_push(const char *name);
extern void hwm_running_pop(void);

/* refuse acting on pipeline name from inside a run of it */
extern void hwm_running_refuse(const char *name);

#endif							/* HWM_RUNNING_H */
