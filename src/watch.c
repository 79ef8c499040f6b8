/*
 * watch.c
 *		Commits to watched tables, for hwm.schedule_on_commit: a pipeline
 *		scheduled to run when its source's tables are written runs after
 *		the first commit that writes them, and not while nothing is written.
 *
 * A watch is one table of one database, in a fixed table in shared memory
 * (HWM_MAX_WATCHES entries, open addressing on the database and the
 * relation; an entry, once made, stays until the server stops, so that a
 * writer can look one up without a lock).  Its one state is `armed`:
 *
 *	- the scheduler's worker arms the watches of the tables a pipeline's
 *	  source reads (watermark.c's hwm_source_relations: the table, its
 *	  partitions and ancestors, a view's tables) just before the pipeline's
 *	  run reads the source (worker.c), so that every commit the run does not
 *	  see comes after the arming;
 *	- a transaction that writes a watched table (an INSERT, UPDATE, DELETE
 *	  or MERGE, a writable CTE, COPY ... FROM; found through the executor's
 *	  result relations, so statements in functions and triggers count)
 *	  notes the watch; when it commits, after its rows became visible, it
 *	  disarms each watch it noted that was armed, and when one was, rings
 *	  the launcher's doorbell for its database (wakeup.c).  An aborted or
 *	  prepared transaction disarms nothing;
 *	- the dispatcher (dispatch.c) makes due each pipeline waiting for a
 *	  commit one of whose tables' watches is no longer armed (written, or
 *	  never armed since the server started, or that could not be made: all
 *	  three mean "run it"), at least its min_interval after its last run
 *	  began.
 *
 * So a burst of commits rings once, and an idle table rings never.  A table
 * that no entry is left for (HWM_MAX_WATCHES, logged) is never armed, so its
 * pipeline runs every min_interval, as on a schedule: slower, never a row
 * late for good.  What the executor does not see is not seen: a logical
 * replication apply, a foreign table written elsewhere, a materialized
 * view's refresh (hwm.schedule_on_commit warns of the last two).  A commit
 * that is missed costs latency only: the rows wait for the next commit, or
 * the next run, which loads everything above the watermark.
 *
 * Only with shared_preload_libraries (hwm_watch_init and the shared memory
 * are the scheduler's); elsewhere nothing here does anything.  The cost to
 * every other statement is one read of a shared counter, and nothing at all
 * while no pipeline has ever been scheduled on commit.
 */
#include "postgres.h"

#include "watch.h"
#include "wakeup.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parsetree.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"

/* Entries of the table (a power of two); at most 3/4 of them are used */
#define HWM_MAX_WATCHES 1024

typedef struct HwmWatch
{
	pg_atomic_uint32 armed;		/* 1: a run waits for the next commit */
	Oid			relid;
	Oid			dboid;			/* InvalidOid: unused; written after relid */
} HwmWatch;

typedef struct HwmWatchShared
{
	slock_t		mutex;			/* taken to add an entry */
	pg_atomic_uint32 nused;
	HwmWatch	watches[HWM_MAX_WATCHES];
} HwmWatchShared;

static HwmWatchShared *watches = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;

/* The watches this transaction wrote (indexes), in TopTransactionContext */
static List *written = NIL;

static bool full_logged = false;

Size
hwm_watch_shmem_size(void)
{
	return sizeof(HwmWatchShared);
}

void
hwm_watch_shmem_init(void)
{
	bool		found;

	watches = ShmemInitStruct("hwm watches", sizeof(HwmWatchShared), &found);
	if (!found)
	{
		memset(watches, 0, sizeof(HwmWatchShared));
		SpinLockInit(&watches->mutex);
		pg_atomic_init_u32(&watches->nused, 0);
		for (int i = 0; i < HWM_MAX_WATCHES; i++)
			pg_atomic_init_u32(&watches->watches[i].armed, 0);
	}
}

static uint32
first_probe(Oid dboid, Oid relid)
{
	return hash_combine(murmurhash32(dboid), murmurhash32(relid)) & (HWM_MAX_WATCHES - 1);
}

/*
 * The entry of (dboid, relid), or -1.  Without the lock: entries are never
 * changed once their dboid is set, and dboid is set after relid.
 */
static int
find_watch(Oid dboid, Oid relid)
{
	uint32		h = first_probe(dboid, relid);

	for (int i = 0; i < HWM_MAX_WATCHES; i++)
	{
		HwmWatch   *w = &watches->watches[(h + i) & (HWM_MAX_WATCHES - 1)];
		Oid			d = *((volatile Oid *) &w->dboid);

		if (!OidIsValid(d))
			return -1;
		pg_read_barrier();
		if (d == dboid && *((volatile Oid *) &w->relid) == relid)
			return (int) ((h + i) & (HWM_MAX_WATCHES - 1));
	}
	return -1;
}

