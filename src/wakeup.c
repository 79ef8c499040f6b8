/*
 * wakeup.c
 *		What the scheduler's processes and the SQL side share in shared
 *		memory, besides the run slots: the launcher's doorbell, the databases
 *		that rang it, and hwm's processes by database; and which databases
 *		hwm.database lets the scheduler serve.
 *
 * The doorbell: the launcher's pid, and a short list of databases that rang
 * since the launcher last looked.  The SQL side (schedule.c: a schedule, a
 * pause, a resume), CREATE, ALTER and DROP EXTENSION (hwm.c's
 * ProcessUtility hook calls hwm_wakeup_before_utility) and the scheduler's own processes (on exit) ring
 * it for their database; CREATE, ALTER, DROP DATABASE ring it so that the
 * launcher reads pg_database again (and dispatches new databases once).  The change a transaction
 * makes is visible only after commit, so the doorbell rings in an
 * XactCallback at COMMIT; an aborted or prepared transaction does not ring
 * it.  The latch is set through SIGUSR1, as PostgreSQL's logical replication
 * launcher is woken.
 *
 * Getting out of the way: a command that needs a database to itself (DROP
 * DATABASE, ALTER DATABASE RENAME or SET TABLESPACE, CREATE DATABASE ...
 * TEMPLATE) marks the database as leaving while it runs (at most a few
 * seconds), so that the launcher starts nothing in it, but only when
 * PostgreSQL's checks of rights would let the command go ahead: a command
 * it refuses never disturbs the scheduler; DROP DATABASE also terminates hwm's
 * processes connected to it (its dispatcher, its runs in progress, which
 * roll back), as PostgreSQL terminates autovacuum workers there.  Each of
 * hwm's processes registers here, before connecting, the database it enters.
 *
 * The launcher (launcher.c), the per-database processes (dispatch.c,
 * worker.c) and schedule.c ring and listen here instead of calling one
 * another: they all call down into this module, which calls no other module
 * of hwm.  Without shared_preload_libraries (or under pg_upgrade) there is no
 * launcher: nothing here is set up, and ringing does nothing.
 */
#include "postgres.h"

#include "wakeup.h"

#include <signal.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

/* Settings and facts shared by both sides (hwm.database is defined in hwm.c) */
char	   *hwm_database = NULL;
bool		hwm_scheduler_preloaded = false;

#define HWM_MAX_RUNG	32		/* databases remembered between two looks */
#define HWM_MAX_LEAVING	8		/* databases being dropped at once */
#define HWM_LEAVING_MS	10000	/* how long a leaving database is avoided */

/* One of hwm's processes and the database it is connected to */
typedef struct HwmDbProc
{
	pid_t		pid;			/* 0: unused entry */
	Oid			dboid;
} HwmDbProc;

typedef struct HwmLeaving
{
	Oid			dboid;
	TimestampTz since;
} HwmLeaving;

typedef struct HwmWakeupShared
{
	slock_t		mutex;
	pid_t		launcher_pid;	/* 0: no launcher running */
	bool		rung_all;		/* too many databases rang to list them */
	bool		rescan;			/* the list of databases may have changed */
	int			nrung;
	Oid			rung[HWM_MAX_RUNG];
	HwmLeaving	leaving[HWM_MAX_LEAVING];
	int			nprocs;
	HwmDbProc	procs[FLEXIBLE_ARRAY_MEMBER];
} HwmWakeupShared;

static HwmWakeupShared *wakeup = NULL;
static bool wake_at_commit = false;
static bool wake_all_at_commit = false;

/* ------------------------------------------------------------------------
 * hwm.database
 * ------------------------------------------------------------------------
 */

/* The names hwm.database lists (NIL for '*'), or false when it is no list */
static bool
database_list(const char *value, List **names)
{
	*names = NIL;
	if (value == NULL)
		return false;
	if (strcmp(value, "*") == 0)
		return true;
	return SplitGUCList(pstrdup(value), ',', names);
}

/* check hook of hwm.database: '*' or a comma-separated list of names */
bool
hwm_database_check(char **newval, void **extra, GucSource source)
{
	List	   *names;

	if (!database_list(*newval, &names))
	{
		GUC_check_errdetail("hwm.database must be '*' or a comma-separated list of database names.");
		return false;
	}
	list_free(names);
	return true;
}

