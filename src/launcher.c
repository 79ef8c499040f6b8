/*
 * launcher.c
 *		The background scheduler's launcher: one process for the whole
 *		server, connected to no database, that decides which database is
 *		served next and starts the workers of claimed runs.
 *
 * With shared_preload_libraries = 'hwm', _PG_init registers the launcher.
 * It starts once recovery has finished (a hot standby runs nothing;
 * promotion starts it), reads pg_database (a shared catalog), and serves
 * every database that allows connections, is no template, and is listed by
 * hwm.database ('*', the default: every database).  It cannot see a
 * database's catalog, so the work inside a database is done by a short-lived
 * dispatcher connected to it (dispatch.c): whether hwm is installed, the
 * history's upkeep, and claiming due runs.  The launcher loops:
 *
 *	1. read the databases that rang the doorbell (wakeup.c: a schedule
 *	   changed, the extension was created or dropped, a run ended there), and
 *	   pg_database again when a database was created, dropped or altered, or
 *	   every 10 seconds;
 *	2. take the result of the dispatcher that ended: whether the database
 *	   has hwm, and when its next pipeline is due;
 *	3. once no dispatcher runs (its claims are committed then), start a
 *	   worker for every claimed run (slots.c); a run whose worker never
 *	   started is orphaned, for the next dispatcher to record;
 *	4. unless a dispatcher is running, start one for the database that
 *	   needs it most: first those with runs due (when hwm.enabled is on and
 *	   hwm.max_workers leaves room), then those that rang, are new, or are
 *	   due for upkeep (five minutes after the last, whether it has hwm or
 *	   not; upkeep also rides along with dispatches, every 10 seconds);
 *	5. sleep until the next pipeline is due, a process ends, the doorbell
 *	   rings, or 10 seconds have passed.
 *
 * Fairness.  hwm.max_workers bounds the scheduled runs in flight on the
 * whole server.  Among the databases with runs due, the one with the fewest
 * runs in flight goes first (then the one served longest ago), and it may
 * claim at most its share: hwm.max_workers divided by the number of
 * databases with runs due, less its runs in flight, and at least one.  So
 * a free slot goes to the database that has least, and a database with
 * 1,000 due pipelines takes every slot only while no other needs one.  The
 * dispatcher is told when the other databases are next due, so that it
 * starts a queue beyond its database's (or its owner's) share only when
 * the queue is expected to end before they are due (dispatch.c).
 *
 * One dispatcher at a time keeps the process count at one launcher, at most
 * one dispatcher and at most hwm.max_workers workers, whatever the number of
 * databases; an idle database costs one dispatcher every five minutes.
 *
 * Every iteration runs under its own error handler: an error is logged and
 * the loop goes on, so a broken database never takes the launcher down.
 * Its times (when a database is due, how long to sleep, when upkeep is due)
 * are the scheduler's clock (clock.c), on which dispatchers report when
 * their next runs are due.
 *
 * Calls go one way: this module calls down into slots.c, clock.c and
 * wakeup.c only.
 */
#include "postgres.h"

