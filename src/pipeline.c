/*
 * pipeline.c
 *		Turning a pipeline (or overwrite_partition's arguments) into the
 *		quoted SQL statements of one run, and converting watermark and
 *		partition values between text and their columns' types.
 *
 * Everything a run executes is built here from the relations' current
 * descriptors (and kept between runs until those change, plancache.c):
 * every identifier goes through quote_identifier, every user relation and
 * type is schema-qualified, every operator is spelled OPERATOR(schema.op)
 * after looking it up in the column type's default btree operator family
 * (a key's, in its unique index's family: key.c), and every value is a $n
 * parameter.  So a run never resolves anything through search_path, and a
 * table named x"; DROP TABLE t; -- is just a name.
 *
 * A watermark statement's parameters are numbered here alone, as its text
 * is written (param_ref): the statement keeps what each $n stands for
 * (HwmStatement), the run names the values it has (HwmBinding), and
 * hwm_statement_exec binds the one to the other.
 *
 * The same descriptors are what create_pipeline validates, so a pipeline
 * that was valid when created and whose tables changed later fails its next
 * run with the same clear error instead of a confusing one from the executor.
 */
#include "postgres.h"

#include "bulk.h"
#include "catalog.h"
#include "citus.h"
#include "key.h"
#include "pipeline.h"
#include "util.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "access/stratnum.h"
#include "lib/stringinfo.h"
#include "nodes/value.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

static char *
strategy_operator(Oid opfamily, Oid type, int16 strategy)
{
	Oid			opno = get_opfamily_member(opfamily, type, type, strategy);

	if (!OidIsValid(opno))
		elog(ERROR, "btree operator family %u lacks strategy %d for type %u",
			 opfamily, strategy, type);
	return hwm_operator_sql(opno);
}

/*
 * Describe a column type used to compare values (watermark or partition):
 * refuses types without a default btree ordering.
 */
static void
value_type_init(HwmValueType *vt, Oid type, int32 typmod, Oid collation,
					const char *colname, const char *relname)
{
	Oid			base = getBaseType(type);
	TypeCacheEntry *tc = lookup_type_cache(base, TYPECACHE_BTREE_OPFAMILY |
										   TYPECACHE_CMP_PROC);
	Oid			opintype;

	if (!OidIsValid(tc->btree_opf) || !OidIsValid(tc->cmp_proc))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("column \"%s\" of %s has type %s, which has no btree ordering",
						colname, relname, format_type_be(type)),
				 errdetail("hwm compares watermark and partition values with the type's default btree operator class."),
				 errhint("Use a column of an ordered type such as timestamptz, timestamp, date, an integer type, numeric or text.")));

	opintype = tc->btree_opintype;
	vt->type = type;
	get_typlenbyval(type, &vt->typlen, &vt->typbyval);
	vt->typmod = typmod;
	vt->collation = collation;
	vt->cmp_proc = tc->cmp_proc;
	vt->gt = strategy_operator(tc->btree_opf, opintype, BTGreaterStrategyNumber);
	vt->ge = strategy_operator(tc->btree_opf, opintype, BTGreaterEqualStrategyNumber);
	vt->lt = strategy_operator(tc->btree_opf, opintype, BTLessStrategyNumber);
	vt->le = strategy_operator(tc->btree_opf, opintype, BTLessEqualStrategyNumber);
}

/* value_type_init for other files: a key column's type (reconcile.c) */
void
hwm_value_type_init(HwmValueType *vt, Oid type, int32 typmod, Oid collation,
					const char *colname, const char *relname)
{
	value_type_init(vt, type, typmod, collation, colname, relname);
}

/* Error context for converting a value from text */
typedef struct ValueInContext
{
	const char *what;
	const char *text;
	Oid			type;
} ValueInContext;

static void
value_in_callback(void *arg)
{
	ValueInContext *c = (ValueInContext *) arg;

	errcontext("converting %s \"%s\" to type %s", c->what, c->text,
			   format_type_be(c->type));
}

/*
 * Convert text to a value of the column's type with the type's own input
 * function: a value that does not parse is an error, never a silent cast.
 */
Datum
hwm_value_in(const HwmValueType *vt, const char *text, const char *what)
{
	Oid			infunc;
	Oid			ioparam;
	ErrorContextCallback cb;
	ValueInContext c = {what, text, vt->type};
	Datum		result;

	getTypeInputInfo(vt->type, &infunc, &ioparam);
	cb.callback = value_in_callback;
	cb.arg = &c;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	result = OidInputFunctionCall(infunc, unconstify(char *, text), ioparam, vt->typmod);
	error_context_stack = cb.previous;
	return result;
}

/*
 * Convert a value to the text stored in the catalog, in a form that reads
 * back the same whatever the session's DateStyle, IntervalStyle, TimeZone or
 * extra_float_digits.
 */
char *
hwm_value_out(const HwmValueType *vt, Datum value)
{
	Oid			outfunc;
	bool		isvarlena;
	int			nest = NewGUCNestLevel();
	char	   *result;

	(void) set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("timezone", "UTC", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	getTypeOutputInfo(vt->type, &outfunc, &isvarlena);
	result = OidOutputFunctionCall(outfunc, value);
	AtEOXact_GUC(false, nest);
	return result;
}

/* A copy of a value that outlives the memory it came from (an SPI result) */
Datum
hwm_value_copy(const HwmValueType *vt, Datum value)
{
	return datumCopy(value, vt->typbyval, vt->typlen);
}

/* Three-way comparison with the type's btree support function */
int
hwm_value_cmp(const HwmValueType *vt, Datum a, Datum b)
{
	return DatumGetInt32(OidFunctionCall2Coll(vt->cmp_proc, vt->collation, a, b));
}

/* A column of the plan's target that is loaded from the source */
typedef struct LoadColumn
{
	char	   *name;			/* quoted */
	bool		is_key;
	bool		updated;		/* set by the upsert and the MERGE: not a key
								 * column, or one whose equal values may be
								 * spelled otherwise (key.c) */
	Oid			source_type;
	Oid			target_type;
	int32		target_typmod;
	Oid			source_collation;
	Oid			target_collation;
	bool		tracked;		/* a history's: a change opens a version */
} LoadColumn;

static bool
key_contains(List *keys, const char *name)
{
	ListCell   *lc;

	foreach(lc, keys)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

static Relation
open_checked(Oid relid, const char *role, bool is_target)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	char		kind;
	bool		ok;

	/* a regclass given as a number, or a table dropped since */
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s relation with OID %u does not exist", role, relid),
				 errhint("The table may have been dropped; pass an existing table, or drop the pipeline.")));
	kind = rel->rd_rel->relkind;

	if (is_target)
		ok = kind == RELKIND_RELATION || kind == RELKIND_PARTITIONED_TABLE;
	else
		ok = kind == RELKIND_RELATION || kind == RELKIND_PARTITIONED_TABLE ||
			kind == RELKIND_VIEW || kind == RELKIND_MATVIEW ||
			kind == RELKIND_FOREIGN_TABLE;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s %s is not a table", role, hwm_qualified_name(relid)),
				 is_target ?
				 errhint("The target must be an ordinary or partitioned table.") :
				 errhint("The source must be a table, a partitioned table, a view, a materialized view or a foreign table.")));

	/*
	 * Never write into a system catalog or into hwm's own catalog, whoever
	 * asks (superusers included): only hwm's functions change those.
	 */
	if (is_target &&
		(IsCatalogRelation(rel) ||
		 RelationGetNamespace(rel) == get_namespace_oid("hwm", true)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("target %s is a system or hwm catalog table", hwm_qualified_name(relid)),
				 errhint("Load into an ordinary table of your own.")));
	return rel;
}

static AttrNumber
column_of(const HwmPlanSpec *spec, Relation rel, const char *colname,
		  const char *what, const char *relname)
{
	AttrNumber	attno;

	attno = get_attnum(RelationGetRelid(rel), colname);
	if (attno == InvalidAttrNumber || attno < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s column \"%s\" does not exist in %s", what, colname, relname),
				 spec->stored ?
				 errhint("%s changed after pipeline \"%s\" was created: restore the column, or drop the pipeline and create it again.",
						 relname, spec->pipeline) :
				 errhint("Name a column of %s; column names are case-sensitive.", relname)));
	return attno;
}

/*
 * Append the test "the stored row t differs from the new row" (newrow:
 * EXCLUDED in the upsert, s in the fast path's MERGE) over the columns
 * they update (LoadColumn.updated): hwm.changed(t.a, t.b, EXCLUDED.a,
 * EXCLUDED.b), in calls of at most CHANGED_MAX_PAIRS pairs joined with OR
 * (a function takes at most FUNC_MAX_ARGS arguments).
 */
#define CHANGED_MAX_PAIRS (FUNC_MAX_ARGS / 2)

static void
append_changed_test(StringInfo buf, List *cols, const char *newrow)
{
	List	   *updated = NIL;
	ListCell   *lc;
	int			n;

	foreach(lc, cols)
	{
		LoadColumn *c = lfirst(lc);

		if (c->updated)
			updated = lappend(updated, c);
	}
	n = list_length(updated);
	if (n > CHANGED_MAX_PAIRS)
		appendStringInfoChar(buf, '(');
	for (int start = 0; start < n; start += CHANGED_MAX_PAIRS)
	{
		int			end = Min(start + CHANGED_MAX_PAIRS, n);

		appendStringInfoString(buf, start == 0 ? "hwm.changed(" : " OR hwm.changed(");
		for (int i = start; i < end; i++)
			appendStringInfo(buf, "%st.%s", i == start ? "" : ", ",
							 ((LoadColumn *) list_nth(updated, i))->name);
		for (int i = start; i < end; i++)
			appendStringInfo(buf, ", %s.%s", newrow, ((LoadColumn *) list_nth(updated, i))->name);
		appendStringInfoChar(buf, ')');
	}
	if (n > CHANGED_MAX_PAIRS)
		appendStringInfoChar(buf, ')');
	list_free(updated);
}

/* The columns a plan loads, and what the statements are made of */
typedef struct PlanBuild
{
	const HwmPlanSpec *spec;
	HwmPlan    *plan;
	Relation	src;
	Relation	tgt;
	char	   *srcname;
	char	   *tgtname;
	List	   *cols;			/* LoadColumn * */
	bool		override;		/* OVERRIDING SYSTEM VALUE needed */
	bool		has_update;		/* some column is updated (LoadColumn.updated) */
	char	   *insert_head;	/* INSERT INTO t (...) SELECT s.... FROM s */
	char	   *conflict;		/* " ON CONFLICT ..." or "" */
	char	   *keymatch;		/* " AND s.k = t.k ..." or "" */
	bool		citus_source;	/* the source is a Citus table */
	bool		citus_target;	/* the target is a Citus table */
	char	   *merge_head;		/* MERGE INTO t USING (SELECT ... WHERE, or NULL */
	char	   *merge_on;		/* ) AS s ON ... (the key's match) */
	char	   *merge_tail;		/* WHEN ... */
	const char *bound_col;		/* the key's first column, quoted, if bounded */
	HwmValueType bound_vt;		/* ... and its type */
	char	   *twice_tail;		/* GROUP BY the key ..., or NULL (twice_statement) */
	char	   *live;			/* " AND s.marker IS NOT TRUE" or "" (tombstones) */
	char	   *slice_head;		/* SELECT DISTINCT ON (keys) s.cols, tombstone FROM s */
	char	   *slice_insert;	/* INSERT INTO t (...) SELECT s.... FROM hwm_slice AS s */
	char	   *history_tail;	/* a history's statement after its slice */
	const char *absorbed;		/* a history's target column holding the
								 * watermark value of the last row a version
								 * absorbed (quoted), or NULL */
} PlanBuild;

