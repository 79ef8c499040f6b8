/*
 * pipeline.h
 *		What one run executes: a pipeline (or overwrite_partition's
 *		arguments) turned into quoted SQL statements, and the conversions of
 *		watermark and partition values between text and the columns' types
 *		(pipeline.c).
 */
#ifndef HWM_PIPELINE_H
#define HWM_PIPELINE_H

#include "postgres.h"

#include "nodes/pg_list.h"

/* A value type used in comparisons (watermark or partition column). */
typedef struct HwmValueType
{
	Oid			type;			/* column type (may be a domain) */
	int32		typmod;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
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
	bool		source_only;	/* a command or interval pipeline: no target */
	List	   *unique_key;		/* NIL: plain DELETE + INSERT, no upsert */
	const char *watermark_column;	/* NULL: no incremental statements */
	const char *partition_column;	/* NULL: no overwrite statements */
	const char *pipeline;		/* for messages; NULL without a pipeline */
	bool		stored;			/* from the catalog, not from the caller */
	const char *delete_column;	/* the source's delete marker; NULL: none */
	const char *tombstone_order;	/* with it, what orders a key's rows (the
									 * watermark column; NULL: watermark_column) */
	/* a history (issue 40): the target's columns a version's bounds are in */
	const char *valid_from_column;	/* NULL: not a history */
	const char *valid_to_column;
	bool		history_columns_given;	/* false: every column but the key, the
										 * watermark and the delete marker */
	List	   *history_columns;	/* the tracked columns (char *) */
} HwmPlanSpec;

/*
 * The statements on the watermark column.  Each comes in two forms: [0] for
 * the first run (no watermark yet: every non-NULL value) and [1] for later
 * runs (rows above the stored watermark).  Their parameters are named by
 * what they stand for (HwmParam) and numbered where each is built.
 */
typedef enum HwmWmStatement
{
	HWM_WM_MAX,					/* the greatest value */
	HWM_WM_MAX_BELOW,			/* the greatest value below HWM_PARAM_BELOW */
	HWM_WM_BATCH_END,			/* the (HWM_PARAM_OFFSET + 1)-th smallest value */
	HWM_WM_UPSERT,				/* upsert every row */
	HWM_WM_UPSERT_UPTO,			/* upsert the rows up to HWM_PARAM_UPTO */
	HWM_WM_INSERT,				/* HWM_WM_UPSERT as a plain insert (all keys new) */
	HWM_WM_INSERT_UPTO,			/* HWM_WM_UPSERT_UPTO likewise */
	HWM_WM_MERGE,				/* HWM_WM_UPSERT without speculative insertion */
	HWM_WM_MERGE_UPTO,			/* HWM_WM_UPSERT_UPTO likewise */
	HWM_WM_TWICE,				/* a row if HWM_WM_MERGE's slice holds a key twice */
	HWM_WM_TWICE_UPTO,			/* HWM_WM_MERGE_UPTO's likewise */
	HWM_WM_KEYS,				/* min and max of the key's first column in HWM_WM_MERGE's slice */
	HWM_WM_KEYS_UPTO,			/* HWM_WM_MERGE_UPTO's likewise */
	HWM_WM_NSTATEMENTS
} HwmWmStatement;

/*
 * What a parameter of a watermark statement stands for.  A statement
 * records what its $1, $2, ... stand for as it is built (HwmStatement,
 * pipeline.c); a run names the values it has (HwmBinding) and
 * hwm_statement_exec binds them by name, so a statement's numbering is
 * written in one place only: where its text is.
 */
typedef enum HwmParam
{
	HWM_PARAM_WATERMARK,		/* the stored watermark: rows above it (later form) */
	HWM_PARAM_FROM,				/* where reading starts, inclusive; NULL:
								 * everything (first form of the statements
								 * that read rows to load) */
	HWM_PARAM_BELOW,			/* HWM_WM_MAX_BELOW: values below it */
	HWM_PARAM_OFFSET,			/* HWM_WM_BATCH_END: how many values to skip (int8) */
	HWM_PARAM_UPTO,				/* the _UPTO statements: values up to it */
	HWM_PARAM_KEY_LO,			/* the MERGE's key bounds (see */
	HWM_PARAM_KEY_HI,			/* HwmPlan.merge_bound_type) */
	HWM_NPARAMS
} HwmParam;

/* A statement and, in order, what its parameters stand for and their types */
typedef struct HwmStatement
{
	char	   *sql;			/* NULL: not built */
	int			nparams;
	HwmParam	param[HWM_NPARAMS];
	Oid			type[HWM_NPARAMS];
} HwmStatement;

/* The values a run has for the parameters, by what they stand for */
typedef struct HwmBinding
{
	Datum		value[HWM_NPARAMS];
	bool		isnull[HWM_NPARAMS];
	bool		given[HWM_NPARAMS];
} HwmBinding;

