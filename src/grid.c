/*
 * grid.c
 *		anchor + k * step in integers: the points of a schedule (when a
 *		pipeline runs, and when it retries after failures) and the
 *		boundaries of an interval pipeline's intervals.
 *
 * A point is computed from the anchor every time, never by stepping from
 * the previous one, so nothing accumulates: k * step multiplies each part
 * of the interval by k (refusing what does not fit), and the result is
 * added to the anchor as PostgreSQL adds an interval to a timestamp:
 * months first (the day of the month clipped to the month's length), then
 * days, then microseconds, each checked.  A point that is not a finite
 * timestamp is reported, never raised, so that a caller (the dispatcher,
 * which serves many owners' pipelines at once) decides what it means for
 * its own pipeline alone.
 *
 * Because the step has no negative part and is not zero, points rise with
 * k, and the point at or before a time is found by a search from an
 * estimate: exact at once for steps of microseconds only, a few more steps
 * for months (whose lengths vary), and bounded by the range of timestamps
 * either way.  This module calls no other module of hwm: the tests' own
 * module (test/modules/hwm_test) compiles it in too, for sql/grid.sql's
 * probe of the grid.
 */
#include "postgres.h"

#include "grid.h"

#include "common/int.h"
#include "pgtime.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

/* Years beyond which no timestamp exists (with room to spare) */
#define GRID_MAX_YEARS	1000000

void
hwm_grid_init(HwmGrid *g, TimestampTz anchor, const Interval *step, bool local)
{
	g->anchor = anchor;
	g->step = *step;
	g->local = local;
}

const char *
hwm_grid_step_problem(const Interval *step)
{
	if (step->month < 0 || step->day < 0 || step->time < 0)
		return "it has a negative part";
	if (step->month == 0 && step->day == 0 && step->time == 0)
		return "it is zero";
	return NULL;
}

int64
hwm_interval_usecs(const Interval *iv)
{
	int64		days = (int64) iv->month * DAYS_PER_MONTH + iv->day;
	int64		usecs;

	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, iv->time, &usecs))
		return (days < 0 || (days == 0 && iv->time < 0)) ? PG_INT64_MIN : PG_INT64_MAX;
	return usecs;
}

/* Break t into fields (in the grid's zone); false when out of range */
static bool
to_fields(const HwmGrid *g, TimestampTz t, struct pg_tm *tm, fsec_t *fsec)
{
	int			tz;

	return timestamp2tm(t, g->local ? &tz : NULL, tm, fsec, NULL,
						g->local ? session_timezone : NULL) == 0;
}

/* Put the fields together again (in the grid's zone) */
static bool
from_fields(const HwmGrid *g, struct pg_tm *tm, fsec_t fsec, TimestampTz *t)
{
	int			tz;

	if (g->local)
	{
		tz = DetermineTimeZoneOffset(tm, session_timezone);
		return tm2timestamp(tm, fsec, &tz, t) == 0;
	}
	return tm2timestamp(tm, fsec, NULL, t) == 0;
}

/* t + months, the day of the month clipped to the new month's length */
static bool
add_months(const HwmGrid *g, TimestampTz *t, int64 months)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int64		total;

	if (!to_fields(g, *t, &tm, &fsec))
		return false;
	/* months counted from year 0, month 0: floor division below */
	total = (int64) tm.tm_year * MONTHS_PER_YEAR + (tm.tm_mon - 1);
	if (months > (int64) GRID_MAX_YEARS * MONTHS_PER_YEAR ||
		months < -(int64) GRID_MAX_YEARS * MONTHS_PER_YEAR)
		return false;
	total += months;
	tm.tm_year = (int) (total >= 0 ? total / MONTHS_PER_YEAR
						: -((-total + MONTHS_PER_YEAR - 1) / MONTHS_PER_YEAR));
	tm.tm_mon = (int) (total - (int64) tm.tm_year * MONTHS_PER_YEAR) + 1;
	if (tm.tm_mday > day_tab[isleap(tm.tm_year)][tm.tm_mon - 1])
		tm.tm_mday = day_tab[isleap(tm.tm_year)][tm.tm_mon - 1];
	return from_fields(g, &tm, fsec, t);
}

/* t + days, the time of day kept (in the grid's zone) */
static bool
add_days(const HwmGrid *g, TimestampTz *t, int64 days)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int64		julian;

	if (!to_fields(g, *t, &tm, &fsec))
		return false;
	julian = (int64) date2j(tm.tm_year, tm.tm_mon, tm.tm_mday) + days;
	/* as timestamptz + interval: -1 is allowed for zones east of UTC */
	if (julian < (g->local ? -1 : 0) || julian > PG_INT32_MAX)
		return false;
	j2date((int) julian, &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	return from_fields(g, &tm, fsec, t);
}