/* The entry of relid in this database, made if need be; -1: no room */
static int
watch_of(Oid relid)
{
	int			found;
	uint32		h;

	if (watches == NULL || !OidIsValid(relid))
		return -1;
	found = find_watch(MyDatabaseId, relid);
	if (found >= 0)
		return found;
	h = first_probe(MyDatabaseId, relid);
	SpinLockAcquire(&watches->mutex);
	found = find_watch(MyDatabaseId, relid);
	if (found < 0 && pg_atomic_read_u32(&watches->nused) < HWM_MAX_WATCHES / 4 * 3)
	{
		for (int i = 0; i < HWM_MAX_WATCHES; i++)
		{
			int			k = (int) ((h + i) & (HWM_MAX_WATCHES - 1));
			HwmWatch   *w = &watches->watches[k];

			if (!OidIsValid(w->dboid))
			{
				w->relid = relid;
				pg_write_barrier();
				w->dboid = MyDatabaseId;
				pg_atomic_fetch_add_u32(&watches->nused, 1);
				found = k;
				break;
			}
		}
	}
	SpinLockRelease(&watches->mutex);
	if (found < 0 && !full_logged)
	{
		full_logged = true;
		ereport(LOG,
				(errmsg("hwm: no room left to watch the commits to table %u: the pipelines scheduled on its commits run every min_interval instead",
						relid),
				 errdetail("hwm watches at most %d tables until the server restarts.",
						   HWM_MAX_WATCHES / 4 * 3)));
	}
	return found;
}

bool
hwm_watch_register(Oid relid)
{
	return watch_of(relid) >= 0;
}

bool
hwm_watch_arm(Oid relid)
{
	int			k = watch_of(relid);

	if (k < 0)
		return false;
	/* (a full barrier: armed before the run's snapshot is taken) */
	(void) pg_atomic_exchange_u32(&watches->watches[k].armed, 1);
	return true;
}

bool
hwm_watch_written(Oid relid)
{
	int			k;

	if (watches == NULL)
		return true;
	k = find_watch(MyDatabaseId, relid);
	return k < 0 || pg_atomic_read_u32(&watches->watches[k].armed) == 0;
}

/* ------------------------------------------------------------------------
 * The writers' side
 * ------------------------------------------------------------------------
 */

/* A transaction writes relid: note its watch, if it has one */
static void
note_written(Oid relid)
{
	int			k = find_watch(MyDatabaseId, relid);
	MemoryContext old;

	if (k < 0 || list_member_int(written, k))
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	written = lappend_int(written, k);
	MemoryContextSwitchTo(old);
}

static bool
watching(void)
{
	return watches != NULL && pg_atomic_read_u32(&watches->nused) > 0 &&
		OidIsValid(MyDatabaseId) && IsTransactionState();
}

/* ExecutorEnd: the tables a statement wrote (its result relations) */
static void
watch_executor_end(QueryDesc *queryDesc)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (stmt != NULL && stmt->resultRelations != NIL && watching())
	{
		ListCell   *lc;

		foreach(lc, stmt->resultRelations)
			note_written(rt_fetch(lfirst_int(lc), stmt->rtable)->relid);
	}
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

void
hwm_watch_after_utility(Node *stmt)
{
	if (IsA(stmt, CopyStmt) && ((CopyStmt *) stmt)->is_from &&
		((CopyStmt *) stmt)->relation != NULL && watching())
		note_written(RangeVarGetRelid(((CopyStmt *) stmt)->relation, NoLock, true));
}

/*
 * At commit (its rows visible to every snapshot taken from now on): disarm
 * the armed watches the transaction wrote, and ring once if one was armed.
 */
static void
watch_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;
	bool		ring = false;

	if (written == NIL)
		return;
	if (event == XACT_EVENT_COMMIT)
	{
		foreach(lc, written)
		{
			HwmWatch   *w = &watches->watches[lfirst_int(lc)];

			if (pg_atomic_read_u32(&w->armed) != 0 &&
				pg_atomic_exchange_u32(&w->armed, 0) != 0)
				ring = true;
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		written = NIL;			/* (freed with TopTransactionContext) */
	if (ring)
		hwm_wakeup_launcher();
}

void
hwm_watch_init(void)
{
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = watch_executor_end;
	RegisterXactCallback(watch_xact_callback, NULL);
}