#include "clock.h"
#include "dispatch.h"
#include "launcher.h"
#include "slots.h"
#include "wakeup.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/*
 * Settings of the launcher (defined in hwm.c; hwm.database is wakeup.c's,
 * hwm.enabled dispatch.c's)
 */
int			hwm_max_workers = 2;

/* How long the launcher sleeps at most, and between retries */
#define LAUNCHER_MAX_SLEEP_MS	10000
#define LAUNCHER_RETRY_MS		1000
/*
 * Upkeep of a database (interrupted runs, history): along with a dispatch,
 * or on its own when nothing else happens there.  Idle, nothing changes
 * that the doorbell would not ring for, but history_days ages the history.
 */
#define MAINTENANCE_MS			10000
#define MAINTENANCE_IDLE_MS		(5 * 60000)
/* How often a database without hwm is looked at again (CREATE EXTENSION
 * rings at once; this is the net) */
#define RECHECK_ABSENT_MS		(5 * 60000)

typedef enum HwmPresence
{
	HWM_UNKNOWN,
	HWM_ABSENT,
	HWM_PRESENT
} HwmPresence;

/* A database, as the launcher knows it */
typedef struct DbEntry
{
	Oid			dboid;
	NameData	name;
	bool		seen;			/* in the last scan of pg_database */
	bool		served;			/* connectable, no template, in hwm.database */
	bool		rung;			/* rang the doorbell since its last dispatch */
	HwmPresence hwm;
	TimestampTz next_due_at;	/* HWM_PRESENT: its next due run */
	TimestampTz last_dispatch;
	TimestampTz last_maintenance;	/* 0: not since the launcher started */
	TimestampTz retry_at;		/* after a dispatch that failed */
} DbEntry;

/* A worker this launcher started */
typedef struct LaunchedWorker
{
	int			slotno;
	uint64		generation;
	BackgroundWorkerHandle *handle;
} LaunchedWorker;

static DbEntry *dbs = NULL;		/* in TopMemoryContext */
static int	ndbs = 0;
static int	maxdbs = 0;
static bool scan_needed = true;
static TimestampTz last_scan = 0;

static List *launched = NIL;	/* in TopMemoryContext */
static BackgroundWorkerHandle *dispatcher = NULL;
static Oid	dispatcher_db = InvalidOid;
static bool dispatcher_maintenance = false;
static uint64 dispatch_id = 0;

static TimestampTz shortage_logged_at = 0;
static bool shortage = false;	/* a worker could not be registered */

PGDLLEXPORT void hwm_launcher_main(Datum main_arg);

/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------
 */

/*
 * What the launcher, the dispatchers and the workers have in common: a
 * database connection, started once recovery has finished, found in this
 * library.
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
 * (and never under pg_upgrade) is the launcher registered; a module loaded
 * later only provides the SQL functions.  Returns whether it was: then
 * _PG_init requests the scheduler's shared memory (slots.c, wakeup.c).
 */
bool
hwm_scheduler_init(void)
{
	BackgroundWorker bgw;

	if (!process_shared_preload_libraries_in_progress || IsBinaryUpgrade)
		return false;
	hwm_wakeup_init();

	bgw_init(&bgw, "hwm_launcher_main", "hwm launcher", "hwm launcher", 10);
	RegisterBackgroundWorker(&bgw);
	return true;
}

/* ------------------------------------------------------------------------
 * The databases
 * ------------------------------------------------------------------------
 */

static DbEntry *
find_db(Oid dboid)
{
	for (int i = 0; i < ndbs; i++)
		if (dbs[i].dboid == dboid)
			return &dbs[i];
	return NULL;
}

/* The entry of a database seen in pg_database, new ones added */
static DbEntry *
db_entry(Oid dboid)
{
	DbEntry    *e = find_db(dboid);

	if (e)
		return e;
	if (ndbs == maxdbs)
	{
		maxdbs = Max(16, maxdbs * 2);
		dbs = dbs ? repalloc(dbs, sizeof(DbEntry) * maxdbs)
			: MemoryContextAlloc(TopMemoryContext, sizeof(DbEntry) * maxdbs);
	}
	e = &dbs[ndbs++];
	memset(e, 0, sizeof(DbEntry));
	e->dboid = dboid;
	e->hwm = HWM_UNKNOWN;
	return e;
}

/*
 * Forget databases that are gone, and the runs claimed in them that never
 * started or whose workers are gone (there is nothing left to record them in).
 */
static void
forget_gone_databases(void)
{
	HwmRunSlot *slots = palloc(sizeof(HwmRunSlot) * hwm_slots_count());
	int			kept = 0;

	for (int i = 0; i < ndbs; i++)
		if (dbs[i].seen)
			dbs[kept++] = dbs[i];
	ndbs = kept;

	hwm_slots_read(slots);
	for (int i = 0; i < hwm_slots_count(); i++)
		if ((slots[i].state == HWM_SLOT_CLAIMED || slots[i].state == HWM_SLOT_ORPHANED) &&
			find_db(slots[i].dboid) == NULL)
			(void) hwm_slot_move(i, slots[i].generation, slots[i].state, HWM_SLOT_FREE);
	pfree(slots);
}

/* Read pg_database (a shared catalog: no database connection needed) */
static void
scan_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	for (int i = 0; i < ndbs; i++)
		dbs[i].seen = false;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		DbEntry    *e = db_entry(db->oid);

		e->seen = true;
		namestrcpy(&e->name, NameStr(db->datname));
		e->served = db->datallowconn && !db->datistemplate &&
			db->datconnlimit != DATCONNLIMIT_INVALID_DB &&
			hwm_database_listed(NameStr(db->datname));
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();

	forget_gone_databases();
	last_scan = GetCurrentTimestamp();
	scan_needed = false;
}

