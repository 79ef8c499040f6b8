/*
 * dispatch.c
 *		The scheduler's processes inside one database: the dispatcher,
 *		which claims that database's due runs, and the worker, which serves a
 *		queue of them.
 *
 * The launcher (launcher.c) is connected to no database; for each database
 * it serves it starts, one at a time and only when there is something to do,
 * a short-lived dispatcher connected to that database as the bootstrap
 * superuser, telling it how many workers it may have (its fair share of the
 * free hwm.max_workers).  The dispatcher:
 *
 *	1. leaves at once when the extension does not exist in the database;
 *	2. records the runs whose worker exited without recording an outcome
 *	   ('failed'), and, when asked (at the first dispatch of the database
 *	   and then every 10 seconds at most), marks 'running' rows that no slot
 *	   holds 'interrupted' and prunes the history (hwm.max_runs_per_pipeline,
 *	   hwm.history_days);
 *	3. reads the due pipelines at home here (enabled, scheduled,
 *	   next_run_at <= now(), no run of theirs in progress), in turns between
 *	   owners; for each, in a subtransaction of its own, inserts a 'running'
 *	   row into hwm.runs, moves next_run_at to the first slot of the
 *	   anchored grid after now() (grid.c; so a backlog becomes one catch-up
 *	   run) and queues the run: behind the other runs of its owner claimed
 *	   by this dispatch, or in a new slot (slots.c), at most quota slots of
 *	   at most HWM_QUEUE_MAX runs.  A run whose owner cannot start a session
 *	   (dropped, or without LOGIN) fails at once; whatever else fails for one
 *	   pipeline's row is recorded against that pipeline (its next try an
 *	   hour away), logged with its name, and the others are claimed;
 *	4. tells the launcher (slots.c) whether the extension exists and when
 *	   its next pipeline is due, and exits.  The launcher then starts a
 *	   worker per claimed slot.
 *
 * A worker connects as the owner of its queue and serves it in turn: for
 * each run it pins search_path, arms the pipeline's timeout as a statement
 * timeout, and runs SELECT * FROM hwm.run(pipeline, nowait => true) in one
 * transaction (hwm.run records the successful run itself, in the run's
 * 'running' row: one run id per scheduled run).  On an error the transaction rolls back and a
 * second one marks the row 'skipped' when the pipeline was busy with another
 * run, else 'failed'; a failure counts in hwm.state and backs off: the retry
 * waits schedule * 2^(n-1) after the n-th consecutive failure, at most one
 * hour or one schedule, whichever is longer.  Then the next run of the
 * queue, after the session is reset as DISCARD ALL resets it.  A fork and a
 * connection are paid per queue; a queue never mixes owners or databases.
 *
 * Every finished scheduled run (succeeded, failed, skipped, interrupted)
 * sends a NOTIFY on hwm.notify_channel (hwm_runs by default) in the
 * transaction that records it, so listeners hear of it when, and only if, it
 * is committed; its payload is a JSON object with the database, pipeline,
 * status, run_id and sqlstate.  Runs by hand notify nothing: their caller
 * gets the outcome.
 *
 * Both register, before connecting, the database they enter (wakeup.c), so
 * that DROP DATABASE can terminate them.  Calls go one way: this module
 * calls down into catalog.c (every row it reads or writes), slots.c,
 * wakeup.c, grid.c and util.c; only the launcher and hwm.c call into it.
 */
#include "postgres.h"

#include "catalog.h"
#include "dispatch.h"
#include "grid.h"
#include "schedule.h"
#include "slots.h"
#include "util.h"
#include "wakeup.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "storage/lock.h"
#include "catalog/namespace.h"
#include "commands/sequence.h"
#include "commands/prepare.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

/* Settings of the per-database processes (defined in hwm.c) */
char	   *hwm_notify_channel = NULL;

/* How long a dispatcher waits for a lock before it gives up (and retries) */
#define DISPATCH_LOCK_TIMEOUT	"5s"

PGDLLEXPORT void hwm_dispatcher_main(Datum main_arg);
PGDLLEXPORT void hwm_worker_main(Datum main_arg);

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
 * NOTIFY hwm.notify_channel (nothing when it is empty) with a JSON payload
 * about one finished scheduled run; sent when the transaction commits.
 */