bool
hwm_database_listed(const char *dbname)
{
	List	   *names;
	ListCell   *lc;
	bool		listed = false;

	if (dbname == NULL || !database_list(hwm_database, &names))
		return false;
	if (strcmp(hwm_database, "*") == 0)
		return true;
	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), dbname) == 0)
			listed = true;
	list_free(names);
	return listed;
}

bool
hwm_database_is_single(void)
{
	List	   *names;
	bool		single;

	if (!database_list(hwm_database, &names) || strcmp(hwm_database, "*") == 0)
		return false;
	single = list_length(names) == 1;
	list_free(names);
	return single;
}

/* ------------------------------------------------------------------------
 * Shared memory, the doorbell
 * ------------------------------------------------------------------------
 */

/* its size (hwm.c requests it with the others) */
Size
hwm_wakeup_shmem_size(void)
{
	return add_size(offsetof(HwmWakeupShared, procs),
					mul_size(max_worker_processes, sizeof(HwmDbProc)));
}

/* At shared memory's start-up, under AddinShmemInitLock (hwm.c) */
void
hwm_wakeup_shmem_init(void)
{
	bool		found;

	wakeup = ShmemInitStruct("hwm launcher wakeup", hwm_wakeup_shmem_size(), &found);
	if (!found)
	{
		memset(wakeup, 0, hwm_wakeup_shmem_size());
		SpinLockInit(&wakeup->mutex);
		wakeup->nprocs = max_worker_processes;
	}
}

/* Note that dboid rang (InvalidOid: every database), and set the latch. */
static void
ring(Oid dboid)
{
	pid_t		pid;
	bool		known = false;

	if (wakeup == NULL)
		return;
	SpinLockAcquire(&wakeup->mutex);
	for (int i = 0; i < wakeup->nrung; i++)
		known |= wakeup->rung[i] == dboid;
	if (!OidIsValid(dboid))
		wakeup->rescan = true;
	else if (!known && wakeup->nrung >= HWM_MAX_RUNG)
		wakeup->rung_all = true;
	else if (!known)
		wakeup->rung[wakeup->nrung++] = dboid;
	pid = wakeup->launcher_pid;
	SpinLockRelease(&wakeup->mutex);
	if (pid != 0)
		(void) kill(pid, SIGUSR1);
}

/* Wake the launcher for this database, if there is a launcher. */
void
hwm_wakeup_launcher(void)
{
	ring(MyDatabaseId);
}

int
hwm_wakeup_take(Oid *dboids, int max, bool *all, bool *rescan)
{
	int			n;

	SpinLockAcquire(&wakeup->mutex);
	n = Min(max, wakeup->nrung);
	memcpy(dboids, wakeup->rung, sizeof(Oid) * n);
	*all = wakeup->rung_all || n < wakeup->nrung;
	*rescan = wakeup->rescan;
	wakeup->nrung = 0;
	wakeup->rung_all = false;
	wakeup->rescan = false;
	SpinLockRelease(&wakeup->mutex);
	return n;
}

/*
 * Wake the launcher when the current transaction commits: the change it
 * should see (a schedule, a pipeline, the extension) is visible only then.
 */
void
hwm_wakeup_at_commit(void)
{
	wake_at_commit = true;
}

static void
wakeup_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (wake_all_at_commit)
				ring(InvalidOid);
			else if (wake_at_commit)
				hwm_wakeup_launcher();
			wake_at_commit = wake_all_at_commit = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			wake_at_commit = wake_all_at_commit = false;
			break;
		default:
			break;
	}
}

/* ------------------------------------------------------------------------
 * Getting out of a database's way
 * ------------------------------------------------------------------------
 */

static void
leave_process(int code, Datum arg)
{
	SpinLockAcquire(&wakeup->mutex);
	for (int i = 0; i < wakeup->nprocs; i++)
		if (wakeup->procs[i].pid == MyProcPid)
			wakeup->procs[i].pid = 0;
	SpinLockRelease(&wakeup->mutex);
}

