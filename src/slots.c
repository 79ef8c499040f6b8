/*
 * slots.c
 *		The scheduler's shared memory: one slot per scheduled run in flight
 *		(as many as max_worker_processes), tagged with the database of the
 *		run, and the result of the last dispatch (see slots.h).
 *
 * The slots live in shared memory so that the runs in flight are known to
 * every process of the scheduler, and to a restarted launcher.  The launcher
 * (launcher.c) counts them per database for the fair share and starts a
 * worker per claimed slot; a dispatcher (dispatch.c) claims slots for the
 * runs it inserts and records the runs of orphaned ones; a worker takes its
 * slot and frees it when its outcome is recorded.  Its times (a queue's
 * expected end, when a run began, how long it held its worker) are the
 * scheduler's clock, which the dispatcher compares them with; it calls
 * clock.c and no other module of hwm.
 */
#include "postgres.h"

#include "slots.h"
#include "clock.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/timestamp.h"

/*
 * The longest run of an owner in a database that ended lately: how long it
 * held its worker, remembered until `until` (ten times as long, at least a
 * minute, at most a day), so that an owner whose runs are sometimes slow is
 * expected to be slow, whatever its pipelines' last runs say.
 */
typedef struct HwmHold
{
	Oid			dboid;
	Oid			owner;
	int64		ms;
	TimestampTz until;
} HwmHold;

#define HOLD_MEMORY_MIN_MS	(60 * 1000)
#define HOLD_MEMORY_MAX_MS	((int64) 24 * 3600 * 1000)

typedef struct HwmSlotsShared
{
	slock_t		mutex;
	uint64		next_generation;
	HwmDispatchResult dispatch;
	HwmHold		holds[HWM_HOLDS];
	int			nslots;
	HwmRunSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} HwmSlotsShared;

static HwmSlotsShared *shared = NULL;

/* its size (hwm.c requests it with the others) */
Size
hwm_slots_shmem_size(void)
{
	return add_size(offsetof(HwmSlotsShared, slots),
					mul_size(max_worker_processes, sizeof(HwmRunSlot)));
}

/* At shared memory's start-up, under AddinShmemInitLock (hwm.c) */
void
hwm_slots_shmem_init(void)
{
	bool		found;

	shared = ShmemInitStruct("hwm scheduler", hwm_slots_shmem_size(), &found);
	if (!found)
	{
		memset(shared, 0, hwm_slots_shmem_size());
		SpinLockInit(&shared->mutex);
		shared->nslots = max_worker_processes;
		shared->next_generation = 1;
	}
}

int
hwm_slots_count(void)
{
	return shared->nslots;
}

void
hwm_slots_read(HwmRunSlot *out)
{
	SpinLockAcquire(&shared->mutex);
	memcpy(out, shared->slots, sizeof(HwmRunSlot) * shared->nslots);
	SpinLockRelease(&shared->mutex);
}

/* The end of a run expected to take expected_ms from `from` (-1: unknown) */
static TimestampTz
expected_end(TimestampTz from, int64 expected_ms)
{
	if (from == DT_NOEND || expected_ms < 0)
		return DT_NOEND;
	return from + Min(expected_ms, (int64) 1000 * 1000 * 3600 * 24) * 1000;
}

int
hwm_slot_claim(Oid dboid, Oid owner, int32 timeout_ms, int64 run_id,
			   int64 expected_ms)
{
	int			slotno = -1;
	TimestampTz busy_until = expected_end(hwm_now(), expected_ms);

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < shared->nslots; i++)
	{
		HwmRunSlot *slot = &shared->slots[i];

		if (slot->state == HWM_SLOT_FREE)
		{
			slot->state = HWM_SLOT_CLAIMED;
			slot->dboid = dboid;
			slot->owner = owner;
			slot->nruns = 1;
			slot->run_ids[0] = run_id;
			slot->timeouts_ms[0] = timeout_ms;
			slot->busy_until = busy_until;
			slot->pid = 0;
			slot->started = 0;
			slot->run_began_at = 0;
			slot->applies_wakes = false;
			slot->generation = shared->next_generation++;
			slotno = i;
			break;
		}
	}
	SpinLockRelease(&shared->mutex);
	return slotno;
}