static void
notify_outcome(const char *pipeline, const char *status, int64 run_id,
			   const char *sqlstate)
{
	StringInfoData buf;
	char	   *dbname;
	char	   *name;

	if (hwm_notify_channel == NULL || hwm_notify_channel[0] == '\0')
		return;
	/* NOTIFY refuses payloads of 8000 bytes: clip a very long name */
	name = pnstrdup(pipeline, pg_mbcliplen(pipeline, strlen(pipeline), 1024));
	dbname = get_database_name(MyDatabaseId);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"database\": ");
	escape_json(&buf, dbname ? dbname : "");
	appendStringInfoString(&buf, ", \"pipeline\": ");
	escape_json(&buf, name);
	appendStringInfoString(&buf, ", \"status\": ");
	escape_json(&buf, status);
	appendStringInfo(&buf, ", \"run_id\": " INT64_FORMAT ", \"sqlstate\": ", run_id);
	if (sqlstate)
		escape_json(&buf, sqlstate);
	else
		appendStringInfoString(&buf, "null");
	appendStringInfoChar(&buf, '}');
	Async_Notify(hwm_notify_channel, buf.data);
}

/* ------------------------------------------------------------------------
 * Recording outcomes (dispatcher and worker)
 * ------------------------------------------------------------------------
 */

/*
 * After a failure: the next run waits for the backoff of the grid
 * (grid.c), or, when no time can be represented, is not scheduled again.
 */
static void
back_off(const char *pipeline, TimestampTz finished)
{
	Interval	every;
	int			failures;
	TimestampTz next;

	if (!hwm_state_schedule_of(pipeline, &every, &failures))
		return;
	if (hwm_grid_retry_at(finished, &every, failures, &next))
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
static void
record_outcome(int64 run_id, const char *status, const char *sqlstate,
			   const char *error)
{
	char	   *pipeline;
	TimestampTz finished;

	if (!hwm_runs_finish(run_id, status, sqlstate, error, &pipeline, &finished))
		return;
	if (strcmp(status, "failed") == 0)
		back_off(pipeline, finished);
	notify_outcome(pipeline, status, run_id, sqlstate);
}

/*
 * Runs left 'running' by workers that are gone (a crash, an immediate
 * shutdown) become 'interrupted', and listeners are told.
 */
static void
sweep_interrupted(void)
{
	uint64		n = hwm_runs_sweep_interrupted(hwm_slots_live_run_ids(MyDatabaseId));

	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		notify_outcome(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
					   "interrupted",
					   DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 2, &isnull)),
					   NULL);
	}
}

/* Keep the run history bounded (hwm.max_runs_per_pipeline,
 * hwm.history_days), for every pipeline of the database */
static void
prune_history(void)
{
	hwm_prune_runs(NULL);
}

/* Interval to milliseconds (months of 30 days), clamped to int32 */
static int32
interval_ms(const Interval *iv)
{
	int64		ms = (hwm_interval_usecs(iv) + 999) / 1000;

	return (int32) Max(Min(ms, PG_INT32_MAX), 1);
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
	ReleaseSysCache(tup);
	return problem;
}


/* ------------------------------------------------------------------------
 * The dispatcher
 * ------------------------------------------------------------------------
 */

/* Runs whose worker exited without an outcome: recorded as failed */
static void
record_orphans(void)
{
	int			n;
	int64	   *ids = hwm_slots_release(MyDatabaseId, HWM_SLOT_ORPHANED, &n);

	for (int i = 0; i < n; i++)
		record_outcome(ids[i], "failed", NULL,
					   "the run's background worker exited before it recorded an outcome; the server log says why");
	pfree(ids);
}


/* One due row of select_due, copied out of SPI's result */
typedef struct DueRun
{
	char	   *pipeline;
	Oid			owner;
	Interval   *every;
	TimestampTz anchor;
	int32		timeout_ms;
} DueRun;

/* set when a claim found no free slot: the dispatch stops claiming */
static bool no_free_slot = false;

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
} Queues;

static Queues queues;

/* The queue of this owner with room (-1: none), or -2 when none may be added */
static int
queue_for(Oid owner)
{
	for (int q = 0; q < queues.n; q++)
		if (queues.owners[q] == owner && queues.lengths[q] < HWM_QUEUE_MAX)
			return q;
	return queues.n < queues.quota ? -1 : -2;
}

