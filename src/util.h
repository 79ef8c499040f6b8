/*
 * util.h
 *		Small helpers that several of hwm's modules share: SPI statements,
 *		argument checks, quoted names and operators, a lock taken with a
 *		bounded wait, interval arithmetic, and the transaction skeleton of
 *		hwm's background workers.  util.c calls no other module of hwm.
 */
#ifndef HWM_UTIL_H
#define HWM_UTIL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"

/* SPI: run a statement with $n parameters and insist on its SPI_OK_* code */
extern void hwm_spi_exec(const char *sql, int nargs, Oid *argtypes,
						 Datum *values, const char *nulls, int expected);
/* the first column of the first row of the last SPI result (NULL: none) */
extern bool hwm_spi_first(Datum *value);

/* SQL-callable functions' arguments */
extern void hwm_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);
extern char *hwm_text_arg(FunctionCallInfo fcinfo, int argno, const char *what);
extern bool hwm_call_is_atomic(FunctionCallInfo fcinfo);

/* "schema"."relation" and OPERATOR("schema".op), quoted */
extern char *hwm_qualified_name(Oid relid);
extern char *hwm_operator_sql(Oid opno);

/* microseconds of an interval, months counted as 30 days */
extern int64 hwm_interval_usecs(const Interval *iv);

/*
 * Take an ACCESS EXCLUSIVE lock on relid, waiting at most ms milliseconds;
 * when it is not granted in time, fail with ERRCODE_LOCK_NOT_AVAILABLE,
 * errmsg "could not lock <what> within <ms> ms" and the detail and hint given.
 */
extern void hwm_lock_within(Oid relid, int64 ms, const char *what,
							const char *detail, const char *hint);

/* one transaction of a background worker, with SPI and a snapshot */
extern void hwm_bgw_begin(void);
extern void hwm_bgw_commit(void);

#endif							/* HWM_UTIL_H */
