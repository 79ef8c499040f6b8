/*
 * worker.c
 *		The scheduler's worker: connected to one database as the owner of a
 *		queue of runs that a dispatcher claimed (dispatch.c), it serves them
 *		in turn, a pipeline's scheduled reconcile after its run, and the
 *		runs of its owner that its runs woke.
 *
 * A worker connects as the owner of its queue and serves it in turn: for
 * each run it pins search_path, arms the pipeline's timeout as a statement
 * timeout, and runs hwm.run(pipeline, nowait => true) in one transaction,
 * by calling load.c's hwm_load_scheduled with the run's id and start
 * (hwm.run records the successful run itself, in the run's 'running' row:
 * one run id per scheduled run).  On an error the
 * transaction rolls back and a second one marks the row 'skipped' when the
 * pipeline was busy with another run, else 'failed'; a failure counts in
 * hwm.state and backs off: the retry waits schedule * 2^(n-1) after the
 * n-th consecutive failure, at most one hour or one schedule, whichever is
 * longer.  Either way listeners are told at commit (hwm.notify_channel, see
 * dispatch.c).  Then the next run of the queue, after the session is reset
 * as DISCARD ALL resets it, unless the worker's turn (hwm.queue_budget) is
 * over: then the runs not started are handed back, due again.  A run's time
 * limit is the pipeline's timeout, else hwm.scheduled_timeout, else the
 * session's statement_timeout.  A fork and a connection are paid per queue;
 * a queue never mixes owners or databases.
 *
 * After a run that succeeded, the pipeline's reconcile when one is
 * scheduled (hwm.schedule_reconcile) and due: its next slot taken and
 * committed first, then the reconcile of the whole target under the same
 * time limit (serve_reconcile).
 *
 * After a run that woke pipelines (hwm.schedule_after, a target lag), the
 * worker applies the wakes itself and claims the runs of its owner that
 * they made due into its own queue, behind the runs it has (chain_woken,
 * dispatch.c's hwm_claim_woken): each is a scheduled run of its own, with
 * its 'running' row and run id, served as the dispatcher's claims are, so
 * the stages of a chain of one owner run one after the other in one
 * worker, without a dispatch and a worker's start between two of them.
 * Only within the worker's turn (hwm.queue_budget) and its queue's room;
 * its runs' wakes ring no doorbell at commit (hwm_wakes_by_worker), and the
 * worker rings it when something is left for the dispatcher.
 *
 * The worker registers, before connecting, the database it enters
 * (wakeup.c), so that DROP DATABASE can terminate it.  It calls catalog.c
 * (every row it reads or writes), load.c (the run: hwm_load_scheduled),
 * reconcile.c (hwm_reconcile_scheduled), dispatch.c (a run's outcome:
 * hwm_outcome_record, hwm_outcome_notify; the runs its runs woke:
 * hwm_claim_woken; the settings), slots.c, clock.c
 * (whether a reconcile is due and when its turn ends are the scheduler's
 * clock; a run's time limit is the server's timer, on the real clock),
 * wakeup.c, grid.c and util.c.  Nothing calls into it: the launcher starts it by name
 * (bgw_function_name).
 */
#include "postgres.h"

#include "catalog.h"
#include "clock.h"
#include "dispatch.h"
#include "grid.h"
#include "load.h"
#include "reconcile.h"
#include "slots.h"
#include "util.h"
#include "wakeup.h"
#include "watch.h"
#include "watermark.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

PGDLLEXPORT void hwm_worker_main(Datum main_arg);

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
static bool my_loaded = false;	/* the run being served ran (hwm.run returned) */

/*
 * The run's time limit: armed by this worker (STATEMENT_TIMEOUT, which
 * nothing else arms or disarms in a background worker), and whether it
 * fired before the run failed.  A timeout that fired is no longer active;
 * its indicator cannot tell, since ProcessInterrupts resets it as it raises
 * the cancel.  So a cancel is the run's timeout by what this worker saw,
 * not by the words of the message, which are in the server's language;
 * another cancel (pg_cancel_backend) or a 57014 raised by the pipeline's
 * command is recorded as itself.
 */
static bool my_timeout_armed = false;
static bool my_timed_out = false;

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