/* The layouts hwm runs on Citus, for the refusals' details */
#define CITUS_LAYOUTS "On Citus, hwm runs a pipeline whose source and target are both distributed tables, co-located and distributed on the same column (every statement then runs shard by shard on the workers), or whose source and target are both outside Citus's metadata."

/* A source and target that are not both distributed alike: refuse */
static void
citus_refuse_layout(PlanBuild *b, const HwmCitusTable *s, const HwmCitusTable *t)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a pipeline from a %s into a %s is not supported",
					hwm_citus_kind_name(s->kind), hwm_citus_kind_name(t->kind)),
			 errdetail("Source %s and target %s. %s", b->srcname, b->tgtname, CITUS_LAYOUTS),
			 errhint("Distribute both on the same column, co-located: SELECT create_distributed_table(%s, '<column>', colocate_with => %s).",
					 quote_literal_cstr(b->tgtname), quote_literal_cstr(b->srcname))));
}

/*
 * A pipeline's table that is now a shard: Citus renamed it and gave its
 * place to a new shell (citus_add_local_table_to_metadata), so the stored
 * OID no longer names the table the user reads.
 */
static void
citus_not_shard(Oid relid, const char *role)
{
	Oid			logical;

	if (hwm_citus_shard_of(relid, &logical))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s %s is a shard of Citus table %s", role,
						hwm_qualified_name(relid), hwm_qualified_name(logical)),
				 errdetail("Citus moved the table into its metadata after the pipeline was declared, and the pipeline still points at the relation that became a shard."),
				 errhint("Drop the pipeline and declare it again over %s.",
						 hwm_qualified_name(logical))));
}

/*
 * Citus: accept only the layouts whose statements Citus runs correctly and
 * pushes down (see CITUS_LAYOUTS); when the target is distributed, the
 * unique key must include its distribution column (Citus checks uniqueness
 * shard by shard, and hwm matches rows shard by shard on the key).
 */
static void
citus_layout(PlanBuild *b)
{
	const HwmPlanSpec *spec = b->spec;
	HwmCitusTable s,
				t;
	char	   *scol,
			   *tcol;
	ListCell   *lc;

	citus_not_shard(spec->source, "source");
	citus_not_shard(spec->target, "target");
	hwm_citus_table(spec->source, &s);
	hwm_citus_table(spec->target, &t);
	b->citus_source = s.kind != HWM_CITUS_NONE;
	b->citus_target = t.kind != HWM_CITUS_NONE;
	if (s.kind == HWM_CITUS_NONE && t.kind == HWM_CITUS_NONE)
		return;
	if (s.kind != HWM_CITUS_DISTRIBUTED || t.kind != HWM_CITUS_DISTRIBUTED)
		citus_refuse_layout(b, &s, &t);
	scol = get_attname(spec->source, s.distcol, false);
	tcol = get_attname(spec->target, t.distcol, false);
	if (s.colocation != t.colocation || strcmp(scol, tcol) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source %s and target %s are not co-located on the same distribution column",
						b->srcname, b->tgtname),
				 errdetail("The source is distributed on %s, the target on %s%s. %s",
						   quote_identifier(scol), quote_identifier(tcol),
						   s.colocation != t.colocation ? ", in different co-location groups" : "",
						   CITUS_LAYOUTS),
				 errhint("Distribute the target on the source's column and co-locate it: SELECT create_distributed_table(%s, %s, colocate_with => %s).",
						 quote_literal_cstr(b->tgtname), quote_literal_cstr(scol), quote_literal_cstr(b->srcname))));
	foreach(lc, spec->unique_key)
		if (strcmp((char *) lfirst(lc), tcol) == 0)
			return;
	if (spec->unique_key != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the unique key of distributed target %s must include its distribution column %s",
						b->tgtname, quote_identifier(tcol)),
				 errdetail("Citus enforces uniqueness shard by shard, so a unique index of a distributed table includes the distribution column, and hwm matches source and target rows on the key within each pair of co-located shards."),
				 errhint("Add %s to unique_key (and to the target's unique index).",
						 quote_identifier(tcol))));
}

/* "a, b" (prefix "") or "s.a, s.b" (prefix "s.") over the loaded columns */
static char *
column_list(List *cols, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, cols)
		appendStringInfo(&buf, "%s%s%s", foreach_current_index(lc) ? ", " : "",
						 prefix, ((LoadColumn *) lfirst(lc))->name);
	return buf.data;
}

/* Whether key column name may be spelled otherwise when equal (key.c) */
static bool
key_spelled(const HwmKey *k, const char *name)
{
	const char *quoted = quote_identifier(name);

	for (int i = 0; k != NULL && i < k->n; i++)
		if (strcmp(k->cols[i].name, quoted) == 0)
			return k->cols[i].spelled;
	return false;
}

/*
 * The columns loaded: every target column that the source has, with the
 * type checks an INSERT ... SELECT would make.
 */
static void
walk_columns(PlanBuild *b)
{
	TupleDesc	sdesc = RelationGetDescr(b->src);
	TupleDesc	tdesc = RelationGetDescr(b->tgt);

	for (int i = 0; i < tdesc->natts; i++)
	{
		Form_pg_attribute tatt = TupleDescAttr(tdesc, i);
		AttrNumber	sattno;
		Form_pg_attribute satt;
		LoadColumn *c;
		bool		is_key;

		if (tatt->attisdropped || tatt->attgenerated)
			continue;
		/* a history's bounds: written by the run, never read from the source */
		if (b->spec->valid_from_column &&
			(strcmp(NameStr(tatt->attname), b->spec->valid_from_column) == 0 ||
			 strcmp(NameStr(tatt->attname), b->spec->valid_to_column) == 0))
			continue;
		is_key = key_contains(b->spec->unique_key, NameStr(tatt->attname));
		sattno = get_attnum(b->spec->source, NameStr(tatt->attname));
		if (sattno == InvalidAttrNumber || sattno < 0)
		{
			if (is_key)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("unique key column \"%s\" does not exist in source %s",
								NameStr(tatt->attname), b->srcname),
						 errhint("The source must provide every column of the unique key.")));
			if (tatt->attnotnull && !tatt->atthasdef && !tatt->attidentity)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("target column \"%s\" is NOT NULL without a default, but source %s has no such column",
								NameStr(tatt->attname), b->srcname),
						 errhint("Add the column to the source (a view over it will do), or give the target column a default.")));
			continue;			/* takes its default */
		}
		satt = TupleDescAttr(sdesc, sattno - 1);
		if (!can_coerce_type(1, &satt->atttypid, &tatt->atttypid, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" has type %s in source %s but type %s in target %s",
							NameStr(tatt->attname), format_type_be(satt->atttypid), b->srcname,
							format_type_be(tatt->atttypid), b->tgtname),
					 errdetail("There is no assignment cast from %s to %s.",
							   format_type_be(satt->atttypid), format_type_be(tatt->atttypid)),
					 errhint("Cast the column in a view over the source, or change one of the column types.")));

		c = palloc(sizeof(LoadColumn));
		c->name = pstrdup(quote_identifier(NameStr(tatt->attname)));
		c->is_key = is_key;
		c->updated = !is_key || key_spelled(b->plan->key, NameStr(tatt->attname));
		c->source_type = satt->atttypid;
		c->target_type = tatt->atttypid;
		c->target_typmod = tatt->atttypmod;
		c->source_collation = satt->attcollation;
		c->target_collation = tatt->attcollation;
		c->tracked = false;
		b->cols = lappend(b->cols, c);
		b->plan->load_columns = lappend(b->plan->load_columns, pstrdup(NameStr(tatt->attname)));
		b->plan->source_columns = lappend_int(b->plan->source_columns, sattno);
		b->plan->target_columns = lappend_int(b->plan->target_columns, tatt->attnum);
		if (tatt->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			b->override = true;
		if (c->updated)
			b->has_update = true;
	}
	if (b->cols == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("target %s has no column in common with source %s", b->tgtname, b->srcname),
				 errhint("hwm loads the target columns whose names also exist in the source.")));
}

/*
 * The watermark and partition columns: they exist, and the partition column
 * has one type in both tables.
 */
static void
value_columns(PlanBuild *b)
{
	const HwmPlanSpec *spec = b->spec;
	HwmPlan    *plan = b->plan;
	TupleDesc	sdesc = RelationGetDescr(b->src);
	TupleDesc	tdesc = RelationGetDescr(b->tgt);

	if (spec->watermark_column)
	{
		AttrNumber	attno = column_of(spec, b->src, spec->watermark_column, "watermark", b->srcname);
		Form_pg_attribute att = TupleDescAttr(sdesc, attno - 1);

		value_type_init(&plan->wm, att->atttypid, att->atttypmod,
							att->attcollation, spec->watermark_column, b->srcname);
		plan->has_wm = true;
		plan->source_columns = lappend_int(plan->source_columns, attno);
	}

	if (spec->partition_column)
	{
		AttrNumber	sattno = column_of(spec, b->src, spec->partition_column, "partition", b->srcname);
		AttrNumber	tattno = column_of(spec, b->tgt, spec->partition_column, "partition", b->tgtname);
		Form_pg_attribute satt = TupleDescAttr(sdesc, sattno - 1);
		Form_pg_attribute tatt = TupleDescAttr(tdesc, tattno - 1);

		if (satt->atttypid != tatt->atttypid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("partition column \"%s\" has type %s in source %s but type %s in target %s",
							spec->partition_column, format_type_be(satt->atttypid), b->srcname,
							format_type_be(tatt->atttypid), b->tgtname),
					 errhint("The partition column must have the same type in both tables, so that one range selects the same partitions in each.")));
		value_type_init(&plan->part, satt->atttypid, satt->atttypmod,
							satt->attcollation, spec->partition_column, b->srcname);
		plan->has_part = true;
		plan->source_columns = lappend_int(plan->source_columns, sattno);
		plan->target_columns = lappend_int(plan->target_columns, tattno);
	}
}

/*
 * What the partition statements ask of a source row s that they load, with
 * a delete marker m (live_op: "IS NULL" or "IS NOT TRUE"; dead_op, its
 * opposite): " AND s.m <live_op>", and no row of the same key (the key's
 * one definition, key.c) in the source carries the marker with a watermark
 * value as new or newer (in an event log, a key whose newest row is a
 * tombstone stays deleted when its partition is overwritten again).  A
 * NULL watermark value is older than any other: a tombstone outlives a
 * live row without one.
 */