/* Is dboid leaving?  The caller holds the mutex. */
static bool
leaving_locked(Oid dboid, TimestampTz now)
{
	for (int i = 0; i < HWM_MAX_LEAVING; i++)
		if (wakeup->leaving[i].dboid == dboid &&
			!TimestampDifferenceExceeds(wakeup->leaving[i].since, now, HWM_LEAVING_MS))
			return true;
	return false;
}

bool
hwm_wakeup_database_leaving(Oid dboid)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		leaving;

	SpinLockAcquire(&wakeup->mutex);
	leaving = leaving_locked(dboid, now);
	SpinLockRelease(&wakeup->mutex);
	return leaving;
}

bool
hwm_wakeup_enter_database(Oid dboid)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		leaving;

	SpinLockAcquire(&wakeup->mutex);
	leaving = leaving_locked(dboid, now);
	for (int i = 0; !leaving && i < wakeup->nprocs; i++)
		if (wakeup->procs[i].pid == 0)
		{
			wakeup->procs[i].pid = MyProcPid;
			wakeup->procs[i].dboid = dboid;
			break;
		}
	SpinLockRelease(&wakeup->mutex);
	if (!leaving)
		before_shmem_exit(leave_process, (Datum) 0);
	return !leaving;
}

/*
 * A command needs database dbname to itself: mark it leaving (nothing of
 * hwm's starts there for a while) and, with terminate, end hwm's processes
 * in it.  The mark comes first: a process that registers after the scan
 * below sees it and does not connect.
 */
static Oid
make_way(const char *dbname, bool terminate)
{
	Oid			dboid = dbname ? get_database_oid(dbname, true) : InvalidOid;
	TimestampTz now = GetCurrentTimestamp();
	pid_t	   *pids;
	int			npids = 0;
	int			oldest = 0;

	if (wakeup == NULL || !OidIsValid(dboid))
		return InvalidOid;
	pids = palloc(sizeof(pid_t) * (wakeup->nprocs + 1));
	SpinLockAcquire(&wakeup->mutex);
	for (int i = 0; i < HWM_MAX_LEAVING; i++)
	{
		if (wakeup->leaving[i].dboid == dboid)
		{
			oldest = i;
			break;
		}
		if (wakeup->leaving[i].since < wakeup->leaving[oldest].since)
			oldest = i;
	}
	wakeup->leaving[oldest].dboid = dboid;
	wakeup->leaving[oldest].since = now;
	for (int i = 0; terminate && i < wakeup->nprocs; i++)
		if (wakeup->procs[i].pid != 0 && wakeup->procs[i].dboid == dboid)
			pids[npids++] = wakeup->procs[i].pid;
	SpinLockRelease(&wakeup->mutex);
	for (int i = 0; i < npids; i++)
		(void) kill(pids[i], SIGTERM);
	pfree(pids);
	return dboid;
}

/* The command that needed dboid to itself has ended: hwm may go back */
static void
clear_way(Oid dboid)
{
	if (wakeup == NULL || !OidIsValid(dboid))
		return;
	SpinLockAcquire(&wakeup->mutex);
	for (int i = 0; i < HWM_MAX_LEAVING; i++)
		if (wakeup->leaving[i].dboid == dboid)
			wakeup->leaving[i].dboid = InvalidOid;
	SpinLockRelease(&wakeup->mutex);
}

/* Does the current user own database dboid? */
static bool
owns_database(Oid dboid)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(DatabaseRelationId, dboid, GetUserId());
#else
	return pg_database_ownercheck(dboid, GetUserId());
#endif
}

/* Has the current user CREATEDB (or is a superuser)? */
static bool
may_create_databases(void)
{
	HeapTuple	tup;
	bool		result;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
	ReleaseSysCache(tup);
	return result;
}

/* Is database dboid marked as a template (anyone with CREATEDB may copy it)? */
static bool
is_template(Oid dboid)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
	ReleaseSysCache(tup);
	return result;
}

/*
 * Would PostgreSQL let the current user run this command on database
 * dbname, as far as rights go?  The same checks it makes before it looks
 * for other sessions in the database, so that a command it refuses for want
 * of rights never gets hwm out of the way: DROP DATABASE and ALTER DATABASE
 * SET TABLESPACE need its owner, RENAME its owner with CREATEDB, a copy
 * (CREATE DATABASE ... TEMPLATE) CREATEDB and a template or its owner.
 */