/* Step 1: the doorbell, and pg_database when it may have changed */
static void
take_rings(void)
{
	Oid			rung[64];
	bool		all;
	bool		rescan;
	int			n = hwm_wakeup_take(rung, lengthof(rung), &all, &rescan);

	for (int i = 0; i < n; i++)
	{
		DbEntry    *e = find_db(rung[i]);

		if (e)
			e->rung = true;
		else
			scan_needed = true;
	}
	if (all)
	{
		for (int i = 0; i < ndbs; i++)
			dbs[i].rung = true;
	}
	/* a new database is dispatched once (its hwm is unknown); no other */
	if (rescan)
		scan_needed = true;
	if (scan_needed ||
		TimestampDifferenceExceeds(last_scan, GetCurrentTimestamp(), LAUNCHER_MAX_SLEEP_MS))
		scan_databases();
}

/* ------------------------------------------------------------------------
 * Processes
 * ------------------------------------------------------------------------
 */

/* Log a shortage of background worker slots, at most every 10 minutes */
static void
log_shortage(const char *what)
{
	shortage = true;
	if (shortage_logged_at != 0 &&
		!TimestampDifferenceExceeds(shortage_logged_at, GetCurrentTimestamp(), 10 * 60 * 1000))
		return;
	ereport(LOG,
			(errmsg("hwm: no background worker slot is free for %s; will try again", what),
			 errdetail("Scheduled runs wait until a slot is free; this is logged at most every 10 minutes."),
			 errhint("Raise max_worker_processes (the scheduler needs hwm.max_workers of them, and one for a dispatcher, besides its launcher and parallel query).")));
	shortage_logged_at = GetCurrentTimestamp();
}

/* Register a dynamic worker of hwm that reports to the launcher */
static BackgroundWorkerHandle *
start_bgw(const char *function_name, const char *name, const char *type,
		  Datum main_arg, const void *extra, Size extralen)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	MemoryContext old;
	bool		ok;

	bgw_init(&bgw, function_name, name, type, BGW_NEVER_RESTART);
	bgw.bgw_main_arg = main_arg;
	bgw.bgw_notify_pid = MyProcPid;
	memcpy(bgw.bgw_extra, extra, extralen);
	old = MemoryContextSwitchTo(TopMemoryContext);
	ok = RegisterDynamicBackgroundWorker(&bgw, &handle);
	MemoryContextSwitchTo(old);
	return ok ? handle : NULL;
}

/* Step 2: the result of the dispatcher that ended */
static void
reap_dispatcher(void)
{
	pid_t		pid;
	HwmDispatchResult result;
	DbEntry    *e;
	TimestampTz now = hwm_now();

	if (dispatcher == NULL || GetBackgroundWorkerPid(dispatcher, &pid) != BGWH_STOPPED)
		return;
	pfree(dispatcher);
	dispatcher = NULL;
	hwm_dispatch_result_get(&result);
	e = find_db(dispatcher_db);
	if (e == NULL)
		return;
	if (!result.done || result.dispatch_id != dispatch_id)
	{
		/* it failed (the log says why), or the database is leaving */
		e->retry_at = TimestampTzPlusMilliseconds(now, LAUNCHER_MAX_SLEEP_MS);
		return;
	}
	e->hwm = result.has_extension ? HWM_PRESENT : HWM_ABSENT;
	e->next_due_at = result.next_due_at;
	if (dispatcher_maintenance)
		e->last_maintenance = now;
}

