/*
 * watermark.h
 *		The safe watermark bound: how far a run may move the watermark
 *		given the transactions in flight (watermark.c).
 */
#ifndef HWM_WATERMARK_H
#define HWM_WATERMARK_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "catalog.h"
#include "pipeline.h"

/* What hwm_safe_bound() found */
typedef struct HwmSafeBound
{
	bool		hold;			/* keep the watermark where it is */
	bool		has_limit;		/* else keep it strictly below limit */
	Datum		limit;			/* in the watermark column's type */
	int			in_flight;		/* transactions that mattered */
	int			still_running;	/* ... of those, still running after the wait */
	const char *reason;			/* what holds the watermark back, for messages */
	bool		has_cap;		/* and keep it at or below cap: a chain */
	Datum		cap;			/* the upstreams' oldest committed watermark */
	bool		upstream_empty;	/* an upstream has loaded nothing: the hold */
	/* time types: how far the upstreams have their sources complete (0: not known) */
	bool		has_upstreams;
	TimestampTz upstreams_as_of;
	/* for the next run (time types: the limit before any transaction's start) */
	bool		has_floor;
	Datum		floor;			/* rows unseen now are at least this, or ... */
	List	   *xacts;			/* HwmXact *: ... belong to one of these */
	/* the oldest transaction that lowered the limit (pid 0: none) */
	int			oldest_pid;
	char	   *oldest_application;
	TimestampTz oldest_start;
} HwmSafeBound;

/* hwm.wait_timeout, hwm.start_margin */
extern int	hwm_wait_timeout;
extern int	hwm_start_margin;

extern bool hwm_is_time_type(Oid type);

/*
 * May a stored watermark of type stored be compared with values of type
 * now, the watermark column's type today?  The same type; or both numbers
 * (a column widened from integer to bigint or numeric: the stored text
 * reads as the same number, and numbers order alike); or text and varchar.
 * Anything else (bigint to text: '10' sorts below '9'; timestamp to
 * timestamptz: the session's TimeZone shifts it) could put new rows below
 * the watermark, never loaded.
 */
extern bool hwm_watermark_type_kept(Oid stored, Oid now);
extern TimestampTz hwm_time_value_timestamptz(Oid type, Datum value);
extern void hwm_safe_bound(const HwmPlan *plan, Oid source, const Interval *delay,
						   List *carried, HwmSafeBound *b);
extern bool hwm_reread_from(const HwmPlan *plan, const HwmLoadMemory *mem,
							const Datum *watermark, Datum *from, List **carried);
extern TimestampTz hwm_memory_epoch(void);
/* why a chain's cap held a watermark (a run's NOTICE, hwm.runs) */
#define HWM_CHAIN_HELD "a pipeline that loads a table of the source and has not loaded further"

extern char *hwm_watermark_caveat(const HwmPlan *plan, Oid source, bool has_delay);

/*
 * The relations a source reads: itself, a view's relations (through views
 * and SQL functions), each table's partitions and ancestors
 */
extern List *hwm_source_relations(Oid source);

#endif							/* HWM_WATERMARK_H */
