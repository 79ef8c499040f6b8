/*
 * dispatch.c
 *		The scheduler's dispatcher, inside one database: it claims the
 *		database's due runs into queues, which workers serve (worker.c).
 *		Also what the dispatcher and the workers both do with a run's
 *		outcome (hwm_outcome_record, hwm_outcome_notify), and the settings
 *		of both.
 *
 * The launcher (launcher.c) is connected to no database; for each database
 * it serves it starts, one at a time and only when there is something to do,
 * a short-lived dispatcher connected to that database as the bootstrap
 * superuser, telling it how many workers it may have (its fair share of the
 * free hwm.max_workers).  The dispatcher:
 *
 *	1. leaves at once when the extension does not exist in the database,
 *	   or when its catalog is older than this library's (before ALTER
 *	   EXTENSION hwm UPDATE: logged, and nothing runs there until then);
 *	2. records the runs whose worker exited without recording an outcome
 *	   ('failed': the one it was serving; those it had not started are
 *	   handed back, due again), and, when asked (at the first dispatch of
 *	   the database and then every 10 seconds at most), marks 'running'
 *	   rows that no slot holds 'interrupted' and prunes the history
 *	   (hwm.max_runs_per_pipeline, hwm.history_days);
 *	2b. applies the wakes that upstream runs committed (hwm.wakes): the
 *	   pipelines that follow them become due (catalog.c); but not those of
 *	   a run whose worker applies them itself (below), from just before
 *	   its commit until it has (slots.c's applies_wakes);
 *	2c. makes due the pipelines scheduled on their source's commits whose
 *	   source's tables a commit wrote since their last run armed them
 *	   (watch.c), min_interval after that run began, and once more a start
 *	   margin after a run that loaded rows, to settle its watermark;
 *	3. reads the due pipelines at home here (enabled, scheduled,
 *	   next_run_at <= now(), no run of theirs in progress), in turns between
 *	   owners; for each, in a subtransaction of its own, inserts a 'running'
 *	   row into hwm.runs, moves next_run_at to the first slot of the
 *	   anchored grid after now() (grid.c; so a backlog becomes one catch-up
 *	   run) and queues the run: behind the other runs of its owner claimed
 *	   by this dispatch, or in a new slot (slots.c), at most quota slots of
 *	   at most HWM_QUEUE_MAX runs (and hwm.queue_budget of expected work),
 *	   a new slot only while its owner and this database are below their
 *	   fair shares (see "Fair shares" below; the runs held back stay due).
 *	   A run whose owner cannot start a session (dropped, or without LOGIN)
 *	   fails at once; whatever else fails for one pipeline's row is recorded
 *	   against that pipeline (its next try an hour away), logged with its
 *	   name, and the others are claimed;
 *	3b. notes the pipelines that have become late (hwm.freshness): each
 *	   is logged once, with one notification (late_notify), until it is no
 *	   longer late;
 *	4. tells the launcher (slots.c) whether the extension exists and when
 *	   its next pipeline is due or becomes late, and exits.  The launcher
 *	   then starts a worker per claimed slot.
 *
 * Steps 2b and 3 are also a worker's, for its own runs (hwm_claim_woken,
 * which worker.c calls): a worker whose run woke pipelines applies the
 * wakes itself right after that run commits, and claims the pipelines of
 * its owner that they made due into its own queue, as step 3 would have
 * queued them behind its owner's runs (within the worker's turn and its
 * queue's room, rows another transaction holds skipped).  A run's wake
 * then rings no doorbell: the worker rings it when something is left for a
 * dispatcher (another owner's pipeline, one it could not claim, a wake it
 * could not apply).  So a chain of one owner runs stage after stage in one
 * worker, without a dispatch and a worker's start per stage.
 *
 * Every finished scheduled run (succeeded, failed, skipped, interrupted)
 * sends a NOTIFY on hwm.notify_channel (hwm_runs by default) in the
 * transaction that records it, so listeners hear of it when, and only if, it
 * is committed; its payload is a JSON object with the database and the
 * run_id, nothing row security would hide (the listener reads the run from
 * hwm.runs).  Runs by hand notify nothing: their caller gets the outcome.
 *
 * The dispatcher registers, before connecting, the database it enters
 * (wakeup.c), so that DROP DATABASE can terminate it.  Its now, and every
 * due time it computes, is the scheduler's clock (clock.c; a failure's
 * backoff counts from its finished_at moved onto that clock).  It calls
 * catalog.c (every row it reads or writes), slots.c, clock.c, wakeup.c,
 * grid.c and util.c.
 * The launcher starts it by name (bgw_function_name) and reads hwm.enabled
 * here; hwm.c declares the settings over the variables here; worker.c
 * records outcomes, reads the settings and claims the runs its runs woke
 * here.  Nothing else calls into it.
 */
#include "postgres.h"

#include "catalog.h"
#include "clock.h"
#include "compat.h"
#include "dispatch.h"
#include "grid.h"
#include "slots.h"
#include "util.h"
#include "wakeup.h"
#include "watch.h"
#include "watermark.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/*
 * Settings of the per-database processes, the dispatcher's and the
 * worker's (worker.c); declared in hwm.c.  hwm.enabled the launcher reads
 * too.
 */
bool		hwm_enabled = true;
char	   *hwm_notify_channel = NULL;
int			hwm_queue_budget = 1000;
int			hwm_scheduled_timeout = 0;

/* When a dispatch that held runs back for fairness looks again, at the latest */
#define HOLD_RETRY_MS			1000

