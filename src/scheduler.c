/*
 * scheduler.c
 *		The background scheduler: a launcher that finds due pipelines, and
 *		one short-lived worker per run.
 *
 * With shared_preload_libraries = 'hwm', _PG_init registers the launcher, a
 * background worker connected to the database named by hwm.database.  It
 * starts once recovery has finished (a hot standby runs nothing; promotion
 * starts it) and loops:
 *
 *	1. reap workers that have exited (recording those that died without
 *	   recording an outcome); when the extension is there, every 10 seconds
 *	   (and at once when it appears) mark 'running' rows that no worker
 *	   holds 'interrupted' and prune the history (hwm.max_runs_per_pipeline,
 *	   hwm.history_days), even while hwm.enabled is off;
 *	2. unless hwm.enabled is off or the extension is absent, read the due
 *	   pipelines (enabled, scheduled, next_run_at <= now(), no run of theirs
 *	   in progress), oldest first, as many as hwm.max_workers leaves room for;
 *	3. in the same transaction, for each: insert a 'running' row into
 *	   hwm.runs and move next_run_at to the first slot of the anchored grid
 *	   after now() (so a backlog becomes one catch-up run); a run whose
 *	   owner cannot start a session (dropped, or without LOGIN) fails at once;
 *	4. start a dynamic worker per run; when no background worker slot is free
 *	   (max_worker_processes exhausted), undo step 3 for it, log once, retry
 *	   a second later;
 *	5. sleep until the next pipeline is due, a worker exits, a schedule
 *	   changes or the extension is created or dropped (those ring the
 *	   launcher's doorbell, see wakeup.c), or 10 seconds have passed.
 *
 * Every iteration runs under its own error handler: an error is logged, its
 * transaction rolled back, and the loop goes on, so a broken pipeline (or a
 * dropped extension) never takes the launcher down.
 *
 * A worker connects as the pipeline's owner, pins search_path, arms the
 * pipeline's timeout as a statement timeout, and runs SELECT * FROM
 * hwm.run(pipeline, nowait => true) in one transaction that also deletes the
 * 'running' row (hwm.run records the successful run itself).  On an error
 * the transaction rolls back and a second one marks the row 'skipped' when
 * the pipeline was busy with another run, else 'failed'; a failure counts in
 * hwm.state and backs off: the retry waits schedule * 2^(n-1) after the n-th
 * consecutive failure, at most one hour or one schedule, whichever is
 * longer.  A 'running' row whose worker is gone (crash, immediate shutdown,
 * kill -9) is marked 'interrupted' when the launcher starts again.
 *
 * Shared memory holds one slot per possible worker, so that the number of
 * runs in flight is known even to a restarted launcher.  (The launcher's pid,
 * for wake-ups, is wakeup.c's.)
 *
 * Calls go one way: this module calls down into schedule.c (the anchored
 * schedule arithmetic), wakeup.c, catalog.c, privilege.c and util.c; none of
 * them calls back, and the SQL side reaches the launcher only through
 * wakeup.c and the catalog tables.
 */
#include "postgres.h"

#include "catalog.h"
#include "privilege.h"
#include "schedule.h"
#include "scheduler.h"
#include "util.h"
#include "wakeup.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

/* Settings of the launcher (defined in hwm.c; hwm.database is wakeup.c's) */
bool		hwm_enabled = true;
int			hwm_max_workers = 2;

/* How long the launcher sleeps at most, and between retries */
#define LAUNCHER_MAX_SLEEP_MS	10000
#define LAUNCHER_RETRY_MS		1000
#define LAUNCHER_MAINTENANCE_MS	10000

/* One run in flight */
typedef struct HwmWorkerSlot
{
	bool		in_use;			/* taken by the launcher for a run */
	bool		exited;			/* the worker has exited */
	bool		recorded;		/* ... after committing the run's outcome */
	pid_t		pid;			/* 0 until the worker has started */
	uint64		generation;		/* tells reuses of the slot apart */
	int64		run_id;			/* its 'running' row in hwm.runs */
} HwmWorkerSlot;

typedef struct HwmSchedShared
{
	slock_t		mutex;
	uint64		next_generation;
	int			nslots;
	HwmWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} HwmSchedShared;

/* What a worker is told, in bgw_extra */
typedef struct HwmWorkerArgs
{
	uint64		generation;
	int64		run_id;
	Oid			dboid;
	Oid			owner;
	int32		timeout_ms;		/* 0: none */
} HwmWorkerArgs;

