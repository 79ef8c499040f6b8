/* transitional */
#ifndef HWM_OVERWRITE_H
#define HWM_OVERWRITE_H
#include "postgres.h"
#include "fmgr.h"
#include "plan.h"
extern void hwm_overwrite_range(const HwmPlan *plan, Datum from, Datum to,
								int64 *rows_deleted, int64 *rows_inserted);
extern void hwm_parse_range(const HwmPlan *plan, FunctionCallInfo fcinfo,
							int from_arg, int to_arg,
							Datum *from, Datum *to,
							char **from_text, char **to_text);
#endif