static char *
tombstone_live_test(PlanBuild *b, const char *m, const char *live_op, const char *dead_op)
{
	const char *order = b->spec->tombstone_order ? b->spec->tombstone_order :
		b->spec->watermark_column;
	StringInfoData buf;
	AttrNumber	attno;
	Form_pg_attribute att;
	HwmValueType vt;
	const char *o;

	initStringInfo(&buf);
	appendStringInfo(&buf, " AND s.%s %s", quote_identifier(m), live_op);
	if (order == NULL)
		return buf.data;
	attno = column_of(b->spec, b->src, order, "watermark", b->srcname);
	att = TupleDescAttr(RelationGetDescr(b->src), attno - 1);
	value_type_init(&vt, att->atttypid, att->atttypmod, att->attcollation, order, b->srcname);
	o = quote_identifier(order);
	appendStringInfo(&buf, " AND NOT EXISTS (SELECT FROM %s AS hwm_d WHERE hwm_d.%s %s"
					 " AND (s.%s IS NULL OR hwm_d.%s %s s.%s)",
					 b->srcname, quote_identifier(m), dead_op, o, o, vt.ge, o);
	hwm_key_match(&buf, b->plan->key, "hwm_d", true, "s", true);
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * The delete marker (tombstones, issue 32): a source column of type boolean
 * (true: deleted; NULL: live) or timestamp, timestamptz or date (set:
 * deleted), outside the unique key, on a pipeline whose target is not a
 * Citus table.  Sets the tests a statement puts on a source row s.
 */
static void
tombstone_column(PlanBuild *b)
{
	const HwmPlanSpec *spec = b->spec;
	HwmPlan    *plan = b->plan;
	const char *m = spec->delete_column;
	const char *order = spec->tombstone_order ? spec->tombstone_order : spec->watermark_column;
	AttrNumber	attno;
	Oid			type;
	const char *test;

	b->live = "";
	plan->live_filter = "";
	if (m == NULL)
		return;
	if (key_contains(spec->unique_key, m))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delete marker column \"%s\" is a column of the unique key", m),
				 errdetail("The key says which target row a source row is; the marker says whether that row is deleted."),
				 errhint("Name a column outside unique_key as delete_column.")));
	if (order && strcmp(order, m) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delete marker column \"%s\" is the watermark column", m),
				 errdetail("Every row a run loads has a watermark value, so every row would delete its key."),
				 errhint("Name the column that is set only when a row is deleted, for example deleted_at.")));
	attno = column_of(spec, b->src, m, "delete marker", b->srcname);
	type = getBaseType(TupleDescAttr(RelationGetDescr(b->src), attno - 1)->atttypid);
	if (type != BOOLOID && type != TIMESTAMPOID && type != TIMESTAMPTZOID && type != DATEOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("delete marker column \"%s\" of %s has type %s, which cannot mark a deleted row",
						m, b->srcname,
						format_type_be(TupleDescAttr(RelationGetDescr(b->src), attno - 1)->atttypid)),
				 errdetail("A boolean marker deletes when true; a timestamp, timestamptz or date marker deletes when set (not NULL)."),
				 errhint("Name a boolean column (for example is_deleted) or a timestamp column set when the row is deleted (for example deleted_at).")));
	if (spec->unique_key == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a delete marker needs a unique key"),
				 errhint("A tombstone deletes the target row with its key: pass unique_key too.")));
	if (b->citus_target)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("delete_column is not supported on Citus table %s", b->tgtname),
				 errdetail("hwm applies tombstones with a DELETE joined to the source's slice, which it does not push down to the shards."),
				 errhint("Leave delete_column out on this pipeline; rows deleted in the source are removed by overwriting partitions (hwm.overwrite).")));
	plan->has_tombstones = true;
	plan->source_columns = lappend_int(plan->source_columns, attno);
	test = type == BOOLOID ? "IS TRUE" : "IS NOT NULL";
	plan->dead_test = psprintf("s.%s %s", quote_identifier(m), test);
	b->live = tombstone_live_test(b, m, type == BOOLOID ? "IS NOT TRUE" : "IS NULL", test);
	plan->live_filter = b->live;
}

/*
 * ON CONFLICT (keys) DO UPDATE SET only when something changed, so that
 * loading the same rows again writes no new row versions.  The binary image
 * comparison (hwm.changed, see changed.c) works for every type, json
 * included, and treats two NULLs as equal.  Also the key match s.k = t.k of
 * the overwrite's anti-join, the tombstones' DELETE and the MERGE, written
 * from the key's one definition (key.c).
 */
static void
conflict_clause(PlanBuild *b)
{
	StringInfoData conflict;
	StringInfoData keymatch;
	ListCell   *lc;

	initStringInfo(&conflict);
	initStringInfo(&keymatch);
	b->conflict = conflict.data;
	b->keymatch = keymatch.data;
	if (b->spec->unique_key == NIL)
		return;

	appendStringInfoString(&conflict, " ON CONFLICT (");
	foreach(lc, b->spec->unique_key)
		appendStringInfo(&conflict, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier((char *) lfirst(lc)));
	if (!b->has_update)
		appendStringInfoString(&conflict, ") DO NOTHING");
	else
	{
		bool		first = true;

		appendStringInfoString(&conflict, ") DO UPDATE SET ");
		foreach(lc, b->cols)
		{
			LoadColumn *c = lfirst(lc);

			if (!c->updated)
				continue;
			appendStringInfo(&conflict, "%s%s = EXCLUDED.%s", first ? "" : ", ",
							 c->name, c->name);
			first = false;
		}
		appendStringInfoString(&conflict, " WHERE ");
		append_changed_test(&conflict, b->cols, "EXCLUDED");
	}

	/* the key's match, as the target's unique index has keys equal (key.c) */
	hwm_key_match(&keymatch, b->plan->key, "s", true, "t", false);
	b->conflict = conflict.data;
	b->keymatch = keymatch.data;
}

/*
 * Why a slice cannot be loaded by the fast path (MERGE) with the same result
 * as the upsert, or NULL.  The upsert fires BEFORE INSERT row triggers for
 * every row of the slice, the existing keys' too, and checks row security's
 * INSERT and UPDATE policies on each: a target with triggers of its own or
 * row security keeps the upsert.  Foreign keys are checked by internal
 * triggers that fire alike for an insert and an update, whichever statement
 * makes them.  The MERGE compares the source's values with the stored ones
 * before any assignment cast: every column must have one type in both.
 */
static const char *
merge_refusal(PlanBuild *b)
{
	TriggerDesc *trig = b->tgt->trigdesc;
	ListCell   *lc;

	if (b->citus_source || b->citus_target)
		return "the tables are Citus tables";
	if (b->plan->has_tombstones)
		return "the pipeline has a delete marker (its slice is one statement with the tombstones)";
	if (b->tgt->rd_rel->relrowsecurity)
		return psprintf("target %s has row-level security enabled", b->tgtname);
	if (b->tgt->rd_rules != NULL)
		return psprintf("target %s has rules", b->tgtname);
	for (int i = 0; trig != NULL && i < trig->numtriggers; i++)
		if (!trig->triggers[i].tgisinternal)
			return psprintf("target %s has trigger %s", b->tgtname,
							quote_identifier(trig->triggers[i].tgname));
	foreach(lc, b->cols)
	{
		LoadColumn *c = lfirst(lc);

		if (c->source_type != c->target_type)
			return psprintf("column %s has type %s in the source and %s in the target",
							c->name, format_type_be(c->source_type),
							format_type_be(c->target_type));
	}
	/* the MERGE, its key-twice check and its bounds compare keys as written */
	for (int i = 0; i < b->plan->key->n; i++)
	{
		const HwmKeyColumn *k = &b->plan->key->cols[i];

		if (k->source_cast)
			return psprintf("key column %s has another typmod in the source than in the target",
							k->name);
		if (!k->default_opfamily)
			return psprintf("the target's unique index compares key column %s with an operator class that is not its type's default",
							k->name);
	}
	return NULL;
}

/* Whether pg_catalog.min and max take exactly type (one pass over the slice) */
static bool
has_min_max(Oid type)
{
	return OidIsValid(LookupFuncName(list_make2(makeString("pg_catalog"), makeString("min")),
									 1, &type, true)) &&
		OidIsValid(LookupFuncName(list_make2(makeString("pg_catalog"), makeString("max")),
								  1, &type, true));
}

/*
 * The MERGE's key bounds (see HwmPlan.merge_bound_type): the target's side
 * of the ON clause limited to [least, greatest] of the slice's values of
 * the first column of the key's index, so that the planner weighs a merge
 * join along that index by the part of it it would read (the slice's
 * range), not by the whole index: a slice whose keys are spread out keeps
 * its index probes, one whose keys lie together is merged in one pass.
 * The bounds change no row's match: each key of the slice lies within
 * them, by the same ordering (the MERGE runs only under the type's default
 * ordering; none is built when the column's collation differs between the
 * source, the target and its index, or when min and max do not take the
 * type: load.c then keeps the MERGE to index probes, since a merge join
 * unbounded reads the target's whole index).  A row that commits into the
 * source between the bounds' statement and the MERGE may lie outside them;
 * the MERGE then inserts it as new, and a key already in the target fails
 * the MERGE with unique_violation (the upsert then runs).
 */
static void
merge_bounds(PlanBuild *b)
{
	const HwmKeyColumn *k = &b->plan->key->cols[0];

	if (!k->source_as_is || k->target_collate[0] != '\0' ||
		!has_min_max(getBaseType(k->vt.type)))
		return;
	b->bound_vt = k->vt;
	b->bound_col = k->name;
	b->plan->merge_bound_type = k->vt.type;
}

/*
 * The fast path of a slice, when merge_refusal allows one: MERGE INTO the
 * target USING the slice ON the key, inserting the new keys as a plain
 * INSERT does (no speculative insertion: a key a concurrent writer takes
 * meanwhile raises unique_violation, and load.c then runs the upsert),
 * updating the rows that changed, leaving unchanged rows untouched (not even
 * locked).  Its WHERE on the slice goes between merge_head and merge_tail.
 */
static void
merge_statement(PlanBuild *b)
{
	StringInfoData tail;
	bool		first = true;
	ListCell   *lc;

	if (b->spec->unique_key == NIL)
		return;					/* a plain INSERT already */
	if (b->plan->history)
	{
		b->plan->merge_refused = "the pipeline keeps a history (its slice is one statement over the versions)";
		return;
	}
	b->plan->merge_refused = merge_refusal(b);
	if (b->plan->merge_refused)
		return;
	b->merge_head = psprintf("MERGE INTO %s AS t USING (SELECT %s FROM %s AS s",
							 b->tgtname, column_list(b->cols, "s."), b->srcname);
	/* keymatch is " AND s.k = t.k ..." */
	b->merge_on = psprintf(") AS s ON %s", b->keymatch + strlen(" AND "));
	merge_bounds(b);
	initStringInfo(&tail);
	if (b->has_update)
	{
		appendStringInfoString(&tail, " WHEN MATCHED AND ");
		append_changed_test(&tail, b->cols, "s");
		appendStringInfoString(&tail, " THEN UPDATE SET ");
		foreach(lc, b->cols)
		{
			LoadColumn *c = lfirst(lc);

			if (!c->updated)
				continue;
			appendStringInfo(&tail, "%s%s = s.%s", first ? "" : ", ", c->name, c->name);
			first = false;
		}
	}
	appendStringInfo(&tail, " WHEN NOT MATCHED THEN INSERT (%s)%s VALUES (%s)",
					 column_list(b->cols, ""),
					 b->override ? " OVERRIDING SYSTEM VALUE" : "",
					 column_list(b->cols, "s."));
	b->merge_tail = tail.data;
}

/* The key's column named name, or NULL */
static const HwmKeyColumn *
key_column_named(const HwmKey *k, const char *name)
{
	for (int i = 0; i < k->n; i++)
		if (strcmp(k->cols[i].name, quote_identifier(name)) == 0)
			return &k->cols[i];
	return NULL;
}

