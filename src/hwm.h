/*
 * hwm.h
 *		Declarations shared by hwm's source files.
 *
 * A pipeline's catalog row (HwmPipeline) is turned once per run into an
 * HwmPlan: the quoted SQL statements and the type facts needed to convert
 * watermark and partition values between text and the columns' own types.
 */
#ifndef HWM_H
#define HWM_H

#include "postgres.h"

#include "compat.h"

#include "access/attnum.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "datatype/timestamp.h"
#include "utils/relcache.h"

/* One pipeline, as stored in hwm.state. */
typedef struct HwmPipeline
{
	char	   *name;
	Oid			source;
	Oid			target;
	List	   *unique_key;		/* column names (char *) */
	char	   *watermark_column;
	char	   *partition_column;	/* NULL: none */
	int			lookback;
	char	   *watermark;		/* NULL: nothing loaded yet */
	Oid			owner;
	bool		enabled;
	Interval   *delay;			/* NULL: none */
	int64		batch_size;		/* rows per run; 0: no cap */
} HwmPipeline;

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

/* Saved state of hwm_become(), restored by hwm_unbecome(). */
typedef struct HwmRoleSwitch
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} HwmRoleSwitch;

/* What hwm_safe_bound() found */
typedef struct HwmSafeBound
{
	bool		hold;			/* keep the watermark where it is */
	bool		has_limit;		/* else keep it strictly below limit */
	Datum		limit;			/* in the watermark column's type */
	int			in_flight;		/* transactions that mattered */
	int			still_running;	/* ... of those, still running after the wait */
	const char *reason;			/* what holds the watermark back, for messages */
} HwmSafeBound;

/* catalog.c */
extern Oid	hwm_catalog_owner(void);
extern HwmPipeline *hwm_pipeline_fetch(const char *name, bool lock, bool nowait);
extern HwmPipeline *hwm_pipeline_fetch_extended(const char *name, bool lock,
												bool nowait, bool orphan_ok);
extern bool hwm_pipeline_exists(const char *name);
extern void hwm_check_may_manage(HwmPipeline *p);
extern void hwm_spec_for(const HwmPipeline *p, bool with_watermark,
						 bool with_partition, HwmPlanSpec *spec);
extern int64 hwm_record_run(const char *pipeline, const char *kind,
							TimestampTz started_at,
							int64 rows_upserted, int partitions,
							int64 rows_deleted, int64 rows_inserted,
							const char *wm_before, const char *wm_after,
							const char *from_partition, const char *to_partition);
extern void hwm_update_state_after_run(const char *pipeline, int64 run_id,
									   TimestampTz started_at,
									   bool set_watermark, const char *watermark,
									   int64 rows);
extern void hwm_spi_exec(const char *sql, int nargs, Oid *argtypes,
						 Datum *values, const char *nulls, int expected);
extern void hwm_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);
extern char *hwm_text_arg(FunctionCallInfo fcinfo, int argno, const char *what);

/* pipeline.c */
extern HwmPlan *hwm_plan_build(const HwmPlanSpec *spec);
extern void hwm_value_type_init(HwmValueType *vt, Oid type, int32 typmod,
								Oid collation, const char *colname,
								const char *relname);
extern Datum hwm_value_in(const HwmValueType *vt, const char *text,
						  const char *what);
extern char *hwm_value_out(const HwmValueType *vt, Datum value);
extern int	hwm_value_cmp(const HwmValueType *vt, Datum a, Datum b);
extern char *hwm_qualified_name(Oid relid);

/* privilege.c */
extern void hwm_become(Oid role, bool restricted, HwmRoleSwitch *sw);
extern void hwm_unbecome(HwmRoleSwitch *sw);
extern void hwm_check_privileges(Oid role, const HwmPlanSpec *spec,
								 const HwmPlan *plan);
extern bool hwm_allow_superuser_pipelines;
extern void hwm_check_owner_allowed(Oid owner, const char *pipeline,
									bool creating);
extern void hwm_check_pipeline_tables(const HwmPlanSpec *spec,
									  const Interval *delay);

/* watermark.c */
extern int	hwm_wait_timeout;
extern int	hwm_start_margin;
extern bool hwm_is_time_type(Oid type);
extern void hwm_safe_bound(const HwmPlan *plan, Oid source, const Interval *delay,
						   HwmSafeBound *b);

/* overwrite.c */
extern void hwm_overwrite_range(const HwmPlan *plan, Datum from, Datum to,
								int64 *rows_deleted, int64 *rows_inserted);
extern void hwm_parse_range(const HwmPlan *plan, FunctionCallInfo fcinfo,
							int from_arg, int to_arg,
							Datum *from, Datum *to,
							char **from_text, char **to_text);

/* exchange.c */
extern bool hwm_partition_exchange;
extern int	hwm_exchange_lock_timeout;
extern const char *hwm_overwrite_or_exchange(const HwmPlan *plan, Datum from, Datum to,
											 int64 *rows_deleted, int64 *rows_inserted);
extern void hwm_record_method(int64 run_id, const char *method);

/* swap.c, for exchange.c */
extern List *hwm_match_indexes(Relation tgt, Relation stg,
							   const char *tgtname, const char *stgname);
extern void hwm_swap_storage(Oid r1, Oid r2, List *index_pairs);
/* schedule.c */
extern void hwm_check_schedule(const Interval *every, const char *what);
extern TimestampTz hwm_schedule_next(TimestampTz anchor, const Interval *every,
									 TimestampTz after, bool inclusive);
extern TimestampTz hwm_schedule_set(const char *pipeline, const Interval *every,
									TimestampTz start_at);

/* scheduler.c */
extern char *hwm_database;
extern bool hwm_enabled;
extern int	hwm_max_workers;
extern int	hwm_max_runs_per_pipeline;
extern int	hwm_history_days;
extern void hwm_scheduler_init(void);
extern void hwm_scheduler_wake_at_commit(void);
extern void hwm_scheduler_warn_if_not_served(const char *pipeline);

#endif							/* HWM_H */
