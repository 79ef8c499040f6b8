/*
 * util.h
 *		Small helpers that several of hwm's modules share: SPI statements,
 *		argument checks, quoted names and operators, a lock taken with a
 *		bounded wait, errors cut to 8 kB, subtransactions, running as a role
 *		with search_path pinned, and the transaction skeleton of hwm's
 *		background workers.  util.c calls no other module of hwm.
 */
#ifndef HWM_UTIL_H
#define HWM_UTIL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/elog.h"
#include "utils/palloc.h"
#include "utils/snapshot.h"

/*
 * SPI: run a statement with $n parameters, its plan kept across calls (see
 * util.c); hwm_spi_exec also insists on its SPI_OK_* code
 */
extern int	hwm_spi_run(const char *sql, int nargs, Oid *argtypes,
						Datum *values, const char *nulls);
extern void hwm_spi_exec(const char *sql, int nargs, Oid *argtypes,
						 Datum *values, const char *nulls, int expected);
/* ... with the snapshot given (its parameters read after it was taken) */
extern void hwm_spi_exec_snapshot(const char *sql, int nargs, Oid *argtypes,
								  Datum *values, const char *nulls,
								  Snapshot snapshot, int expected);
/* the first column of the first row of the last SPI result (NULL: none) */
extern bool hwm_spi_first(Datum *value);

/*
 * An error message as hwm stores, logs and sends it: at most HWM_ERROR_MAX
 * bytes, a longer one cut (at a character boundary) and marked as cut.
 */
#define HWM_ERROR_MAX 8192
extern const char *hwm_clip_error(const char *message);

/* SQL-callable functions' arguments */
extern void hwm_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);

/*
 * The longest time limit hwm arms as a timer or a lock_timeout, in ms: what
 * the server's timers and statement_timeout hold (24 days 20:31:23.647)
 */
#define HWM_TIMER_MAX_MS	((int64) PG_INT32_MAX)
extern bool hwm_interval_has_negative_part(const Interval *iv);
extern bool hwm_interval_shorter_than(const Interval *iv, int64 usecs);
extern void hwm_check_timer_interval(const Interval *iv, const char *what,
									 const char *hint);
extern void hwm_check_not_negative(const Interval *iv, const char *what,
								   const char *hint);
extern char *hwm_text_arg(FunctionCallInfo fcinfo, int argno, const char *what);
extern bool hwm_call_is_atomic(FunctionCallInfo fcinfo);

/* "schema"."relation" and OPERATOR("schema".op), quoted */
extern char *hwm_qualified_name(Oid relid);
extern char *hwm_operator_sql(Oid opno);

/*
 * Take an ACCESS EXCLUSIVE lock on relid, waiting at most ms milliseconds;
 * when it is not granted in time, fail with ERRCODE_LOCK_NOT_AVAILABLE,
 * errmsg "could not lock <what> within <ms> ms" and the detail and hint given.
 */
extern void hwm_lock_within(Oid relid, int64 ms, const char *what,
							const char *detail, const char *hint);

/*
 * fn(arg) in a subtransaction of the current transaction: NULL when it
 * succeeded, else its work is rolled back and its error, copied into
 * errcxt, returned (the caller records it, and re-throws it or not).
 */
extern ErrorData *hwm_try_subxact(void (*fn) (void *), void *arg,
								  MemoryContext errcxt);

/*
 * Run as a role (a pipeline's owner, or the catalog's), with search_path
 * pinned to pg_catalog, pg_temp, until hwm_unbecome().
 */
typedef struct HwmRoleSwitch
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} HwmRoleSwitch;

extern void hwm_become(Oid role, bool restricted, HwmRoleSwitch *sw);
extern void hwm_unbecome(HwmRoleSwitch *sw);

/* one transaction of a background worker, with SPI and a snapshot */
extern void hwm_bgw_begin(void);
extern void hwm_bgw_commit(void);

#endif							/* HWM_UTIL_H */