/*
 * Whether the source has a unique index on some of the key's columns (valid,
 * immediate, without expressions or predicate, comparing each column as the
 * key does: the same operator family and collation), so that no snapshot
 * sees a key twice in it.
 */
static bool
source_key_unique(PlanBuild *b)
{
	List	   *indexes = RelationGetIndexList(b->src);
	ListCell   *lc;
	bool		ok = false;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = idx->rd_index;

		ok = form->indisunique && form->indimmediate && form->indisvalid &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL);
		for (int i = 0; ok && i < form->indnkeyatts; i++)
		{
			AttrNumber	attno = form->indkey.values[i];
			const HwmKeyColumn *k;

			ok = attno > 0;
			if (!ok)
				break;
			k = key_column_named(b->plan->key,
								 NameStr(TupleDescAttr(RelationGetDescr(b->src), attno - 1)->attname));
			ok = k != NULL && idx->rd_opfamily[i] == k->opfamily &&
				idx->rd_indcollation[i] == k->vt.collation;
		}
		index_close(idx, AccessShareLock);
		if (ok)
			break;
	}
	list_free(indexes);
	return ok;
}

/*
 * Whether the MERGE's slice holds a (non-NULL) key twice: a row if so.  The
 * upsert fails on such a slice or not depending on the order it reads the
 * rows in (ON CONFLICT DO UPDATE cannot affect a row a second time, but may
 * lock it twice), where the MERGE, which leaves unchanged rows alone, would
 * succeed: load.c then runs the upsert, so that the run's result never
 * depends on the path.  Not built when the source's own unique index rules
 * a key twice out.  Its WHERE on the slice goes before twice_tail.
 */
static void
twice_statement(PlanBuild *b)
{
	StringInfoData notnull;
	StringInfoData groupby;

	if (source_key_unique(b))
		return;
	initStringInfo(&notnull);
	initStringInfo(&groupby);
	/* grouped as the key has them equal (the MERGE runs on no cast) */
	for (int i = 0; i < b->plan->key->n; i++)
	{
		appendStringInfo(&notnull, " AND s.%s IS NOT NULL", b->plan->key->cols[i].name);
		if (i > 0)
			appendStringInfoString(&groupby, ", ");
		hwm_key_expr(&groupby, &b->plan->key->cols[i], "s", true);
	}
	b->twice_tail = psprintf("%s GROUP BY %s HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1 LIMIT 1",
							 notnull.data, groupby.data);
}

/* What a watermark statement is, and so its head and tail */
typedef enum WmForm
{
	WM_SELECT,					/* a SELECT of one value */
	WM_UPSERT,					/* the upsert */
	WM_PLAIN,					/* the fast path's plain INSERT */
	WM_MERGE,					/* the fast path's MERGE */
	WM_TWICE,					/* a key twice in the MERGE's slice */
	WM_KEYS						/* the MERGE's key bounds */
} WmForm;

/*
 * The statements on the watermark column, one row per HwmWmStatement: its
 * form; whether it reads the rows to load (and so takes HWM_PARAM_FROM);
 * its own argument and the bound on it; the order of the SELECT.
 */
static const struct
{
	HwmWmStatement stmt;
	WmForm		form;
	bool		reads;			/* takes where reading starts */
	const char *arg_op;			/* "lt", "le" or NULL: a bound on no argument */
	HwmParam	arg;			/* the argument bounded, or the OFFSET */
	bool		ascending;		/* SELECT: smallest first, else greatest */
	bool		offset;			/* SELECT: the argument is an OFFSET */
}			wm_statements[] =
{
	{HWM_WM_MAX, WM_SELECT, false, NULL, HWM_NPARAMS, false, false},
	{HWM_WM_MAX_BELOW, WM_SELECT, false, "lt", HWM_PARAM_BELOW, false, false},
	{HWM_WM_BATCH_END, WM_SELECT, true, NULL, HWM_PARAM_OFFSET, true, true},
	{HWM_WM_UPSERT, WM_UPSERT, true, NULL, HWM_NPARAMS, false, false},
	{HWM_WM_UPSERT_UPTO, WM_UPSERT, true, "le", HWM_PARAM_UPTO, false, false},
	{HWM_WM_INSERT, WM_PLAIN, true, NULL, HWM_NPARAMS, false, false},
	{HWM_WM_INSERT_UPTO, WM_PLAIN, true, "le", HWM_PARAM_UPTO, false, false},
	{HWM_WM_MERGE, WM_MERGE, true, NULL, HWM_NPARAMS, false, false},
	{HWM_WM_MERGE_UPTO, WM_MERGE, true, "le", HWM_PARAM_UPTO, false, false},
	{HWM_WM_TWICE, WM_TWICE, true, NULL, HWM_NPARAMS, false, false},
	{HWM_WM_TWICE_UPTO, WM_TWICE, true, "le", HWM_PARAM_UPTO, false, false},
	{HWM_WM_KEYS, WM_KEYS, true, NULL, HWM_NPARAMS, false, false},
	{HWM_WM_KEYS_UPTO, WM_KEYS, true, "le", HWM_PARAM_UPTO, false, false},
};

/*
 * "$n" for what param stands for in stmt: the number it already has, or
 * the next one.  The one place a watermark statement's parameters are
 * numbered (hwm_statement_exec binds them by what they stand for).
 */
static char *
param_ref(HwmStatement *stmt, HwmParam param, Oid type)
{
	for (int i = 0; i < stmt->nparams; i++)
		if (stmt->param[i] == param)
			return psprintf("$%d", i + 1);
	Assert(stmt->nparams < HWM_NPARAMS);
	stmt->param[stmt->nparams] = param;
	stmt->type[stmt->nparams] = type;
	return psprintf("$%d", ++stmt->nparams);
}

/*
 * The parts of a slice's statement with tombstones (append_tombstone_tail):
 * the slice's newest row per key, with whether it is a tombstone, and the
 * upsert of the live ones.
 */
static void
tombstone_statement(PlanBuild *b, const char *column_names)
{
	StringInfoData head;

	initStringInfo(&head);
	appendStringInfoString(&head, "SELECT DISTINCT ON (");
	for (int i = 0; i < b->plan->key->n; i++)
	{
		if (i > 0)
			appendStringInfoString(&head, ", ");
		hwm_key_expr(&head, &b->plan->key->cols[i], "s", true);
	}
	appendStringInfo(&head, ") %s, %s AS \"hwm tombstone\" FROM %s AS s",
					 column_list(b->cols, "s."), b->plan->dead_test, b->srcname);
	b->slice_head = head.data;
	b->slice_insert = psprintf("INSERT INTO %s AS t (%s)%s SELECT %s FROM hwm_slice AS s",
							   b->tgtname, column_names,
							   b->override ? " OVERRIDING SYSTEM VALUE" : "",
							   column_list(b->cols, "s."));
}

/*
 * The rest of a slice's statement with tombstones, after "WITH hwm_slice AS
 * (SELECT DISTINCT ON (keys) ... WHERE <the slice>": the newest row of each
 * key by the watermark column (a tombstone first among rows of one
 * value); the keys whose newest row carries the marker deleted from the
 * target, the others upserted; one row (upserted, deleted).
 * One statement, so both see the same slice.
 */
static void
append_tombstone_tail(const PlanBuild *b, StringInfo buf, const char *wm)
{
	/* DISTINCT ON keeps the first row of each key: by the key's ordering */
	appendStringInfoString(buf, " ORDER BY ");
	hwm_key_order(buf, b->plan->key, "s", true, false);
	appendStringInfoString(buf, ", ");
	/* on a tie of the watermark value, the tombstone wins */
	appendStringInfo(buf, "s.%s USING %s, %s DESC)", wm, b->plan->wm.gt, b->plan->dead_test);
	appendStringInfo(buf, ", hwm_deleted AS (DELETE FROM %s AS t USING hwm_slice AS s"
					 " WHERE s.\"hwm tombstone\"%s RETURNING 1)", b->tgtname, b->keymatch);
	appendStringInfo(buf, ", hwm_upserted AS (%s WHERE NOT s.\"hwm tombstone\"%s RETURNING 1)",
					 b->slice_insert, b->conflict);
	appendStringInfoString(buf, " SELECT (SELECT pg_catalog.count(*) FROM hwm_upserted),"
						   " (SELECT pg_catalog.count(*) FROM hwm_deleted)");
}

/*
 * History pipelines (issue 40): the target keeps every version of a key,
 * each a row with the bounds [valid_from, valid_to) in two columns of the
 * watermark column's type, valid_to NULL on the current version; the unique
 * index on the key and valid_from says what a key is (key.c).
 */

/* A history's bound column of the target, checked */
static void
history_bound(PlanBuild *b, const char *col, const char *what, Oid wm_type, bool not_null)
{
	const HwmPlanSpec *spec = b->spec;
	AttrNumber	attno = get_attnum(spec->target, col);
	Form_pg_attribute att;

	if (attno == InvalidAttrNumber || attno < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s column \"%s\" does not exist in target %s", what, col, b->tgtname),
				 errdetail("A history keeps each version of a key with the watermark values it is valid from (inclusive) and to (exclusive, NULL while current)."),
				 errhint("Add it with ALTER TABLE %s ADD COLUMN %s %s%s, or name another column with %s_column.",
						 b->tgtname, quote_identifier(col), format_type_be(wm_type),
						 not_null ? " NOT NULL" : "", what)));
	att = TupleDescAttr(RelationGetDescr(b->tgt), attno - 1);
	if (att->atttypid != wm_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s column \"%s\" of target %s has type %s, not the watermark column's type %s",
						what, col, b->tgtname, format_type_be(att->atttypid), format_type_be(wm_type)),
				 errdetail("A version is valid from the watermark value of the source row that opened it."),
				 errhint("ALTER TABLE %s ALTER COLUMN %s TYPE %s.", b->tgtname, quote_identifier(col),
						 format_type_be(wm_type))));
	if (att->attgenerated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
				 errmsg("%s column \"%s\" of target %s is a generated column", what, col, b->tgtname),
				 errhint("Make it an ordinary column: hwm writes it.")));
	if (not_null && !att->attnotnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
				 errmsg("%s column \"%s\" of target %s may be NULL", what, col, b->tgtname),
				 errdetail("Every version starts somewhere: a NULL start would make a key's history ambiguous."),
				 errhint("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL (a primary key on the key and %s does it).",
						 b->tgtname, quote_identifier(col), quote_identifier(col))));
	if (!not_null && att->attnotnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
				 errmsg("%s column \"%s\" of target %s is NOT NULL", what, col, b->tgtname),
				 errdetail("The current version of a key is the one whose %s is NULL.", what),
				 errhint("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL.", b->tgtname, quote_identifier(col))));
	if (key_contains(spec->unique_key, col))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s column \"%s\" is a column of the unique key", what, col),
				 errdetail("unique_key is the business key; the history adds %s to it by itself.",
						   quote_identifier(spec->valid_from_column)),
				 errhint("Leave \"%s\" out of unique_key.", col)));
	if (get_attnum(spec->source, col) != InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_COLUMN),
				 errmsg("source %s has a column \"%s\", the history's %s column", b->srcname, col, what),
				 errdetail("hwm loads every target column the source has; this one is the history's own."),
				 errhint("Name the history's column otherwise with %s_column => '...', or leave the column out of a view over the source.",
						 what)));
}

