/*
 * job.h
 *		Resumable jobs: a long piece of work over a range, done one step per
 *		transaction, whose progress is a row of hwm.backfills, so that a
 *		second CALL resumes it and a CALL in another session is refused
 *		while one works on it (job.c).  Backfills (backfill.c) and reruns of
 *		intervals (interval.c) are jobs: each is a kind (HwmJobKind), its step
 *		and its messages, that one driver (hwm_job_run) runs.
 */
#ifndef HWM_JOB_H
#define HWM_JOB_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/elog.h"
#include "utils/timestamp.h"

struct HwmJob;

/*
 * A kind of job: its step and its messages.  The messages are templates in
 * which {id}, {pipeline}, {from}, {to} and {done} (the end of the last step
 * done, "(none)" before the first) stand for the job's.
 */
typedef struct HwmJobKind
{
	const char *procedure;		/* "hwm.backfill": the CALL, in messages */
	const char *job;			/* hwm.backfills.kind: "backfill" */
	const char *step_name;		/* "partition": what one step does, in messages */
	const char *snapshot_detail;	/* why it needs READ COMMITTED */
	const char *busy;			/* errmsg: another session works on it */
	const char *busy_detail;
	const char *resuming;		/* NOTICE: an unfinished job taken over */
	const char *stopped;		/* errdetail of a step's error outside a
								 * transaction block (NULL: the error as it
								 * is); a hint to CALL again goes with it */
	const char *again;			/* that hint (NULL: CALL procedure(pipeline,
								 * from, to) again) */

	/*
	 * One step, in the current transaction (as the caller: it becomes the
	 * owner itself): do it and move done_through, steps_done and the row
	 * counts; true when the range is finished (the step may also be the one
	 * that finds nothing left).
	 */
	bool		(*step) (struct HwmJob *job);

	/* What to record besides the job's row when a step failed, or NULL */
	void		(*failed) (struct HwmJob *job, ErrorData *edata, TimestampTz started_at);
} HwmJobKind;

typedef struct HwmJob
{
	const HwmJobKind *kind;
	char	   *pipeline;
	TimestampTz pipeline_created_at;	/* the pipeline's identity, with its
										 * name: hwm_job_run reads it under
										 * the lock; every step checks it */
	char	   *from_text;		/* canonical text of the range's bounds */
	char	   *to_text;
	int			batch_size;		/* steps per transaction */
	bool		session_lock;	/* its lock lasts the CALL (non-atomic) */
	int64		id;				/* hwm.backfills.backfill_id */
	int64		locked_id;		/* whose lock this CALL holds, 0: none */
	bool		resumed;		/* an unfinished job taken over */
	char	   *done_through;	/* the end of the last step done, NULL: none */
	int			steps_done;		/* hwm.backfills.partitions_done */
	int64		rows_deleted;
	int64		rows_inserted;
	MemoryContext cxt;			/* outlives the CALL's transactions */
	bool		atomic;			/* inside a transaction block: no commits */
	bool		background;		/* a background worker's: hwm_bgw_begin/commit */
	void	   *arg;			/* the kind's own, for its step */
} HwmJob;

/* Refuse a REPEATABLE READ or SERIALIZABLE transaction: a step reads the present */
extern void hwm_job_require_read_committed(const HwmJobKind *kind);

/*
 * A job of this kind for this CALL, in a memory context of its own, with SPI
 * connected (non-atomic outside a transaction block): the caller fills in
 * pipeline, from_text, to_text (in job->cxt) and batch_size, then calls
 * hwm_job_run.
 */
extern HwmJob *hwm_job_new(const HwmJobKind *kind, FunctionCallInfo fcinfo);

/*
 * A job of this kind run by a background worker, in a memory context under
 * parent (which outlives the worker's transactions): the worker has called
 * hwm_bgw_begin (util.c); hwm_job_run commits after the set-up and after
 * every step with hwm_bgw_commit, begins the next with hwm_bgw_begin, and
 * returns in an open transaction that the worker commits.
 */
extern HwmJob *hwm_job_new_background(const HwmJobKind *kind, MemoryContext parent);

/*
 * Find or start the job, claim it, take the pipeline's lock and run its
 * steps, one transaction each outside a transaction block; a step that fails
 * is recorded (and kept) and its error raised.  Returns with SPI finished.
 */
extern void hwm_job_run(HwmJob *job);

/* Let go of the job's memory, after its summary */
extern void hwm_job_free(HwmJob *job);

/* The unfinished job of this pipeline and range, if any: its id and progress */
extern bool hwm_job_find_unfinished(HwmJob *job);

/* Take over the unfinished job, or start a new one (a new row) */
extern void hwm_job_start(HwmJob *job);

/* Hold the job's lock for this CALL (refused when another holds it), and let go */
extern void hwm_job_claim(HwmJob *job);
extern void hwm_job_unclaim(HwmJob *job);

/* Write the progress (with finished, the end) */
extern void hwm_job_save(const HwmJob *job, bool finished);

/*
 * Record in hwm.runs the step that failed, as a run of the job's kind
 * (kind->job) over from..to: what a kind's failed callback records.
 */
extern void hwm_job_record_failed_step(const HwmJob *job, const char *from, const char *to,
									   ErrorData *edata, TimestampTz started_at);

/* Mark the job failed with the error that stopped it */
extern void hwm_job_fail(const HwmJob *job, ErrorData *edata);

#endif							/* HWM_JOB_H */