bool
hwm_grid_point(const HwmGrid *g, int64 k, TimestampTz *result)
{
	TimestampTz t = g->anchor;
	int64		months;
	int64		days;
	int64		usecs;

	if (TIMESTAMP_NOT_FINITE(t) ||
		pg_mul_s64_overflow(k, g->step.month, &months) ||
		pg_mul_s64_overflow(k, g->step.day, &days) ||
		pg_mul_s64_overflow(k, g->step.time, &usecs))
		return false;
	if (months != 0 && !add_months(g, &t, months))
		return false;
	if (days != 0 && !add_days(g, &t, days))
		return false;
	if (pg_add_s64_overflow(t, usecs, &t) || !IS_VALID_TIMESTAMP(t))
		return false;
	*result = t;
	return true;
}

/*
 * point(k) <= t?  A point that cannot be represented lies beyond the end of
 * time when k is positive, before its start when k is negative.
 */
static bool
at_or_before(const HwmGrid *g, int64 k, TimestampTz t)
{
	TimestampTz p;

	if (!hwm_grid_point(g, k, &p))
		return k < 0;
	return p <= t;
}

/* a + b, saturated (the search only needs to know it went past the end) */
static int64
add_sat(int64 a, int64 b)
{
	int64		r;

	if (pg_add_s64_overflow(a, b, &r))
		return b > 0 ? PG_INT64_MAX : PG_INT64_MIN;
	return r;
}

bool
hwm_grid_index(const HwmGrid *g, TimestampTz t, int64 *index)
{
	int64		lo;
	int64		hi;
	int64		step;

	Assert(!TIMESTAMP_NOT_FINITE(t));
	if (g->step.month == 0 && g->step.day == 0)
	{
		/* microseconds only: floor((t - anchor) / step), exactly */
		int128		diff = (int128) t - g->anchor;
		int128		k = diff / g->step.time;

		if (diff % g->step.time < 0)
			k--;
		if (k > PG_INT64_MAX || k < PG_INT64_MIN)
			return false;		/* microseconds apart by more than int64 holds */
		*index = (int64) k;
		return true;
	}
	else
	{
		/* an estimate from the step's mean length, then a search */
		double		mean = g->step.month * (365.2425 / 12.0) * USECS_PER_DAY +
			(double) g->step.day * USECS_PER_DAY + (double) g->step.time;
		double		est = ((double) t - (double) g->anchor) / mean;

		lo = est >= 9e18 ? PG_INT64_MAX / 2 : est <= -9e18 ? PG_INT64_MIN / 2 : (int64) est;
	}
	/* bracket: point(lo) <= t < point(hi), widening the gap by doubling */
	if (at_or_before(g, lo, t))
	{
		for (step = 1;; step *= 2)
		{
			hi = add_sat(lo, step);
			if (!at_or_before(g, hi, t))
				break;
			lo = hi;
		}
	}
	else
	{
		hi = lo;
		for (step = 1;; step *= 2)
		{
			lo = add_sat(hi, -step);
			if (at_or_before(g, lo, t))
				break;
			hi = lo;
		}
	}
	while (hi - lo > 1)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (at_or_before(g, mid, t))
			lo = mid;
		else
			hi = mid;
	}
	*index = lo;
	return true;
}

bool
hwm_grid_next(const HwmGrid *g, TimestampTz after, bool inclusive,
			  TimestampTz *result)
{
	int64		k;
	TimestampTz p;

	if (g->anchor > after || (inclusive && g->anchor == after))
	{
		*result = g->anchor;
		return true;
	}
	if (!hwm_grid_index(g, after, &k))
		return false;
	/* point(k) <= after < point(k + 1) */
	if (inclusive && hwm_grid_point(g, k, &p) && p == after)
	{
		*result = p;
		return true;
	}
	return hwm_grid_point(g, add_sat(k, 1), result);
}

bool
hwm_grid_schedule_next(TimestampTz start, const Interval *every,
					   TimestampTz after, bool inclusive, TimestampTz *result)
{
	HwmGrid		g;

	hwm_grid_init(&g, start, every, true);
	return hwm_grid_next(&g, after, inclusive, result);
}

bool
hwm_grid_retry_at(TimestampTz finished, const Interval *every, int failures,
				  TimestampTz *result)
{
	HwmGrid		g;
	TimestampTz backoff;
	TimestampTz one;
	TimestampTz cap;
	bool		has_backoff;

	hwm_grid_init(&g, finished, every, true);
	/* 2^20 schedules is past the cap of any schedule of a second or more */
	failures = Max(1, Min(failures, 21));
	has_backoff = hwm_grid_point(&g, INT64CONST(1) << (failures - 1), &backoff);
	if (pg_add_s64_overflow(finished, USECS_PER_HOUR, &cap) || !IS_VALID_TIMESTAMP(cap))
		return has_backoff ? (*result = backoff, true) : false;
	if (hwm_grid_point(&g, 1, &one))
		cap = Max(cap, one);
	*result = has_backoff ? Min(backoff, cap) : cap;
	return true;
}