/*
 * The checks of a history that come before its key: no partition column
 * (an overwrite replaces rows, which would delete versions), a key, not on
 * Citus, and the bound columns.
 */
static void
history_bounds(PlanBuild *b)
{
	const HwmPlanSpec *spec = b->spec;
	const char *wm = spec->watermark_column ? spec->watermark_column : spec->tombstone_order;
	AttrNumber	wm_attno;
	Oid			wm_type;

	if (spec->unique_key == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a history needs a unique key"),
				 errhint("Pass unique_key: the business key whose versions the target keeps.")));
	if (spec->partition_column)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a history pipeline takes no partition column"),
				 errdetail("lookback, hwm.overwrite and hwm.backfill replace a partition's rows with the source's, which in a history would delete the versions the source no longer has."),
				 errhint("Leave partition_column and lookback out; to rebuild a history, load a corrected copy and put it in place with hwm.swap.")));
	if (b->citus_source || b->citus_target)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a history pipeline on Citus tables is not supported"),
				 errdetail("A history's run is one statement that orders each key's versions, which Citus does not push down to the shards."),
				 errhint("Keep the history in a local table, or load the current rows only (a pipeline without history).")));
	if (strcmp(spec->valid_from_column, spec->valid_to_column) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("valid_from_column and valid_to_column are both \"%s\"", spec->valid_from_column),
				 errhint("Name two columns, for example valid_from and valid_to.")));
	wm_attno = column_of(spec, b->src, wm, "watermark", b->srcname);
	wm_type = TupleDescAttr(RelationGetDescr(b->src), wm_attno - 1)->atttypid;
	history_bound(b, spec->valid_from_column, "valid_from", wm_type, true);
	history_bound(b, spec->valid_to_column, "valid_to", wm_type, false);
	b->plan->history = true;
}

/*
 * The checks of a history after its key and columns: the key compared as
 * its type's default operator class does (the run groups a key's versions
 * with PARTITION BY, which knows no other), never NULL; and which columns
 * are tracked: history_columns, or every column loaded but the key, the
 * watermark column and the delete marker.
 */
static void
history_columns(PlanBuild *b)
{
	const HwmPlanSpec *spec = b->spec;
	const HwmKey *k = b->plan->key;
	const char *wm = spec->watermark_column ? spec->watermark_column : spec->tombstone_order;
	ListCell   *lc;

	/* the watermark column, loaded in its own type: what a version absorbed */
	b->absorbed = NULL;
	foreach(lc, b->cols)
	{
		LoadColumn *col = lfirst(lc);

		if (strcmp(col->name, quote_identifier(wm)) == 0 && col->target_type == b->plan->wm.type)
			b->absorbed = col->name;
	}
	for (int i = 0; i < k->n; i++)
	{
		AttrNumber	attno = k->cols[i].attnum;

		if (!k->cols[i].default_opfamily)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the unique index of history target %s compares key column %s with an operator class that is not its type's default",
							b->tgtname, k->cols[i].name),
					 errhint("Build the index on the key and %s with the default operator classes.",
							 quote_identifier(spec->valid_from_column))));
		if (!TupleDescAttr(RelationGetDescr(b->tgt), attno - 1)->attnotnull)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
					 errmsg("key column %s of history target %s may be NULL", k->cols[i].name, b->tgtname),
					 errdetail("A NULL key is no key: its versions could not be told from another's."),
					 errhint("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL (a primary key on the key and %s does it).",
							 b->tgtname, k->cols[i].name, quote_identifier(spec->valid_from_column))));
	}
	if (spec->history_columns_given)
	{
		foreach(lc, spec->history_columns)
		{
			const char *name = lfirst(lc);
			const char *quoted = quote_identifier(name);
			bool		found = false;
			ListCell   *c;

			if (key_contains(spec->unique_key, name))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("history column \"%s\" is a column of the unique key", name),
						 errdetail("A key's versions all have the same key."),
						 errhint("Leave \"%s\" out of history_columns.", name)));
			foreach(c, b->cols)
			{
				LoadColumn *col = lfirst(c);

				if (strcmp(col->name, quoted) == 0)
					found = col->tracked = true;
			}
			if (!found)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("history column \"%s\" is not a column loaded into target %s", name, b->tgtname),
						 errdetail("hwm loads the target columns whose names the source has too, the history's bounds excepted."),
						 spec->stored ?
						 errhint("%s or %s changed after pipeline \"%s\" was created: restore the column, or change history_columns.",
								 b->srcname, b->tgtname, spec->pipeline) :
						 errhint("Name columns of both tables; column names are case-sensitive.")));
		}
		return;
	}
	foreach(lc, b->cols)
	{
		LoadColumn *col = lfirst(lc);

		col->tracked = !col->is_key &&
			strcmp(col->name, quote_identifier(wm)) != 0 &&
			(spec->delete_column == NULL ||
			 strcmp(col->name, quote_identifier(spec->delete_column)) != 0);
	}
}

/* A loaded column of a source row s, in the target's type ("s.a" or a cast) */
static void
history_value(const PlanBuild *b, const LoadColumn *c, StringInfo buf)
{
	Oid			base = getBaseType(c->target_type);
	int32		typmod = c->target_typmod;

	for (int i = 0; i < b->plan->key->n; i++)
		if (strcmp(b->plan->key->cols[i].name, c->name) == 0)
		{
			hwm_key_expr(buf, &b->plan->key->cols[i], "s", true);
			return;
		}
	/* a length limit refuses in the INSERT what a CAST would cut (key.c) */
	if (base == VARCHAROID || base == BPCHAROID || base == BITOID || base == VARBITOID)
		typmod = -1;
	if (c->source_type == c->target_type && typmod < 0)
		appendStringInfo(buf, "s.%s", c->name);
	else
		appendStringInfo(buf, "CAST(s.%s AS %s)", c->name,
						 format_type_extended(c->target_type, typmod,
											  FORMAT_TYPE_FORCE_QUALIFY | FORMAT_TYPE_TYPEMOD_GIVEN));
}

/*
 * "hwm.changed(<old a>, ..., <new a>, ...)" over the tracked columns (with
 * untracked, the others but the key's) (old:
 * old_pre, the name, old_post; new: new_pre and the name), calls of at most
 * CHANGED_MAX_PAIRS pairs joined with OR; "false" without tracked columns.
 * Changed means another binary image, as for the upsert (changed.c).
 */
static void
append_tracked_changed(StringInfo buf, List *cols, bool untracked, const char *old_pre,
					   const char *old_post, const char *new_pre)
{
	List	   *tracked = NIL;
	ListCell   *lc;
	int			n;

	foreach(lc, cols)
	{
		LoadColumn *c = lfirst(lc);

		if (untracked ? !c->tracked && !c->is_key : c->tracked)
			tracked = lappend(tracked, c);
	}
	n = list_length(tracked);
	appendStringInfoChar(buf, '(');
	if (n == 0)
		appendStringInfoString(buf, "false");
	for (int start = 0; start < n; start += CHANGED_MAX_PAIRS)
	{
		int			end = Min(start + CHANGED_MAX_PAIRS, n);

		appendStringInfoString(buf, start == 0 ? "hwm.changed(" : " OR hwm.changed(");
		for (int i = start; i < end; i++)
			appendStringInfo(buf, "%s%s%s%s", i == start ? "" : ", ", old_pre,
							 ((LoadColumn *) list_nth(tracked, i))->name, old_post);
		for (int i = start; i < end; i++)
			appendStringInfo(buf, ", %s%s", new_pre, ((LoadColumn *) list_nth(tracked, i))->name);
		appendStringInfoChar(buf, ')');
	}
	appendStringInfoChar(buf, ')');
	list_free(tracked);
}

/* "alias.k1, alias.k2" */
static char *
history_keys(const PlanBuild *b, const char *alias)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < b->plan->key->n; i++)
		appendStringInfo(&buf, "%s%s.%s", i ? ", " : "", alias, b->plan->key->cols[i].name);
	return buf.data;
}

/*
 * A slice row of the fast path: the only row of its key in the slice, no
 * tombstone, newer than every bound of its key's history.  (Of a key, all
 * rows or none.)
 */
#define HISTORY_SIMPLE "(s.\"hwm n\" OPERATOR(pg_catalog.=) 1 AND NOT s.\"hwm dead\" AND NOT s.\"hwm late\")"

/* every current version to close is closed (a one-time filter) */
#define HISTORY_CLOSED "(SELECT pg_catalog.count(*) FROM hwm_closed) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM hwm_fclosed) OPERATOR(pg_catalog.>=) 0"

/*
 * ", hwm_fclosed AS (...), hwm_fmoved AS (...)": the fast path's current
 * versions, closed at the row's value or their untracked columns updated in
 * place.  The fast path is the common slice, and what a hand-written pair
 * of statements does: a row newer than its key's last version (hwm_l's
 * probe) closes it when it is current and the row differs in a tracked
 * column ("hwm changed"), and opens its own version (hwm_opened); equal
 * there, it updates the current version in place ("hwm pmoved": its other
 * columns' bytes differ); with no current version, it opens its own.
 * The version is found again by the row hwm_l read ("hwm rel", "hwm row":
 * no second probe of the key's index), and only while it is still that
 * version of that key and current: a version another transaction changed
 * since the statement's snapshot is left as it is and counted (the run
 * then fails, see load.c).  The windows, the second lookup of the current
 * versions and their sort are paid only for keys with several rows, a
 * tombstone or a late row.
 */
static void
history_fast_updates(const PlanBuild *b, StringInfo buf)
{
	const char *vf = quote_identifier(b->spec->valid_from_column);
	const char *vt = quote_identifier(b->spec->valid_to_column);
	StringInfoData same;
	ListCell   *lc;
	bool		any = false;

	initStringInfo(&same);
	appendStringInfoString(&same, " AND t.tableoid OPERATOR(pg_catalog.=) s.\"hwm rel\" AND t.ctid OPERATOR(pg_catalog.=) s.\"hwm row\"");
	hwm_key_match(&same, b->plan->key, "s", false, "t", false);
	appendStringInfo(&same, " AND t.%s %s s.\"hwm pfrom\" AND t.%s %s s.\"hwm pfrom\" AND t.%s IS NULL RETURNING 1)",
					 vf, b->plan->wm.ge, vf, b->plan->wm.le, vt);
	appendStringInfo(buf, ", hwm_fclosed AS (UPDATE %s AS t SET %s = s.\"hwm at\" FROM hwm_l AS s"
					 " WHERE %s AND s.\"hwm pcur\" AND s.\"hwm changed\"%s",
					 b->tgtname, vt, HISTORY_SIMPLE, same.data);
	appendStringInfo(buf, ", hwm_fmoved AS (UPDATE %s AS t SET ", b->tgtname);
	foreach(lc, b->cols)
	{
		LoadColumn *c = lfirst(lc);

		if (!c->tracked && !c->is_key)
		{
			appendStringInfo(buf, "%s%s = s.%s", any ? ", " : "", c->name, c->name);
			any = true;
		}
	}
	/* (no untracked column: "hwm pmoved" is false, nothing to set) */
	if (!any)
		appendStringInfo(buf, "%s = t.%s", vt, vt);
	appendStringInfo(buf, " FROM hwm_l AS s WHERE %s AND s.\"hwm pcur\" AND NOT s.\"hwm changed\" AND s.\"hwm pmoved\"%s",
					 HISTORY_SIMPLE, same.data);
	pfree(same.data);
}