/* How long a dispatcher waits for a lock before it gives up (and retries) */
#define DISPATCH_LOCK_TIMEOUT	"5s"

PGDLLEXPORT void hwm_dispatcher_main(Datum main_arg);

/* ------------------------------------------------------------------------
 * Telling listeners
 * ------------------------------------------------------------------------
 */

/* check hook of hwm.notify_channel: empty, or a name NOTIFY accepts */
bool
hwm_notify_channel_check(char **newval, void **extra, GucSource source)
{
	if (*newval != NULL && strlen(*newval) >= NAMEDATALEN)
	{
		GUC_check_errdetail("A channel name must be shorter than %d bytes.", NAMEDATALEN);
		return false;
	}
	return true;
}

/*
 * NOTIFY hwm.notify_channel (nothing when it is empty), sent when the
 * transaction commits, with the payload {"database": ..., <rest>}.  A
 * payload holds only what anyone who may LISTEN in the database may know:
 * every role may listen, and row security, which hides other owners'
 * pipelines and runs, does not apply to a payload.  The listener reads what
 * happened from hwm's views, where it sees only what it may; and since any
 * role may NOTIFY the same channel, a forged payload leads it to nothing it
 * could not read anyway.
 */
static void
notify_listeners(const char *rest)
{
	StringInfoData buf;
	char	   *dbname;

	if (hwm_notify_channel == NULL || hwm_notify_channel[0] == '\0')
		return;
	dbname = get_database_name(MyDatabaseId);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"database\": ");
	escape_json(&buf, dbname ? dbname : "");
	appendStringInfo(&buf, ", %s}", rest);
	Async_Notify(hwm_notify_channel, buf.data);
}

/* One finished scheduled run: {"database": ..., "run_id": N} (hwm.runs) */
void
hwm_outcome_notify(int64 run_id)
{
	notify_listeners(psprintf("\"run_id\": " INT64_FORMAT, run_id));
}

/*
 * A pipeline of this database has become late: {"database": ...,
 * "late": true}, nothing more (the listener reads hwm.freshness: late,
 * late_since)
 */
static void
late_notify(void)
{
	notify_listeners("\"late\": true");
}

/* ------------------------------------------------------------------------
 * Recording outcomes (dispatcher and worker)
 * ------------------------------------------------------------------------
 */

/*
 * After a failure that ended at finished (the real clock, its row's
 * finished_at): the next run waits for the backoff of the grid (grid.c),
 * counted on the scheduler's clock (clock.c), or, when no time can be
 * represented, is not scheduled again.
 */
static void
back_off(const char *pipeline, TimestampTz finished)
{
	Interval	every;
	int			failures;
	TimestampTz next;

	if (!hwm_state_schedule_of(pipeline, &every, &failures))
		return;
	if (hwm_grid_retry_at(hwm_clock_of(finished), &every, failures, &next))
	{
		hwm_state_set_next_run(pipeline, &next);
		return;
	}
	ereport(LOG,
			(errmsg("hwm: pipeline \"%s\" is no longer scheduled: no retry time after its failure can be represented",
					pipeline)));
	hwm_state_set_next_run(pipeline, NULL);
}

/*
 * Finish a 'running' row of hwm.runs with status 'failed' or 'skipped'; for
 * 'failed' also count the failure in hwm.state and back off the next run;
 * notify listeners at commit.  Nothing happens when the row is no longer
 * 'running'.  The caller is inside a transaction with SPI.
 */
void
hwm_outcome_record(int64 run_id, HwmRunStatus status, const char *sqlstate,
				   const char *error)
{
	char	   *pipeline;
	TimestampTz finished;

	if (!hwm_runs_finish(run_id, status, sqlstate, error, &pipeline, &finished))
		return;
	if (status == HWM_RUN_FAILED)
		back_off(pipeline, finished);
	else if (status == HWM_RUN_SKIPPED)
	{
		/* a pipeline run after its upstreams tries again in a second */
		hwm_state_rearm_after(pipeline, hwm_clock_of(finished) + USECS_PER_SEC);
	}
	hwm_outcome_notify(run_id);
}


/* ------------------------------------------------------------------------
 * The dispatcher
 * ------------------------------------------------------------------------
 */

/*
 * Runs left 'running' by workers that are gone (a crash, an immediate
 * shutdown) become 'interrupted', and listeners are told.
 */
static void
sweep_interrupted(void)
{
	uint64		n;
	int64	   *run_ids = hwm_runs_sweep_interrupted(&n);

	for (uint64 i = 0; i < n; i++)
		hwm_outcome_notify(run_ids[i]);
}

/*
 * Keep the run history bounded (hwm.max_runs_per_pipeline,
 * hwm.history_days), for every pipeline of the database and every role's
 * runs without a pipeline, each owner's history on its own
 */
static void
prune_history(void)
{
	hwm_prune_runs(NULL, InvalidOid);
}

/*
 * A stored timeout in milliseconds (months of 30 days), rounded up, between
 * 1 and the longest a timer holds: hwm.set_timeout refuses longer ones, but
 * an earlier version stored them (and '1000000 years', whose microseconds
 * do not fit in 64 bits, wrapped around to 1 ms here).
 */
