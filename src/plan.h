/*
 * plan.h
 *		What one run executes: a pipeline (or overwrite_partition's
 *		arguments) turned into quoted SQL statements, and the conversions of
 *		watermark and partition values between text and the columns' types
 *		(pipeline.c).
 */
#ifndef HWM_PLAN_H
#define HWM_PLAN_H

#include "postgres.h"

#include "nodes/pg_list.h"

/* A value type used in comparisons (watermark or partition column). */
typedef struct HwmValueType
{
	Oid			type;			/* column type (may be a domain) */
	int32		typmod;
	Oid			collation;
	char	   *gt;				/* "OPERATOR(schema.>)" and friends */
	char	   *ge;
	char	   *lt;
	char	   *le;
	Oid			cmp_proc;		/* btree comparison support function */
} HwmValueType;

/* What a plan is built from: a pipeline, or overwrite_partition's arguments. */
typedef struct HwmPlanSpec
{
	Oid			source;
	Oid			target;
	List	   *unique_key;		/* NIL: plain DELETE + INSERT, no upsert */
	const char *watermark_column;	/* NULL: no incremental statements */
	const char *partition_column;	/* NULL: no overwrite statements */
	const char *pipeline;		/* for messages; NULL without a pipeline */
	bool		stored;			/* from the catalog, not from the caller */
} HwmPlanSpec;

/* Statements and types for one run, built once from the catalog. */
typedef struct HwmPlan
{
	HwmValueType wm;
	HwmValueType part;
	bool		has_wm;
	bool		has_part;
	List	   *source_columns;	/* attnums (int) of the source read */
	List	   *target_columns;	/* attnums (int) of the target read */

	/* $1 = old watermark (absent in the *_first forms), result: new one */
	char	   *max_wm_sql;
	char	   *max_wm_first_sql;
	/* the greatest value (above $1 and) below the limit $2 (first form: $1) */
	char	   *max_below_sql;
	char	   *max_below_first_sql;
	/* $1 = old watermark (absent in the first form): the rows above it */
	char	   *upsert_sql;
	char	   *upsert_first_sql;
	/* batches: the batch's last value, $1 = old watermark, $2 = offset */
	char	   *batch_end_sql;
	char	   *batch_end_first_sql;
	/* the rows above $1 and up to $2 (first form: up to $1) */
	char	   *upsert_upto_sql;
	char	   *upsert_upto_first_sql;
	/* $1 = number of partitions; returns their values, newest first */
	char	   *newest_partitions_sql;
	/* $1, $2 = inclusive partition range */
	char	   *delete_range_sql;
	char	   *insert_range_sql;

	/* pieces of those statements, for exchange.c to build its own */
	Oid			source;
	Oid			target;
	const char *partition_column;	/* unquoted; NULL without one */
	List	   *load_columns;	/* target columns loaded (char *, unquoted) */
	char	   *column_list_sql;	/* "a", "b" */
	char	   *select_list_sql;	/* s."a", s."b" */
	bool		override_identity;	/* OVERRIDING SYSTEM VALUE needed */
	char	   *conflict_sql;	/* " ON CONFLICT ..." or "" */
	char	   *keymatch_sql;	/* " AND s.k = t.k ..." or "" */
} HwmPlan;


extern HwmPlan *hwm_plan_build(const HwmPlanSpec *spec);
extern void hwm_value_type_init(HwmValueType *vt, Oid type, int32 typmod,
								Oid collation, const char *colname,
								const char *relname);
extern Datum hwm_value_in(const HwmValueType *vt, const char *text,
						  const char *what);
extern char *hwm_value_out(const HwmValueType *vt, Datum value);
extern int	hwm_value_cmp(const HwmValueType *vt, Datum a, Datum b);

#endif							/* HWM_PLAN_H */