StaticAssertDecl(sizeof(HwmWorkerArgs) <= BGW_EXTRALEN,
				 "HwmWorkerArgs must fit into bgw_extra");

static HwmSchedShared *sched = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PGDLLEXPORT void hwm_launcher_main(Datum main_arg);
PGDLLEXPORT void hwm_worker_main(Datum main_arg);

/* ------------------------------------------------------------------------
 * Shared memory, registration
 * ------------------------------------------------------------------------
 */

static Size
sched_shmem_size(void)
{
	return add_size(offsetof(HwmSchedShared, slots),
					mul_size(max_worker_processes, sizeof(HwmWorkerSlot)));
}

static void
sched_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sched_shmem_size());
}

static void
sched_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sched = ShmemInitStruct("hwm scheduler", sched_shmem_size(), &found);
	if (!found)
	{
		memset(sched, 0, sched_shmem_size());
		SpinLockInit(&sched->mutex);
		sched->nslots = max_worker_processes;
		sched->next_generation = 1;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * What the launcher and the workers have in common: a database connection,
 * started once recovery has finished, found in this library.
 */
static void
bgw_init(BackgroundWorker *bgw, const char *function_name, const char *name,
		 const char *type, int restart_time)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = restart_time;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "hwm");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "%s", function_name);
	snprintf(bgw->bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "%s", type);
}

/*
 * Called from _PG_init.  Only while shared_preload_libraries is processed
 * (and never under pg_upgrade) is the launcher registered and shared memory
 * requested; a module loaded later only provides the SQL functions.
 */
void
hwm_scheduler_init(void)
{
	BackgroundWorker bgw;

	if (!process_shared_preload_libraries_in_progress || IsBinaryUpgrade)
		return;
	hwm_wakeup_init();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sched_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sched_shmem_startup;

	bgw_init(&bgw, "hwm_launcher_main", "hwm launcher", "hwm launcher", 10);
	RegisterBackgroundWorker(&bgw);
}

/* ------------------------------------------------------------------------
 * Recording outcomes (launcher and worker)
 * ------------------------------------------------------------------------
 */

/*
 * Finish a 'running' row of hwm.runs with status 'failed', 'skipped' or
 * 'interrupted'; for 'failed' also count the failure in hwm.state and back
 * off the next run.  Nothing happens when the row is no longer 'running'.
 * Runs as the catalog owner; the caller is inside a transaction with SPI.
 */
