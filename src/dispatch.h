/*
 * dispatch.h
 *		The scheduler's processes inside a database (dispatch.c): the
 *		dispatcher, which claims a database's due runs, and the worker that
 *		serves a queue of them.  The launcher starts them by name (bgw_function_name) and
 *		never calls into dispatch.c; only hwm.c does, for its settings.
 */
#ifndef HWM_DISPATCH_H
#define HWM_DISPATCH_H

#include "postgres.h"

#include "utils/guc.h"

/* hwm.enabled: scheduled runs start (the launcher claims, a worker serves) */
extern bool hwm_enabled;

/* hwm.notify_channel */
extern char *hwm_notify_channel;

/* hwm.queue_budget (ms): a worker's turn at its queue */
extern int	hwm_queue_budget;

/* hwm.scheduled_timeout (ms): the time limit of a scheduled run without a timeout of its own */
extern int	hwm_scheduled_timeout;

extern bool hwm_notify_channel_check(char **newval, void **extra, GucSource source);

#endif							/* HWM_DISPATCH_H */
