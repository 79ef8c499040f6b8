/* transitional */
#ifndef HWM_SCHEDULE_H
#define HWM_SCHEDULE_H
#include "postgres.h"
#include "datatype/timestamp.h"
extern void hwm_check_schedule(const Interval *every, const char *what);
extern TimestampTz hwm_schedule_next(TimestampTz anchor, const Interval *every,
									 TimestampTz after, bool inclusive);
extern TimestampTz hwm_schedule_set(const char *pipeline, const Interval *every,
									TimestampTz start_at);
#endif