static int32
interval_ms(const Interval *iv)
{
	int64		usecs = hwm_interval_usecs(iv);
	int64		ms = usecs / 1000 + (usecs % 1000 > 0);

	return (int32) Max(Min(ms, HWM_TIMER_MAX_MS), 1);
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
	else if (object_aclcheck(DatabaseRelationId, MyDatabaseId, owner, ACL_CONNECT) != ACLCHECK_OK)
	{
		/* (its worker would be refused the connection, and record nothing) */
		char	   *dbname = get_database_name(MyDatabaseId);

		*sqlstate = "42501";
		problem = psprintf("the pipeline's owner \"%s\" may not connect to database \"%s\", and scheduled runs connect as the owner;"
						   " GRANT CONNECT ON DATABASE %s TO %s, or run the pipeline by hand",
						   NameStr(((Form_pg_authid) GETSTRUCT(tup))->rolname), dbname,
						   quote_identifier(dbname),
						   quote_identifier(NameStr(((Form_pg_authid) GETSTRUCT(tup))->rolname)));
	}
	ReleaseSysCache(tup);
	return problem;
}


/*
 * Runs whose worker exited without an outcome (a FATAL error, a
 * pg_terminate_backend): the run it was serving is recorded as failed (and
 * counts in the backoff); the runs of its queue it had not started are
 * handed back, released and due again as when a worker's turn ends
 * (hand_back_rest), and claimed again below.  A queue whose worker never
 * took its slot is recorded as failed throughout (see hwm_slots_release).
 */
static void
record_orphans(void)
{
	int			n;
	bool	   *begun;
	int64	   *ids = hwm_slots_release(MyDatabaseId, HWM_SLOT_ORPHANED, &n, &begun);
	Datum	   *rest = palloc(sizeof(Datum) * (n + 1));
	int			nrest = 0;

	for (int i = 0; i < n; i++)
	{
		if (begun[i])
			hwm_outcome_record(ids[i], HWM_RUN_FAILED, NULL,
						   "the run's background worker exited before it recorded an outcome; the server log says why");
		else
			rest[nrest++] = Int64GetDatum(ids[i]);
	}
	if (nrest > 0)
	{
		int64		released = hwm_runs_release(PointerGetDatum(construct_array(rest, nrest, INT8OID, 8,
																				FLOAT8PASSBYVAL,
																				TYPALIGN_DOUBLE)));

		ereport(LOG,
				(errmsg("hwm: " INT64_FORMAT " scheduled runs that an exited worker had not started are due again",
						released)));
	}
	pfree(ids);
	pfree(begun);
	pfree(rest);
}


/* One due run (hwm_state_select_due's row), and what the dispatch makes of it */
typedef struct DueRun
{
	char	   *pipeline;
	Oid			owner;
	Interval   *every;			/* NULL: scheduled after its upstreams alone */
	bool		relative;		/* every counts from this run (a target lag) */
	TimestampTz anchor;
	int32		timeout_ms;
	int64		expected_ms;	/* its last run's duration; -1: unknown */
	int			inflight;		/* its owner's queues in flight, at the start */
	int			order;			/* its place in select_due's order */
} DueRun;

/*
 * The queues this dispatch claimed: one slot per owner with room, at most
 * quota of them (the launcher's share for this database), each holding up
 * to HWM_QUEUE_MAX runs of that owner.
 */
typedef struct Queues
{
	int			quota;
	int			n;
	Oid		   *owners;
	int		   *slotnos;
	int		   *lengths;
	int64	   *planned_ms;		/* the expected durations of its runs, summed */
} Queues;

static Queues queues;

/*
 * The queue of this owner with room for the run (-1: none), or -2 when none
 * may be added.  A queue has room while it holds fewer than HWM_QUEUE_MAX
 * runs and the runs' expected durations (their last ones; unknown counts as
 * nothing) fit in hwm.queue_budget: a queue of slow runs stays short, as its
 * worker would hand the rest back anyway.
 */
static int
queue_for(const DueRun *due)
{
	for (int q = 0; q < queues.n; q++)
		if (queues.owners[q] == due->owner && queues.lengths[q] < HWM_QUEUE_MAX &&
			queues.planned_ms[q] + Max(due->expected_ms, 0) <= hwm_queue_budget)
			return q;
	return queues.n < queues.quota ? -1 : -2;
}

/* ------------------------------------------------------------------------
 * Fair shares
 * ------------------------------------------------------------------------
 *
 * hwm.max_workers is shared between the parties that want a worker: the
 * databases with runs due (the launcher tells a dispatcher when the others
 * are next due), and within a database the owners with runs due.  Before a
 * new queue is claimed, this database must hold fewer workers than its
 * share among the databases, and the queue's owner fewer than its share
 * among this database's owners, where a share is hwm.max_workers divided
 * by the parties that will want a worker while the queue's first run holds
 * this one (at least one): those due before it is expected to end, judged
 * by how long that pipeline's last run took (unknown: every party with
 * anything scheduled counts), or, when longer, how long a run of its owner
 * in this database has held a worker lately or holds one now (slots.c
 * remembers it: hwm_slots_hold_ms), so that an owner whose runs are slow
 * only when the last one was quick is not believed; and only the workers
 * still busy when the first of them is due count against it, a run in
 * progress by the time it has actually held its worker so far.  So an
 * owner whose runs take 10 seconds holds one worker of two while another
 * owner or database is due within those 10 seconds, and a quick run may
 * still take the second worker between their runs: it is back before they
 * are due.
 */

/* This database's owners, and when each is next due (hwm_state_due_by_owner) */
static int	n_due_owners = 0;
static HwmOwnerDue *due_owners = NULL;
static const HwmDispatchArgs *share_args = NULL;

/* Read when each owner of this database is next due (after claims, too) */
static void
read_due_owners(void)
{
	due_owners = hwm_state_due_by_owner(&n_due_owners);
}

