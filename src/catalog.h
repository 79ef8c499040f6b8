/*
 * catalog.h
 *		hwm's tables (catalog.c), the one place with SQL on them: a
 *		pipeline's row in hwm.state, the run history in hwm.runs (the
 *		scheduler's run rows too), the jobs' rows in hwm.backfills, the
 *		homes in hwm.homes.  Their SQL runs as the catalog's owner through
 *		one entry, static in catalog.c, so that no other file can write it.
 */
#ifndef HWM_CATALOG_H
#define HWM_CATALOG_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

/* A transaction in flight that may still commit rows a run did not see */
typedef struct HwmXact
{
	char	   *vxid;			/* "backend/local xid" */
	TimestampTz start;			/* 0: unknown */
} HwmXact;

/*
 * What a load remembers for the next one, so that the next one reads only
 * what can have changed (see the file header of watermark.c).
 */
typedef struct HwmLoadMemory
{
	char	   *reread_from;	/* NULL: no memory; read from the watermark */
	List	   *xacts;			/* HwmXact *: not yet seen to end */
	TimestampTz epoch;			/* server start when recorded */
	/* what held the watermark back at the run, for hwm.status */
	int			held_by_pid;	/* 0: nothing known */
	char	   *held_by_application;
	TimestampTz held_since;
	int64		null_watermarks;	/* -1: not counted */
	/* time watermarks: every source row below it is loaded (0: not known) */
	TimestampTz as_of;
} HwmLoadMemory;

/* One pipeline, as stored in hwm.state. */
typedef struct HwmPipeline
{
	char	   *name;
	Oid			source;
	Oid			target;			/* InvalidOid: a command or interval pipeline */
	List	   *unique_key;		/* column names (char *) */
	char	   *watermark_column;
	Oid			watermark_type;	/* the stored watermark's (hwm.state) */
	char	   *partition_column;	/* NULL: none */
	int			lookback;
	char	   *watermark;		/* NULL: nothing loaded yet */
	Oid			owner;
	bool		enabled;
	Interval   *delay;			/* NULL: none */
	int64		batch_size;		/* rows per run; 0: no cap */
	char	   *command;		/* command and interval pipelines; NULL: copy */
	Interval   *time_interval;	/* interval pipelines; NULL: none */
	char	   *interval_anchor;	/* ... a boundary of the grid (text) */
	bool		batched;		/* ... one command over the whole backlog */
	bool		skip_empty;		/* ... no command for an interval without rows */
	HwmLoadMemory memory;		/* what the last load remembered */
	TimestampTz created_at;		/* with the name, the pipeline's identity */
	char	   *delete_column;	/* the source's delete marker; NULL: none */
	TimestampTz data_as_of;		/* how far the last run found the source
								 * complete (0: not known) */
	/* history pipelines (issue 40): NULL: not one */
	char	   *valid_from_column;
	char	   *valid_to_column;
	bool		history_columns_given;	/* false: the default tracked columns */
	List	   *history_columns;	/* the tracked columns (char *) */
} HwmPipeline;

/*
 * A run's status in hwm.runs (the CHECK on hwm.runs.status lists the same
 * five texts: hwm_run_status_name, hwm_run_status_parse).  A row moves only
 * as hwm_run_status_can_move allows, through catalog.c's statements, which
 * check every move they make (an illegal one is a bug: an internal error):
 *
 *   (none) -> running              the dispatcher claims a run (hwm_runs_start)
 *   (none) -> succeeded, failed    a run recorded at once: by hand, a job's
 *                                  failed step, a claim that failed
 *                                  (hwm_record_run, hwm_runs_claim_failed)
 *   running -> succeeded           the scheduled run records itself
 *                                  (hwm_record_run)
 *   running -> failed, skipped     the worker; the dispatcher, for an owner
 *                                  that cannot start a session and for the
 *                                  runs of an exited worker (hwm_runs_finish)
 *   running -> interrupted         the upkeep's sweep (hwm_runs_sweep_interrupted)
 *   running -> (none)              the row goes: handed back (hwm_runs_release),
 *                                  or recorded in a row of its own
 *                                  (hwm_runs_delete_running)
 *
 * succeeded, failed, skipped and interrupted are final (pruning forgets
 * them; that is no move).  A job's row in hwm.backfills takes three of the
 * same texts (running, succeeded, failed: its CHECK), with moves of its own
 * (see hwm_backfills_find_unfinished).
 */