bool
hwm_slot_enqueue(int slotno, int64 run_id, int32 timeout_ms, int64 expected_ms)
{
	bool		queued = false;
	HwmRunSlot *slot;

	if (slotno < 0 || slotno >= shared->nslots)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = &shared->slots[slotno];
	if (slot->state == HWM_SLOT_CLAIMED && slot->nruns < HWM_QUEUE_MAX)
	{
		slot->run_ids[slot->nruns] = run_id;
		slot->timeouts_ms[slot->nruns] = timeout_ms;
		slot->busy_until = expected_end(slot->busy_until, expected_ms);
		slot->nruns++;
		queued = true;
	}
	SpinLockRelease(&shared->mutex);
	return queued;
}

bool
hwm_slot_extend(int slotno, uint64 generation, int keep, int n, const int64 *run_ids,
				const int32 *timeouts_ms, int64 expected_ms)
{
	bool		done = false;
	TimestampTz now = hwm_now();
	HwmRunSlot *slot;

	if (slotno < 0 || slotno >= shared->nslots || keep < 0 || n < 0 ||
		keep + n > HWM_QUEUE_MAX)
		return false;
	SpinLockAcquire(&shared->mutex);
	slot = &shared->slots[slotno];
	if (slot->state == HWM_SLOT_RUNNING && slot->generation == generation &&
		slot->pid == MyProcPid && keep <= slot->nruns)
	{
		if (n > 0)
		{
			memcpy(slot->run_ids + keep, run_ids, sizeof(int64) * n);
			memcpy(slot->timeouts_ms + keep, timeouts_ms, sizeof(int32) * n);
			slot->busy_until = expected_end(Max(slot->busy_until, now), expected_ms);
		}
		slot->nruns = keep + n;
		done = true;
	}
	SpinLockRelease(&shared->mutex);
	return done;
}

int
hwm_slot_queue(int slotno, uint64 generation, int64 *run_ids, int32 *timeouts_ms)
{
	int			n = 0;
	HwmRunSlot *slot;

	if (slotno < 0 || slotno >= shared->nslots)
		return 0;
	SpinLockAcquire(&shared->mutex);
	slot = &shared->slots[slotno];
	if (slot->generation == generation)
	{
		n = slot->nruns;
		memcpy(run_ids, slot->run_ids, sizeof(int64) * n);
		memcpy(timeouts_ms, slot->timeouts_ms, sizeof(int32) * n);
	}
	SpinLockRelease(&shared->mutex);
	return n;
}

/*
 * The run the slot's worker was serving ended (or the worker is leaving):
 * remember how long it held the worker, when it is the longest of its owner
 * in its database lately.  Under the mutex.
 */
static void
note_hold(HwmRunSlot *slot, TimestampTz now)
{
	int64		ms;
	HwmHold    *h = NULL;

	if (slot->run_began_at == 0 || now <= slot->run_began_at)
		return;
	ms = (now - slot->run_began_at) / 1000;
	slot->run_began_at = 0;
	for (int i = 0; i < HWM_HOLDS && h == NULL; i++)
		if (shared->holds[i].until > now && shared->holds[i].dboid == slot->dboid &&
			shared->holds[i].owner == slot->owner)
			h = &shared->holds[i];
	if (h != NULL && h->ms >= ms)
		return;					/* a longer one is remembered */
	if (h == NULL)
	{
		/* a free entry, else the one forgotten first */
		h = &shared->holds[0];
		for (int i = 1; i < HWM_HOLDS; i++)
			if (shared->holds[i].until < h->until)
				h = &shared->holds[i];
	}
	h->dboid = slot->dboid;
	h->owner = slot->owner;
	h->ms = ms;
	h->until = TimestampTzPlusMilliseconds(now, Min(Max(ms * 10, HOLD_MEMORY_MIN_MS),
													HOLD_MEMORY_MAX_MS));
}

bool
hwm_slot_move(int slotno, uint64 generation, HwmSlotState from, HwmSlotState to)
{
	TimestampTz now = hwm_now();

	bool		moved = false;

	if (slotno < 0 || slotno >= shared->nslots)
		return false;
	SpinLockAcquire(&shared->mutex);
	if (shared->slots[slotno].state == from &&
		shared->slots[slotno].generation == generation)
	{
		if (from == HWM_SLOT_RUNNING)
			note_hold(&shared->slots[slotno], now);
		shared->slots[slotno].state = to;
		if (to == HWM_SLOT_RUNNING)
		{
			shared->slots[slotno].pid = MyProcPid;
			shared->slots[slotno].started = Max(shared->slots[slotno].started, 1);
		}
		moved = true;
	}
	SpinLockRelease(&shared->mutex);
	return moved;
}

