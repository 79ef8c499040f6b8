/*
 * watch.h
 *		Commits to watched tables, for hwm.schedule_on_commit: a table's
 *		watch is armed by the run that will read it, and the first
 *		transaction that writes the table and commits after that disarms it
 *		and rings the launcher's doorbell for its database (watch.c).
 *		watch.c calls wakeup.c and no other module of hwm.
 */
#ifndef HWM_WATCH_H
#define HWM_WATCH_H

#include "postgres.h"

#include "nodes/parsenodes.h"

/* its shared memory (hwm.c's set-up): size, and start-up under AddinShmemInitLock */
extern Size hwm_watch_shmem_size(void);
extern void hwm_watch_shmem_init(void);

/* while shared_preload_libraries is processed: the executor hook and the commit callback */
extern void hwm_watch_init(void);

/* hwm's ProcessUtility hook, after a utility statement ran: COPY ... FROM writes a table */
extern void hwm_watch_after_utility(Node *stmt);

/*
 * The scheduler's side, for a relation of this database: have its writers
 * looked for (false: no room left, or no shared memory); arm it (false: it
 * could not be watched, so every look finds it written); has a commit
 * written it since it was last armed (or was it never armed)?  The last two
 * are exported for the tests' module (test/modules/hwm_test/watch_probe.c).
 */
extern bool hwm_watch_register(Oid relid);
extern PGDLLEXPORT bool hwm_watch_arm(Oid relid);
extern PGDLLEXPORT bool hwm_watch_written(Oid relid);

#endif							/* HWM_WATCH_H */