/* Statements and types for one run, built once from the catalog. */
typedef struct HwmPlan
{
	HwmValueType wm;
	HwmValueType part;
	bool		has_wm;
	bool		has_part;
	bool		citus;			/* the source or the target is a Citus table */
	Oid			source;
	Oid			target;
	const char *partition_column;	/* unquoted; NULL without one */
	struct HwmKey *key;			/* the key's one definition (key.c); NULL
								 * without a unique key */
	List	   *load_columns;	/* target columns loaded (char *, unquoted) */
	List	   *source_columns;	/* attnums (int) of the source read */
	List	   *target_columns;	/* attnums (int) of the target read */

	/* [first run: 0, later runs: 1], see HwmWmStatement */
	HwmStatement wm_stmt[HWM_WM_NSTATEMENTS][2];

	/*
	 * The fast paths of a slice (HWM_WM_INSERT*: the slice by a plain
	 * insert; HWM_WM_MERGE*: new keys by a plain insert, changed rows
	 * updated, unchanged rows untouched; HWM_WM_TWICE*: whether the
	 * MERGE's slice held a key twice, NULL when the source's own unique
	 * index rules that out), or why there are none (NULL without the
	 * statements: a plain insert already, no key; see load.c).
	 */
	const char *merge_refused;

	/*
	 * The MERGE's key bounds (HWM_WM_KEYS*, the least and greatest value of
	 * the key's first column in the slice): the type of that column, whose
	 * bounds (HWM_PARAM_KEY_LO and _HI) limit the target's side of its ON
	 * to the slice's key range; InvalidOid
	 * when the MERGE has none (a collation differs between the tables, or
	 * pg_catalog.min and max do not take the type), and is then kept to
	 * nested loops (load.c).
	 */
	Oid			merge_bound_type;
	/* the number of source rows whose watermark column is NULL */
	char	   *wm_null_count_sql;

	/*
	 * On the watermark column, for interval pipelines: a row with a value in
	 * [$1, $2) (none: no row), and the smallest value >= $1.
	 */
	char	   *range_exists_sql;
	char	   *first_from_sql;

	/* $1 = number of partitions; returns their values, newest first */
	char	   *newest_partitions_sql;

	/*
	 * The overwrite of a range of the partition column, $1 and $2 its
	 * bounds, [lower bound inclusive][upper bound inclusive]: delete the
	 * target rows whose key the source's range no longer has (all of them
	 * without a key), then upsert the source's range.
	 */
	char	   *delete_range_sql[2][2];
	char	   *insert_range_sql[2][2];

	/*
	 * Walking the partition values of a range in [the source: 0, the
	 * target: 1]: the smallest value >= $1 (first) or > $1 (next) and <= $2;
	 * and the number of rows whose value is $1.
	 */
	char	   *walk_first_sql[2];
	char	   *walk_next_sql[2];
	char	   *walk_count_sql[2];

	/* "(a, b) SELECT s.a, s.b FROM source AS s", for hwm_plan_fill_sql */
	char	   *copy_sql;
	/* HWM_WM_INSERT[_UPTO]'s WHERE, [upto][later], for hwm_plan_slice_fill */
	const char *slice_where[2][2];

	/*
	 * Tombstones (a delete marker): the test that a source row s is deleted,
	 * and " AND <s is live>" ("" without a marker), which the partition
	 * statements put on the source rows they keep.  With a marker, the
	 * HWM_WM_UPSERT statements delete the keys whose newest row in the
	 * slice is marked, upsert the others, and return one row (upserted,
	 * deleted).
	 */
	bool		has_tombstones;
	char	   *dead_test;
	const char *live_filter;

	/*
	 * A history (issue 40): the HWM_WM_UPSERT statements apply the slice
	 * to the versions of its keys and return one row (versions opened,
	 * current versions updated in place, versions closed by a tombstone,
	 * source rows refused: see history_statement in pipeline.c).
	 */
	bool		history;
} HwmPlan;

/* A range of partition values, each end inclusive or not */
typedef struct HwmRange
{
	Datum		lo;
	Datum		hi;
	bool		lo_incl;
	bool		hi_incl;
} HwmRange;


extern HwmPlan *hwm_plan_build(const HwmPlanSpec *spec);
/* a stored pipeline's plan, kept between runs (plancache.c) */
extern HwmPlan *hwm_plan_cached(const HwmPlanSpec *spec, Oid owner);
/* what to build a stored pipeline's plan from (struct HwmPipeline, catalog.h) */
struct HwmPipeline;
extern void hwm_spec_for(const struct HwmPipeline *p, bool with_watermark,
						 bool with_partition, HwmPlanSpec *spec);
extern char *hwm_plan_fill_sql(const HwmPlan *plan, const char *table, bool list);
extern bool hwm_plan_slice_fill(const HwmPlan *plan, const char *table, bool upto,
								bool later, HwmStatement *fill);
extern void hwm_bind(HwmBinding *binding, HwmParam param, Datum value, bool isnull);
extern void hwm_statement_exec(const HwmStatement *stmt, const HwmBinding *binding,
							   int expected);

/*
 * Run fill (from hwm_plan_slice_fill) as hwm_statement_exec would, its rows
 * inserted a page at a time (bulk.c); returns the rows inserted.
 */
extern uint64 hwm_statement_fill(const HwmStatement *fill, const HwmBinding *binding);
extern void hwm_value_type_init(HwmValueType *vt, Oid type, int32 typmod,
								Oid collation, const char *colname,
								const char *relname);
extern Datum hwm_value_in(const HwmValueType *vt, const char *text,
						  const char *what);
extern char *hwm_value_out(const HwmValueType *vt, Datum value);
extern int	hwm_value_cmp(const HwmValueType *vt, Datum a, Datum b);
extern Datum hwm_value_copy(const HwmValueType *vt, Datum value);

#endif							/* HWM_PIPELINE_H */