void
hwm_slot_begin_run(int slotno, uint64 generation, int k)
{
	TimestampTz now = hwm_now();

	if (slotno < 0 || slotno >= shared->nslots)
		return;
	SpinLockAcquire(&shared->mutex);
	if (shared->slots[slotno].generation == generation)
	{
		shared->slots[slotno].started = Max(shared->slots[slotno].started, k + 1);
		note_hold(&shared->slots[slotno], now);
		shared->slots[slotno].run_began_at = now;
	}
	SpinLockRelease(&shared->mutex);
}

void
hwm_slot_applies_wakes(int slotno, uint64 generation, bool applies)
{
	if (slotno < 0 || slotno >= shared->nslots)
		return;
	SpinLockAcquire(&shared->mutex);
	if (shared->slots[slotno].generation == generation)
		shared->slots[slotno].applies_wakes = applies;
	SpinLockRelease(&shared->mutex);
}

Datum
hwm_slots_applying_run_ids(Oid dboid, int except_slotno)
{
	Datum	   *ids = palloc(sizeof(Datum) * (shared->nslots + 1));
	int			n = 0;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < shared->nslots; i++)
	{
		HwmRunSlot *slot = &shared->slots[i];

		if (i != except_slotno && slot->state == HWM_SLOT_RUNNING && slot->dboid == dboid &&
			slot->applies_wakes && slot->started >= 1 && slot->started <= slot->nruns)
			ids[n++] = Int64GetDatum(slot->run_ids[slot->started - 1]);
	}
	SpinLockRelease(&shared->mutex);
	return PointerGetDatum(construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

int64
hwm_slots_hold_ms(Oid dboid, Oid owner, TimestampTz now)
{
	int64		ms = 0;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < HWM_HOLDS; i++)
		if (shared->holds[i].until > now && shared->holds[i].dboid == dboid &&
			shared->holds[i].owner == owner)
			ms = Max(ms, shared->holds[i].ms);
	for (int i = 0; i < shared->nslots; i++)
	{
		HwmRunSlot *slot = &shared->slots[i];

		if (slot->state == HWM_SLOT_RUNNING && slot->dboid == dboid && slot->owner == owner &&
			slot->run_began_at != 0 && now > slot->run_began_at)
			ms = Max(ms, (now - slot->run_began_at) / 1000);
	}
	SpinLockRelease(&shared->mutex);
	return ms;
}

/*
 * A run counts as begun when its worker began it (k < started), and so
 * does every run of a queue whose worker never took its slot (started 0:
 * it could not start, or a restarted launcher gave up on it): those are
 * recorded as before, since handing them back would have them claimed and
 * fail to start again at once, without the backoff of a failure.
 */
int64 *
hwm_slots_release(Oid dboid, HwmSlotState state, int *n, bool **begun)
{
	int64	   *ids = palloc(sizeof(int64) * (shared->nslots * HWM_QUEUE_MAX + 1));
	bool	   *was_begun = palloc(sizeof(bool) * (shared->nslots * HWM_QUEUE_MAX + 1));
	int			count = 0;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < shared->nslots; i++)
	{
		HwmRunSlot *slot = &shared->slots[i];

		if (slot->state == state && slot->state != HWM_SLOT_FREE &&
			(!OidIsValid(dboid) || slot->dboid == dboid))
		{
			for (int k = 0; k < slot->nruns; k++)
			{
				was_begun[count] = slot->started == 0 || k < slot->started;
				ids[count++] = slot->run_ids[k];
			}
			slot->state = HWM_SLOT_FREE;
		}
	}
	SpinLockRelease(&shared->mutex);
	if (n)
		*n = count;
	if (begun)
		*begun = was_begun;
	else
		pfree(was_begun);
	return ids;
}

Datum
hwm_slots_live_run_ids(Oid dboid)
{
	Datum	   *ids = palloc(sizeof(Datum) * (shared->nslots * HWM_QUEUE_MAX + 1));
	int			n = 0;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < shared->nslots; i++)
		if (shared->slots[i].state != HWM_SLOT_FREE && shared->slots[i].dboid == dboid)
			for (int k = 0; k < shared->slots[i].nruns; k++)
				ids[n++] = Int64GetDatum(shared->slots[i].run_ids[k]);
	SpinLockRelease(&shared->mutex);
	return PointerGetDatum(construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

void
hwm_dispatch_result_set(const HwmDispatchResult *result)
{
	SpinLockAcquire(&shared->mutex);
	shared->dispatch = *result;
	SpinLockRelease(&shared->mutex);
}

void
hwm_dispatch_result_get(HwmDispatchResult *result)
{
	SpinLockAcquire(&shared->mutex);
	*result = shared->dispatch;
	SpinLockRelease(&shared->mutex);
}