/* Forget the workers that ended; a worker that never took its slot leaves
 * its run orphaned, for the next dispatcher to record */
static void
reap_workers(void)
{
	ListCell   *lc;

	foreach(lc, launched)
	{
		LaunchedWorker *w = lfirst(lc);
		pid_t		pid;

		if (GetBackgroundWorkerPid(w->handle, &pid) != BGWH_STOPPED)
			continue;
		(void) hwm_slot_move(w->slotno, w->generation, HWM_SLOT_STARTING, HWM_SLOT_ORPHANED);
		pfree(w->handle);
		pfree(w);
		launched = foreach_delete_current(launched, lc);
	}
}

/*
 * Step 3: a worker for every claimed run.  Called only while no dispatcher
 * runs: a dispatcher claims slots before its transaction commits, and a
 * worker started then would not see its run's row yet.
 */
static void
start_claimed_runs(void)
{
	HwmRunSlot *slots = palloc(sizeof(HwmRunSlot) * hwm_slots_count());
	MemoryContext old;

	shortage = false;
	hwm_slots_read(slots);
	for (int i = 0; i < hwm_slots_count(); i++)
	{
		HwmWorkerArgs args;
		BackgroundWorkerHandle *handle;
		LaunchedWorker *w;

		if (slots[i].state != HWM_SLOT_CLAIMED || hwm_wakeup_database_leaving(slots[i].dboid) ||
			!hwm_slot_move(i, slots[i].generation, HWM_SLOT_CLAIMED, HWM_SLOT_STARTING))
			continue;
		memset(&args, 0, sizeof(args));
		args.generation = slots[i].generation;
		args.dboid = slots[i].dboid;
		args.owner = slots[i].owner;
		handle = start_bgw("hwm_worker_main", "hwm worker", "hwm worker",
						   Int32GetDatum(i), &args, sizeof(args));
		if (handle == NULL)
		{
			(void) hwm_slot_move(i, slots[i].generation, HWM_SLOT_STARTING, HWM_SLOT_CLAIMED);
			log_shortage("a scheduled run");
			break;
		}
		/* the list outlives the loop's memory, which is reset every turn */
		old = MemoryContextSwitchTo(TopMemoryContext);
		w = palloc(sizeof(LaunchedWorker));
		w->slotno = i;
		w->generation = slots[i].generation;
		w->handle = handle;
		launched = lappend(launched, w);
		MemoryContextSwitchTo(old);
	}
	pfree(slots);
}

/* ------------------------------------------------------------------------
 * Which database next
 * ------------------------------------------------------------------------
 */

/* Runs in flight (or claimed) per database, and the room left */
static int
count_runs(Oid dboid, int *total)
{
	HwmRunSlot *slots = palloc(sizeof(HwmRunSlot) * hwm_slots_count());
	int			n = 0;

	hwm_slots_read(slots);
	*total = 0;
	for (int i = 0; i < hwm_slots_count(); i++)
		if (slots[i].state == HWM_SLOT_CLAIMED || slots[i].state == HWM_SLOT_STARTING ||
			slots[i].state == HWM_SLOT_RUNNING)
		{
			(*total)++;
			if (slots[i].dboid == dboid)
				n++;
		}
	pfree(slots);
	return n;
}

/*
 * May the database claim runs now: scheduling on, room, and runs due, or
 * not known: its hwm unknown, or it rang (a schedule changed, a run ended,
 * the extension was created: also where the last dispatcher found no hwm,
 * which may have been before CREATE EXTENSION committed)
 */
static bool
wants_runs(const DbEntry *e, TimestampTz now, int room)
{
	return hwm_enabled && room > 0 &&
		(e->hwm == HWM_UNKNOWN || e->rung ||
		 (e->hwm == HWM_PRESENT && e->next_due_at <= now));
}

/* Does the database need a dispatcher without runs to claim? */
static bool
wants_upkeep(const DbEntry *e, TimestampTz now)
{
	if (e->rung || e->hwm == HWM_UNKNOWN)
		return true;
	if (e->hwm == HWM_ABSENT)
		return TimestampDifferenceExceeds(e->last_dispatch, now, RECHECK_ABSENT_MS);
	return e->last_maintenance == 0 ||
		TimestampDifferenceExceeds(e->last_maintenance, now, MAINTENANCE_IDLE_MS);
}