static bool
may_disturb(const char *dbname, NodeTag command)
{
	Oid			dboid = dbname ? get_database_oid(dbname, true) : InvalidOid;

	if (!OidIsValid(dboid))
		return false;
	switch (command)
	{
		case T_DropdbStmt:
		case T_AlterDatabaseStmt:
			return owns_database(dboid);
		case T_RenameStmt:
			return owns_database(dboid) && may_create_databases();
		case T_CreatedbStmt:
			return may_create_databases() && (is_template(dboid) || owns_database(dboid));
		default:
			return false;
	}
}

/* The TEMPLATE of a CREATE DATABASE, or TABLESPACE of an ALTER DATABASE */
static const char *
db_option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst(lc);

		if (strcmp(opt->defname, name) == 0 && opt->arg != NULL)
			return defGetString(opt);
	}
	return NULL;
}

/*
 * Statements about databases: the launcher reads pg_database again at
 * commit; those that need a database to themselves get hwm out of the way,
 * when PostgreSQL's checks of rights would let them, and only while they
 * run.  Returns the database made way for (InvalidOid: none).
 */
static Oid
database_statement(Node *stmt, bool top_level)
{
	const char *dbname = NULL;
	bool		terminate = false;

	if (IsA(stmt, DropdbStmt))
	{
		/* the checks dropdb makes first, so that a refused DROP ends nothing */
		PreventInTransactionBlock(top_level, "DROP DATABASE");
		dbname = ((DropdbStmt *) stmt)->dbname;
		terminate = true;
	}
	else if (IsA(stmt, CreatedbStmt))
		dbname = db_option(((CreatedbStmt *) stmt)->options, "template");
	else if (IsA(stmt, AlterDatabaseStmt))
	{
		AlterDatabaseStmt *alter = (AlterDatabaseStmt *) stmt;

		if (db_option(alter->options, "tablespace") != NULL)
			dbname = alter->dbname;
	}
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		dbname = ((RenameStmt *) stmt)->subname;
	else
		return InvalidOid;
	wake_all_at_commit = true;
	if (dbname == NULL || !may_disturb(dbname, nodeTag(stmt)))
		return InvalidOid;
	return make_way(dbname, terminate);
}

/*
 * Before a utility statement runs (hwm.c's ProcessUtility hook, when the
 * scheduler is preloaded): CREATE, ALTER and DROP EXTENSION and DATABASE
 * wake the launcher at commit, and a database statement that needs the
 * database to itself gets hwm out of the way; returns that database (to
 * hand to hwm_wakeup_after_utility whatever happens), InvalidOid: none.
 */
Oid
hwm_wakeup_before_utility(Node *stmt, bool top_level)
{
	if (IsA(stmt, CreateExtensionStmt) || IsA(stmt, AlterExtensionStmt) ||
		(IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_EXTENSION))
		wake_at_commit = true;
	return database_statement(stmt, top_level);
}

/* After it ran or failed: the database is no longer leaving */
void
hwm_wakeup_after_utility(Oid made_way)
{
	clear_way(made_way);
}

/*
 * Called while shared_preload_libraries is processed, by the scheduler's
 * registration (hwm_scheduler_init), which decides that there is a launcher.
 */
void
hwm_wakeup_init(void)
{
	hwm_scheduler_preloaded = true;

	RegisterXactCallback(wakeup_xact_callback, NULL);
}

/* On the launcher's way out: nobody to wake until the next one starts. */
static void
launcher_detach(int code, Datum arg)
{
	SpinLockAcquire(&wakeup->mutex);
	if (wakeup->launcher_pid == MyProcPid)
		wakeup->launcher_pid = 0;
	SpinLockRelease(&wakeup->mutex);
}

void
hwm_wakeup_register_launcher(void)
{
	SpinLockAcquire(&wakeup->mutex);
	wakeup->launcher_pid = MyProcPid;
	SpinLockRelease(&wakeup->mutex);
	before_shmem_exit(launcher_detach, (Datum) 0);
}