/* a claimed run whose owner cannot run it, recorded after its claim */
static struct
{
	int64		run_id;
	const char *sqlstate;
	const char *problem;
}			cannot_run;

/*
 * Claim one due run: its 'running' row, its next slot on the grid, a run
 * slot for the launcher.  A run whose owner cannot run it is recorded as a
 * failure at once.
 */
static void
claim_run(const DueRun *due, TimestampTz now)
{
	const char *sqlstate = NULL;
	const char *problem;
	TimestampTz next;
	bool		has_next = hwm_grid_schedule_next(due->anchor, due->every, now, false, &next);
	int64		run_id;
	int			q;
	int			slotno;

	if (!has_next)
		ereport(LOG,
				(errmsg("hwm: pipeline \"%s\" is no longer scheduled: its next run time after this one cannot be represented",
						due->pipeline)));
	run_id = hwm_runs_start(due->pipeline, due->owner, has_next ? &next : NULL);
	problem = owner_problem(due->owner, &sqlstate);
	if (problem)
	{
		/* it cannot run at all: a failure, recorded by the caller */
		ereport(LOG,
				(errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s", due->pipeline, problem)));
		cannot_run.run_id = run_id;
		cannot_run.sqlstate = sqlstate;
		cannot_run.problem = problem;
		return;
	}
	/*
	 * Behind this owner's queue, or in a new one.  The launcher's quota
	 * leaves a slot free for every queue it allows.  Were none free, the
	 * error rolls the claims back; slots taken for them are started, find no
	 * 'running' row and end.
	 */
	q = queue_for(due->owner);
	if (q >= 0 && hwm_slot_enqueue(queues.slotnos[q], run_id, due->timeout_ms))
	{
		queues.lengths[q]++;
		return;
	}
	if (q >= 0)
		queues.lengths[q] = HWM_QUEUE_MAX;	/* taken by its worker already */
	if (queues.n >= queues.quota)
		elog(ERROR, "hwm: no room left in this dispatch for pipeline \"%s\"", due->pipeline);
	slotno = hwm_slot_claim(MyDatabaseId, due->owner, due->timeout_ms, run_id);
	if (slotno < 0)
	{
		no_free_slot = true;
		elog(ERROR, "hwm: no free scheduler slot for pipeline \"%s\"", due->pipeline);
	}
	queues.owners[queues.n] = due->owner;
	queues.slotnos[queues.n] = slotno;
	queues.lengths[queues.n] = 1;
	queues.n++;
}

/*
 * A claim that failed for a reason of its pipeline's row: recorded against
 * that pipeline alone (a failed run with the error, and its next run an hour
 * away), so that the others are claimed as if nothing happened.
 */
static void
claim_failed(const DueRun *due, ErrorData *edata)
{
	char	   *error = psprintf("the scheduler could not claim the run: %s",
								 hwm_clip_error(edata->message ? edata->message : "unknown error"));

	ereport(LOG,
			(errcode(edata->sqlerrcode),
			 errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s", due->pipeline, error)));
	hwm_runs_claim_failed(due->pipeline, due->owner, unpack_sql_state(edata->sqlerrcode), error);
}

/* One claim, and the recording of one that failed, for hwm_try_subxact */
typedef struct ClaimStep
{
	const DueRun *due;
	TimestampTz now;
	ErrorData  *edata;
} ClaimStep;

static void
claim_step(void *arg)
{
	ClaimStep  *c = arg;

	claim_run(c->due, c->now);
}

static void
claim_failed_step(void *arg)
{
	ClaimStep  *c = arg;

	claim_failed(c->due, c->edata);
}

/*
 * Copy row i of select_due's result; pipeline NULL when a column it needs
 * is NULL (select_due states that none is: a row that breaks it is left
 * alone and logged, never read).
 */
static void
read_due(SPITupleTable *tt, uint64 i, DueRun *due)
{
	HeapTuple	tup = tt->vals[i];
	bool		owner_null,
				every_null,
				anchor_null;
	bool		no_timeout;
	Datum		owner = SPI_getbinval(tup, tt->tupdesc, 2, &owner_null);
	Datum		every = SPI_getbinval(tup, tt->tupdesc, 4, &every_null);
	Datum		anchor = SPI_getbinval(tup, tt->tupdesc, 5, &anchor_null);
	Datum		timeout = SPI_getbinval(tup, tt->tupdesc, 6, &no_timeout);

	due->pipeline = SPI_getvalue(tup, tt->tupdesc, 1);
	if (due->pipeline == NULL || owner_null || every_null || anchor_null)
	{
		ereport(LOG,
				(errmsg("hwm: due pipeline \"%s\" not claimed: its row lacks an owner, a schedule or a run time",
						due->pipeline ? due->pipeline : "?")));
		due->pipeline = NULL;
		return;
	}
	due->owner = DatumGetObjectId(owner);
	due->every = palloc(sizeof(Interval));
	*due->every = *DatumGetIntervalP(every);
	due->anchor = DatumGetTimestampTz(anchor);
	due->timeout_ms = no_timeout ? 0 : interval_ms(DatumGetIntervalP(timeout));
}

/*
 * Claim due runs into at most quota queues, one per owner, of at most
 * HWM_QUEUE_MAX runs each; returns when the next unclaimed pipeline is due
 * (now when more are due, DT_NOEND when none is scheduled).  Each claim
 * runs in a subtransaction of its own: whatever one pipeline's row makes
 * fail (its next time, its claim) is recorded against that pipeline alone,
 * logged with its name, and the others are claimed all the same.  Only a
 * failure of the scheduler itself (no free slot, the catalog unreadable)
 * ends the dispatch.
 */
static TimestampTz
claim_due_runs(int quota)
{
	TimestampTz now = GetCurrentTimestamp();
	MemoryContext cxt = CurrentMemoryContext;
	SPITupleTable *tt;
	uint64		ndue;
	DueRun	   *due;

	bool		left = false;

	queues.quota = quota;
	queues.n = 0;
	queues.owners = palloc(sizeof(Oid) * (quota + 1));
	queues.slotnos = palloc(sizeof(int) * (quota + 1));
	queues.lengths = palloc(sizeof(int) * (quota + 1));
	hwm_state_select_due(quota * HWM_QUEUE_MAX + 1, now);
	tt = SPI_tuptable;
	ndue = SPI_processed;
	due = palloc0(sizeof(DueRun) * (ndue + 1));
	for (uint64 i = 0; i < ndue; i++)
		read_due(tt, i, &due[i]);
	for (uint64 i = 0; i < ndue; i++)
	{
		ClaimStep	c = {.due = &due[i], .now = now};
		ErrorData  *edata2;

		if (due[i].pipeline == NULL)
			continue;			/* unreadable: logged by read_due */
		if (queue_for(due[i].owner) == -2)
		{
			left = true;		/* no room for its owner: the next dispatch */
			continue;
		}

		cannot_run.run_id = 0;
		c.edata = hwm_try_subxact(claim_step, &c, cxt);
		if (c.edata == NULL && cannot_run.run_id != 0)
		{
			record_outcome(cannot_run.run_id, "failed", cannot_run.sqlstate, cannot_run.problem);
			continue;
		}
		if (c.edata == NULL)
			continue;
		if (no_free_slot)
			ReThrowError(c.edata);	/* the scheduler's fault, not the pipeline's */
		edata2 = hwm_try_subxact(claim_failed_step, &c, cxt);
		if (edata2 != NULL)
			ereport(LOG,
					(errmsg("hwm: could not record the failed claim of pipeline \"%s\": %s",
							due[i].pipeline, edata2->message)));
	}
	if (left || ndue > (uint64) quota * HWM_QUEUE_MAX)
		return now;				/* more are due than this dispatch may claim */
	return hwm_state_next_due();
}

/* Steps 2 and 3 in one transaction; false when hwm is not installed here */
static bool
dispatch(const HwmDispatchArgs *args, TimestampTz *next_due)
{
	hwm_bgw_begin();
	if (!OidIsValid(get_extension_oid("hwm", true)))
	{
		/* nothing to record without the catalog: forget the runs */
		pfree(hwm_slots_release(MyDatabaseId, HWM_SLOT_ORPHANED, NULL));
		hwm_bgw_commit();
		return false;
	}
	record_orphans();
	if (args->maintenance)
	{
		sweep_interrupted();
		prune_history();
	}
	*next_due = claim_due_runs(args->quota);
	hwm_bgw_commit();
	return true;
}

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

/* ------------------------------------------------------------------------
 * The worker
 * ------------------------------------------------------------------------
 */

/*
 * This worker's queue: the runs of one owner in one database that a
 * dispatch claimed together, served in turn, each in transactions of its
 * own, with the session reset between them as DISCARD ALL resets it.
 */
static int	my_slotno = -1;
static HwmWorkerArgs my_args;
static int	my_nruns = 0;
static int64 my_run_ids[HWM_QUEUE_MAX];
static int32 my_timeouts_ms[HWM_QUEUE_MAX];
static int	my_current = 0;		/* the run being served */
static char *my_pipeline = NULL;	/* NULL until read from its 'running' row */

static int	my_recorded = 0;	/* the runs whose outcome is committed */

/*
 * On the way out: free the queue's slot, or leave it orphaned for the next
 * dispatcher to record the runs not recorded as failed; and wake the
 * launcher.
 */
static void
worker_detach(int code, Datum arg)
{
	(void) hwm_slot_move(my_slotno, my_args.generation, HWM_SLOT_RUNNING,
						 my_recorded >= my_nruns ? HWM_SLOT_FREE : HWM_SLOT_ORPHANED);
	hwm_wakeup_launcher();
}

static void
mark_recorded(void)
{
	my_recorded++;
}

/*
 * Take the slot the launcher reserved for this queue: false when the
 * launcher gave up on it (a restarted launcher orphans the slots whose
 * worker had not started).
 */
static bool
worker_claim_slot(void)
{
	if (!hwm_slot_move(my_slotno, my_args.generation, HWM_SLOT_STARTING, HWM_SLOT_RUNNING))
		return false;
	my_nruns = hwm_slot_queue(my_slotno, my_args.generation, my_run_ids, my_timeouts_ms);
	return true;
}

/* The run's time limit in ms: the pipeline's timeout, else statement_timeout */
static int
worker_timeout_ms(void)
{
	return my_timeouts_ms[my_current] > 0 ? my_timeouts_ms[my_current] : StatementTimeout;
}

/*
 * The pipeline of this run's 'running' row, copied into cxt; NULL when the
 * row is no longer 'running' (nothing to do).
 */
static char *
read_run_pipeline(MemoryContext cxt)
{
	char	   *pipeline = hwm_runs_running_pipeline(my_run_ids[my_current]);

	return pipeline ? MemoryContextStrdup(cxt, pipeline) : NULL;
}

/* Tell listeners of a successful run: hwm.run's result has its run_id */
static void
notify_success(const char *pipeline)
{
	int			col = SPI_fnumber(SPI_tuptable->tupdesc, "run_id");
	bool		isnull = true;
	Datum		run_id = 0;

	if (SPI_processed > 0 && col > 0)
		run_id = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);
	notify_outcome(pipeline, "succeeded",
				   isnull ? my_run_ids[my_current] : DatumGetInt64(run_id), NULL);
}

/*
 * SELECT * FROM hwm.run(pipeline, nowait => true) under the run's time
 * limit; hwm.run records the run itself, so the 'running' row goes.
 */
static void
run_pipeline(const char *pipeline)
{
	Oid			runtypes[1] = {TEXTOID};
	Datum		runvals[1];
	int			timeout_ms = worker_timeout_ms();

	pgstat_report_appname(psprintf("hwm: %s", pipeline));
	pgstat_report_activity(STATE_RUNNING, "SELECT * FROM hwm.run($1, true)");

	runvals[0] = CStringGetTextDatum(pipeline);
	if (timeout_ms > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);
	/* hwm.run records itself in this run's 'running' row: one run id */
	hwm_scheduled_run_id = my_run_ids[my_current];
	hwm_spi_exec("SELECT * FROM hwm.run($1, true)",
				 1, runtypes, runvals, NULL, SPI_OK_SELECT);
	hwm_scheduled_run_id = 0;
	if (timeout_ms > 0)
		disable_timeout(STATEMENT_TIMEOUT, false);
	notify_success(pipeline);
	/* (were it recorded in a row of its own, the 'running' one goes) */
	hwm_runs_delete_running(my_run_ids[my_current]);
}

/*
 * Record the run's error, in a transaction of its own after the failed one:
 * 'skipped' when a run by hand (or a backfill) held the pipeline, so that the
 * run is not doubled; else 'failed', which also backs off the next run.
 */
static void
worker_record_failure(ErrorData *edata)
{
	const char *status = "failed";
	const char *sqlstate = unpack_sql_state(edata->sqlerrcode);
	char	   *error;

	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE && my_pipeline != NULL &&
		edata->message != NULL &&
		strcmp(edata->message, psprintf("pipeline \"%s\" is busy", my_pipeline)) == 0)
	{
		status = "skipped";
		error = edata->message;
		ereport(LOG,
				(errmsg("hwm: scheduled run of pipeline \"%s\" skipped: it is busy with another run", my_pipeline)));
	}
	else
	{
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && edata->message != NULL &&
			strstr(edata->message, "statement timeout") != NULL)
			error = psprintf("canceling the run: it took longer than its timeout of %d ms",
							 worker_timeout_ms());
		else if (edata->detail)
			error = psprintf("%s\nDETAIL: %s", edata->message, edata->detail);
		else
			error = edata->message ? edata->message : "unknown error";
		error = (char *) hwm_clip_error(error);
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("hwm: scheduled run of pipeline \"%s\" failed: %s",
						my_pipeline ? my_pipeline : "?", error)));
	}

	hwm_bgw_begin();
	record_outcome(my_run_ids[my_current], status, sqlstate, error);
	hwm_bgw_commit();
	mark_recorded();
}