/* May a dispatcher be started in the database at all? */
static bool
may_dispatch(const DbEntry *e, TimestampTz now)
{
	return e->served && (now >= e->retry_at || e->rung) &&
		!hwm_wakeup_database_leaving(e->dboid);
}

/*
 * Step 4's choice: the database that needs a dispatcher most (NULL: none),
 * and how many runs it may claim.  Databases with runs due come first, the
 * one with the fewest runs in flight, then the one served longest ago.  A
 * database that needs only upkeep and has not been served for
 * MAINTENANCE_MS joins them: otherwise databases that are always due (a
 * busy server, where each dispatch takes long) would keep it waiting for
 * ever, its interrupted runs unrecorded and a new extension there unseen.
 */
static DbEntry *
pick_database(TimestampTz now, int *quota)
{
	int			total;
	int			room;
	int			ndue = 0;
	DbEntry    *best = NULL;
	int			best_rank = 0;

	(void) count_runs(InvalidOid, &total);
	room = Max(0, Min(hwm_max_workers, hwm_slots_count()) - total);
	for (int i = 0; i < ndbs; i++)
		if (may_dispatch(&dbs[i], now) && wants_runs(&dbs[i], now, room))
			ndue++;

	for (int i = 0; i < ndbs; i++)
	{
		DbEntry    *e = &dbs[i];
		bool		runs;
		int			rank;

		if (!may_dispatch(e, now))
			continue;
		runs = wants_runs(e, now, room);
		if (!runs && !wants_upkeep(e, now))
			continue;
		/* due first; then fewest in flight; then served longest ago */
		rank = (runs || TimestampDifferenceExceeds(e->last_dispatch, now, MAINTENANCE_MS) ?
				0 : 1000000) + count_runs(e->dboid, &total);
		if (best == NULL || rank < best_rank ||
			(rank == best_rank && e->last_dispatch < best->last_dispatch))
		{
			best = e;
			best_rank = rank;
		}
	}
	*quota = 0;
	if (best != NULL && wants_runs(best, now, room))
	{
		int			share = (hwm_max_workers + ndue - 1) / Max(ndue, 1);

		*quota = Min(room, Max(1, share - best_rank));
	}
	return best;
}

/*
 * For the dispatcher's fair shares: when the next runs of the other
 * databases served are due (the HWM_OTHER_DBS earliest), so that it counts
 * them among those waiting for a worker before it lends one beyond its
 * database's share.
 */
static void
tell_others_due(const DbEntry *self, HwmDispatchArgs *args)
{
	StaticAssertStmt(sizeof(HwmDispatchArgs) <= BGW_EXTRALEN,
					 "HwmDispatchArgs must fit in bgw_extra");
	args->nothers = 0;
	for (int i = 0; i < ndbs; i++)
	{
		const DbEntry *e = &dbs[i];
		TimestampTz due = e->next_due_at;
		int			k;

		if (e == self || !e->served || e->hwm != HWM_PRESENT || due == DT_NOEND ||
			hwm_wakeup_database_leaving(e->dboid))
			continue;
		/* insertion into the sorted array, the latest dropped when full */
		k = args->nothers;
		if (k == HWM_OTHER_DBS)
		{
			if (due >= args->others_due_at[k - 1])
				continue;
			k--;
		}
		else
			args->nothers++;
		while (k > 0 && args->others_due_at[k - 1] > due)
		{
			args->others_due_at[k] = args->others_due_at[k - 1];
			k--;
		}
		args->others_due_at[k] = due;
	}
}