/* One more run of the queue has its outcome committed */
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

/*
 * The run's time limit in ms: the pipeline's timeout, else
 * hwm.scheduled_timeout, else statement_timeout (0: none).
 */
static int
worker_timeout_ms(void)
{
	if (my_timeouts_ms[my_current] > 0)
		return my_timeouts_ms[my_current];
	return hwm_scheduled_timeout > 0 ? hwm_scheduled_timeout : StatementTimeout;
}

/*
 * Where the run's time limit came from, for its error: the pipeline's
 * timeout, or hwm.scheduled_timeout or statement_timeout and where that was
 * set (pg_settings.source: the role, the database, both, or the server's
 * configuration).  Runs in a transaction of its own, after the failed one.
 */
static char *
worker_timeout_source(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	const char *setting;
	char	   *volatile where = NULL;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	if (my_timeouts_ms[my_current] > 0)
		return "the pipeline's timeout, set with hwm.set_timeout";
	setting = hwm_scheduled_timeout > 0 ? "hwm.scheduled_timeout" : "statement_timeout";
	values[0] = CStringGetTextDatum(setting);
	PG_TRY();
	{
		Datum		d;
		char	   *source = NULL;
		char	   *role;
		char	   *db;

		hwm_bgw_begin();
		role = GetUserNameFromId(GetUserId(), true);
		db = get_database_name(MyDatabaseId);
		hwm_spi_exec("SELECT source FROM pg_catalog.pg_settings WHERE name OPERATOR(pg_catalog.=) $1",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
		if (hwm_spi_first(&d))
			source = TextDatumGetCString(d);
		if (source == NULL)
			where = MemoryContextStrdup(cxt, setting);
		else if (strcmp(source, "user") == 0)
			where = MemoryContextStrdup(cxt, psprintf("%s of role \"%s\"", setting,
													  role ? role : "?"));
		else if (strcmp(source, "database") == 0)
			where = MemoryContextStrdup(cxt, psprintf("%s of database \"%s\"", setting,
													  db ? db : "?"));
		else if (strcmp(source, "database user") == 0)
			where = MemoryContextStrdup(cxt, psprintf("%s of role \"%s\" in database \"%s\"",
													  setting, role ? role : "?", db ? db : "?"));
		else
			where = MemoryContextStrdup(cxt, psprintf("%s, from the server's %s", setting, source));
		hwm_bgw_commit();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return where ? where : pstrdup(setting);
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

/*
 * A pipeline scheduled on its source's commits (hwm.schedule_on_commit):
 * the watches of the tables its source reads are armed (watch.c) before the
 * run reads the source (a statement of its own, with a snapshot of its own:
 * hwm.run refuses REPEATABLE READ), so that every commit the
 * run does not see comes after the arming and wakes the pipeline again.
 * A table that cannot be watched stays unarmed: the pipeline is then due at
 * every look, min_interval after each run.
 */
static void
arm_watches(const char *pipeline)
{
	Oid			source;
	ListCell   *lc;

	if (!hwm_state_on_commit_source(pipeline, &source))
		return;
	foreach(lc, hwm_source_relations(source))
		(void) hwm_watch_arm(lfirst_oid(lc));
}

/*
 * hwm.run(pipeline, nowait => true) under the run's time limit, started at
 * started_at (the claim check's time); hwm.run records the run itself, so
 * the 'running' row goes.  (pg_stat_activity shows it as the statement
 * that would run it.)
 */
static void
run_pipeline(const char *pipeline, TimestampTz started_at)
{
	int			timeout_ms = worker_timeout_ms();
	int64		run_id;

	pgstat_report_appname(psprintf("hwm: %s", pipeline));
	pgstat_report_activity(STATE_RUNNING, "SELECT * FROM hwm.run($1, true)");

	if (timeout_ms > 0)
	{
		my_timeout_armed = true;
		enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);
	}
	/* hwm.run records itself in this run's 'running' row: one run id */
	run_id = hwm_load_scheduled(pipeline, my_run_ids[my_current], started_at);
	if (timeout_ms > 0)
		disable_timeout(STATEMENT_TIMEOUT, false);
	my_timeout_armed = false;
	/* a timeout that fired as the run ended cancels nothing after it */
	QueryCancelPending = false;
	/* listeners are told under the run id it was recorded under */
	hwm_outcome_notify(run_id);
	/* (were it recorded in a row of its own, the 'running' one goes) */
	hwm_runs_delete_running(my_run_ids[my_current]);
}

/*
 * Begin the transaction that records a failed run's outcome, whatever the
 * owner's settings that made the run fail: this worker's session is the
 * owner's, with the owner's default_transaction_read_only, lock_timeout
 * and statement_timeout, and a cancel the run's timeout left pending.  The
 * run is over; its outcome is hwm's to write, so this transaction is
 * read-write and waits for its row locks, with no cancel pending (set LOCAL:
 * the settings are the owner's again after it).
 */
static void
record_begin(void)
{
	QueryCancelPending = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* before the transaction's first snapshot, as SET TRANSACTION READ WRITE */
	(void) set_config_option("transaction_read_only", "off", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	(void) set_config_option("lock_timeout", "0", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	(void) set_config_option("statement_timeout", "0", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/*
 * Where the session's value of setting name came from, for a message: "the
 * database's statement_timeout, set by ALTER DATABASE ... SET", as
 * pg_settings.source tells it; read in a transaction of its own (the
 * caller is between two).
 */
static char *
setting_origin(const char *name)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	char	   *source = NULL;
	char	   *origin;

	hwm_bgw_begin();
	if (SPI_execute_with_args("SELECT source FROM pg_catalog.pg_settings WHERE name OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		source = v ? MemoryContextStrdup(cxt, v) : NULL;
	}
	hwm_bgw_commit();
	if (source == NULL)
		origin = psprintf("the session's %s", name);
	else if (strcmp(source, "database") == 0)
		origin = psprintf("the database's %s, set by ALTER DATABASE ... SET", name);
	else if (strcmp(source, "user") == 0)
		origin = psprintf("the owner's %s, set by ALTER ROLE ... SET", name);
	else if (strcmp(source, "database user") == 0)
		origin = psprintf("the owner's %s in this database, set by ALTER ROLE ... IN DATABASE ... SET", name);
	else if (strcmp(source, "global") == 0)
		origin = psprintf("every role's %s, set by ALTER ROLE ALL ... SET", name);
	else if (strcmp(source, "configuration file") == 0)
		origin = psprintf("the server's %s, set in postgresql.conf or by ALTER SYSTEM", name);
	else
		origin = psprintf("the session's %s (source: %s)", name, source);
	return origin;
}

/*
 * Record the run's error, in a transaction of its own after the failed one:
 * 'skipped' when a run by hand (or a backfill) held the pipeline, so that the
 * run is not doubled; else 'failed', which also backs off the next run.  A
 * timeout says whose it was; a read-only default says who set it.  The
 * recording is the scheduler's own write to its catalog: it is made
 * read-write whatever default_transaction_read_only the database or the
 * owner set (as SET transaction_read_only = off, which any role may do),
 * which the run itself obeyed; else the run that failed for it would be
 * recorded only as a worker that exited.
 */
static void
worker_record_failure(ErrorData *edata)
{
	HwmRunStatus status = HWM_RUN_FAILED;
	const char *sqlstate = unpack_sql_state(edata->sqlerrcode);
	char	   *error;

	/* the run is over: a cancel its timeout left pending cancels nothing here */
	QueryCancelPending = false;
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE && my_pipeline != NULL &&
		hwm_pipeline_was_busy(my_pipeline))
	{
		status = HWM_RUN_SKIPPED;
		error = edata->message ? edata->message : "the pipeline is busy";
		ereport(LOG,
				(errmsg("hwm: scheduled run of pipeline \"%s\" skipped: it is busy with another run", my_pipeline)));
	}
	else
	{
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && my_timed_out)
			error = psprintf("canceling the run: it took longer than its timeout of %d ms (%s)",
							 worker_timeout_ms(), worker_timeout_source());
		else if (edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION && DefaultXactReadOnly)
			error = psprintf("%s\nDETAIL: Every transaction of the owner's sessions here is read-only by default (%s).",
							 edata->message ? edata->message : "read-only transaction",
							 setting_origin("default_transaction_read_only"));
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

	record_begin();
	if (!hwm_catalog_is_current())
	{
		/*
		 * DROP EXTENSION (or an older catalog put in its place) since the
		 * claim: the run's row went with the catalog, and there is nothing
		 * to record it in.  Said, not raised: the worker ends as usual.
		 */
		ereport(LOG,
				(errmsg("hwm: the outcome of a scheduled run is not recorded: the hwm catalog of this database was dropped or replaced by an older one since the run was claimed")));
		hwm_bgw_commit();
		mark_recorded();
		return;
	}
	hwm_outcome_record(my_run_ids[my_current], status, sqlstate, error);
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
	TimestampTz checked_at;
	const char *why;

	/* (before the run reads the source: hwm.run is READ COMMITTED only) */
	arm_watches(pipeline);
	why = hwm_state_claim_check(pipeline, my_run_ids[my_current], my_args.owner, &checked_at);

	if (why == NULL)
	{
		run_pipeline(pipeline, checked_at);
		my_loaded = true;
		return;
	}
	ereport(LOG,
			(errmsg("hwm: scheduled run of pipeline \"%s\" skipped: %s", pipeline, why)));
	hwm_outcome_record(my_run_ids[my_current], HWM_RUN_SKIPPED, NULL, why);
}

/*
 * After a scheduled run of the pipeline succeeded: its reconcile, when one
 * is scheduled and due (hwm.schedule_reconcile).  Its next slot is taken
 * first, in a transaction of its own, so that a reconcile that fails is
 * tried again at the next slot, not after every run.  Then the reconcile of
 * the whole target, its batches each committed (job.c), under the run's time
 * limit.  A batch that fails is recorded by the job (hwm.backfills, a failed
 * run of kind reconcile); the load's run is already recorded and stays as it
 * is.  Every error ends here, in the server's log.
 */
static void
serve_reconcile(const char *pipeline, MemoryContext workcxt)
{
	Interval	every;
	TimestampTz anchor;
	int			batch_size = 0;
	volatile bool due = false;

	PG_TRY();
	{
		TimestampTz now = hwm_now();

		hwm_bgw_begin();
		if (hwm_state_reconcile_due(pipeline, now, &every, &anchor, &batch_size))
		{
			TimestampTz next;
			bool		has_next = hwm_grid_schedule_next(anchor, &every, now, false, &next);

			if (!has_next)
				ereport(LOG,
						(errmsg("hwm: the reconcile of pipeline \"%s\" is no longer scheduled: its next time after this one cannot be represented",
								pipeline)));
			hwm_state_set_reconcile_next(pipeline, has_next ? &next : NULL);
			due = true;
		}
		hwm_bgw_commit();
		if (due)
		{
			int			timeout_ms = worker_timeout_ms();

			hwm_bgw_begin();
			hwm_pause_point("worker_starts_reconcile");
			pgstat_report_activity(STATE_RUNNING, "CALL hwm.reconcile($1)");
			if (timeout_ms > 0)
				enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms);

			/*
			 * Due was read, and committed, without the pipeline's lock: a
			 * pause or unschedule may have committed since, while a session
			 * held the lock.  Asked again under it (the wait for it within
			 * the time limit, as the reconcile's), which the reconcile's
			 * set-up then keeps (a pause after this lets it finish, as it
			 * lets a run).
			 */
			if (hwm_state_reconcile_scheduled(pipeline))
				hwm_reconcile_scheduled(pipeline, batch_size, workcxt);
			else
				ereport(LOG,
						(errmsg("hwm: the scheduled reconcile of pipeline \"%s\" did not start: the pipeline was paused or unscheduled, or its reconcile unscheduled, after it was due",
								pipeline)));
			if (timeout_ms > 0)
				disable_timeout(STATEMENT_TIMEOUT, false);
			QueryCancelPending = false;
			hwm_bgw_commit();
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(workcxt);
		disable_timeout(STATEMENT_TIMEOUT, false);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		QueryCancelPending = false;
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("hwm: scheduled reconcile of pipeline \"%s\" failed: %s", pipeline,
						edata->message ? edata->message : "unknown error"),
				 edata->detail ? errdetail("%s", edata->detail) : 0));
	}
	PG_END_TRY();
}

/* One run of the queue: run it, or record why it failed; then its reconcile */
static void
serve_run(MemoryContext workcxt)
{
	ErrorData  *volatile edata = NULL;

	my_pipeline = NULL;
	my_loaded = false;
	hwm_woke = false;
	my_timeout_armed = false;
	my_timed_out = false;
	hwm_pipeline_busy_forget();
	PG_TRY();
	{
		hwm_bgw_begin();
		my_pipeline = read_run_pipeline(workcxt);
		if (my_pipeline != NULL)
			serve_claim(my_pipeline);
		/*
		 * The run woke pipelines: from its commit until chain_woken has
		 * applied the wakes, the dispatcher leaves them to this worker
		 */
		if (hwm_woke)
			hwm_slot_applies_wakes(my_slotno, my_args.generation, true);
		hwm_bgw_commit();
		mark_recorded();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(workcxt);
		/* (before it is disarmed: a timeout that fired is no longer active) */
		my_timed_out = my_timeout_armed && !get_timeout_active(STATEMENT_TIMEOUT);
		my_timeout_armed = false;
		disable_timeout(STATEMENT_TIMEOUT, false);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();

	if (edata != NULL)
		worker_record_failure(edata);
	else if (my_loaded && my_pipeline != NULL)
		serve_reconcile(my_pipeline, workcxt);
}

/*
 * After a run that woke pipelines (hwm_woke: with hwm_wakes_by_worker set,
 * its wakes rang no doorbell at its commit), the worker applies the wakes
 * of that run's pipeline itself at once and takes the runs of its owner
 * that they made due into its own queue, behind the runs it has (hwm_claim_woken, dispatch.c), in a
 * transaction of its own, read-write and without time limits as
 * record_begin makes it: the stages of a chain of one owner run one after
 * the other in one worker, without a dispatch and a worker's start per
 * stage.  Only while scheduling is on, the queue has room and the turn has
 * time left (hwm.queue_budget: a run woken that does not fit is left due,
 * for a dispatch).  The slot learns the new runs before their claims
 * commit, so that a dispatcher never takes their 'running' rows for
 * interrupted ones; should the claims not commit, the slot forgets them.
 * When something is left for a dispatcher (a wake not applied, a pipeline
 * made due that is another owner's, busy, paused, or did not fit), or
 * anything failed, the doorbell rings, as the run's commit would have rung
 * it, and the wakes not applied stay in hwm.wakes for the dispatcher.
 * From just before the run commits until here, its slot says that the
 * worker applies the run's wakes itself (applies_wakes), and dispatchers
 * (and other workers) leave them: cleared before the doorbell rings, so
 * that the dispatcher it wakes applies what is left.
 */
static void
chain_woken(TimestampTz turn_started, MemoryContext workcxt)
{
	int64		ids[HWM_QUEUE_MAX];
	int32		timeouts[HWM_QUEUE_MAX];
	volatile int n = 0;
	volatile bool needed = true;
	int			room = HWM_QUEUE_MAX - my_nruns;
	int64		left_ms = (int64) hwm_queue_budget -
		TimestampDifferenceMilliseconds(turn_started, hwm_now());

	if (!hwm_woke)
	{
		hwm_slot_applies_wakes(my_slotno, my_args.generation, false);
		return;
	}
	hwm_woke = false;
	MemoryContextSwitchTo(workcxt);
	if (hwm_enabled && room > 0 && left_ms > 0)
	{
		PG_TRY();
		{
			int64		expected_ms = 0;
			bool		left_over = true;
			int			claimed = 0;

			record_begin();
			hwm_pause_point("worker_applies_wakes");

			/*
			 * (committed without waiting for the WAL's flush: the next run's
			 * commit, which waits, flushes it first; a crash before loses the
			 * claims with the wakes' deletion, and the dispatcher applies the
			 * wakes again)
			 */
			(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_LOCAL, true, 0, false);
			if (hwm_catalog_is_current())
			{
				claimed = hwm_claim_woken(my_slotno, my_pipeline, my_args.owner, room, left_ms,
										  ids, timeouts,
										  &expected_ms, &left_over);
				if (!hwm_slot_extend(my_slotno, my_args.generation, my_nruns, claimed,
									 ids, timeouts, expected_ms))
					elog(ERROR, "hwm: worker's slot did not take the runs its run woke");
			}
			hwm_bgw_commit();
			n = claimed;
			needed = left_over;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(workcxt);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			(void) hwm_slot_extend(my_slotno, my_args.generation, my_nruns, 0, NULL, NULL, 0);
			n = 0;
			needed = true;
			ereport(LOG,
					(errcode(edata->sqlerrcode),
					 errmsg("hwm: worker could not take the runs its run woke, the dispatcher takes them: %s",
							edata->message ? edata->message : "unknown error")));
		}
		PG_END_TRY();
	}
	for (int i = 0; i < n; i++)
	{
		my_run_ids[my_nruns] = ids[i];
		my_timeouts_ms[my_nruns] = timeouts[i];
		my_nruns++;
	}
	if (n > 0)
		ereport(DEBUG1,
				(errmsg("hwm: worker took %d runs that its run woke into its queue", (int) n)));
	/* (before the doorbell: the dispatcher it wakes applies what is left) */
	hwm_slot_applies_wakes(my_slotno, my_args.generation, false);
	if (needed)
		hwm_wakeup_launcher();
}

/*
 * The worker's turn at its queue is over (hwm.queue_budget spent, or
 * hwm.enabled turned off; why says which): the runs it has not started are
 * handed back, their 'running' rows released and their pipelines due again,
 * for the next dispatch to share out (to this owner again when that is
 * fair).  Nothing is recorded for them.  Should that fail, they stay in the
 * slot, which the next dispatcher records.
 */
static void
hand_back_rest(int from, const char *why)
{
	MemoryContext cxt = CurrentMemoryContext;
	Datum	   *ids = palloc(sizeof(Datum) * (my_nruns - from + 1));
	int			n = 0;
	int64		released = 0;

	for (int k = from; k < my_nruns; k++)
		ids[n++] = Int64GetDatum(my_run_ids[k]);
	PG_TRY();
	{
		hwm_bgw_begin();
		released = hwm_runs_release(PointerGetDatum(construct_array(ids, n, INT8OID, 8,
																	FLOAT8PASSBYVAL,
																	TYPALIGN_DOUBLE)));
		hwm_wakeup_at_commit();
		hwm_bgw_commit();
		my_recorded += n;
		ereport(DEBUG1,
				(errmsg("hwm: worker handed back " INT64_FORMAT " of its queue's runs: %s",
						released, why)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
}

/*
 * The worker's entry point, which the launcher names (bgw_function_name):
 * main_arg is its slot, bgw_extra its HwmWorkerArgs.
 */
void
hwm_worker_main(Datum main_arg)
{
	MemoryContext workcxt;
	TimestampTz turn_started;

	memcpy(&my_args, MyBgworkerEntry->bgw_extra, sizeof(my_args));
	my_slotno = DatumGetInt32(main_arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
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
	/* the wakes of its runs are its own to apply first (chain_woken) */
	hwm_wakes_by_worker = true;

	turn_started = hwm_now();
	for (my_current = 0; my_current < my_nruns; my_current++)
	{
		/*
		 * hwm.enabled turned off since the runs were claimed: none starts
		 * now (a run in progress when it turned off has finished)
		 */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!hwm_enabled)
		{
			hand_back_rest(my_current, "hwm.enabled is off");
			break;
		}
		if (my_current > 0)
		{
			/* a run ended past the budget: the rest goes back */
			if (TimestampDifferenceExceeds(turn_started, hwm_now(), hwm_queue_budget))
			{
				hand_back_rest(my_current, psprintf("its turn of %d ms is over", hwm_queue_budget));
				break;
			}
			reset_session();
		}
		/* (should this worker exit now, the runs after this one go back) */
		hwm_slot_begin_run(my_slotno, my_args.generation, my_current);
		serve_run(workcxt);
		chain_woken(turn_started, workcxt);
		MemoryContextReset(workcxt);
		CHECK_FOR_INTERRUPTS();
	}
	proc_exit(0);
}