/*
 * Between two runs of the queue: nothing of one run reaches the next, as
 * after DISCARD ALL (settings back to their defaults, then search_path
 * pinned again; temporary tables dropped; advisory locks, prepared
 * statements, LISTENs and sequence caches let go).  Each run's own
 * transaction already ended its locks, cursors and SET LOCALs.
 */
static void
reset_session(void)
{
	StartTransactionCommand();
	ResetAllOptions();
	DropAllPreparedStatements();
	Async_UnlistenAll();
	LockReleaseAll(USER_LOCKMETHOD, true);
	ResetTempTableNamespace();
	ResetSequenceCaches();
	CommitTransactionCommand();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
}

/*
 * A claimed run, under its pipeline's lock: run it when the claim still
 * holds, else record it as skipped, saying what changed since the claim.
 */
static void
serve_claim(const char *pipeline)
{
	const char *why = hwm_state_claim_check(pipeline, my_run_ids[my_current], my_args.owner);

	if (why == NULL)
	{
		run_pipeline(pipeline);
		return;
	}
	ereport(LOG,
			(errmsg("hwm: scheduled run of pipeline \"%s\" skipped: %s", pipeline, why)));
	record_outcome(my_run_ids[my_current], "skipped", NULL, why);
}

/* One run of the queue: run it, or record why it failed */
static void
serve_run(MemoryContext workcxt)
{
	ErrorData  *volatile edata = NULL;

	my_pipeline = NULL;
	PG_TRY();
	{
		hwm_bgw_begin();
		my_pipeline = read_run_pipeline(workcxt);
		if (my_pipeline != NULL)
			serve_claim(my_pipeline);
		hwm_bgw_commit();
		mark_recorded();
	}
	PG_CATCH();
	{
		hwm_scheduled_run_id = 0;
		MemoryContextSwitchTo(workcxt);
		disable_timeout(STATEMENT_TIMEOUT, false);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();

	if (edata != NULL)
		worker_record_failure(edata);
}

void
hwm_worker_main(Datum main_arg)
{
	MemoryContext workcxt;

	memcpy(&my_args, MyBgworkerEntry->bgw_extra, sizeof(my_args));
	my_slotno = DatumGetInt32(main_arg);

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (!worker_claim_slot())
		proc_exit(0);			/* the launcher gave up on this queue */
	before_shmem_exit(worker_detach, (Datum) 0);
	if (!hwm_wakeup_enter_database(my_args.dboid))
		proc_exit(0);			/* being dropped: orphaned, recorded later */

	/* a session of the pipelines' owner, never of a superuser */
	BackgroundWorkerInitializeConnectionByOid(my_args.dboid, my_args.owner, 0);
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
	workcxt = AllocSetContextCreate(TopMemoryContext, "hwm worker",
									ALLOCSET_DEFAULT_SIZES);

	for (my_current = 0; my_current < my_nruns; my_current++)
	{
		if (my_current > 0)
			reset_session();
		serve_run(workcxt);
		MemoryContextReset(workcxt);
		CHECK_FOR_INTERRUPTS();
	}
	proc_exit(0);
}