/* Step 4: start a dispatcher for the database that needs one most */
static void
start_dispatcher(TimestampTz now)
{
	HwmDispatchArgs args;
	HwmDispatchResult reset;
	int			quota;
	DbEntry    *e;
	char		name[BGW_MAXLEN];

	if (dispatcher != NULL || (e = pick_database(now, &quota)) == NULL)
		return;
	memset(&args, 0, sizeof(args));
	args.dispatch_id = ++dispatch_id;
	args.dboid = e->dboid;
	args.quota = quota;
	args.maintenance = e->last_maintenance == 0 ||
		TimestampDifferenceExceeds(e->last_maintenance, now, MAINTENANCE_MS);
	args.max_workers = hwm_max_workers;
	tell_others_due(e, &args);
	memset(&reset, 0, sizeof(reset));
	hwm_dispatch_result_set(&reset);

	snprintf(name, sizeof(name), "hwm dispatcher for database %s", NameStr(e->name));
	dispatcher = start_bgw("hwm_dispatcher_main", name, "hwm dispatcher", (Datum) 0,
						   &args, sizeof(args));
	if (dispatcher == NULL)
	{
		log_shortage("a dispatcher");
		return;
	}
	dispatcher_db = e->dboid;
	dispatcher_maintenance = args.maintenance;
	e->last_dispatch = now;
	e->rung = false;
}

/* Step 5: how long to sleep (ms) */
static long
sleep_time(TimestampTz now)
{
	TimestampTz wake = TimestampTzPlusMilliseconds(now, LAUNCHER_MAX_SLEEP_MS);
	int			total;
	bool		room;

	if (shortage)
		wake = TimestampTzPlusMilliseconds(now, LAUNCHER_RETRY_MS);
	(void) count_runs(InvalidOid, &total);
	room = hwm_enabled && total < Min(hwm_max_workers, hwm_slots_count());
	for (int i = 0; i < ndbs; i++)
	{
		DbEntry    *e = &dbs[i];

		if (!e->served || hwm_wakeup_database_leaving(e->dboid))
			continue;
		if (e->retry_at > now)
			wake = Min(wake, e->retry_at);
		if (e->hwm == HWM_PRESENT && room)
			wake = Min(wake, e->next_due_at);
		if (e->hwm == HWM_PRESENT)
			wake = Min(wake, TimestampTzPlusMilliseconds(e->last_maintenance, MAINTENANCE_IDLE_MS));
	}
	/* due now: a dispatcher runs (its end wakes us), or none could start */
	if (wake <= now)
		return LAUNCHER_RETRY_MS;
	return (long) ((wake - now + 999) / 1000);
}

/* One pass of the launcher's loop; returns how long to sleep (ms). */
static long
launcher_iteration(void)
{
	TimestampTz now;

	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		scan_needed = true;		/* hwm.database may have changed */
	}
	take_rings();
	reap_dispatcher();
	reap_workers();
	if (dispatcher != NULL)
		return LAUNCHER_MAX_SLEEP_MS;	/* its end wakes us */
	start_claimed_runs();
	now = hwm_now();
	if (!shortage)
		start_dispatcher(now);
	return sleep_time(now);
}

/* On start: runs registered by a previous launcher that never started are
 * orphaned (there is no handle to learn whether they will) */
static void
adopt_slots(void)
{
	HwmRunSlot *slots = palloc(sizeof(HwmRunSlot) * hwm_slots_count());

	hwm_slots_read(slots);
	for (int i = 0; i < hwm_slots_count(); i++)
		if (slots[i].state == HWM_SLOT_STARTING)
			(void) hwm_slot_move(i, slots[i].generation, HWM_SLOT_STARTING, HWM_SLOT_ORPHANED);
	pfree(slots);
}

void
hwm_launcher_main(Datum main_arg)
{
	MemoryContext loopcxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* no database: pg_database is shared, the rest is done by dispatchers */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("hwm launcher");
	hwm_wakeup_register_launcher();
	adopt_slots();

	if (strcmp(hwm_database, "*") == 0)
		ereport(LOG,
				(errmsg("hwm launcher started, serving every database where hwm is installed")));
	else if (hwm_database_is_single())
		ereport(LOG,
				(errmsg("hwm launcher started, serving database \"%s\"", hwm_database)));
	else
		ereport(LOG,
				(errmsg("hwm launcher started, serving the databases listed in hwm.database: %s",
						hwm_database)));

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
