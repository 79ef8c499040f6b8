/*
 * job.h
 *		Resumable jobs: a long piece of work over a range, done one step per
 *		transaction, whose progress is a row of hwm.backfills, so that a
 *		second CALL resumes it and a CALL in another session is refused
 *		while one works on it (job.c).  Backfills (backfill.c) and reruns of
 *		intervals (interval.c) are jobs; each keeps only its step.
 */
#ifndef HWM_JOB_H
#define HWM_JOB_H

#include "postgres.h"

#include "utils/elog.h"

typedef struct HwmJob
{
	const char *what;			/* "backfill" or "rerun", for messages */
	char	   *pipeline;
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
} HwmJob;

/* The unfinished job of this pipeline and range, if any: its id and progress */
extern bool hwm_job_find_unfinished(HwmJob *job);

/* Take over the unfinished job, or start a new one (a new row) */
extern void hwm_job_start(HwmJob *job);

/* Hold the job's lock for this CALL (refused when another holds it), and let go */
extern void hwm_job_claim(HwmJob *job);
extern void hwm_job_unclaim(HwmJob *job);

/* Write the progress (with finished, the end) */
extern void hwm_job_save(const HwmJob *job, bool finished);

/* Mark the job failed with the error that stopped it */
extern void hwm_job_fail(const HwmJob *job, ErrorData *edata);

#endif							/* HWM_JOB_H */
