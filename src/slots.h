/*
 * slots.h
 *		The scheduler's shared memory (slots.c): one slot per scheduled run
 *		in flight, tagged with its database, and the outcome of the last
 *		dispatch.  The launcher (launcher.c) and the per-database processes
 *		(dispatch.c, worker.c) all call down into it; slots.c calls clock.c
 *		alone (its times are the scheduler's clock).
 */
#ifndef HWM_SLOTS_H
#define HWM_SLOTS_H

#include "postgres.h"

#include "datatype/timestamp.h"

/*
 * A run slot's life: FREE -> CLAIMED -> STARTING -> RUNNING -> FREE, or
 * ORPHANED (from STARTING or RUNNING: gone without recording every run of its
 * queue) until the next dispatcher records them -> FREE (src/README.md).
 */
typedef enum HwmSlotState
{
	HWM_SLOT_FREE = 0,
	HWM_SLOT_CLAIMED,			/* a dispatcher claimed the run; no worker yet */
	HWM_SLOT_STARTING,			/* the launcher registered its worker */
	HWM_SLOT_RUNNING,			/* the worker took it (pid set) */
	HWM_SLOT_ORPHANED			/* gone without recording an outcome */
} HwmSlotState;

/*
 * The most runs one worker serves in turn: the due runs of one owner in one
 * database that a dispatch claimed together, so that a fork and a connection
 * are paid per queue, never shared between roles or databases.
 */
#define HWM_QUEUE_MAX 16

typedef struct HwmRunSlot
{
	HwmSlotState state;
	Oid			dboid;
	Oid			owner;
	int			nruns;			/* runs in the queue, 1 to HWM_QUEUE_MAX */
	int64		run_ids[HWM_QUEUE_MAX]; /* their 'running' rows in hwm.runs */
	int32		timeouts_ms[HWM_QUEUE_MAX]; /* 0: none */
	TimestampTz busy_until;		/* when the queue is expected to end (by its
								 * runs' last durations; DT_NOEND: unknown) */
	uint64		generation;		/* tells reuses of the slot apart */
	pid_t		pid;			/* 0 until the worker has started */
	int			started;		/* runs of the queue its worker has begun, in
								 * order: 1 once it took the slot, then k + 1
								 * as it begins run k; the runs after them
								 * were never started */
	TimestampTz run_began_at;	/* when its worker began the run it serves
								 * (0: none) */
	bool		applies_wakes;	/* its worker applies the wakes of the run it
								 * serves itself (worker.c): from just before
								 * the run commits until it has */
} HwmRunSlot;

/*
 * How many owners' recent holds of a worker the scheduler remembers (the
 * longest run of each owner in each database, see hwm_slots_hold_ms): the
 * owner-database pairs with runs ending lately; beyond that, the entry that
 * would be forgotten first makes room.
 */
#define HWM_HOLDS 64

/* What a dispatcher found, for the launcher */
typedef struct HwmDispatchResult
{
	uint64		dispatch_id;	/* the launcher's number for the dispatch */
	bool		done;			/* it got to the end */
	bool		has_extension;	/* hwm exists in the database, its catalog current */
	TimestampTz next_due_at;	/* earliest unclaimed run (DT_NOEND: none) */
} HwmDispatchResult;

/* How many other databases' due times a dispatcher is told of, at most */
#define HWM_OTHER_DBS 8

/* What the launcher tells a dispatcher, in bgw_extra */
typedef struct HwmDispatchArgs
{
	uint64		dispatch_id;
	Oid			dboid;
	int32		quota;			/* queues it may claim */
	bool		maintenance;	/* also sweep and prune the history */
	int32		max_workers;	/* hwm.max_workers, for the fair shares */
	int32		nothers;		/* entries of others_due_at */
	/* when the next runs of other databases are due, earliest first */
	TimestampTz others_due_at[HWM_OTHER_DBS];
} HwmDispatchArgs;

/* What the launcher tells a run's worker, in bgw_extra (its queue is in the slot) */
typedef struct HwmWorkerArgs
{
	uint64		generation;
	Oid			dboid;
	Oid			owner;
} HwmWorkerArgs;

/* the slots' shared memory (hwm.c's set-up): size, start-up under AddinShmemInitLock */
extern Size hwm_slots_shmem_size(void);
extern void hwm_slots_shmem_init(void);
extern int	hwm_slots_count(void);

/* a copy of every slot (out has hwm_slots_count() entries) */
extern void hwm_slots_read(HwmRunSlot *out);

/* a dispatcher claims a free slot for a run: its number, -1 if none is
 * free; expected_ms is how long the run should take (-1: unknown) */
extern int	hwm_slot_claim(Oid dboid, Oid owner, int32 timeout_ms, int64 run_id,
						   int64 expected_ms);

/* ... or queues it behind the runs of a slot it claimed: false when full */
extern bool hwm_slot_enqueue(int slotno, int64 run_id, int32 timeout_ms,
							 int64 expected_ms);

/* a worker sets the queue of its own slot (RUNNING, of this generation) to
 * its first keep runs followed by n more (runs its own runs woke, claimed by
 * the worker: worker.c), expected to take expected_ms more in all (-1:
 * unknown); n = 0 drops the runs after keep; false when the slot is not its
 * own or they do not fit in HWM_QUEUE_MAX */
extern bool hwm_slot_extend(int slotno, uint64 generation, int keep, int n,
							const int64 *run_ids, const int32 *timeouts_ms,
							int64 expected_ms);

/* a worker reads its queue (run_ids and timeouts have HWM_QUEUE_MAX entries) */
extern int	hwm_slot_queue(int slotno, uint64 generation, int64 *run_ids,
						   int32 *timeouts_ms);

/* move slot slotno of this generation from state `from` to `to`; false if
 * it is not in that state (or reused); RUNNING records MyProcPid, and the
 * first run as begun */
extern bool hwm_slot_move(int slotno, uint64 generation, HwmSlotState from,
						  HwmSlotState to);

/* a worker begins run k of its queue (started = k + 1; its hold begins) */
extern void hwm_slot_begin_run(int slotno, uint64 generation, int k);

/* a worker is about to commit a run that woke pipelines, whose wakes it
 * applies itself (applies true), or has applied them, or left them to the
 * dispatcher (false) */
extern void hwm_slot_applies_wakes(int slotno, uint64 generation, bool applies);

/* the run_ids of the runs of a database whose wakes their worker applies
 * itself (applies_wakes), but slot except_slotno's (-1: none), as an
 * int8[]: the dispatcher, and the other workers, leave those wakes */
extern Datum hwm_slots_applying_run_ids(Oid dboid, int except_slotno);

/* the longest time a run of this owner in this database has held a worker
 * lately, or holds one now, in ms (0: none known) */
extern int64 hwm_slots_hold_ms(Oid dboid, Oid owner, TimestampTz now);

/* free every slot of a database in state `state` (InvalidOid: any database);
 * the run_ids of their queues are returned (palloc'd) and counted in *n;
 * with begun, *begun says of each whether its worker may have started it
 * (false: it never did; see hwm_slots_release) */
extern int64 *hwm_slots_release(Oid dboid, HwmSlotState state, int *n,
								bool **begun);

/* the run_ids of the runs of a database held by a slot, as an int8[] */
extern Datum hwm_slots_live_run_ids(Oid dboid);

/* the dispatch result, written by the dispatcher and read by the launcher */
extern void hwm_dispatch_result_set(const HwmDispatchResult *result);
extern void hwm_dispatch_result_get(HwmDispatchResult *result);

#endif							/* HWM_SLOTS_H */
