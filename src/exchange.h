/*
 * exchange.h
 *		Partition exchange (exchange.c), for range.c: build the new contents
 *		of the partitions a range covers aside, then trade them in.  What the
 *		exchange leaves of the range, range.c overwrites by the diff.  And,
 *		for load.c, the same for a whole empty target: its first load.
 */
#ifndef HWM_EXCHANGE_H
#define HWM_EXCHANGE_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "pipeline.h"

/* hwm.partition_exchange, hwm.exchange_lock_timeout */
extern bool hwm_partition_exchange;
extern int	hwm_exchange_lock_timeout;

typedef struct HwmExchange HwmExchange;

/*
 * Step 1 of exchange.c's three: build the new contents of every partition of the plan's target
 * that [from, to] covers and that can be exchanged.  NULL when none was
 * built (exchange off, a target that is not partitioned on the column, no
 * partition covered, each one refused): then the whole range is the diff's.
 */
extern HwmExchange *hwm_exchange_build(const HwmPlan *plan, Datum from, Datum to);

/* The parts of [from, to] outside the partitions built (HwmRange *), in order */
extern List *hwm_exchange_gaps(const HwmExchange *x);

/*
 * Steps 2 and 3: lock each built partition and trade storage with its new
 * contents.  Adds the exchanged partitions' rows to *deleted and *inserted
 * and returns how many were exchanged; the ranges of those it gave up on
 * (HwmRange *) go to *leftover, for the diff.
 */
extern int	hwm_exchange_finish(HwmExchange *x, int64 *deleted, int64 *inserted,
								List **leftover);

/*
 * The first load built aside (load.c): the whole target, when it is empty,
 * built aside and traded in as a leaf is (see exchange.c).
 *
 * hwm_aside_refusal: *empty when the target has no block (or no storage of
 * its own); then why it cannot take its slice built aside, or NULL.
 *
 * hwm_aside_load: create the table aside, fill(its quoted name, arg) it
 * (returning the rows filled), build its indexes, lock the target within
 * hwm.exchange_lock_timeout, check again under the lock that it is empty
 * and refuses nothing, trade storage and drop the table aside.  Returns the
 * rows loaded.  To be run in a subtransaction: on an error, ask
 * hwm_aside_gave_up why it gave up (NULL: raise the error again), roll back
 * and load the slice another way.  *refusal is the caller's: set to NULL,
 * then to why a check found the load impossible, just before raising the
 * error that says so; hwm_aside_gave_up reads it.
 */
extern const char *hwm_aside_refusal(const HwmPlan *plan, bool *empty);
extern int64 hwm_aside_load(const HwmPlan *plan,
							int64 (*fill) (const char *table, void *arg), void *arg,
							const char **refusal);
extern const char *hwm_aside_gave_up(const ErrorData *edata, const char *refusal);

#endif							/* HWM_EXCHANGE_H */