/* The expected duration of each due run: its pipeline's last run (-1: unknown) */
static void
read_expected(DueRun *due, uint64 ndue)
{
	char	  **names = palloc(sizeof(char *) * (ndue + 1));
	int64	   *ms = palloc(sizeof(int64) * (ndue + 1));

	for (uint64 i = 0; i < ndue; i++)
		names[i] = due[i].pipeline;
	hwm_state_last_durations(names, (int) ndue, ms);
	for (uint64 i = 0; i < ndue; i++)
		due[i].expected_ms = ms[i];
}

/*
 * Workers held (claimed, starting or running) by an owner server-wide, or
 * by this database (owner InvalidOid), and still busy at `at`: by when
 * their queues are expected to end (a queue past its expected end is taken
 * to end within HOLD_RETRY_MS; DT_NOBEGIN counts them all), and, as it
 * goes, by the time the run in progress has held its worker: a run that
 * has held it for t is expected to hold it t more, whatever was predicted.
 */
static int
workers_held(Oid owner, TimestampTz at)
{
	HwmRunSlot *slots = palloc(sizeof(HwmRunSlot) * hwm_slots_count());
	TimestampTz now = hwm_now();
	int			n = 0;

	hwm_slots_read(slots);
	for (int i = 0; i < hwm_slots_count(); i++)
	{
		TimestampTz busy_until = slots[i].busy_until;

		if (!(slots[i].state == HWM_SLOT_CLAIMED || slots[i].state == HWM_SLOT_STARTING ||
			  slots[i].state == HWM_SLOT_RUNNING) ||
			!(OidIsValid(owner) ? slots[i].owner == owner : slots[i].dboid == MyDatabaseId))
			continue;
		if (busy_until < now)
			busy_until = TimestampTzPlusMilliseconds(now, HOLD_RETRY_MS);
		if (slots[i].state == HWM_SLOT_RUNNING && slots[i].run_began_at != 0 &&
			now > slots[i].run_began_at)
			busy_until = Max(busy_until, now + (now - slots[i].run_began_at));
		if (busy_until > at)
			n++;
	}
	pfree(slots);
	return n;
}

/* A share of hwm.max_workers among this party and `others` (at least one) */
static int
share_of(int others)
{
	return Max(1, share_args->max_workers / (1 + others));
}

/*
 * May a new queue start with this run?  The parties due before it is
 * expected to end are the other databases, and the other owners here, due
 * by then.  With other databases among them, this database must hold fewer
 * workers still busy when the first of them is due than its share among
 * the databases; with other owners, the owner must hold fewer workers
 * (in every database) still busy when the first of them is due than its
 * share among the owners.  (An owner's runs in another database are that
 * database's share: the owners there are counted by its own dispatches.)
 * With none, the run takes what the launcher's quota leaves.
 */
static bool
fair_to_claim(const DueRun *due, TimestampTz now)
{
	int64		expected = due->expected_ms < 0 ? -1 :
		Max(due->expected_ms, hwm_slots_hold_ms(MyDatabaseId, due->owner, now));
	TimestampTz until = expected < 0 ? DT_NOEND :
		TimestampTzPlusMilliseconds(now, expected);
	TimestampTz first_db = DT_NOEND;
	TimestampTz first_owner = DT_NOEND;
	int			other_dbs = 0;
	int			other_owners = 0;

	for (int i = 0; i < share_args->nothers; i++)
		if (share_args->others_due_at[i] <= until)
		{
			other_dbs++;
			first_db = Min(first_db, share_args->others_due_at[i]);
		}
	for (int i = 0; i < n_due_owners; i++)
		if (due_owners[i].owner != due->owner && due_owners[i].due <= until)
		{
			other_owners++;
			first_owner = Min(first_owner, due_owners[i].due);
		}
	if (other_dbs > 0 &&
		workers_held(InvalidOid, Max(first_db, now)) >= share_of(other_dbs))
		return false;
	if (other_owners > 0 &&
		workers_held(due->owner, Max(first_owner, now)) >= share_of(other_owners))
		return false;
	return true;
}

/* Due runs in turn order, owners holding fewer workers first */
static int
due_cmp(const void *a, const void *b)
{
	const DueRun *x = a;
	const DueRun *y = b;

	if (x->inflight != y->inflight)
		return x->inflight < y->inflight ? -1 : 1;
	return x->order < y->order ? -1 : (x->order > y->order ? 1 : 0);
}

/*
 * One claim (claim_run in a subtransaction, claim_guarded), and what it
 * tells its caller once the subtransaction is over: a run whose owner
 * cannot run it, to record; a claim that found no free slot.
 */
typedef struct ClaimStep
{
	const DueRun *due;
	TimestampTz now;
	ErrorData  *edata;			/* the claim's error, or NULL */
	int64		cannot_run_id;	/* a claimed run its owner cannot run, 0: none */
	const char *cannot_run_sqlstate;
	const char *cannot_run_problem;
	bool		no_free_slot;	/* the dispatch stops claiming */
} ClaimStep;

/*
 * The next slot of a pipeline whose run is claimed at now (false: none).
 * After its upstreams alone (every NULL): none, their next commit makes
 * one; to stay under a target lag (relative): half of it from now (an
 * upstream's run wakes it sooner, and each run pushes the next one back, so
 * a stage of a chain runs after the stage before it rather than on a clock
 * too); else the first slot of its anchored grid after now.
 */