static void
record_outcome(int64 run_id, const char *status, const char *sqlstate,
			   const char *error)
{
	Oid			argtypes[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	HwmRoleSwitch sw;

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(status);
	if (sqlstate)
		values[2] = CStringGetTextDatum(sqlstate);
	else
		nulls[2] = 'n';
	if (error)
		values[3] = CStringGetTextDatum(error);
	else
		nulls[3] = 'n';

	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("WITH r AS ("
				 " UPDATE hwm.runs SET status = $2, finished_at = pg_catalog.clock_timestamp(),"
				 "  error_sqlstate = $3, error = $4"
				 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND status OPERATOR(pg_catalog.=) 'running'"
				 " RETURNING pipeline, run_id, started_at, finished_at)"
				 " UPDATE hwm.state AS s SET"
				 "  last_run_id = r.run_id, last_run_started_at = r.started_at,"
				 "  last_run_finished_at = r.finished_at,"
				 "  last_status = $2, last_rows = NULL, last_error = $4,"
				 "  consecutive_failures = s.consecutive_failures OPERATOR(pg_catalog.+) 1,"
				 "  next_run_at = CASE WHEN s.schedule IS NOT NULL THEN"
				 "   r.finished_at OPERATOR(pg_catalog.+)"
				 "   LEAST(s.schedule OPERATOR(pg_catalog.*)"
				 "          pg_catalog.power(2::pg_catalog.float8,"
				 "                           LEAST(s.consecutive_failures, 20)::pg_catalog.float8),"
				 "         GREATEST(s.schedule, '1 hour'::pg_catalog.interval)) END"
				 " FROM r WHERE s.pipeline OPERATOR(pg_catalog.=) r.pipeline"
				 "  AND $2 OPERATOR(pg_catalog.=) 'failed'",
				 4, argtypes, values, nulls, 0);
	hwm_unbecome(&sw);
}

/* ------------------------------------------------------------------------
 * The launcher
 * ------------------------------------------------------------------------
 */

/* A worker this launcher started */
typedef struct LaunchedWorker
{
	int			slotno;
	uint64		generation;
	int64		run_id;
	BackgroundWorkerHandle *handle;
} LaunchedWorker;

static List *launched = NIL;	/* in TopMemoryContext */
static TimestampTz slots_exhausted_logged_at = 0;
static bool extension_seen = false;
static TimestampTz last_maintenance = 0;

static int
slots_in_use(void)
{
	int			n = 0;

	SpinLockAcquire(&sched->mutex);
	for (int i = 0; i < sched->nslots; i++)
		if (sched->slots[i].in_use)
			n++;
	SpinLockRelease(&sched->mutex);
	return n;
}

/* The run_ids of the runs in flight, as an int8[] datum */
static Datum
live_run_ids(void)
{
	Datum	   *ids = palloc(sizeof(Datum) * (sched->nslots + 1));
	int			n = 0;

	SpinLockAcquire(&sched->mutex);
	for (int i = 0; i < sched->nslots; i++)
		if (sched->slots[i].in_use)
			ids[n++] = Int64GetDatum(sched->slots[i].run_id);
	SpinLockRelease(&sched->mutex);
	return PointerGetDatum(construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * Free the slots of workers that have exited, and of workers that never
 * started; a run whose worker did not record an outcome is marked failed.
 */
static void
reap_workers(void)
{
	int64	   *ids = palloc(sizeof(int64) * (sched->nslots + list_length(launched)));
	int			nids = 0;
	ListCell   *lc;

	/* workers that exited (they mark their slot on the way out) */
	SpinLockAcquire(&sched->mutex);
	for (int i = 0; i < sched->nslots; i++)
	{
		HwmWorkerSlot *slot = &sched->slots[i];

		if (slot->in_use && slot->exited)
		{
			if (!slot->recorded)
				ids[nids++] = slot->run_id;
			slot->in_use = false;
		}
	}
	SpinLockRelease(&sched->mutex);

	/* workers that will never start, or are gone from our list */
	foreach(lc, launched)
	{
		LaunchedWorker *w = lfirst(lc);
		HwmWorkerSlot *slot = &sched->slots[w->slotno];
		pid_t		pid;
		bool		mine;
		bool		never_started = false;

		SpinLockAcquire(&sched->mutex);
		mine = slot->in_use && slot->generation == w->generation;
		SpinLockRelease(&sched->mutex);
		if (mine && GetBackgroundWorkerPid(w->handle, &pid) == BGWH_STOPPED)
		{
			SpinLockAcquire(&sched->mutex);
			if (slot->in_use && slot->generation == w->generation && slot->pid == 0)
			{
				slot->in_use = false;
				never_started = true;
			}
			else
				mine = true;	/* it started: it marks the slot itself */
			SpinLockRelease(&sched->mutex);
			if (never_started)
			{
				ids[nids++] = w->run_id;
				mine = false;
			}
		}
		if (!mine)
		{
			pfree(w->handle);
			pfree(w);
			launched = foreach_delete_current(launched, lc);
		}
	}

	if (nids == 0)
		return;
	hwm_bgw_begin();
	if (OidIsValid(get_extension_oid("hwm", true)))
	{
		for (int i = 0; i < nids; i++)
			record_outcome(ids[i], "failed", NULL,
						   "the run's background worker exited before it recorded an outcome; the server log says why");
	}
	hwm_bgw_commit();
}

/*
 * Runs left 'running' by workers that are gone (a crash, an immediate
 * shutdown, a restarted launcher) become 'interrupted'.  Only the
 * scheduler's own rows (kind 'load' with status 'running') are touched, and
 * not those of runs still in flight.
 */
static void
sweep_interrupted(void)
{
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		values[1];
	HwmRoleSwitch sw;

	values[0] = live_run_ids();
	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("WITH r AS ("
				 " UPDATE hwm.runs SET status = 'interrupted', finished_at = pg_catalog.clock_timestamp(),"
				 "  error = 'the run was interrupted: its worker ended with the server (crash, restart or immediate shutdown)'"
				 " WHERE status OPERATOR(pg_catalog.=) 'running' AND kind OPERATOR(pg_catalog.=) 'load'"
				 "  AND run_id OPERATOR(pg_catalog.<>) ALL ($1)"
				 " RETURNING pipeline, run_id, started_at, error)"
				 " UPDATE hwm.state AS s SET last_run_id = r.run_id, last_run_started_at = r.started_at,"
				 "  last_run_finished_at = pg_catalog.clock_timestamp(), last_status = 'interrupted',"
				 "  last_rows = NULL, last_error = r.error"
				 " FROM r WHERE s.pipeline OPERATOR(pg_catalog.=) r.pipeline"
				 "  AND (s.last_run_started_at IS NULL OR s.last_run_started_at OPERATOR(pg_catalog.<) r.started_at)",
				 1, argtypes, values, NULL, 0);
	hwm_unbecome(&sw);
}

/* Keep the scheduler's run history bounded (hwm.max_runs_per_pipeline,
 * hwm.history_days); only finished runs of kind 'load' are pruned. */
static void
prune_history(void)
{
	hwm_prune_runs(NULL);
}

/* A run to start, decided in the dispatch transaction */
typedef struct PendingRun
{
	char	   *pipeline;
	Oid			owner;
	int64		run_id;
	int			slotno;
	uint64		generation;
	int32		timeout_ms;
	TimestampTz old_next_run_at;
} PendingRun;

/* Interval to milliseconds (months of 30 days), clamped to int32 */
static int32
interval_ms(const Interval *iv)
{
	int64		ms = (hwm_interval_usecs(iv) + 999) / 1000;

	return (int32) Max(Min(ms, PG_INT32_MAX), 1);
}

/*
 * Why the scheduler cannot start a session for this owner (NULL: it can).
 * A worker connects as the owner, which needs LOGIN.
 */
static const char *
owner_problem(Oid owner, const char **sqlstate)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(owner));
	const char *problem = NULL;

	if (!HeapTupleIsValid(tup))
	{
		*sqlstate = "42704";
		return psprintf("the pipeline's owner (role OID %u) no longer exists", owner);
	}
	if (!((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin)
	{
		*sqlstate = "28000";
		problem = psprintf("the pipeline's owner \"%s\" cannot log in, and scheduled runs connect as the owner;"
						   " ALTER ROLE %s LOGIN, or run the pipeline by hand",
						   NameStr(((Form_pg_authid) GETSTRUCT(tup))->rolname),
						   quote_identifier(NameStr(((Form_pg_authid) GETSTRUCT(tup))->rolname)));
	}
	ReleaseSysCache(tup);
	return problem;
}

/* Take a free slot for a run; -1 when none is free */
static int
take_slot(int64 run_id, uint64 *generation)
{
	int			slotno = -1;

	SpinLockAcquire(&sched->mutex);
	for (int i = 0; i < sched->nslots; i++)
	{
		HwmWorkerSlot *slot = &sched->slots[i];

		if (!slot->in_use)
		{
			slot->in_use = true;
			slot->exited = false;
			slot->recorded = false;
			slot->pid = 0;
			slot->run_id = run_id;
			slot->generation = sched->next_generation++;
			*generation = slot->generation;
			slotno = i;
			break;
		}
	}
	SpinLockRelease(&sched->mutex);
	return slotno;
}

static void
free_slot(int slotno, uint64 generation)
{
	SpinLockAcquire(&sched->mutex);
	if (sched->slots[slotno].generation == generation)
		sched->slots[slotno].in_use = false;
	SpinLockRelease(&sched->mutex);
}

/*
 * Step 2: the enabled, scheduled pipelines with no run of theirs in
 * progress, oldest next_run_at first, at most limit of them, left in
 * SPI_tuptable as (pipeline, owner, next_run_at, schedule, anchor, timeout).
 * Their rows are locked for the claim; a row locked by a run in progress
 * (by hand) is skipped, not waited for.
 */
static void
select_due(int limit)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1];
	HwmRoleSwitch sw;

	values[0] = Int32GetDatum(limit);
	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("SELECT s.pipeline, s.owner::pg_catalog.oid, s.next_run_at, s.schedule,"
				 " COALESCE(s.schedule_anchor, s.next_run_at), s.timeout"
				 " FROM hwm.state AS s"
				 " WHERE s.enabled AND s.schedule IS NOT NULL AND s.next_run_at IS NOT NULL"
				 "  AND NOT EXISTS (SELECT FROM hwm.runs AS r"
				 "   WHERE r.pipeline OPERATOR(pg_catalog.=) s.pipeline"
				 "    AND r.status OPERATOR(pg_catalog.=) 'running'"
				 "    AND r.kind OPERATOR(pg_catalog.=) 'load')"
				 " ORDER BY s.next_run_at, s.pipeline LIMIT $1"
				 " FOR UPDATE OF s SKIP LOCKED",
				 1, argtypes, values, NULL, SPI_OK_SELECT);
	hwm_unbecome(&sw);
}

/*
 * Step 3's catalog writes for one run: move the pipeline's next_run_at to
 * next (the first slot on the grid after now) and insert its 'running' row;
 * returns the row's run_id.
 */
static int64
insert_running_row(const PendingRun *run, TimestampTz next)
{
	char	   *owner_name = GetUserNameFromId(run->owner, true);
	Oid			argtypes[3] = {TEXTOID, NAMEOID, TIMESTAMPTZOID};
	Datum		values[3];
	HwmRoleSwitch sw;
	bool		isnull;
	int64		run_id;

	values[0] = CStringGetTextDatum(run->pipeline);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(owner_name ? owner_name : "?"));
	values[2] = TimestampTzGetDatum(next);
	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("UPDATE hwm.state SET next_run_at = $3 WHERE pipeline OPERATOR(pg_catalog.=) $1",
				 3, argtypes, values, NULL, SPI_OK_UPDATE);
	hwm_spi_exec("INSERT INTO hwm.runs (pipeline, kind, started_at, status, run_by)"
				 " VALUES ($1, 'load', pg_catalog.clock_timestamp(), 'running', $2)"
				 " RETURNING run_id",
				 2, argtypes, values, NULL, SPI_OK_INSERT_RETURNING);
	run_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	hwm_unbecome(&sw);
	return run_id;
}

