/*
 * wakeup.c
 *		The launcher's doorbell: its pid in shared memory, and a flag that
 *		a transaction sets when it changes what the launcher schedules, so
 *		that the launcher's latch is set when that transaction commits.
 *
 * The SQL side (schedule.c: a schedule, a pause, a resume), CREATE, ALTER
 * and DROP EXTENSION (through a ProcessUtility hook here) and the launcher's
 * own workers (on exit) ring it; the launcher (scheduler.c) registers itself
 * as the process to wake.  Neither side calls the other: both call down into
 * this module, which calls no other module of hwm.
 *
 * The latch is set through SIGUSR1, as PostgreSQL's logical replication
 * launcher is woken.  The change a transaction makes is visible to the
 * launcher only after commit, so the doorbell rings in an XactCallback at
 * COMMIT; an aborted or prepared transaction does not ring it.
 *
 * Without shared_preload_libraries (or under pg_upgrade) there is no
 * launcher: nothing here is set up, and ringing does nothing.
 */
#include "postgres.h"

#include "wakeup.h"

#include <signal.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"

/* Settings and facts shared by both sides (hwm.database is defined in hwm.c) */
char	   *hwm_database = NULL;
bool		hwm_scheduler_preloaded = false;

typedef struct HwmWakeupShared
{
	slock_t		mutex;
	pid_t		launcher_pid;	/* 0: no launcher running */
} HwmWakeupShared;

static HwmWakeupShared *wakeup = NULL;
static bool wake_at_commit = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_process_utility_hook = NULL;

static void
wakeup_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(HwmWakeupShared));
}

static void
wakeup_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	wakeup = ShmemInitStruct("hwm launcher wakeup", sizeof(HwmWakeupShared), &found);
	if (!found)
	{
		memset(wakeup, 0, sizeof(HwmWakeupShared));
		SpinLockInit(&wakeup->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Set the launcher's latch, if there is a launcher. */
void
hwm_wakeup_launcher(void)
{
	pid_t		pid;

	if (wakeup == NULL)
		return;
	SpinLockAcquire(&wakeup->mutex);
	pid = wakeup->launcher_pid;
	SpinLockRelease(&wakeup->mutex);
	if (pid != 0)
		(void) kill(pid, SIGUSR1);
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
			if (wake_at_commit)
				hwm_wakeup_launcher();
			wake_at_commit = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			wake_at_commit = false;
			break;
		default:
			break;
	}
}

/* CREATE, ALTER and DROP EXTENSION wake the launcher at commit */
static void
wakeup_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;

	if (IsA(stmt, CreateExtensionStmt) || IsA(stmt, AlterExtensionStmt) ||
		(IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_EXTENSION))
		wake_at_commit = true;

	if (prev_process_utility_hook)
		prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
								  params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/*
 * Called while shared_preload_libraries is processed, by the scheduler's
 * registration (hwm_scheduler_init), which decides that there is a launcher.
 */
void
hwm_wakeup_init(void)
{
	hwm_scheduler_preloaded = true;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = wakeup_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = wakeup_shmem_startup;
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = wakeup_process_utility;
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