/*
 * A history's run: one statement over the slice (hwm_slice: its rows in
 * the target's types, with their watermark value and whether they are
 * tombstones).  For each key of the slice, in watermark order (a tombstone
 * last among rows of one value), its current version and the slice's rows
 * newer than every bound of its history (hwm_e) make runs of rows (hwm_g's
 * groups): a row opens one when it is the first, a tombstone, after a
 * tombstone, or differs from the row before in a tracked column.  Each
 * group is one version (hwm_v, its last row): valid from its first row's
 * value, to the next group's first (NULL: current); its tracked columns
 * from its first row, the others from its last.  The group of the current
 * version updates that row when it is closed or its untracked columns
 * changed (another binary image, as for the upsert); the others are
 * inserted, after that update (hwm_opened waits for hwm_closed's count, so
 * that a unique index on the current versions sees one at a time); a
 * tombstone's group only closes the version before it.  A slice row not
 * newer than its key's history was applied before (a rerun, an overlapping
 * batch) when the history agrees with it at its value: it is skipped; one
 * that disagrees (a source that rewrote an old row without a newer
 * watermark value) is refused, counted, never applied: a history answers
 * "as of" questions, and an answer given once does not change.  Returns
 * one row: versions opened, current versions updated in place, versions
 * closed by a tombstone, rows refused.
 */
static void
history_statement(PlanBuild *b)
{
	const HwmPlanSpec *spec = b->spec;
	HwmPlan    *plan = b->plan;
	const char *wm = quote_identifier(spec->watermark_column);
	const char *vf = quote_identifier(spec->valid_from_column);
	const char *vt = quote_identifier(spec->valid_to_column);
	const char *lt = plan->wm.lt;
	StringInfoData head;
	StringInfoData buf;
	StringInfoData match;
	StringInfoData later;
	StringInfoData in_force;
	ListCell   *lc;

	/* the slice, in the target's types */
	initStringInfo(&head);
	appendStringInfoString(&head, "SELECT ");
	foreach(lc, b->cols)
	{
		LoadColumn *c = lfirst(lc);

		history_value(b, c, &head);
		appendStringInfo(&head, " AS %s, ", c->name);
	}
	appendStringInfo(&head, "s.%s AS \"hwm at\", %s AS \"hwm dead\" FROM %s AS s",
					 wm, plan->has_tombstones ? plan->dead_test : "false", b->srcname);
	b->slice_head = head.data;

	/* s (a slice row) and t (a version) have one key */
	initStringInfo(&match);
	hwm_key_match(&match, plan->key, "s", false, "t", false);
	/*
	 * s is not newer than its key's history: the key's last version (by
	 * valid_from: hwm never lets a key's versions overlap, so it also ends
	 * last) starts or ends at or after s, or absorbed a row at or after s
	 * (its copy of the watermark column, when the target loads it in the
	 * watermark's type: so that a rerun in batches does not set a current
	 * version's untracked columns back to an older row's).  One probe of
	 * the key's versions, backwards along the unique index, which also
	 * brings what the fast path needs of that version: where it is, its
	 * start, whether it is current and whether s differs from it.
	 */
	initStringInfo(&later);
	appendStringInfo(&later, "LEFT JOIN LATERAL (SELECT t.tableoid AS \"hwm rel\", t.ctid AS \"hwm row\", t.%s AS \"hwm pfrom\","
					 " t.%s IS NULL AS \"hwm pcur\", (t.%s %s s.\"hwm at\" OR t.%s %s s.\"hwm at\"",
					 vf, vt, vf, plan->wm.ge, vt, plan->wm.ge);
	if (b->absorbed)
		appendStringInfo(&later, " OR t.%s %s s.\"hwm at\"", b->absorbed, plan->wm.ge);
	/* (of the fast path: whether the row differs from that version) */
	appendStringInfoString(&later, ") AS \"hwm plate\", ");
	append_tracked_changed(&later, b->cols, false, "t.", "", "s.");
	appendStringInfoString(&later, " AS \"hwm changed\", ");
	append_tracked_changed(&later, b->cols, true, "t.", "", "s.");
	appendStringInfo(&later, " AS \"hwm pmoved\" FROM %s AS t WHERE true%s ORDER BY t.%s USING %s LIMIT 1) AS p ON true",
					 b->tgtname, match.data, vf, plan->wm.gt);
	/* t is in force at s's value */
	initStringInfo(&in_force);
	appendStringInfo(&in_force, "SELECT 1 FROM %s AS t WHERE true%s AND t.%s %s s.\"hwm at\" AND (t.%s IS NULL OR t.%s %s s.\"hwm at\")",
					 b->tgtname, match.data, vf, plan->wm.le, vt, vt, plan->wm.gt);

	initStringInfo(&buf);

	/*
	 * Each slice row, with what the fast path needs of its key's last
	 * version (p: all NULL when the key has none), whether that version has
	 * a bound at or after it, and how many rows of its key the slice has:
	 * one probe of the key's versions a row (a LATERAL subquery with a
	 * LIMIT is never turned into a join), computed once for hwm_e, the fast
	 * path and the count of the rows refused, which then look for the
	 * version in force only for the rows found late.
	 */
	appendStringInfo(&buf, "), hwm_l AS (SELECT s.*, p.\"hwm rel\", p.\"hwm row\", p.\"hwm pfrom\","
					 " (p.\"hwm plate\" IS TRUE) AS \"hwm late\", (p.\"hwm pcur\" IS TRUE) AS \"hwm pcur\","
					 " p.\"hwm changed\", p.\"hwm pmoved\"");
	/* (the count over the slice's narrow rows, sorted by key: so are the probes) */
	appendStringInfo(&buf, " FROM (SELECT s.*, pg_catalog.count(*) OVER (PARTITION BY %s) AS \"hwm n\""
					 " FROM hwm_slice AS s) AS s %s)", history_keys(b, "s"), later.data);

	/*
	 * The current versions of the slice's keys, each once, looked up key by
	 * key: a LATERAL subquery kept as one (OFFSET 0) is a nested loop over
	 * the slice, an index probe a row.  As a semi join, the planner would
	 * hash the slice and read the whole target for a small slice (its
	 * estimate of a probe is a random read), and a run's cost would follow
	 * the history's size instead of the slice's.
	 */
	appendStringInfoString(&buf, ", hwm_cur AS (SELECT DISTINCT ON (t.\"hwm rel\", t.\"hwm row\") ");
	foreach(lc, b->cols)
	{
		LoadColumn *c = lfirst(lc);
		bool		key = false;

		for (int i = 0; i < plan->key->n && !key; i++)
			if (strcmp(plan->key->cols[i].name, c->name) == 0)
			{
				hwm_key_expr(&buf, &plan->key->cols[i], "t", false);
				key = true;
			}
		if (!key)
			appendStringInfo(&buf, "t.%s", c->name);
		appendStringInfo(&buf, " AS %s, ", c->name);
	}
	appendStringInfo(&buf, "t.%s AS \"hwm at\", false AS \"hwm dead\", true AS \"hwm cur\""
					 " FROM hwm_l AS s CROSS JOIN LATERAL (SELECT t.*, t.tableoid AS \"hwm rel\", t.ctid AS \"hwm row\" FROM %s AS t"
					 " WHERE t.%s IS NULL%s OFFSET 0) AS t WHERE NOT %s)",
					 vf, b->tgtname, vt, match.data, HISTORY_SIMPLE);
	/* with the slice's rows newer than their key's history */
	appendStringInfo(&buf, ", hwm_e AS (SELECT * FROM hwm_cur UNION ALL SELECT %s, s.\"hwm at\", s.\"hwm dead\", false"
					 " FROM hwm_l AS s WHERE NOT s.\"hwm late\" AND NOT %s)",
					 column_list(b->cols, "s."), HISTORY_SIMPLE);
	/* which rows open a version */
	appendStringInfoString(&buf, ", hwm_f AS (SELECT e.*, CASE WHEN pg_catalog.lag(e.\"hwm at\") OVER w IS NULL"
						   " OR e.\"hwm dead\" OR pg_catalog.lag(e.\"hwm dead\") OVER w OR ");
	append_tracked_changed(&buf, b->cols, false, "pg_catalog.lag(e.", ") OVER w", "e.");
	appendStringInfo(&buf, " THEN 1 ELSE 0 END AS \"hwm opens\" FROM hwm_e AS e"
					 " WINDOW w AS (PARTITION BY %s ORDER BY e.\"hwm at\" USING %s, e.\"hwm dead\"))",
					 history_keys(b, "e"), lt);
	/* the groups: one a version */
	appendStringInfo(&buf, ", hwm_g AS (SELECT f.*, pg_catalog.sum(f.\"hwm opens\") OVER"
					 " (PARTITION BY %s ORDER BY f.\"hwm at\" USING %s, f.\"hwm dead\" ROWS UNBOUNDED PRECEDING)"
					 " AS \"hwm grp\" FROM hwm_f AS f)",
					 history_keys(b, "f"), lt);
	appendStringInfoString(&buf, ", hwm_h AS (SELECT ");
	foreach(lc, b->cols)
	{
		LoadColumn *c = lfirst(lc);

		if (c->tracked)
			appendStringInfo(&buf, "pg_catalog.first_value(g.%s) OVER wg AS %s, ", c->name, c->name);
		else
			appendStringInfo(&buf, "g.%s, ", c->name);
	}
	/* whether the group's last row changed what its first had (untracked) */
	append_tracked_changed(&buf, b->cols, true, "pg_catalog.first_value(g.", ") OVER wg", "g.");
	appendStringInfo(&buf, " AS \"hwm moved\", g.\"hwm at\", g.\"hwm grp\", pg_catalog.first_value(g.\"hwm at\") OVER wg AS \"hwm start\","
					 " pg_catalog.first_value(g.\"hwm cur\") OVER wg AS \"hwm gcur\","
					 " pg_catalog.first_value(g.\"hwm dead\") OVER wg AS \"hwm gdead\","
					 " pg_catalog.lead(g.\"hwm grp\") OVER w AS \"hwm next\" FROM hwm_g AS g"
					 " WINDOW w AS (PARTITION BY %s ORDER BY g.\"hwm grp\", g.\"hwm at\" USING %s, g.\"hwm dead\"),"
					 " wg AS (PARTITION BY %s, g.\"hwm grp\" ORDER BY g.\"hwm at\" USING %s, g.\"hwm dead\"))",
					 history_keys(b, "g"), lt, history_keys(b, "g"), lt);
	/* each group's last row, with the next group's start */
	appendStringInfo(&buf, ", hwm_w AS (SELECT h.*, pg_catalog.lead(h.\"hwm start\") OVER w AS \"hwm stop\","
					 " pg_catalog.lead(h.\"hwm gdead\") OVER w AS \"hwm ends dead\" FROM hwm_h AS h"
					 " WHERE h.\"hwm next\" IS NULL OR h.\"hwm next\" OPERATOR(pg_catalog.<>) h.\"hwm grp\""
					 " WINDOW w AS (PARTITION BY %s ORDER BY h.\"hwm grp\"))",
					 history_keys(b, "h"));
	history_fast_updates(b, &buf);
	/* the current versions: closed, their untracked columns updated */
	appendStringInfo(&buf, ", hwm_closed AS (UPDATE %s AS t SET %s = v.\"hwm stop\"", b->tgtname, vt);
	foreach(lc, b->cols)
	{
		LoadColumn *c = lfirst(lc);

		if (!c->tracked && !c->is_key)
			appendStringInfo(&buf, ", %s = v.%s", c->name, c->name);
	}
	resetStringInfo(&match);
	hwm_key_match(&match, plan->key, "v", false, "t", false);
	appendStringInfo(&buf, " FROM hwm_w AS v WHERE v.\"hwm gcur\"%s AND t.%s %s v.\"hwm start\" AND t.%s %s v.\"hwm start\""
					 " AND t.%s IS NULL AND (v.\"hwm stop\" IS NOT NULL OR v.\"hwm moved\")"
					 " RETURNING v.\"hwm moved\" AS \"hwm updated\")",
					 match.data, vf, plan->wm.ge, vf, plan->wm.le, vt);
	/*
	 * the new versions, once the current ones are closed (each branch
	 * waits for both: a one-time filter)
	 */
	appendStringInfo(&buf, ", hwm_opened AS (INSERT INTO %s AS t (%s, %s, %s)%s SELECT %s, v.\"hwm start\", v.\"hwm stop\""
					 " FROM hwm_w AS v WHERE NOT v.\"hwm gcur\" AND NOT v.\"hwm gdead\" AND " HISTORY_CLOSED
					 " UNION ALL SELECT %s, s.\"hwm at\", NULL FROM hwm_l AS s WHERE %s AND (NOT s.\"hwm pcur\" OR s.\"hwm changed\")"
					 " AND " HISTORY_CLOSED " RETURNING 1)",
					 b->tgtname, column_list(b->cols, ""), vf, vt,
					 b->override ? " OVERRIDING SYSTEM VALUE" : "", column_list(b->cols, "v."),
					 column_list(b->cols, "s."), HISTORY_SIMPLE);
	appendStringInfoString(&buf, " SELECT (SELECT pg_catalog.count(*) FROM hwm_opened),"
						   " (SELECT pg_catalog.count(*) FROM hwm_closed AS c WHERE c.\"hwm updated\")"
						   " OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM hwm_fmoved),"
						   " (SELECT pg_catalog.count(*) FROM hwm_w AS v WHERE NOT v.\"hwm gdead\" AND v.\"hwm ends dead\"),");
	/* the rows refused: not newer than their key's history, and not in it */
	appendStringInfo(&buf, " (SELECT pg_catalog.count(*) FROM hwm_l AS s WHERE s.\"hwm late\" AND NOT CASE WHEN s.\"hwm dead\""
					 " THEN NOT EXISTS (%s) ELSE EXISTS (%s AND NOT ",
					 in_force.data, in_force.data);
	append_tracked_changed(&buf, b->cols, false, "t.", "", "s.");
	appendStringInfoString(&buf, ") END),");
	/* the fast path's current versions another transaction changed */
	appendStringInfo(&buf, " (SELECT pg_catalog.count(*) FROM hwm_l AS s WHERE %s AND s.\"hwm pcur\" AND (s.\"hwm changed\" OR s.\"hwm pmoved\"))"
					 " OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM hwm_fclosed)"
					 " OPERATOR(pg_catalog.-) (SELECT pg_catalog.count(*) FROM hwm_fmoved)",
					 HISTORY_SIMPLE);
	b->history_tail = buf.data;
}

