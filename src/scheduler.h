/* transitional */
#ifndef HWM_SCHEDULER_H
#define HWM_SCHEDULER_H
#include "postgres.h"
extern char *hwm_database;
extern bool hwm_enabled;
extern int	hwm_max_workers;
extern int	hwm_max_runs_per_pipeline;
extern int	hwm_history_days;
extern void hwm_scheduler_init(void);
extern void hwm_scheduler_wake_at_commit(void);
extern void hwm_scheduler_warn_if_not_served(const char *pipeline);
#endif