/*
 * Step 3 for one due row of select_due: claim its run (insert_running_row)
 * and take a worker slot for it.  Returns the run to start, in
 * TopMemoryContext; NULL when its owner cannot run it, which is recorded as
 * a failure at once.
 */
static PendingRun *
claim_run(HeapTuple tup, TupleDesc desc, TimestampTz now, int room)
{
	bool		isnull;
	Interval   *every = DatumGetIntervalP(SPI_getbinval(tup, desc, 4, &isnull));
	TimestampTz anchor = DatumGetTimestampTz(SPI_getbinval(tup, desc, 5, &isnull));
	bool		no_timeout;
	Datum		timeout = SPI_getbinval(tup, desc, 6, &no_timeout);
	MemoryContext spicxt;
	PendingRun *run;
	const char *sqlstate = NULL;
	const char *problem;

	spicxt = MemoryContextSwitchTo(TopMemoryContext);
	run = palloc0(sizeof(PendingRun));
	run->pipeline = SPI_getvalue(tup, desc, 1);
	MemoryContextSwitchTo(spicxt);
	run->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	run->old_next_run_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
	run->timeout_ms = no_timeout ? 0 : interval_ms(DatumGetIntervalP(timeout));
	run->run_id = insert_running_row(run, hwm_schedule_next(anchor, every, now, false));

	problem = owner_problem(run->owner, &sqlstate);
	if (problem)
	{
		/* it cannot run at all: a failure, recorded now */
		ereport(LOG,
				(errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s", run->pipeline, problem)));
		record_outcome(run->run_id, "failed", sqlstate, problem);
		pfree(run->pipeline);
		pfree(run);
		return NULL;
	}
	run->slotno = take_slot(run->run_id, &run->generation);
	if (run->slotno < 0)
		elog(ERROR, "hwm: no free scheduler slot although %d are free", room);
	return run;
}

/*
 * Steps 2 and 3: find due pipelines and claim their runs.  Returns the runs
 * to start (in launcher memory) and sets *sleep_ms to when the next pipeline
 * is due.
 */
static List *
claim_due_runs(int room, long *sleep_ms)
{
	List	   *pending = NIL;
	TimestampTz now = GetCurrentTimestamp();
	SPITupleTable *due;
	uint64		ndue;

	select_due(room + 1);
	due = SPI_tuptable;
	ndue = SPI_processed;

	*sleep_ms = LAUNCHER_MAX_SLEEP_MS;
	/* all rows due and room left: look again at once */
	if (ndue == (uint64) room + 1)
		*sleep_ms = 0;
	for (uint64 i = 0; i < ndue; i++)
	{
		bool		isnull;
		TimestampTz next_run_at = DatumGetTimestampTz(SPI_getbinval(due->vals[i], due->tupdesc,
																	3, &isnull));
		PendingRun *run;

		if (next_run_at > now)
		{
			/* not due yet: sleep until it is */
			long		secs;
			int			usecs;

			TimestampDifference(now, next_run_at, &secs, &usecs);
			*sleep_ms = Min(LAUNCHER_MAX_SLEEP_MS, secs * 1000 + (usecs + 999) / 1000);
			break;
		}
		if (list_length(pending) >= room)
		{
			/* due, but no room: a worker's exit wakes us */
			break;
		}
		run = claim_run(due->vals[i], due->tupdesc, now, room);
		if (run != NULL)
		{
			/* the list outlives this transaction (and SPI's memory) */
			MemoryContext spicxt = MemoryContextSwitchTo(TopMemoryContext);

			pending = lappend(pending, run);
			MemoryContextSwitchTo(spicxt);
		}
	}
	return pending;
}

/*
 * Step 4: start a worker per claimed run.  Runs whose worker could not be
 * registered are returned (their claim is undone by the caller).
 */
static List *
start_workers(List *pending)
{
	List	   *failed = NIL;
	ListCell   *lc;

	foreach(lc, pending)
	{
		PendingRun *run = lfirst(lc);
		BackgroundWorker bgw;
		BackgroundWorkerHandle *handle;
		HwmWorkerArgs args;
		MemoryContext old;
		char		name[BGW_MAXLEN];

		snprintf(name, sizeof(name), "hwm worker for pipeline %s", run->pipeline);
		bgw_init(&bgw, "hwm_worker_main", name, "hwm worker", BGW_NEVER_RESTART);
		bgw.bgw_main_arg = Int32GetDatum(run->slotno);
		bgw.bgw_notify_pid = MyProcPid;
		memset(&args, 0, sizeof(args));
		args.generation = run->generation;
		args.run_id = run->run_id;
		args.dboid = MyDatabaseId;
		args.owner = run->owner;
		args.timeout_ms = run->timeout_ms;
		memcpy(bgw.bgw_extra, &args, sizeof(args));

		old = MemoryContextSwitchTo(TopMemoryContext);
		if (RegisterDynamicBackgroundWorker(&bgw, &handle))
		{
			LaunchedWorker *w = palloc(sizeof(LaunchedWorker));

			w->slotno = run->slotno;
			w->generation = run->generation;
			w->run_id = run->run_id;
			w->handle = handle;
			launched = lappend(launched, w);
		}
		else
			failed = lappend(failed, run);
		MemoryContextSwitchTo(old);
	}
	return failed;
}

/* Undo the claim of runs that could not start: they are due again. */
static void
unclaim_runs(List *failed)
{
	ListCell   *lc;

	/* said once (then at most every 10 minutes), not on every retry */
	if (slots_exhausted_logged_at == 0 ||
		TimestampDifferenceExceeds(slots_exhausted_logged_at, GetCurrentTimestamp(),
								   10 * 60 * 1000))
	{
		ereport(LOG,
				(errmsg("hwm: no background worker slot is free to run pipeline \"%s\"; will try again",
						((PendingRun *) linitial(failed))->pipeline),
				 errdetail("Scheduled runs wait until a slot is free; this is logged at most every 10 minutes."),
				 errhint("Raise max_worker_processes (the scheduler needs hwm.max_workers of them, besides its launcher and parallel query).")));
		slots_exhausted_logged_at = GetCurrentTimestamp();
	}

	hwm_bgw_begin();
	foreach(lc, failed)
	{
		PendingRun *run = lfirst(lc);
		Oid			argtypes[3] = {TEXTOID, INT8OID, TIMESTAMPTZOID};
		Datum		values[3];
		HwmRoleSwitch sw;

		values[0] = CStringGetTextDatum(run->pipeline);
		values[1] = Int64GetDatum(run->run_id);
		values[2] = TimestampTzGetDatum(run->old_next_run_at);
		hwm_become(hwm_catalog_owner(), false, &sw);
		hwm_spi_exec("DELETE FROM hwm.runs WHERE run_id OPERATOR(pg_catalog.=) $2"
					 " AND status OPERATOR(pg_catalog.=) 'running'",
					 3, argtypes, values, NULL, SPI_OK_DELETE);
		hwm_spi_exec("UPDATE hwm.state SET next_run_at = $3 WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 3, argtypes, values, NULL, SPI_OK_UPDATE);
		hwm_unbecome(&sw);
	}
	hwm_bgw_commit();
	foreach(lc, failed)
	{
		PendingRun *run = lfirst(lc);

		free_slot(run->slotno, run->generation);
	}
}

/* One pass of the launcher's loop; returns how long to sleep (ms). */
static long
launcher_iteration(void)
{
	long		sleep_ms = LAUNCHER_MAX_SLEEP_MS;
	int			room;
	List	   *pending;
	List	   *failed;
	ListCell   *lc;
	TimestampTz now;

	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}

	reap_workers();

	hwm_bgw_begin();
	if (!OidIsValid(get_extension_oid("hwm", true)))
	{
		extension_seen = false;
		hwm_bgw_commit();
		return LAUNCHER_MAX_SLEEP_MS;	/* CREATE EXTENSION wakes us */
	}

	/* bookkeeping goes on while scheduling is switched off */
	now = GetCurrentTimestamp();
	if (!extension_seen ||
		TimestampDifferenceExceeds(last_maintenance, now, LAUNCHER_MAINTENANCE_MS))
	{
		sweep_interrupted();
		prune_history();
		last_maintenance = now;
	}
	extension_seen = true;

	room = Min(hwm_max_workers, sched->nslots) - slots_in_use();
	if (!hwm_enabled || room <= 0)
	{
		hwm_bgw_commit();
		/* a reload, or a worker's exit, wakes us */
		return Min(LAUNCHER_MAX_SLEEP_MS, LAUNCHER_MAINTENANCE_MS);
	}
	pending = claim_due_runs(room, &sleep_ms);
	hwm_bgw_commit();

	failed = start_workers(pending);
	if (failed != NIL)
	{
		unclaim_runs(failed);
		sleep_ms = LAUNCHER_RETRY_MS;
	}
	foreach(lc, pending)
	{
		PendingRun *run = lfirst(lc);

		pfree(run->pipeline);
		pfree(run);
	}
	list_free(pending);
	list_free(failed);
	return sleep_ms;
}

void
hwm_launcher_main(Datum main_arg)
{
	MemoryContext loopcxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(hwm_database, NULL, 0);
	pgstat_report_appname("hwm launcher");

	/* become the launcher; forget workers that never started */
	hwm_wakeup_register_launcher();
	SpinLockAcquire(&sched->mutex);
	for (int i = 0; i < sched->nslots; i++)
		if (sched->slots[i].in_use && sched->slots[i].pid == 0)
			sched->slots[i].in_use = false;
	SpinLockRelease(&sched->mutex);

	ereport(LOG,
			(errmsg("hwm launcher started, serving database \"%s\"", hwm_database)));

	loopcxt = AllocSetContextCreate(TopMemoryContext, "hwm launcher",
									ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();
		MemoryContextSwitchTo(loopcxt);
		PG_TRY();
		{
			sleep_ms = launcher_iteration();
		}
		PG_CATCH();
		{
			/* log it, roll back, and carry on a little later */
			MemoryContextSwitchTo(loopcxt);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			sleep_ms = LAUNCHER_MAX_SLEEP_MS / 2;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(loopcxt);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(sleep_ms, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* ------------------------------------------------------------------------
 * The worker
 * ------------------------------------------------------------------------
 */

/* This worker's run (a worker runs one) */
static int	my_slotno = -1;
static HwmWorkerArgs my_args;
static char *my_pipeline = NULL;	/* NULL until read from its 'running' row */

/* On the way out: tell the launcher that this run's slot is free. */
static void
worker_detach(int code, Datum arg)
{
	SpinLockAcquire(&sched->mutex);
	sched->slots[my_slotno].exited = true;
	SpinLockRelease(&sched->mutex);
	hwm_wakeup_launcher();
}

static void
mark_recorded(void)
{
	SpinLockAcquire(&sched->mutex);
	sched->slots[my_slotno].recorded = true;
	SpinLockRelease(&sched->mutex);
}

/*
 * Take the slot the launcher reserved for this run: false when the launcher
 * gave up on the run (a restarted launcher frees slots whose worker had not
 * started).
 */
static bool
worker_claim_slot(void)
{
	bool		claimed;

	SpinLockAcquire(&sched->mutex);
	claimed = my_slotno >= 0 && my_slotno < sched->nslots &&
		sched->slots[my_slotno].in_use &&
		sched->slots[my_slotno].generation == my_args.generation;
	if (claimed)
		sched->slots[my_slotno].pid = MyProcPid;
	SpinLockRelease(&sched->mutex);
	return claimed;
}

/* The run's time limit in ms: the pipeline's timeout, else statement_timeout */
static int
worker_timeout_ms(void)
{
	return my_args.timeout_ms > 0 ? my_args.timeout_ms : StatementTimeout;
}

/*
 * The pipeline of this run's 'running' row, copied into cxt; NULL when the
 * row is no longer 'running' (nothing to do).
 */
static char *
read_run_pipeline(MemoryContext cxt)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	HwmRoleSwitch sw;
	char	   *pipeline = NULL;

	values[0] = Int64GetDatum(my_args.run_id);
	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("SELECT pipeline FROM hwm.runs WHERE run_id OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) 'running' AND kind OPERATOR(pg_catalog.=) 'load'",
				 1, argtypes, values, NULL, SPI_OK_SELECT);
	hwm_unbecome(&sw);
	if (SPI_processed > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		pipeline = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		MemoryContextSwitchTo(old);
	}
	return pipeline;
}

/*
 * SELECT * FROM hwm.run(pipeline, nowait => true) under the run's time
 * limit; hwm.run records the run itself, so the 'running' row goes.
 */
static void
run_pipeline(const char *pipeline)
{
	Oid			runtypes[1] = {TEXTOID};
	Datum		runvals[1];
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	HwmRoleSwitch sw;
	int			timeout_ms = worker_timeout_ms();

	pgstat_report_appname(psprintf("hwm: %s", pipeline));
	pgstat_report_activity(STATE_RUNNING, "SELECT * FROM hwm.run($1, true)");

	runvals[0] = CStringGetTextDatum(pipeline);
	if (timeout_ms > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);
	hwm_spi_exec("SELECT * FROM hwm.run($1, true)",
				 1, runtypes, runvals, NULL, SPI_OK_SELECT);
	if (timeout_ms > 0)
		disable_timeout(STATEMENT_TIMEOUT, false);

	values[0] = Int64GetDatum(my_args.run_id);
	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec("DELETE FROM hwm.runs WHERE run_id OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL, SPI_OK_DELETE);
	hwm_unbecome(&sw);
}

/*
 * Record the run's error, in a transaction of its own after the failed one:
 * 'skipped' when a run by hand (or a backfill) held the pipeline, so that the
 * run is not doubled; else 'failed', which also backs off the next run.
 */
static void
worker_record_failure(ErrorData *edata)
{
	const char *status = "failed";
	const char *sqlstate = unpack_sql_state(edata->sqlerrcode);
	char	   *error;

	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE && my_pipeline != NULL &&
		edata->message != NULL &&
		strcmp(edata->message, psprintf("pipeline \"%s\" is busy", my_pipeline)) == 0)
	{
		status = "skipped";
		error = edata->message;
		ereport(LOG,
				(errmsg("hwm: scheduled run of pipeline \"%s\" skipped: it is busy with another run", my_pipeline)));
	}
	else
	{
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && edata->message != NULL &&
			strstr(edata->message, "statement timeout") != NULL)
			error = psprintf("canceling the run: it took longer than its timeout of %d ms",
							 worker_timeout_ms());
		else if (edata->detail)
			error = psprintf("%s\nDETAIL: %s", edata->message, edata->detail);
		else
			error = edata->message ? edata->message : "unknown error";
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s",
						my_pipeline ? my_pipeline : "?", error)));
	}

	hwm_bgw_begin();
	record_outcome(my_args.run_id, status, sqlstate, error);
	hwm_bgw_commit();
	mark_recorded();
}

void
hwm_worker_main(Datum main_arg)
{
	MemoryContext workcxt;
	ErrorData  *volatile edata = NULL;

	memcpy(&my_args, MyBgworkerEntry->bgw_extra, sizeof(my_args));
	my_slotno = DatumGetInt32(main_arg);

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (!worker_claim_slot())
		proc_exit(0);			/* the launcher gave up on this run */
	before_shmem_exit(worker_detach, (Datum) 0);

	/* a session of the pipeline's owner, never of a superuser */
	BackgroundWorkerInitializeConnectionByOid(my_args.dboid, my_args.owner, 0);
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
	workcxt = AllocSetContextCreate(TopMemoryContext, "hwm worker",
									ALLOCSET_DEFAULT_SIZES);

	PG_TRY();
	{
		hwm_bgw_begin();
		my_pipeline = read_run_pipeline(workcxt);
		if (my_pipeline != NULL)
			run_pipeline(my_pipeline);
		hwm_bgw_commit();
		mark_recorded();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(workcxt);
		disable_timeout(STATEMENT_TIMEOUT, false);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();

	if (edata != NULL)
		worker_record_failure(edata);
	proc_exit(0);
}
