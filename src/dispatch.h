/*
 * dispatch.h
 *		The scheduler's dispatcher (dispatch.c), which claims a database's
 *		due runs into queues that workers serve (worker.c): the settings of
 *		both, and what both do with a run's outcome.  The launcher starts
 *		the dispatcher and the workers by name (bgw_function_name) and reads
 *		only hwm.enabled here; hwm.c declares the settings; worker.c records
 *		outcomes.
 */
#ifndef HWM_DISPATCH_H
#define HWM_DISPATCH_H

#include "postgres.h"

#include "catalog.h"
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

/*
 * A 'running' row finished as failed or skipped (failed: counted, the next
 * run backed off), and listeners told at commit; nothing when the row is no
 * longer 'running'.  A finished scheduled run told to hwm.notify_channel's
 * listeners at commit.
 */
extern void hwm_outcome_record(int64 run_id, HwmRunStatus status, const char *sqlstate,
							   const char *error);
extern void hwm_outcome_notify(int64 run_id);

/*
 * A worker's run woke pipelines: apply the wakes now, and claim those of
 * the worker's owner now due into its own queue (see dispatch.c)
 */
extern int	hwm_claim_woken(int slotno, const char *upstream, Oid owner, int room,
							int64 budget_ms, int64 *run_ids, int32 *timeouts_ms,
							int64 *expected_ms, bool *dispatcher_needed);

#endif							/* HWM_DISPATCH_H */
