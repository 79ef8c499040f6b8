/*
 * wakeup.h
 *		What the scheduler's SQL side (schedule.c), its launcher
 *		(launcher.c) and its per-database processes (dispatch.c, worker.c)
 *		share, so that they need not call one another for it: which
 *		databases the scheduler serves (hwm.database), the launcher's
 *		doorbell, and which of hwm's processes are connected to which
 *		database, so that DROP DATABASE can make them leave (wakeup.c).
 *		wakeup.c calls no other module of hwm.
 */
#ifndef HWM_WAKEUP_H
#define HWM_WAKEUP_H

#include "postgres.h"

#include "nodes/nodes.h"
#include "utils/guc.h"

/* hwm.database: '*' or a list of databases (NULL: not preloaded) */
extern char *hwm_database;

/* hwm was preloaded (and not under pg_upgrade): the launcher is registered */
extern bool hwm_scheduler_preloaded;

/* does hwm.database let the scheduler serve this database? */
extern bool hwm_database_listed(const char *dbname);
/* hwm.database names exactly one database */
extern bool hwm_database_is_single(void);
extern bool hwm_database_check(char **newval, void **extra, GucSource source);

/* while shared_preload_libraries is processed: the commit callback */
extern void hwm_wakeup_init(void);
/* its shared memory (hwm.c's set-up): size, and start-up under AddinShmemInitLock */
extern Size hwm_wakeup_shmem_size(void);
extern void hwm_wakeup_shmem_init(void);

/*
 * hwm's ProcessUtility hook (hwm.c), when the scheduler is preloaded, calls
 * these around every utility statement: before, the launcher woken at
 * commit by CREATE, ALTER, DROP EXTENSION and DATABASE, and hwm out of the
 * way of a database statement that needs the database to itself (returns
 * that database, InvalidOid: none); after, whether it ran or failed, that
 * database no longer leaving.
 */
extern Oid	hwm_wakeup_before_utility(Node *stmt, bool top_level);
extern void hwm_wakeup_after_utility(Oid made_way);

/* the launcher: this process is the one to wake, until it exits */
extern void hwm_wakeup_register_launcher(void);

/*
 * Wake the launcher now (a worker's exit), or when this transaction commits,
 * for this database (InvalidOid when not connected: for every database).
 */
extern void hwm_wakeup_launcher(void);
extern void hwm_wakeup_at_commit(void);

/* the launcher: the databases rung for since the last call; *all when too
 * many rang to list them, *rescan when the list of databases may have
 * changed (CREATE, ALTER, DROP DATABASE) */
extern int	hwm_wakeup_take(Oid *dboids, int max, bool *all, bool *rescan);

/*
 * A process of hwm enters a database (before connecting to it): false when
 * the database is being dropped, renamed or copied (then it must not
 * connect).  DROP DATABASE terminates hwm's processes in it.
 */
extern bool hwm_wakeup_enter_database(Oid dboid);
/* the database is being dropped, renamed or copied: start nothing in it */
extern bool hwm_wakeup_database_leaving(Oid dboid);

#endif							/* HWM_WAKEUP_H */