typedef enum HwmRunStatus
{
	HWM_RUN_NONE = 0,			/* no row: before its insert, after its delete */
	HWM_RUN_RUNNING,
	HWM_RUN_SUCCEEDED,
	HWM_RUN_FAILED,
	HWM_RUN_SKIPPED,
	HWM_RUN_INTERRUPTED
} HwmRunStatus;

extern const char *hwm_run_status_name(HwmRunStatus status);
extern HwmRunStatus hwm_run_status_parse(const char *text);
extern bool hwm_run_status_can_move(HwmRunStatus from, HwmRunStatus to);

/*
 * One run and its outcome, as hwm.runs records it.  A negative count means
 * "not applicable to this kind of run" and is recorded as NULL; so is a
 * NULL string.
 */
typedef struct HwmRunFacts
{
	const char *pipeline;		/* NULL: overwrite_partition, swap */
	const char *kind;			/* load, overwrite, backfill, swap */
	TimestampTz started_at;
	int64		rows_upserted;
	int			partitions;
	int64		rows_deleted;
	int64		rows_inserted;
	const char *watermark_before;
	const char *watermark_after;
	const char *from_partition;
	const char *to_partition;
	const char *method;			/* overwrites: diff, exchange, exchange+diff */
	HwmRunStatus status;		/* succeeded (HWM_RUN_FACTS_INIT), or failed */
	const char *error_sqlstate; /* a failed run's error (stored cut to 8 kB) */
	const char *error;
	int64		rows_refused;	/* history: source rows not applied */
	/*
	 * a scheduled run: the 'running' row the dispatcher inserted for it,
	 * which a load of that pipeline records itself in (0: none, a new row)
	 */
	int64		scheduled_run_id;
} HwmRunFacts;

/* a run's facts with every count "not applicable" */
#define HWM_RUN_FACTS_INIT(pipeline_, kind_, started_at_) \
	{ .pipeline = (pipeline_), .kind = (kind_), .started_at = (started_at_), \
	  .rows_upserted = -1, .partitions = -1, .rows_deleted = -1, .rows_inserted = -1, \
	  .rows_refused = -1, .status = HWM_RUN_SUCCEEDED }

/* hwm.max_runs_per_pipeline, hwm.history_days: what hwm.runs keeps */
extern int	hwm_max_runs_per_pipeline;
extern int	hwm_history_days;

extern Oid	hwm_catalog_owner(void);
/*
 * Is this database's catalog the version this library serves?  Every other
 * catalog is refused (see "Old catalogs" in src/README.md).
 */
extern bool hwm_catalog_is_current(void);
extern HwmPipeline *hwm_pipeline_fetch(const char *name, bool lock, bool nowait);
extern HwmPipeline *hwm_pipeline_fetch_extended(const char *name, bool lock,
												bool nowait, bool orphan_ok);
extern bool hwm_pipeline_exists(const char *name);
extern bool hwm_pipeline_was_busy(const char *name);
extern void hwm_pipeline_busy_forget(void);

/* A pipeline that loads a table another pipeline reads (hwm_state_upstreams) */
typedef struct HwmUpstream
{
	char	   *watermark;		/* committed; NULL: nothing loaded yet */
	Oid			type;			/* its watermark column's type */
	TimestampTz as_of;			/* its data_as_of (0: not known) */
} HwmUpstream;
extern List *hwm_state_upstreams(const Oid *relids, int n);
extern void hwm_pipeline_set_home(const char *name);
extern void hwm_pipeline_require_partitions(const HwmPipeline *p, const char *verb,
											const char *detail);
extern int64 hwm_record_run(const HwmRunFacts *run);
extern void hwm_prune_runs(const char *pipeline, Oid owner);
extern void hwm_prune_runs_in_loop(const char *pipeline, bool first);

/*
 * Set by a scheduled worker (worker.c), which applies its runs' wakes
 * itself: a wake then rings no doorbell at commit, and sets hwm_woke.
 */
extern bool hwm_wakes_by_worker;
extern bool hwm_woke;
extern void hwm_update_state_after_run(const HwmPipeline *p, int64 run_id,
									   TimestampTz started_at,
									   bool set_watermark, const char *watermark,
									   int64 rows, const HwmLoadMemory *memory);

/*
 * The scheduler's rows (dispatch.c, worker.c); each function's comment in
 * catalog.c says what it reads or writes.
 */

/* A due pipeline, as the dispatcher claims it (hwm_state_select_due) */
typedef struct HwmDueRow
{
	char	   *pipeline;
	Oid			owner;
	bool		periodic;		/* scheduled every so often (else after its
								 * upstreams alone: no next slot) */
	Interval	every;			/* ... its schedule */
	bool		relative;		/* ... counted from each run, not on a grid:
								 * run to stay under a target lag */
	TimestampTz anchor;			/* its grid's anchor (else its next run time) */
	Interval   *timeout;		/* a scheduled run's time limit; NULL: none */
} HwmDueRow;

