/*
 * hwm.c
 *		Module entry point: _PG_init defines the hwm.* settings (each
 *		module owns its variables; see their headers), registers the
 *		background scheduler, and installs hwm's one ProcessUtility hook
 *		and its one shared-memory set-up, each of which calls the modules
 *		it serves in turn, and, with the scheduler, watch.c's executor hook
 *		and commit callback.  Nothing calls into this file.
 *
 * hwm works without shared_preload_libraries: every SQL function loads the
 * module on first use.  Preloading it defines the settings, and reserves the
 * hwm.* prefix, when the server starts; only then is hwm.database defined
 * and the background scheduler registered (see launcher.c).
 */
#include "postgres.h"

#include "catalog.h"
#include "dispatch.h"
#include "exchange.h"
#include "owners.h"
#include "running.h"
#include "privilege.h"
#include "launcher.h"
#include "slots.h"
#include "wakeup.h"
#include "watch.h"
#include "watermark.h"
#include "compat.h"

#include <limits.h>

#include "postmaster/postmaster.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static ProcessUtility_hook_type prev_process_utility_hook = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * hwm's ProcessUtility hook: around every utility statement, the
 * scheduler's concerns (wakeup.c: the launcher woken by CREATE, ALTER, DROP
 * EXTENSION and DATABASE, hwm out of the way of a database statement that
 * needs the database to itself; only when the scheduler is preloaded), then
 * the owners' (owners.c: DROP ROLE, REASSIGN OWNED, DROP OWNED applied to
 * pipelines).  The database made way for is cleared whatever happens.
 */
static void
hwm_process_utility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	bool		scheduler = hwm_scheduler_preloaded;
	volatile Oid made_way = InvalidOid;

	if (scheduler)
		made_way = hwm_wakeup_before_utility(stmt, context == PROCESS_UTILITY_TOPLEVEL);
	PG_TRY();
	{
		void	   *owners = hwm_owners_before_utility(stmt);

		if (prev_process_utility_hook)
			prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
									  params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
		hwm_owners_after_utility(stmt, owners);
		if (scheduler)
			hwm_watch_after_utility(stmt);
	}
	PG_FINALLY();
	{
		if (scheduler)
			hwm_wakeup_after_utility(made_way);
	}
	PG_END_TRY();
}

/*
 * The scheduler's shared memory: the run slots (slots.c), the doorbell
 * (wakeup.c), the watched tables (watch.c)
 */
static void
hwm_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hwm_slots_shmem_size());
	RequestAddinShmemSpace(hwm_wakeup_shmem_size());
	RequestAddinShmemSpace(hwm_watch_shmem_size());
}

static void
hwm_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	hwm_wakeup_shmem_init();
	hwm_slots_shmem_init();
	hwm_watch_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

void
_PG_init(void)
{
	DefineCustomIntVariable("hwm.wait_timeout",
							"How long a run waits for writers of its source before holding the watermark back.",
							"A run waits at most this long for transactions that may still commit rows below the new watermark; "
							"if any is still running then, the run loads what it sees and keeps the watermark where it is safe.",
							&hwm_wait_timeout,
							1000, 0, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.start_margin",
							"How far behind the current time the watermark of a time-typed column stays at least.",
							"Covers a transaction that has taken its start time (now()) but is not yet visible to other sessions.",
							&hwm_start_margin,
							1000, 0, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("hwm.allow_superuser_pipelines",
							 "Allows pipelines owned by superusers.",
							 "A pipeline runs with its owner's rights; by default hwm refuses to create or run a pipeline whose owner is a superuser.",
							 &hwm_allow_superuser_pipelines,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("hwm.partition_exchange",
							 "Exchange whole partitions instead of overwriting them row by row.",
							 "When an overwrite or backfill range covers whole partitions of a declaratively partitioned target, "
							 "build their new contents aside and exchange them in, leaving no dead tuples; off: always the row-by-row diff.",
							 &hwm_partition_exchange,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.exchange_lock_timeout",
							"How long a partition exchange waits for its partition's lock.",
							"The exchange needs an ACCESS EXCLUSIVE lock on the partition for a moment; "
							"when it is not granted in this time, the partition is overwritten row by row instead.",
							&hwm_exchange_lock_timeout,
							1000, 1, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	/*
	 * Which databases the scheduler serves; defined only while preloading,
	 * as only the preloaded library runs the scheduler.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomStringVariable("hwm.database",
								   "The databases whose pipelines the background scheduler runs.",
								   "'*' (the default): every database where hwm is installed; "
								   "else a comma-separated list of database names, and only those.",
								   &hwm_database,
								   "*",
								   PGC_SIGHUP, GUC_LIST_INPUT,
								   hwm_database_check, NULL, NULL);
	DefineCustomBoolVariable("hwm.enabled",
							 "Whether the background scheduler starts scheduled runs.",
							 "Off: no new scheduled run starts (runs in progress finish, runs claimed and not started are handed back); hwm.run still works by hand.",
							 &hwm_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.max_workers",
							"How many scheduled runs may be in progress at once.",
							"Each run is a background worker, taken from max_worker_processes.",
							&hwm_max_workers,
							2, 1, MAX_BACKENDS,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.max_runs_per_pipeline",
							"How many finished runs hwm.runs keeps per pipeline, and per role of its runs without a pipeline.",
							"Older ones are deleted, of every kind, by hand or scheduled, each owner's on their own; 0 keeps all.",
							&hwm_max_runs_per_pipeline,
							1000, 0, INT_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.history_days",
							"How many days of finished runs hwm.runs keeps.",
							"Older ones are deleted, of every kind (the backfill runs of a pipeline with an unfinished backfill are kept); 0 keeps them regardless of age.",
							&hwm_history_days,
							0, 0, 36500,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("hwm.notify_channel",
							   "The channel on which each finished scheduled run is notified.",
							   "Every scheduled run that ends (succeeded, failed, skipped, interrupted) sends NOTIFY "
							   "on this channel in its database, with the payload {\"database\": ..., \"run_id\": N}; empty: no notifications.",
							   &hwm_notify_channel,
							   "hwm_runs",
							   PGC_SIGHUP, 0,
							   hwm_notify_channel_check, NULL, NULL);
	DefineCustomIntVariable("hwm.queue_budget",
							"How long a scheduled worker serves its queue before handing the rest back.",
							"A worker serves a queue of one owner's due runs; once a run ends past this budget, "
							"the runs not yet started are handed back, due again, for the next dispatch to share "
							"out; 0: one run per worker.",
							&hwm_queue_budget,
							1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.scheduled_timeout",
							"The time limit of a scheduled run whose pipeline has no timeout of its own.",
							"A pipeline's timeout (hwm.set_timeout) comes first, then this setting, then the owner's statement_timeout; 0: none. "
							"Only a superuser sets it (per role or database with ALTER ROLE/DATABASE ... SET), so an owner cannot lift it.",
							&hwm_scheduled_timeout,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("hwm");
	hwm_running_init();
	/* shared memory only with the scheduler (while preloading) */
	if (hwm_scheduler_init())
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = hwm_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = hwm_shmem_startup;
		hwm_watch_init();
	}
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = hwm_process_utility;
}