/*
 * Whether statement i of wm_statements is built: a plan without a target
 * has no upserts; one without a fast path (merge_statement) no fast path
 * statements; one whose source rules out a key twice no WM_TWICE.
 */
static bool
wm_statement_built(const PlanBuild *b, int i)
{
	switch (wm_statements[i].form)
	{
		case WM_SELECT:
			return true;
		case WM_UPSERT:
			return b->tgt != NULL;
		case WM_PLAIN:
		case WM_MERGE:
			return b->merge_head != NULL;
		case WM_TWICE:
			return b->twice_tail != NULL;
		case WM_KEYS:
			return b->merge_head != NULL && b->bound_col != NULL;
	}
	return false;
}

/* Append statement i's head, up to its WHERE */
static void
wm_statement_head(const PlanBuild *b, int i, StringInfo buf)
{
	const char *wm = quote_identifier(b->spec->watermark_column);

	switch (wm_statements[i].form)
	{
		case WM_SELECT:
			appendStringInfo(buf, "SELECT s.%s FROM %s AS s WHERE ", wm, b->srcname);
			break;
		case WM_UPSERT:
			if (b->plan->history || b->plan->has_tombstones)
			{
				appendStringInfo(buf, "WITH hwm_slice AS (%s WHERE ", b->slice_head);
				break;
			}
			/* FALLTHROUGH */
		case WM_PLAIN:
			appendStringInfo(buf, "%s WHERE ", b->insert_head);
			break;
		case WM_MERGE:
			appendStringInfo(buf, "%s WHERE ", b->merge_head);
			break;
		case WM_TWICE:
			appendStringInfo(buf, "SELECT 1 FROM %s AS s WHERE ", b->srcname);
			break;
		case WM_KEYS:
			appendStringInfo(buf, "SELECT pg_catalog.min(s.%s), pg_catalog.max(s.%s) FROM %s AS s WHERE ",
							 b->bound_col, b->bound_col, b->srcname);
			break;
	}
}

/* Append statement i's tail, after its WHERE, to stmt */
static void
wm_statement_tail(const PlanBuild *b, int i, HwmStatement *stmt, StringInfo buf)
{
	const char *wm = quote_identifier(b->spec->watermark_column);

	switch (wm_statements[i].form)
	{
		case WM_SELECT:
			appendStringInfo(buf, " ORDER BY s.%s USING %s LIMIT 1", wm,
							 wm_statements[i].ascending ? b->plan->wm.lt : b->plan->wm.gt);
			if (wm_statements[i].offset)
				appendStringInfo(buf, " OFFSET %s",
								 param_ref(stmt, wm_statements[i].arg, INT8OID));
			break;
		case WM_UPSERT:
			if (b->plan->history)
				appendStringInfoString(buf, b->history_tail);
			else if (b->plan->has_tombstones)
				append_tombstone_tail(b, buf, wm);
			else
				appendStringInfoString(buf, b->conflict);
			break;
		case WM_PLAIN:
			break;
		case WM_MERGE:
			appendStringInfoString(buf, b->merge_on);
			if (b->bound_col != NULL)
			{
				appendStringInfo(buf, " AND t.%s %s %s", b->bound_col, b->bound_vt.ge,
								 param_ref(stmt, HWM_PARAM_KEY_LO, b->bound_vt.type));
				appendStringInfo(buf, " AND t.%s %s %s", b->bound_col, b->bound_vt.le,
								 param_ref(stmt, HWM_PARAM_KEY_HI, b->bound_vt.type));
			}
			appendStringInfoString(buf, b->merge_tail);
			break;
		case WM_TWICE:
			appendStringInfoString(buf, b->twice_tail);
			break;
		case WM_KEYS:
			break;
	}
}

/*
 * Build the watermark statements of the table above, each in its first-run
 * form (every non-NULL value) and its later-run form (above the watermark
 * $1): the statement's own argument follows the watermark's.
 */
static void
watermark_statements(PlanBuild *b)
{
	HwmPlan    *plan = b->plan;
	const char *wm = quote_identifier(b->spec->watermark_column);

	plan->range_exists_sql =
		psprintf("SELECT 1 FROM %s AS s WHERE s.%s %s $1 AND s.%s %s $2 LIMIT 1",
				 b->srcname, wm, plan->wm.ge, wm, plan->wm.lt);
	plan->first_from_sql =
		psprintf("SELECT s.%s FROM %s AS s WHERE s.%s %s $1 ORDER BY s.%s USING %s LIMIT 1",
				 wm, b->srcname, wm, plan->wm.ge, wm, plan->wm.lt);

	for (int i = 0; i < lengthof(wm_statements); i++)
	{
		if (!wm_statement_built(b, i))
			continue;
		for (int later = 0; later <= 1; later++)
		{
			HwmStatement *stmt = &plan->wm_stmt[wm_statements[i].stmt][later];
			StringInfoData buf;
			int			head_len;

			initStringInfo(&buf);
			wm_statement_head(b, i, &buf);
			head_len = buf.len;
			if (later)
				appendStringInfo(&buf, "s.%s %s %s", wm, plan->wm.gt,
								 param_ref(stmt, HWM_PARAM_WATERMARK, plan->wm.type));
			else
				appendStringInfo(&buf, "s.%s IS NOT NULL", wm);
			if (wm_statements[i].reads)
			{
				const char *from = param_ref(stmt, HWM_PARAM_FROM, plan->wm.type);

				/* the later form's is never NULL; the first form's NULL: everything */
				if (later)
					appendStringInfo(&buf, " AND s.%s %s %s", wm, plan->wm.ge, from);
				else
					appendStringInfo(&buf, " AND (%s IS NULL OR s.%s %s %s)",
									 from, wm, plan->wm.ge, from);
			}
			if (wm_statements[i].arg_op)
				appendStringInfo(&buf, " AND s.%s %s %s", wm,
								 strcmp(wm_statements[i].arg_op, "lt") == 0 ?
								 plan->wm.lt : plan->wm.le,
								 param_ref(stmt, wm_statements[i].arg, plan->wm.type));
			wm_statement_tail(b, i, stmt, &buf);
			stmt->sql = buf.data;
			/* the plain INSERT's WHERE, for hwm_plan_slice_fill */
			if (wm_statements[i].form == WM_PLAIN)
				plan->slice_where[wm_statements[i].arg_op != NULL][later] = buf.data + head_len;
		}
	}
	plan->wm_null_count_sql = psprintf("SELECT pg_catalog.count(*) FROM %s AS s WHERE s.%s IS NULL",
									   b->srcname, wm);
}

/*
 * The statements on the partition column: the newest partitions, the range
 * overwrite with each end inclusive or not, and the walk over a range's
 * partition values.
 */