/* A pipeline that has just become late (hwm_state_note_late) */
typedef struct HwmLate
{
	char	   *pipeline;
	char	   *lag;			/* how old its data is, as text */
	char	   *target_lag;		/* its goal, as text */
} HwmLate;

/* An owner of pipelines at home here, and when its next run is due */
typedef struct HwmOwnerDue
{
	Oid			owner;
	TimestampTz due;
} HwmOwnerDue;

extern HwmDueRow *hwm_state_select_due(int limit, TimestampTz now, uint64 *nrows,
									   uint64 *ndue);
extern HwmDueRow *hwm_state_select_woken(Datum pipelines, Oid owner, int limit,
										 TimestampTz now, uint64 *ndue,
										 int64 *expected_ms);
extern TimestampTz hwm_state_next_due(void);
extern int64 hwm_runs_start(const char *pipeline, Oid owner, const TimestampTz *next);
extern const char *hwm_state_claim_check(const char *pipeline, int64 run_id, Oid owner,
										  TimestampTz *checked_at);
extern bool hwm_runs_finish(int64 run_id, HwmRunStatus status, const char *sqlstate,
							const char *error, char **pipeline, TimestampTz *finished);
extern bool hwm_state_schedule_of(const char *pipeline, Interval *every, int *failures);
extern void hwm_state_set_next_run(const char *pipeline, const TimestampTz *next);
extern int64 *hwm_runs_sweep_interrupted(uint64 *n);
extern TimestampTz hwm_runs_claim_failed(const char *pipeline, Oid owner, const char *sqlstate,
										 const char *error);
extern char *hwm_runs_running_pipeline(int64 run_id);
extern void hwm_runs_delete_running(int64 run_id);
extern HwmOwnerDue *hwm_state_due_by_owner(int *n);
extern void hwm_state_last_durations(char *const *pipelines, int n, int64 *ms);
extern int64 hwm_runs_release(Datum run_ids);

/*
 * hwm.state: what the SQL functions change in a pipeline's row (the caller
 * has checked that the caller may: hwm_pipeline_fetch).  The owner as the
 * caller sees it, under row security (InvalidOid: not visible), for
 * hwm.schedule's warnings.
 */
extern void hwm_state_set_schedule(const char *pipeline, const Interval *every,
								   TimestampTz anchor, TimestampTz next);
extern void hwm_state_clear_schedule(const char *pipeline);
extern void hwm_state_set_after(const char *pipeline, Datum upstreams);
extern void hwm_after_graph_lock(void);
extern bool hwm_state_after_cycle(const char *pipeline, Datum upstreams);
extern bool hwm_state_upstream(const char *name, Oid *owner, Oid *target);
extern void hwm_state_end_orphaned_after(void);
extern void hwm_state_rearm_after(const char *pipeline, TimestampTz at);

/*
 * Scheduled on its source's commits (hwm.schedule_on_commit, watch.c): set
 * (due at now); the pipelines of this database waiting for a commit (their
 * sources in *sources, whether their last run loaded rows in *settle);
 * those of them a commit wrote made due at now, or min_interval after their
 * last run began, and those settling once more a little later (returns how
 * many: fewer when a row was locked, or changed since); a pipeline's
 * source when it is scheduled so (false: it is not).
 */
extern void hwm_state_set_on_commit(const char *pipeline, const Interval *min_interval,
									TimestampTz now);
extern char **hwm_state_commit_waiters(TimestampTz now, int *n, Oid **sources, bool **settle);
extern int	hwm_state_commit_due(Datum pipelines, int n, Datum settling, int nsettling,
								 int32 settle_ms, TimestampTz now);
extern bool hwm_state_on_commit_source(const char *pipeline, Oid *source);
extern HwmLate *hwm_state_note_late(int *n, TimestampTz *next);
extern Datum hwm_state_apply_wakes(int except_slotno, const char *only_upstream,
								   bool *all_applied);
extern void hwm_state_set_caveat(const char *pipeline, const char *caveat);
extern void hwm_state_set_enabled(const char *pipeline, bool enabled);
extern void hwm_state_set_timeout(const char *pipeline, const Interval *timeout);
extern void hwm_state_set_target_lag(const char *pipeline, const Interval *target_lag);
extern Oid	hwm_state_owner_as_caller(const char *pipeline);

