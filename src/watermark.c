/*
 * watermark.c
 *		The safe watermark bound: how far a run may move the watermark without
 *		skipping a row that a transaction still in flight could commit.
 *
 * A loader that advances to the greatest value it sees loses rows whenever
 * writers commit out of order: S1 inserts updated_at = now() = 10:00:00 and
 * has not committed, S2 inserts 10:00:05 and commits, the run moves the
 * watermark to 10:00:05, S1 commits, and its row is never above the
 * watermark again.  hwm.run avoids this for values that the database assigns
 * by finding the greatest visible value W0 first (statement 1, snapshot S0),
 * then computing here a limit from the transactions in flight *after* S0,
 * and only then loading with a fresh snapshot.  The stored watermark is the
 * greatest visible value that is at most W0 and below the limit; rows above
 * it are still loaded, and loaded again (as no-op upserts) until the
 * watermark passes them.
 *
 * Time-typed watermark columns (timestamptz, timestamp, date) filled with
 * now(), statement_timestamp() or clock_timestamp(): every value a
 * transaction writes is at least its start time.  The limit is the oldest
 * start time of the transactions in flight in this database (from the
 * activity statistics), and no later than the current time less
 * hwm.start_margin, which covers a transaction that has taken its start time
 * but is not yet visible in the process array.  A transaction whose start
 * time is unknown (a prepared transaction, or a session with
 * track_activities off) is waited for, up to hwm.wait_timeout; if it is still
 * there, the watermark stays where it is.  A per-pipeline delay lowers the
 * limit to now() - delay, for values that applications supply.
 *
 * Other types (integers filled from a sequence or identity column): a
 * transaction draws its value while inserting, that is while it holds
 * RowExclusiveLock on the source or one of its leaf partitions, and the
 * sequence hands out increasing values.  So every value at most W0 that is
 * not yet visible belongs to a transaction holding such a lock now; hwm waits
 * for those (up to hwm.wait_timeout, not forever), and if one is still
 * running the watermark stays where it is.
 *
 * In both cases the rows that are visible are loaded; only the watermark is
 * held back, so freshness does not suffer.
 */
#include "hwm.h"

#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

int			hwm_wait_timeout = 1000;	/* ms */
int			hwm_start_margin = 1000;	/* ms */

/* Is this a type whose values can come from now() and friends? */
bool
hwm_is_time_type(Oid type)
{
	Oid			base = getBaseType(type);

	return base == TIMESTAMPTZOID || base == TIMESTAMPOID || base == DATEOID;
}

/* A point in time as a value of the (time-typed) watermark column */
static Datum
time_as_column_value(Oid type, TimestampTz t)
{
	switch (getBaseType(type))
	{
		case TIMESTAMPTZOID:
			return TimestampTzGetDatum(t);
		case TIMESTAMPOID:
			return DirectFunctionCall1(timestamptz_timestamp, TimestampTzGetDatum(t));
		case DATEOID:
			return DirectFunctionCall1(timestamptz_date, TimestampTzGetDatum(t));
	}
	elog(ERROR, "type %u is not a time type", type);
	return (Datum) 0;
}

/*
 * Wait until each transaction is gone or the deadline passes; returns how
 * many are still running.  Polls, so that a wait never takes part in a
 * deadlock and always ends.
 */
static int
wait_for(const VirtualTransactionId *vxids, int n, TimestampTz deadline)
{
	int			running = 0;

	for (int i = 0; i < n && VirtualTransactionIdIsValid(vxids[i]); i++)
	{
		while (!VirtualXactLock(vxids[i], false))
		{
			if (GetCurrentTimestamp() >= deadline)
			{
				running++;
				break;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 5L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return running;
}

/* The start time of the transaction vxid, or 0 when unknown */
static TimestampTz
xact_start_of(VirtualTransactionId vxid)
{
	PGPROC	   *proc;
	int			pid;
	int			n;

	if (vxid.procNumber == INVALID_PROC_NUMBER)
		return 0;				/* a prepared transaction recovered at startup */
	proc = ProcNumberGetProc(vxid.procNumber);
	if (proc == NULL)
		return 0;

	/*
	 * A prepared transaction keeps the vxid of the session that prepared it
	 * (current minor releases do), and that session may run another
	 * transaction by now, which started later: only when the process still
	 * runs vxid is its start time the one of vxid.
	 */
	if (hwm_proc_lxid(proc) != vxid.localTransactionId)
		return 0;
	pid = proc->pid;
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);

		if (local && local->backendStatus.st_procpid == pid)
			return local->backendStatus.st_xact_start_timestamp;
	}
	return 0;
}

/*
 * Compute the limit for a run of plan over source: see the file header.
 * Must be called after the statement that found W0.
 */
void
hwm_safe_bound(const HwmPlan *plan, Oid source, const Interval *delay,
			   HwmSafeBound *b)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   hwm_wait_timeout);

	memset(b, 0, sizeof(*b));

	if (hwm_is_time_type(plan->wm.type))
	{
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz limit = TimestampTzPlusMilliseconds(now, -hwm_start_margin);
		const char *reason = "hwm.start_margin";
		VirtualTransactionId *vxids;
		VirtualTransactionId *unknown;
		int			n;
		int			nunknown = 0;

		vxids = GetCurrentVirtualXIDs(InvalidTransactionId, false, false,
									  PROC_IN_VACUUM, &n);
		unknown = palloc(sizeof(VirtualTransactionId) * Max(n, 1));
		pgstat_clear_backend_activity_snapshot();
		for (int i = 0; i < n; i++)
		{
			TimestampTz start = xact_start_of(vxids[i]);

			if (start == 0)
				unknown[nunknown++] = vxids[i];
			else if (start < limit)
			{
				limit = start;
				reason = "a transaction still in flight";
			}
		}
		b->in_flight = n;
		if (nunknown > 0)
			b->still_running = wait_for(unknown, nunknown, deadline);
		if (b->still_running > 0)
		{
			b->hold = true;
			b->reason = "a prepared transaction or a transaction of unknown start still in flight";
			return;
		}
		if (delay)
		{
			TimestampTz settled = DatumGetTimestampTz(
													  DirectFunctionCall2(timestamptz_mi_interval,
																		  TimestampTzGetDatum(now),
																		  IntervalPGetDatum(delay)));

			if (settled < limit)
			{
				limit = settled;
				reason = "the pipeline's delay";
			}
		}
		b->has_limit = true;
		b->limit = time_as_column_value(plan->wm.type, limit);
		b->reason = reason;
	}
	else
	{
		List	   *rels = find_all_inheritors(source, NoLock, NULL);
		ListCell   *lc;

		/* the writers of the source and of every leaf partition */
		foreach(lc, rels)
		{
			LOCKTAG		tag;
			int			count;
			VirtualTransactionId *holders;

			SET_LOCKTAG_RELATION(tag, MyDatabaseId, lfirst_oid(lc));
			holders = GetLockConflicts(&tag, ShareLock, &count);
			b->in_flight += count;
			b->still_running += wait_for(holders, count, deadline);
		}
		b->hold = b->still_running > 0;
		b->reason = "a writer of the source still in flight";
	}
}
