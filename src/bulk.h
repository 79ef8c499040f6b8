/*
 * bulk.h
 *		Fill a table aside a page of rows at a time (bulk.c).
 */
#ifndef HWM_BULK_H
#define HWM_BULK_H

#include "postgres.h"

/*
 * Run sql, an INSERT ... SELECT into a table aside with $n parameters
 * (argtypes, values, nulls as SPI_execute_with_args takes them), inserting
 * its rows with table_multi_insert; through SPI when the statement or the
 * table is not one that can take them so (see bulk.c).  Returns the rows
 * inserted.
 */
extern uint64 hwm_bulk_insert(const char *sql, int nargs, Oid *argtypes, Datum *values,
							  const char *nulls);

#endif							/* HWM_BULK_H */