/*
 * The reconcile's schedule (reconcile.c, worker.c): set (false when the
 * pipeline has no schedule: nothing written), cleared; whether it is due now
 * for a scheduled, unpaused pipeline (the row locked), and its next slot.
 */
extern bool hwm_state_set_reconcile_schedule(const char *pipeline, const Interval *every,
											 int batch_size, TimestampTz anchor,
											 TimestampTz next);
extern void hwm_state_clear_reconcile_schedule(const char *pipeline);
extern bool hwm_state_reconcile_due(const char *pipeline, TimestampTz now, Interval *every,
									TimestampTz *anchor, int *batch_size);
extern bool hwm_state_reconcile_scheduled(const char *pipeline);
extern void hwm_state_set_reconcile_next(const char *pipeline, const TimestampTz *next);

/*
 * A new pipeline's row in hwm.state (manage.c), by name of column; NULL,
 * InvalidOid, (Datum) 0 or a batch_size of 0: the column is NULL.
 */
typedef struct HwmNewPipeline
{
	const char *pipeline;
	Oid			source;
	Oid			target;			/* InvalidOid: none (a command pipeline) */
	Datum		unique_key;		/* text[] */
	Datum		watermark_column;	/* name */
	Oid			watermark_type;
	Datum		partition_column;	/* name; (Datum) 0: none */
	int32		lookback;
	const Interval *schedule;
	const char *watermark;		/* canonical text */
	Oid			owner;
	const Interval *delay;
	int64		batch_size;		/* 0: no cap */
	/* command and interval pipelines */
	const char *command;
	const Interval *time_interval;
	const char *interval_anchor;
	bool		batched;
	bool		skip_empty;
	const char *delete_column;	/* NULL: none */
	/* history pipelines: NULL: not one */
	Datum		history_columns;	/* name[]; (Datum) 0: the default */
	const char *valid_from_column;
	const char *valid_to_column;
} HwmNewPipeline;

/*
 * hwm.state: declaring and dropping pipelines (manage.c).  In the sql_drop
 * event trigger, statements on pg_event_trigger_dropped_objects(), which
 * work on every catalog: the dropped tables some pipeline uses
 * (HwmDroppedTable *), the pipelines of a table that Citus converts
 * following its successor, and the pipelines of the dropped tables deleted
 * (their names, char *, the latter in name order).
 */
typedef struct HwmDroppedTable
{
	Oid			relid;
	char	   *schema;			/* NULL: not known */
	char	   *name;			/* NULL: not known */
} HwmDroppedTable;

extern void hwm_state_insert(const HwmNewPipeline *row);
extern Oid	hwm_state_watermark_type(const char *pipeline);
extern void hwm_state_alter(const HwmNewPipeline *row);
extern void hwm_state_delete(const char *pipeline);
extern List *hwm_state_dropped_tables(void);
extern List *hwm_state_follow_table(Oid old, Oid new);
extern List *hwm_state_delete_of_dropped_tables(void);
extern void hwm_state_set_watermark(const char *pipeline, const char *watermark);

/*
 * hwm.state by owner, for DROP ROLE, REASSIGN OWNED and DROP OWNED
 * (owners.c), on every catalog: owners is an oid[] of roles.  Whether they own pipelines
 * (the first owner by oid, its count and its pipelines' names quoted);
 * their pipelines given to newrole, or dropped (how many).
 */
extern bool hwm_state_owned_by_any(Datum owners, Oid *owner, int64 *count, char **names);
extern uint64 hwm_state_reassign_owners(Datum owners, Oid newrole);
extern uint64 hwm_state_delete_owned(Datum owners);

/*
 * hwm.backfills: one resumable job's row (job.c), by name of column, found
 * and started by its kind (HwmJobKind.job: backfill, rerun_intervals,
 * reconcile).  A job's id, the end of its last step (NULL: none), its
 * steps and counts.
 */
typedef struct HwmBackfillRow
{
	int64		backfill_id;
	char	   *done_through;
	int			partitions_done;
	int64		rows_deleted;
	int64		rows_inserted;
} HwmBackfillRow;

extern bool hwm_backfills_find_unfinished(const char *pipeline, const char *kind,
										  const char *from_text, const char *to_text,
										  HwmBackfillRow *row);
extern int64 hwm_backfills_start(const char *pipeline, const char *kind,
								 const char *from_text, const char *to_text,
								 int batch_size);
extern void hwm_backfills_resume(int64 backfill_id, int batch_size);
extern void hwm_backfills_save(const HwmBackfillRow *row, bool finished);
extern void hwm_backfills_fail(int64 backfill_id, const char *sqlstate, const char *error);

#endif							/* HWM_CATALOG_H */