static bool
next_slot(const char *pipeline, const Interval *every, bool relative,
		  TimestampTz anchor, TimestampTz now, TimestampTz *next)
{
	bool		has_next;

	if (every != NULL && relative)
		has_next = hwm_grid_schedule_next(now, every, now, false, next);
	else
		has_next = every != NULL &&
			hwm_grid_schedule_next(anchor, every, now, false, next);
	if (!has_next && every != NULL)
		ereport(LOG,
				(errmsg("hwm: pipeline \"%s\" is no longer scheduled: its next run time after this one cannot be represented",
						pipeline)));
	return has_next;
}

/*
 * Claim one due run (c->due, at c->now): its 'running' row, its next slot
 * on the grid, a run slot for the launcher.  A run whose owner cannot run
 * it is left in c for the caller to record as a failure at once.
 */
static void
claim_run(ClaimStep *c)
{
	const DueRun *due = c->due;
	TimestampTz now = c->now;
	const char *sqlstate = NULL;
	const char *problem;
	TimestampTz next;
	bool		has_next;
	int64		run_id;
	int			q;
	int			slotno;

	has_next = next_slot(due->pipeline, due->every, due->relative, due->anchor, now, &next);
	run_id = hwm_runs_start(due->pipeline, due->owner, has_next ? &next : NULL);
	problem = owner_problem(due->owner, &sqlstate);
	if (problem)
	{
		/* it cannot run at all: a failure, recorded by the caller */
		ereport(LOG,
				(errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s", due->pipeline, problem)));
		c->cannot_run_id = run_id;
		c->cannot_run_sqlstate = sqlstate;
		c->cannot_run_problem = problem;
		return;
	}
	/*
	 * Behind this owner's queue, or in a new one.  The launcher's quota
	 * leaves a slot free for every queue it allows.  Were none free, the
	 * error rolls the claims back; slots taken for them are started, find no
	 * 'running' row and end.
	 */
	q = queue_for(due);
	if (q >= 0 && hwm_slot_enqueue(queues.slotnos[q], run_id, due->timeout_ms, due->expected_ms))
	{
		queues.lengths[q]++;
		queues.planned_ms[q] += Max(due->expected_ms, 0);
		return;
	}
	if (q >= 0)
		queues.lengths[q] = HWM_QUEUE_MAX;	/* taken by its worker already */
	if (queues.n >= queues.quota)
		elog(ERROR, "hwm: no room left in this dispatch for pipeline \"%s\"", due->pipeline);
	slotno = hwm_slot_claim(MyDatabaseId, due->owner, due->timeout_ms, run_id, due->expected_ms);
	if (slotno < 0)
	{
		c->no_free_slot = true;
		elog(ERROR, "hwm: no free scheduler slot for pipeline \"%s\"", due->pipeline);
	}
	queues.owners[queues.n] = due->owner;
	queues.slotnos[queues.n] = slotno;
	queues.lengths[queues.n] = 1;
	queues.planned_ms[queues.n] = Max(due->expected_ms, 0);
	queues.n++;
}

/*
 * A claim that failed for a reason of its pipeline's row: recorded against
 * that pipeline alone (a failed run with the error, and its next run an hour
 * after it, on the scheduler's clock), so that the others are claimed as if
 * nothing happened.
 */
static void
claim_failed(const DueRun *due, ErrorData *edata)
{
	char	   *error = psprintf("the scheduler could not claim the run: %s",
								 hwm_clip_error(edata->message ? edata->message : "unknown error"));
	TimestampTz next;

	ereport(LOG,
			(errcode(edata->sqlerrcode),
			 errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s", due->pipeline, error)));
	next = hwm_clock_of(hwm_runs_claim_failed(due->pipeline, due->owner,
											  unpack_sql_state(edata->sqlerrcode), error))
		+ USECS_PER_HOUR;
	hwm_state_set_next_run(due->pipeline, &next);
}

/* One claim, and the recording of one that failed, for hwm_try_subxact */
static void
claim_step(void *arg)
{
	claim_run((ClaimStep *) arg);
}

static void
claim_failed_step(void *arg)
{
	ClaimStep  *c = arg;

	claim_failed(c->due, c->edata);
}

/*
 * When the dispatch that held back the runs of some owners for fairness
 * should look again: when the next run of another owner is due, and at
 * the latest HOLD_RETRY_MS from now (workers may have ended by then).
 */
static TimestampTz
next_due_not_held(const Oid *held, int nheld, TimestampTz now)
{
	TimestampTz next = TimestampTzPlusMilliseconds(now, HOLD_RETRY_MS);

	read_due_owners();
	for (int i = 0; i < n_due_owners; i++)
	{
		bool		was_held = false;

		for (int k = 0; k < nheld && !was_held; k++)
			was_held = held[k] == due_owners[i].owner;
		if (!was_held)
			next = Min(next, due_owners[i].due);
	}
	/* and once another database's runs are due, the shares change */
	for (int i = 0; i < share_args->nothers; i++)
		if (share_args->others_due_at[i] > now)
			next = Min(next, share_args->others_due_at[i]);
	return next;
}

/* The queues of a dispatch that may claim at most quota of them, empty */
static void
start_queues(int quota)
{
	queues.quota = quota;
	queues.n = 0;
	queues.owners = palloc(sizeof(Oid) * (quota + 1));
	queues.slotnos = palloc(sizeof(int) * (quota + 1));
	queues.lengths = palloc(sizeof(int) * (quota + 1));
	queues.planned_ms = palloc(sizeof(int64) * (quota + 1));
}

/*
 * The runs due at now, at most limit rows of hwm.state (*nrows: how many
 * there were), those that can be claimed (*ndue of them: a row that lacks
 * what a claim needs is logged and left out by hwm_state_select_due) in the
 * order they are claimed (due_cmp), each with its owner's workers in flight
 * and its expected time.
 */
static DueRun *
read_due_runs(int limit, TimestampTz now, uint64 *nrows, uint64 *ndue)
{
	HwmDueRow  *rows = hwm_state_select_due(limit, now, nrows, ndue);
	DueRun	   *due = palloc0(sizeof(DueRun) * (*ndue + 1));

	for (uint64 i = 0; i < *ndue; i++)
	{
		due[i].pipeline = rows[i].pipeline;
		due[i].owner = rows[i].owner;
		due[i].every = rows[i].periodic ? &rows[i].every : NULL;
		due[i].relative = rows[i].relative;
		due[i].anchor = rows[i].anchor;
		due[i].timeout_ms = rows[i].timeout ? interval_ms(rows[i].timeout) : 0;
		due[i].order = (int) i;
		due[i].inflight = workers_held(due[i].owner, DT_NOBEGIN);
	}
	if (*ndue > 0)
	{
		read_expected(due, *ndue);
		read_due_owners();
		qsort(due, *ndue, sizeof(DueRun), due_cmp);
	}
	return due;
}

/*
 * Claim one due run in a subtransaction of its own (see claim_due_runs): a
 * run that turned out unable to run is recorded as failed; a claim that
 * failed for a reason of the pipeline's row is recorded against that
 * pipeline alone (claim_failed); one that failed for want of a free slot
 * ends the dispatch.  cxt: the memory context to return to.
 */
static void
claim_guarded(const DueRun *due, TimestampTz now, MemoryContext cxt)
{
	ClaimStep	c = {.due = due, .now = now};
	ErrorData  *edata2;

	c.edata = hwm_try_subxact(claim_step, &c, cxt);
	if (c.edata == NULL && c.cannot_run_id != 0)
	{
		hwm_outcome_record(c.cannot_run_id, HWM_RUN_FAILED, c.cannot_run_sqlstate,
						   c.cannot_run_problem);
		return;
	}
	if (c.edata == NULL)
		return;
	if (c.no_free_slot)
		ReThrowError(c.edata);	/* the scheduler's fault, not the pipeline's */
	edata2 = hwm_try_subxact(claim_failed_step, &c, cxt);
	if (edata2 != NULL)
		ereport(LOG,
				(errmsg("hwm: could not record the failed claim of pipeline \"%s\": %s",
						due->pipeline, edata2->message)));
}

/*
 * Claim due runs into at most quota queues, one per owner, of at most
 * HWM_QUEUE_MAX runs each (and about hwm.queue_budget of expected work);
 * returns when the next unclaimed pipeline is due (now when more are due,
 * DT_NOEND when none is scheduled).  Owners holding fewer workers go first,
 * and a new queue is claimed only when it is fair (fair_to_claim): the runs
 * of an owner at its share are held back, due, for a later dispatch.  Each
 * claim runs in a subtransaction of its own: whatever one pipeline's row
 * makes fail (its next time, its claim) is recorded against that pipeline
 * alone, logged with its name, and the others are claimed all the same.
 * Only a failure of the scheduler itself (no free slot, the catalog
 * unreadable) ends the dispatch.
 */
static TimestampTz
claim_due_runs(const HwmDispatchArgs *args)
{
	int			quota = args->quota;
	TimestampTz now = hwm_now();
	MemoryContext cxt = CurrentMemoryContext;
	uint64		nrows;
	uint64		ndue;
	DueRun	   *due;
	Oid		   *held;
	int			nheld = 0;
	bool		left = false;

	share_args = args;
	start_queues(quota);
	due = read_due_runs(quota * HWM_QUEUE_MAX + 1, now, &nrows, &ndue);
	held = palloc(sizeof(Oid) * (ndue + 1));
	for (uint64 i = 0; i < ndue; i++)
	{
		int			q = queue_for(&due[i]);

		if (q == -2)
		{
			left = true;		/* no room for its owner: the next dispatch */
			continue;
		}
		if (q == -1 && !fair_to_claim(&due[i], now))
		{
			held[nheld++] = due[i].owner;	/* at its share: later */
			continue;
		}
		claim_guarded(&due[i], now, cxt);
	}
	if (left || (nheld == 0 && nrows > (uint64) quota * HWM_QUEUE_MAX))
		return now;				/* more are due than this dispatch may claim */
	if (nheld > 0)
		return next_due_not_held(held, nheld, now);
	return hwm_state_next_due();
}

/*
 * Step 2b: the wakes of upstream runs committed since (hwm.wakes), in a
 * subtransaction: whatever fails there is logged and costs no claim.
 */
static void
apply_wakes_step(void *arg)
{
	bool		all_applied;

	/* (not those of the runs whose workers apply them: chain_woken, worker.c) */
	(void) hwm_state_apply_wakes(-1, NULL, &all_applied);
}

static void
apply_wakes(void)
{
	ErrorData  *edata = hwm_try_subxact(apply_wakes_step, NULL, CurrentMemoryContext);

	if (edata != NULL)
		ereport(LOG,
				(errmsg("hwm: could not apply the wakes of upstream runs: %s", edata->message)));
}

/*
 * Step 2c: the pipelines scheduled on their source's commits
 * (hwm.schedule_on_commit) that wait for one, each made due when a watch
 * of its source's tables is no longer armed (watch.c: a commit wrote the
 * table since the pipeline's last run armed it, or nothing armed it since
 * the server started, or it could not be watched), at its min_interval
 * after its last run began.  One whose last run loaded rows, and whose
 * tables no commit wrote since, runs once more, when a run can find
 * complete what that run loaded: a time watermark stays hwm.start_margin
 * (and its delay) behind its run's start, so the last run of a burst of
 * commits leaves it there, and hwm.freshness with it; the run after, which
 * loads nothing, settles it (and stops this); a commit before then brings
 * the run forward to min_interval after the last.  In a subtransaction:
 * whatever fails there is logged.  The result is when to look again: soon
 * when a pipeline to make due was not (its row held by a run by hand, or
 * the step failed), since no commit rings again for a watch that is no
 * longer armed; else never.
 */
typedef struct CommitStep
{
	TimestampTz now;
	bool		again;			/* a pipeline written was not made due */
} CommitStep;

static void
commit_wakes_step(void *arg)
{
	CommitStep *c = arg;
	Oid		   *sources;
	bool	   *settle;
	int			n;
	char	  **names = hwm_state_commit_waiters(c->now, &n, &sources, &settle);
	Datum	   *written = palloc(sizeof(Datum) * (n + 1));
	Datum	   *settling = palloc(sizeof(Datum) * (n + 1));
	int			nwritten = 0;
	int			nsettling = 0;

	for (int i = 0; i < n; i++)
	{
		ListCell   *lc;
		bool		was_written = false;

		foreach(lc, hwm_source_relations(sources[i]))
		{
			if (hwm_watch_written(lfirst_oid(lc)))
			{
				was_written = true;
				break;
			}
		}
		if (was_written)
			written[nwritten++] = CStringGetTextDatum(names[i]);
		else if (settle[i])
			settling[nsettling++] = CStringGetTextDatum(names[i]);
	}
	if (nwritten + nsettling > 0 &&
		hwm_state_commit_due(PointerGetDatum(construct_array(written, nwritten, TEXTOID, -1,
															 false, TYPALIGN_INT)), nwritten,
							 PointerGetDatum(construct_array(settling, nsettling, TEXTOID, -1,
															 false, TYPALIGN_INT)), nsettling,
							 hwm_start_margin, c->now) < nwritten + nsettling)
		c->again = true;
}

static TimestampTz
commit_wakes(TimestampTz now)
{
	CommitStep	c = {.now = now, .again = false};
	ErrorData  *edata = hwm_try_subxact(commit_wakes_step, &c, CurrentMemoryContext);

	if (edata != NULL)
	{
		ereport(LOG,
				(errmsg("hwm: could not check the commits to the sources of pipelines scheduled on commit: %s",
						edata->message)));
		c.again = true;
	}
	return c.again ? TimestampTzPlusMilliseconds(now, HOLD_RETRY_MS) : DT_NOEND;
}

/*
 * A worker's run of upstream woke pipelines (worker.c calls this right
 * after that run committed, in a transaction of its own): the wakes of
 * upstream are applied here and now, as step 2b applies them (those of
 * other upstreams are left to the dispatcher: a worker does not gather
 * into its queue what the dispatcher would share between workers), and
 * the pipelines they made due that belong to owner (the worker's) are
 * claimed as a dispatch
 * claims them (a 'running' row each, its next slot) for the worker's own
 * queue: at most room of them, only while their last durations fit in
 * budget_ms (what is left of the worker's turn; unknown counts as nothing,
 * as queue_for counts it), the earliest due first.  Appending to a queue
 * of their owner is what a dispatch does too (queue_for): no new worker is
 * taken, so the fair shares (fair_to_claim) are not asked.  A row another
 * transaction holds is skipped, never waited for: a dispatcher claiming it
 * runs it instead.  Nothing is claimed when the owner could not start a
 * session (owner_problem): the dispatcher records that failure.  The wakes
 * of the runs other workers are about to apply themselves are left to them
 * (slotno: this worker's slot, whose run's wakes are its own), as step 2b
 * leaves them: so no dispatcher and no other worker takes the next stage of
 * a chain from the worker that ran the stage before.
 *
 * Returns how many it claimed, into run_ids and timeouts_ms (room entries),
 * with *expected_ms their last durations summed (-1: one is unknown), and
 * *dispatcher_needed: whether anything is left for a dispatcher (a wake not
 * applied, a wake of another upstream, a pipeline made due and not claimed
 * here: another owner's, one busy or paused), so that the worker rings the
 * doorbell.
 */
int
hwm_claim_woken(int slotno, const char *upstream, Oid owner, int room, int64 budget_ms,
				int64 *run_ids, int32 *timeouts_ms, int64 *expected_ms,
				bool *dispatcher_needed)
{
	bool		all_applied;
	ArrayType  *made_due = DatumGetArrayTypeP(hwm_state_apply_wakes(slotno, upstream, &all_applied));
	int			nmade = ArrayGetNItems(ARR_NDIM(made_due), ARR_DIMS(made_due));
	TimestampTz now = hwm_now();
	const char *sqlstate = NULL;
	int			n = 0;
	int64		planned = 0;
	bool		unknown = false;

	if (nmade > 0 && room > 0 && budget_ms > 0 && owner_problem(owner, &sqlstate) == NULL)
	{
		uint64		nrows;
		int64	   *ms = palloc(sizeof(int64) * (room + 1));
		HwmDueRow  *rows = hwm_state_select_woken(PointerGetDatum(made_due), owner, room,
												  now, &nrows, ms);

		for (uint64 i = 0; i < nrows && n < room; i++)
		{
			TimestampTz next;
			bool		has_next;

			if (planned + Max(ms[i], 0) > budget_ms)
				break;			/* the rest waits for a dispatch */
			has_next = next_slot(rows[i].pipeline, rows[i].periodic ? &rows[i].every : NULL,
								 rows[i].relative, rows[i].anchor, now, &next);
			run_ids[n] = hwm_runs_start(rows[i].pipeline, owner, has_next ? &next : NULL);
			timeouts_ms[n] = rows[i].timeout ? interval_ms(rows[i].timeout) : 0;
			planned += Max(ms[i], 0);
			unknown |= ms[i] < 0;
			n++;
		}
	}
	*expected_ms = unknown ? -1 : planned;
	*dispatcher_needed = !all_applied || n < nmade;
	return n;
}

/*
 * Step 3b: the pipelines that have become late since the last dispatch are
 * said once each, in the server's log and by one notification; the time the
 * next one becomes late if nothing changes is when the launcher comes back.
 */
typedef struct LateStep
{
	TimestampTz next;
} LateStep;

static void
late_step(void *arg)
{
	LateStep   *l = arg;
	int			n;
	HwmLate    *late = hwm_state_note_late(&n, &l->next);

	for (int i = 0; i < n; i++)
		ereport(LOG,
				(errmsg("hwm: pipeline \"%s\" is late: its data is %s old, over its target lag of %s",
						late[i].pipeline, late[i].lag ? late[i].lag : "?",
						late[i].target_lag ? late[i].target_lag : "?"),
				 errhint("See hwm.freshness and hwm.status for why: a run that fails, a writer holding the watermark back, or an upstream that is late.")));
	if (n > 0)
		late_notify();
}

/*
 * Notes lateness in a subtransaction: whatever fails there is logged and
 * costs no claim.  Returns when to come back for it (DT_NOEND: never), on
 * the scheduler's clock (lateness is judged by SQL's now()).
 */
static TimestampTz
note_late(void)
{
	LateStep	l = {.next = DT_NOEND};
	ErrorData  *edata = hwm_try_subxact(late_step, &l, CurrentMemoryContext);

	if (edata == NULL)
		return hwm_clock_of(l.next);
	ereport(LOG,
			(errmsg("hwm: could not check which pipelines are late: %s", edata->message)));
	return DT_NOEND;
}

/*
 * Steps 2 and 3 in one transaction; false when hwm is not installed here,
 * or its catalog is older than this library's (logged: the launcher comes
 * back at ALTER EXTENSION, which rings the doorbell, or a few minutes
 * later, as for a database without hwm).
 */
static bool
dispatch(const HwmDispatchArgs *args, TimestampTz *next_due)
{
	bool		present;
	TimestampTz again;

	hwm_bgw_begin();
	present = OidIsValid(get_extension_oid("hwm", true));
	if (present && !hwm_catalog_is_current())
	{
		char	   *dbname = get_database_name(MyDatabaseId);

		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("hwm: the scheduler skips database \"%s\": its hwm catalog is older than the installed hwm library",
						dbname ? dbname : "?"),
				 errdetail("No pipeline of that database runs until its catalog is updated."),
				 errhint("Run ALTER EXTENSION hwm UPDATE in database \"%s\".", dbname ? dbname : "?")));
		present = false;
	}
	if (!present)
	{
		/* nothing to record without a catalog it can write: forget the runs */
		pfree(hwm_slots_release(MyDatabaseId, HWM_SLOT_ORPHANED, NULL, NULL));
		hwm_bgw_commit();
		return false;
	}
	record_orphans();
	apply_wakes();
	if (args->maintenance)
	{
		sweep_interrupted();
		prune_history();
	}
	again = commit_wakes(hwm_now());
	*next_due = claim_due_runs(args);
	*next_due = Min(*next_due, note_late());
	*next_due = Min(*next_due, again);
	hwm_bgw_commit();
	return true;
}

/*
 * The dispatcher's entry point, which the launcher names
 * (bgw_function_name): bgw_extra is its HwmDispatchArgs.
 */
void
hwm_dispatcher_main(Datum main_arg)
{
	HwmDispatchArgs args;
	static HwmDispatchResult result;	/* static: set across PG_TRY */

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (!hwm_wakeup_enter_database(args.dboid))
		proc_exit(0);			/* being dropped: the launcher tries later */

	BackgroundWorkerInitializeConnectionByOid(args.dboid, InvalidOid, 0);
	pgstat_report_appname("hwm dispatcher");
	SetConfigOption("lock_timeout", DISPATCH_LOCK_TIMEOUT, PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * The dispatcher writes only hwm's own catalog (claims, outcomes,
	 * upkeep), as the scheduler: what the database's owner sets for the
	 * database's sessions (ALTER DATABASE ... SET) does not stop it, so that
	 * whatever stops the runs is recorded against them.  A read-only default
	 * or a statement_timeout of the database still applies to the runs (the
	 * owner's sessions), which record it.
	 */
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);

	memset(&result, 0, sizeof(result));
	result.dispatch_id = args.dispatch_id;
	result.next_due_at = DT_NOEND;
	PG_TRY();
	{
		result.has_extension = dispatch(&args, &result.next_due_at);
		result.done = true;
	}
	PG_CATCH();
	{
		/* logged, not fatal: the launcher tries again later (done is false) */
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	hwm_dispatch_result_set(&result);
	proc_exit(0);
}