static void
partition_statements(PlanBuild *b)
{
	HwmPlan    *plan = b->plan;
	const char *p = quote_identifier(b->spec->partition_column);
	Oid			rels[2] = {b->spec->source, b->spec->target};

	/*
	 * The newest partition values, newest first: a loose index scan that
	 * reads one row per partition when the column is indexed.
	 */
	if (b->citus_source)
	{
		/*
		 * Citus runs no recursive CTE without a filter on the distribution
		 * column: group on the workers, merge the groups on the coordinator.
		 */
		plan->newest_partitions_sql =
			psprintf("SELECT s.%s FROM %s AS s WHERE s.%s IS NOT NULL"
					 " GROUP BY s.%s ORDER BY s.%s USING %s LIMIT $1",
					 p, b->srcname, p, p, p, plan->part.gt);
	}
	else
		plan->newest_partitions_sql =
			psprintf("WITH RECURSIVE hwm_parts(v, n) AS ("
					 "(SELECT s.%s, 1 FROM %s AS s WHERE s.%s IS NOT NULL ORDER BY s.%s USING %s LIMIT 1)"
					 " UNION ALL"
					 " SELECT (SELECT s.%s FROM %s AS s WHERE s.%s %s hwm_parts.v ORDER BY s.%s USING %s LIMIT 1),"
					 " hwm_parts.n OPERATOR(pg_catalog.+) 1"
					 " FROM hwm_parts WHERE hwm_parts.v IS NOT NULL AND hwm_parts.n OPERATOR(pg_catalog.<) $1)"
					 " SELECT hwm_parts.v FROM hwm_parts WHERE hwm_parts.v IS NOT NULL",
					 p, b->srcname, p, p, plan->part.gt,
					 p, b->srcname, p, plan->part.lt, p, plan->part.gt);

	for (int lo_incl = 0; lo_incl <= 1; lo_incl++)
		for (int hi_incl = 0; hi_incl <= 1; hi_incl++)
		{
			const char *lo = lo_incl ? plan->part.ge : plan->part.gt;
			const char *hi = hi_incl ? plan->part.le : plan->part.lt;
			StringInfoData buf;

			/* delete what the source's range no longer has (all, without a key) */
			initStringInfo(&buf);
			appendStringInfo(&buf, "DELETE FROM %s AS t WHERE t.%s %s $1 AND t.%s %s $2",
							 b->tgtname, p, lo, p, hi);
			if (b->spec->unique_key != NIL)
				appendStringInfo(&buf,
								 " AND NOT EXISTS (SELECT FROM %s AS s WHERE s.%s %s $1 AND s.%s %s $2%s%s)",
								 b->srcname, p, lo, p, hi, b->live, b->keymatch);
			plan->delete_range_sql[lo_incl][hi_incl] = buf.data;

			/* then upsert the source's range: unchanged rows are not rewritten */
			plan->insert_range_sql[lo_incl][hi_incl] =
				psprintf("%s WHERE s.%s %s $1 AND s.%s %s $2%s%s",
						 b->insert_head, p, lo, p, hi, b->live, b->conflict);
		}

	for (int i = 0; i < 2; i++)
	{
		char	   *rel = hwm_qualified_name(rels[i]);

		plan->walk_first_sql[i] =
			psprintf("SELECT r.%s FROM %s AS r WHERE r.%s %s $1 AND r.%s %s $2"
					 " ORDER BY r.%s USING %s LIMIT 1",
					 p, rel, p, plan->part.ge, p, plan->part.le, p, plan->part.lt);
		plan->walk_next_sql[i] =
			psprintf("SELECT r.%s FROM %s AS r WHERE r.%s %s $1 AND r.%s %s $2"
					 " ORDER BY r.%s USING %s LIMIT 1",
					 p, rel, p, plan->part.gt, p, plan->part.le, p, plan->part.lt);
		plan->walk_count_sql[i] =
			psprintf("SELECT pg_catalog.count(*) FROM %s AS r"
					 " WHERE r.%s %s $1 AND r.%s %s $1",
					 rel, p, plan->part.ge, p, plan->part.le);
	}
}

/*
 * The plan of a command or interval pipeline, which has no target: the
 * watermark column's type and the statements that read the source.
 */
static HwmPlan *
source_plan(const HwmPlanSpec *spec)
{
	PlanBuild	b = {0};
	HwmPlan    *plan = palloc0(sizeof(HwmPlan));
	AttrNumber	attno;
	Form_pg_attribute att;

	b.spec = spec;
	b.plan = plan;
	b.src = open_checked(spec->source, "source", false);
	b.srcname = hwm_qualified_name(spec->source);
	plan->source = spec->source;
	attno = column_of(spec, b.src, spec->watermark_column, "watermark", b.srcname);
	att = TupleDescAttr(RelationGetDescr(b.src), attno - 1);
	value_type_init(&plan->wm, att->atttypid, att->atttypmod,
						att->attcollation, spec->watermark_column, b.srcname);
	plan->has_wm = true;
	plan->source_columns = list_make1_int(attno);
	watermark_statements(&b);
	relation_close(b.src, NoLock);
	return plan;
}

/*
 * Build the statements of one run.  Validates everything a statement relies
 * on and refuses with a clear error otherwise; this is also all of
 * create_pipeline's validation.  Without a target (a command or interval
 * pipeline), only the source's watermark statements.
 */
HwmPlan *
hwm_plan_build(const HwmPlanSpec *spec)
{
	PlanBuild	b = {0};
	HwmPlan    *plan = palloc0(sizeof(HwmPlan));
	char	   *column_names;
	ListCell   *lc;

	if (spec->source_only)
		return source_plan(spec);
	if (spec->source == spec->target)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source and target must be different tables"),
				 errhint("Load from a staging table or a view into the table that readers use.")));

	b.spec = spec;
	b.plan = plan;
	b.src = open_checked(spec->source, "source", false);
	b.tgt = open_checked(spec->target, "target", true);
	b.srcname = hwm_qualified_name(spec->source);
	b.tgtname = hwm_qualified_name(spec->target);
	plan->source = spec->source;
	plan->target = spec->target;
	plan->partition_column = spec->partition_column;

	/* keys must be target columns; checked before the column walk */
	foreach(lc, spec->unique_key)
		(void) column_of(spec, b.tgt, (char *) lfirst(lc), "unique key", b.tgtname);
	citus_layout(&b);
	plan->citus = b.citus_source || b.citus_target;
	if (spec->valid_from_column)
		history_bounds(&b);
	if (spec->unique_key != NIL)
		plan->key = hwm_key_build_versioned(b.tgt, b.src, spec->unique_key,
											spec->valid_from_column, b.tgtname, b.srcname);

	walk_columns(&b);
	value_columns(&b);
	tombstone_column(&b);
	if (plan->history)
		history_columns(&b);

	/* INSERT INTO tgt AS t (cols) SELECT s.cols FROM src AS s */
	column_names = column_list(b.cols, "");
	plan->copy_sql = psprintf("(%s) SELECT %s FROM %s AS s",
							  column_names, column_list(b.cols, "s."), b.srcname);
	b.insert_head = psprintf("INSERT INTO %s AS t (%s)%s SELECT %s FROM %s AS s",
							 b.tgtname, column_names,
							 b.override ? " OVERRIDING SYSTEM VALUE" : "",
							 column_list(b.cols, "s."), b.srcname);
	conflict_clause(&b);
	if (plan->history && plan->has_wm)
		history_statement(&b);
	else if (plan->has_tombstones && plan->has_wm)
		tombstone_statement(&b, column_names);
	if (plan->has_wm)
		merge_statement(&b);
	if (b.merge_head != NULL)
		twice_statement(&b);

	if (plan->has_wm)
		watermark_statements(&b);
	if (plan->has_part)
		partition_statements(&b);

	relation_close(b.src, NoLock);
	relation_close(b.tgt, NoLock);
	return plan;
}

/*
 * INSERT INTO table (the loaded columns) the source's rows whose partition
 * value lies in [$1, $2) or, with list, equals one of the array $1: the
 * new contents of a partition of the target, built aside by exchange.c.
 */
char *
hwm_plan_fill_sql(const HwmPlan *plan, const char *table, bool list)
{
	const char *p = quote_identifier(plan->partition_column);

	if (list)
	{
		TypeCacheEntry *tc = lookup_type_cache(getBaseType(plan->part.type), TYPECACHE_EQ_OPR);

		if (!OidIsValid(tc->eq_opr))
			elog(ERROR, "type %u has no equality operator", plan->part.type);
		return psprintf("INSERT INTO %s %s WHERE s.%s %s ANY ($1)%s", table, plan->copy_sql,
						p, hwm_operator_sql(tc->eq_opr), plan->live_filter);
	}
	return psprintf("INSERT INTO %s %s WHERE s.%s %s $1 AND s.%s %s $2%s", table, plan->copy_sql,
					p, plan->part.ge, p, plan->part.lt, plan->live_filter);
}

/*
 * INSERT INTO table (the loaded columns) the slice's rows, as
 * HWM_WM_INSERT (upto: HWM_WM_INSERT_UPTO) in its first-run or later-run
 * form inserts them into the target, with the same parameters: the first
 * load built aside by load.c and exchange.c.  False when the plan has no
 * plain INSERT (no fast path).
 */
bool
hwm_plan_slice_fill(const HwmPlan *plan, const char *table, bool upto, bool later,
					HwmStatement *fill)
{
	if (plan->slice_where[upto][later] == NULL)
		return false;
	*fill = plan->wm_stmt[upto ? HWM_WM_INSERT_UPTO : HWM_WM_INSERT][later];
	fill->sql = psprintf("INSERT INTO %s %s WHERE %s", table, plan->copy_sql,
						 plan->slice_where[upto][later]);
	return true;
}

/* Give binding the value of param (see HwmParam) */
void
hwm_bind(HwmBinding *binding, HwmParam param, Datum value, bool isnull)
{
	binding->value[param] = isnull ? (Datum) 0 : value;
	binding->isnull[param] = isnull;
	binding->given[param] = true;
}

/*
 * The arguments of stmt's parameters, from the values binding gives them; a
 * parameter binding lacks is a bug in the caller.
 */
static void
statement_args(const HwmStatement *stmt, const HwmBinding *binding, Oid *types,
			   Datum *values, char *nulls)
{
	if (stmt->sql == NULL)
		elog(ERROR, "hwm: a statement the plan does not have was run");
	for (int i = 0; i < stmt->nparams; i++)
	{
		HwmParam	param = stmt->param[i];

		if (!binding->given[param])
			elog(ERROR, "hwm: parameter %d of a statement was given no value", param);
		types[i] = stmt->type[i];
		values[i] = binding->value[param];
		nulls[i] = binding->isnull[param] ? 'n' : ' ';
	}
}

/*
 * Run stmt through SPI with the values binding gives for its parameters,
 * insisting on the SPI_OK_* code expected.
 */
void
hwm_statement_exec(const HwmStatement *stmt, const HwmBinding *binding, int expected)
{
	Oid			types[HWM_NPARAMS];
	Datum		values[HWM_NPARAMS];
	char		nulls[HWM_NPARAMS];

	statement_args(stmt, binding, types, values, nulls);
	hwm_spi_exec(stmt->sql, stmt->nparams, types, values, nulls, expected);
}

/* See pipeline.h */
uint64
hwm_statement_fill(const HwmStatement *fill, const HwmBinding *binding)
{
	Oid			types[HWM_NPARAMS];
	Datum		values[HWM_NPARAMS];
	char		nulls[HWM_NPARAMS];

	statement_args(fill, binding, types, values, nulls);
	return hwm_bulk_insert(fill->sql, fill->nparams, types, values, nulls);
}

/*
 * What to build a stored pipeline's plan from: its tables and key, and the
 * watermark and partition columns when the caller needs those statements.
 */
void
hwm_spec_for(const HwmPipeline *p, bool with_watermark, bool with_partition,
			 HwmPlanSpec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->source = p->source;
	spec->target = p->target;
	spec->source_only = p->command != NULL;
	spec->unique_key = p->unique_key;
	spec->watermark_column = with_watermark ? p->watermark_column : NULL;
	spec->partition_column = with_partition ? p->partition_column : NULL;
	spec->pipeline = p->name;
	spec->stored = true;
	spec->delete_column = p->command ? NULL : p->delete_column;
	spec->tombstone_order = p->watermark_column;
	spec->valid_from_column = p->valid_from_column;
	spec->valid_to_column = p->valid_to_column;
	spec->history_columns_given = p->history_columns_given;
	spec->history_columns = p->history_columns;
}
