/* transitional */
#ifndef HWM_EXCHANGE_H
#define HWM_EXCHANGE_H
#include "postgres.h"
#include "plan.h"
extern bool hwm_partition_exchange;
extern int	hwm_exchange_lock_timeout;
extern const char *hwm_overwrite_or_exchange(const HwmPlan *plan, Datum from, Datum to,
											 int64 *rows_deleted, int64 *rows_inserted);
#endif
