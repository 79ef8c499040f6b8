/*
 * swap.c
 *		CALL hwm.swap(target, staging, ...): validate a staging table, then
 *		exchange its contents with the target's in one transaction, keeping
 *		the target's identity; and hwm.create_staging(target).
 *
 * The exchange trades storage the way CLUSTER does (storage.c): the two
 * heaps, and every index of the target with the staging index of the same
 * definition.  Nothing is copied, so the swap costs the same for ten rows or
 * ten billion, and every OID stays where it was: views, grants,
 * foreign keys, triggers, policies, comments, publications and constraints
 * keep pointing at the target, which now holds the staging rows, while the
 * staging table holds the previous contents (swap again to restore them).
 *
 * Because the target's rows change without any row being written, what the
 * executor would have checked on INSERT is checked here first, against the
 * staging rows: same physical layout (columns, types, nullability,
 * generation expressions, dropped columns), an index matching each of the
 * target's down to opclass parameters and exclusion operators (so unique
 * and exclusion constraints hold), the target's CHECK constraints, foreign
 * keys from the target and to it; and as the staging table receives the
 * target's rows, its own CHECK, NOT NULL and foreign keys for those; plus
 * the caller's guards (row count, ratio, check query).  Everything is
 * checked under ACCESS EXCLUSIVE locks on both tables, taken with a bounded
 * wait, with a snapshot taken after the wait and row security out of the
 * way, and a failure changes nothing.  Planner statistics follow the rows.
 *
 * Like TRUNCATE and CLUSTER, the swap is not MVCC-safe for a transaction
 * whose snapshot is older than the swap and that reads the target for the
 * first time after it (REPEATABLE READ or SERIALIZABLE): it sees the new
 * storage with its old snapshot.  READ COMMITTED statements, and any
 * transaction that read the target before (it holds a lock the swap waits
 * for), see the old rows or the new ones.
 */
#include "postgres.h"

#include "catalog.h"
#include "citus.h"
#include "grid.h"
#include "privilege.h"
#include "storage.h"
#include "util.h"
#include "compat.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/nodes.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/ruleutils.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* Refuse with the standard "validation failed" SQLSTATE and a detail */
#define SWAP_REFUSE(msg, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), \
			 errmsg("staging table %s cannot replace %s", stgname, tgtname), \
			 errdetail(msg, __VA_ARGS__)))

/*
 * Take ACCESS EXCLUSIVE locks on both tables (the target first), each
 * waiting at most lock_timeout, with an error that says which table and what
 * to do.
 */
static void
lock_both(Oid target, Oid staging, const char *tgtname, const char *stgname,
		  const Interval *timeout)
{
	int64		usecs = hwm_interval_usecs(timeout);	/* (checked: 0 to HWM_TIMER_MAX_MS) */
	int64		ms = usecs <= 0 ? 1 : Min(usecs / 1000 + (usecs % 1000 != 0), HWM_TIMER_MAX_MS);
	Oid			relids[2] = {target, staging};
	const char *names[2] = {tgtname, stgname};
	const char *roles[2] = {"target", "staging table"};

	for (int i = 0; i < 2; i++)
		hwm_lock_within(relids[i], ms, psprintf("%s %s", roles[i], names[i]),
						psprintf("The swap needs an ACCESS EXCLUSIVE lock on both tables; other sessions hold locks on %s.",
								 names[i]),
						psprintf("Retry when the long queries or transactions on %s are done (pg_locks shows them), or pass a longer lock_timeout.",
								 names[i]));
}

/*
 * A Citus table's relation on the coordinator is a shell: its rows live on
 * the shards (or on every node), so trading the shell's storage would
 * report a swap that changed nothing the user's queries read.
 */
static void
check_not_citus(Oid relid, const char *role, const char *name)
{
	HwmCitusTable ct;

	hwm_citus_table(relid, &ct);
	if (ct.kind == HWM_CITUS_NONE)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s %s is a %s", role, name, hwm_citus_kind_name(ct.kind)),
			 errdetail("Its rows live on the shards, not in the relation on this node, so trading that relation's storage would change nothing that queries read."),
			 errhint("Load the new contents in one transaction instead: hwm.overwrite or hwm.overwrite_partition for a range, or DELETE and INSERT ... SELECT (readers see the old rows or the new ones); or build a new table with create_distributed_table and trade names with ALTER TABLE ... RENAME in one transaction.")));
}

/* The relation must be an ordinary table the caller owns */
static void
check_table(Oid relid, const char *role)
{
	char		kind = get_rel_relkind(relid);
	char	   *name;

	if (kind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s with OID %u does not exist", role, relid)));
	name = hwm_qualified_name(relid);
	if (kind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s %s is not an ordinary table", role, name),
				 kind == RELKIND_PARTITIONED_TABLE ?
				 errhint("A partitioned table has no storage of its own; swap its partitions, or use ATTACH PARTITION / DETACH PARTITION.") :
				 errhint("hwm.swap exchanges the storage of two ordinary tables.")));
	if (get_rel_relispartition(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s %s is a partition", role, name),
				 errhint("Use ALTER TABLE ... DETACH PARTITION and ATTACH PARTITION to exchange a partition.")));
	if (IsCatalogRelationOid(relid) || isAnyTempNamespace(get_rel_namespace(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s %s is a system catalog or a temporary table", role, name),
				 errhint("hwm.swap works on permanent or unlogged user tables.")));
	check_not_citus(relid, role, name);
	if (!object_ownercheck(RelationRelationId, relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of %s %s", role, name),
				 errdetail("hwm.swap and hwm.create_staging work on a table that only its owner may replace."),
				 errhint("Run it as the owner of %s or a member of that role.", name)));
}

/*
 * The storage of a relation that was created, truncated or rewritten in this
 * transaction is tied to this transaction's subtransaction bookkeeping
 * (rollback, wal_level = minimal, TRUNCATE in place); swapping it would
 * break that, so the swap refuses it.
 */
static void
check_storage_not_new(Relation rel, const char *what, const char *stgname, const char *tgtname)
{
	if (rel->rd_createSubid != InvalidSubTransactionId ||
		rel->rd_newRelfilelocatorSubid != InvalidSubTransactionId ||
		rel->rd_firstRelfilelocatorSubid != InvalidSubTransactionId)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("staging table %s cannot replace %s", stgname, tgtname),
				 errdetail("%s %s was created, truncated or rewritten in the current transaction.",
						   what, RelationGetRelationName(rel)),
				 errhint("Commit the staging table's creation and load first, then swap in a new transaction.")));
}

/* The expression of a column's default or generation, as in pg_attrdef */
static char *
default_bin(TupleDesc desc, AttrNumber attnum)
{
	if (desc->constr != NULL)
		for (int i = 0; i < desc->constr->num_defval; i++)
			if (desc->constr->defval[i].adnum == attnum)
				return desc->constr->defval[i].adbin;
	elog(ERROR, "no expression found for generated column %d", attnum);
	return NULL;				/* keep compiler quiet */
}

/* Same physical layout, column by column, dropped columns included */
static void
check_columns(Relation tgt, Relation stg, const char *tgtname, const char *stgname)
{
	TupleDesc	td = RelationGetDescr(tgt);
	TupleDesc	sd = RelationGetDescr(stg);

	for (int i = 0; i < Max(td->natts, sd->natts); i++)
	{
		Form_pg_attribute ta = i < td->natts ? TupleDescAttr(td, i) : NULL;
		Form_pg_attribute sa = i < sd->natts ? TupleDescAttr(sd, i) : NULL;

		if (ta == NULL || sa == NULL)
			SWAP_REFUSE("%s has %d columns (dropped ones included) but %s has %d.",
						tgtname, td->natts, stgname, sd->natts);
		if (ta->attisdropped != sa->attisdropped ||
			(ta->attisdropped && (ta->attlen != sa->attlen || ta->attalign != sa->attalign)))
			SWAP_REFUSE("Column %d is %s in %s but %s in %s; both tables need the same columns in the same physical order, dropped columns included.",
						i + 1, ta->attisdropped ? "dropped" : "live", tgtname,
						sa->attisdropped ? "dropped" : "live", stgname);
		if (ta->attisdropped)
			continue;
		if (strcmp(NameStr(ta->attname), NameStr(sa->attname)) != 0)
			SWAP_REFUSE("Column %d is \"%s\" in %s but \"%s\" in %s.",
						i + 1, NameStr(ta->attname), tgtname, NameStr(sa->attname), stgname);
		if (ta->atttypid != sa->atttypid || ta->atttypmod != sa->atttypmod ||
			ta->attcollation != sa->attcollation)
			SWAP_REFUSE("Column \"%s\" has type %s in %s but %s in %s (types, type modifiers and collations must be the same).",
						NameStr(ta->attname), format_type_with_typemod(ta->atttypid, ta->atttypmod),
						tgtname, format_type_with_typemod(sa->atttypid, sa->atttypmod), stgname);
		if (ta->attnotnull && !sa->attnotnull)
			SWAP_REFUSE("Column \"%s\" is NOT NULL in %s but nullable in %s.",
						NameStr(ta->attname), tgtname, stgname);
		if (ta->attgenerated != sa->attgenerated)
			SWAP_REFUSE("Column \"%s\" is generated in only one of %s and %s.",
						NameStr(ta->attname), tgtname, stgname);
		/* the stored values must be what the target's expression computes */
		if (ta->attgenerated &&
			!equal(stringToNode(default_bin(td, ta->attnum)),
				   stringToNode(default_bin(sd, sa->attnum))))
			SWAP_REFUSE("Column \"%s\" is generated by different expressions in %s and %s.",
						NameStr(ta->attname), tgtname, stgname);
	}
}

/*
 * Run a read-only query that returns at most one row; is there a row?  The
 * validation queries run read-only, so under the snapshot that hwm_swap
 * pushed once it held its locks.
 */
static bool
query_finds_row(const char *sql)
{
	int			rc = SPI_execute(sql, true, 1);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "hwm: SPI_execute failed (%s) for: %s", SPI_result_code_string(rc), sql);
	return SPI_processed > 0;
}

static int64
count_rows(Oid relid)
{
	bool		isnull;

	(void) query_finds_row(psprintf("SELECT pg_catalog.count(*) FROM ONLY %s", hwm_qualified_name(relid)));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The rows that relid holds once the swap is done, as a FROM item: the
 * target gets the staging rows and the staging table the target's; a
 * partitioned table is read whole (its partitions hold the rows), any other
 * table alone.
 */
static char *
rows_after(Oid relid, Oid target, Oid staging)
{
	Oid			holder = relid == target ? staging : relid == staging ? target : relid;

	return psprintf("%s%s", get_rel_relkind(holder) == RELKIND_PARTITIONED_TABLE ? "" : "ONLY ",
					hwm_qualified_name(holder));
}

/*
 * The rows of child (from) that break a foreign key to parent (from): all
 * key columns set and no match; with MATCH FULL also keys only partly set.
 */
static void
fk_sql(StringInfo buf, Oid child, const char *childfrom, Oid parent, const char *parentfrom,
	   int n, AttrNumber *fkcols, AttrNumber *pkcols, Oid *pfeqop, bool matchfull)
{
	StringInfoData cols;

	initStringInfo(&cols);
	for (int i = 0; i < n; i++)
		appendStringInfo(&cols, "%sc.%s", i > 0 ? ", " : "",
						 quote_identifier(get_attname(child, fkcols[i], false)));
	appendStringInfo(buf, "SELECT FROM %s AS c WHERE %strue", childfrom, matchfull ? "(" : "");
	for (int i = 0; i < n; i++)
		appendStringInfo(buf, " AND c.%s IS NOT NULL",
						 quote_identifier(get_attname(child, fkcols[i], false)));
	appendStringInfo(buf, " AND NOT EXISTS (SELECT FROM %s AS p WHERE true", parentfrom);
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(pfeqop[i]));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for operator %u", pfeqop[i]);
		appendStringInfo(buf, " AND p.%s OPERATOR(%s.%s) c.%s",
						 quote_identifier(get_attname(parent, pkcols[i], false)),
						 quote_identifier(get_namespace_name(((Form_pg_operator) GETSTRUCT(tup))->oprnamespace)),
						 NameStr(((Form_pg_operator) GETSTRUCT(tup))->oprname),
						 quote_identifier(get_attname(child, fkcols[i], false)));
		ReleaseSysCache(tup);
	}
	appendStringInfoChar(buf, ')');
	if (matchfull)
		appendStringInfo(buf, ") OR (pg_catalog.num_nulls(%s) OPERATOR(pg_catalog.<>) 0"
						 " AND pg_catalog.num_nonnulls(%s) OPERATOR(pg_catalog.<>) 0)",
						 cols.data, cols.data);
	appendStringInfoString(buf, " LIMIT 1");
}

/* Is there a validated CHECK constraint on relid with this expression? */
static bool
has_valid_check(List *rels, List *bins, Oid relid, const char *bin)
{
	ListCell   *lr;
	ListCell   *lb;
	Node	   *expr = stringToNode(bin);

	forboth(lr, rels, lb, bins)
		if (lfirst_oid(lr) == relid && equal(expr, stringToNode((char *) lfirst(lb))))
			return true;
	return false;
}

/* What a failed constraint check says: whose constraint, and whose rows break it */
static char *
violation_detail(const char *conname, bool of_target, const char *tgtname,
				 const char *stgname)
{
	return of_target ?
		psprintf("Constraint %s of %s would be violated by the staging rows.",
				 quote_identifier(conname), tgtname) :
		psprintf("Constraint %s of %s would be violated by the rows of %s, which it receives in the swap.",
				 quote_identifier(conname), stgname, tgtname);
}

/*
 * The validated CHECK constraints of the target and staging with an
 * expression: their tables into *rels, their expressions into *bins (see
 * has_valid_check).
 */
static void
valid_checks(Relation conrel, Oid target, Oid staging, List **rels, List **bins)
{
	SysScanDesc scan = systable_beginscan(conrel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tup;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
		bool		isnull;
		Datum		bin;

		if (con->contype != CONSTRAINT_CHECK ||
			(con->conrelid != target && con->conrelid != staging))
			continue;
		bin = heap_getattr(tup, Anum_pg_constraint_conbin, RelationGetDescr(conrel), &isnull);
		if (isnull || !con->convalidated)
			continue;
		*rels = lappend_oid(*rels, con->conrelid);
		*bins = lappend(*bins, TextDatumGetCString(bin));
	}
	systable_endscan(scan);
}

/*
 * The SQL that finds a row breaking CHECK constraint tup (of the target or
 * staging) as the rows will be after the swap, or NULL when none is needed:
 * it has no expression, or the other table holds it as a validated
 * constraint (valid_rels, valid_bins), so the rows it receives satisfy it.
 */
static char *
check_sql(HeapTuple tup, TupleDesc condesc, Oid target, Oid staging,
		  List *valid_rels, List *valid_bins)
{
	Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
	bool		isnull;
	Datum		bin = heap_getattr(tup, Anum_pg_constraint_conbin, condesc, &isnull);
	Oid			other = con->conrelid == target ? staging : target;

	if (isnull)
		return NULL;
	if (has_valid_check(valid_rels, valid_bins, other, TextDatumGetCString(bin)))
		return NULL;
	return psprintf("SELECT FROM %s WHERE NOT (%s) LIMIT 1",
					rows_after(con->conrelid, target, staging),
					TextDatumGetCString(DirectFunctionCall2(pg_get_expr, bin,
															ObjectIdGetDatum(con->conrelid))));
}

/* The SQL that finds a row breaking foreign key tup after the swap (fk_sql) */
static char *
foreign_key_sql(HeapTuple tup, Oid target, Oid staging)
{
	Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
	int			n;
	AttrNumber	conkey[INDEX_MAX_KEYS];
	AttrNumber	confkey[INDEX_MAX_KEYS];
	Oid			pfeqop[INDEX_MAX_KEYS];
	StringInfoData buf;

	DeconstructFkConstraintRow(tup, &n, conkey, confkey, pfeqop, NULL, NULL, NULL, NULL);
	initStringInfo(&buf);
	fk_sql(&buf, con->conrelid, rows_after(con->conrelid, target, staging),
		   con->confrelid, rows_after(con->confrelid, target, staging),
		   n, conkey, confkey, pfeqop, con->confmatchtype == FKCONSTR_MATCH_FULL);
	return buf.data;
}

/*
 * The checks (pairs: errdetail, SQL that finds an offending row) of the
 * CHECK constraints and foreign keys of both tables and of the foreign keys
 * that refer to them, as the rows will be after the swap.  A CHECK whose
 * expression the other table has as a validated constraint already holds
 * for the rows it receives, and is skipped.
 */
static List *
constraint_checks(Oid target, Oid staging, const char *tgtname, const char *stgname)
{
	Relation	conrel = table_open(ConstraintRelationId, AccessShareLock);
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *valid_rels = NIL;	/* validated CHECKs: their tables */
	List	   *valid_bins = NIL;	/* ... and expressions */
	List	   *checks = NIL;

	valid_checks(conrel, target, staging, &valid_rels, &valid_bins);
	scan = systable_beginscan(conrel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
		bool		mine = con->conrelid == target || con->conrelid == staging;
		bool		of_target = con->conrelid == target || con->confrelid == target;
		char	   *sql;

		/*
		 * The CHECKs of both tables, and the foreign keys from or to either;
		 * not a foreign key with a parent, a partition's copy of its
		 * parent's, which is checked over the whole partitioned table
		 * instead.
		 */
		if (con->contype == CONSTRAINT_CHECK && mine)
			sql = check_sql(tup, RelationGetDescr(conrel), target, staging,
							valid_rels, valid_bins);
		else if (con->contype == CONSTRAINT_FOREIGN &&
				 (mine || con->confrelid == target || con->confrelid == staging) &&
				 !OidIsValid(con->conparentid))
			sql = foreign_key_sql(tup, target, staging);
		else
			continue;
		if (sql == NULL)
			continue;
		checks = lappend(checks, violation_detail(NameStr(con->conname),
												  con->contype == CONSTRAINT_CHECK ?
												  con->conrelid == target : of_target,
												  tgtname, stgname));
		checks = lappend(checks, sql);
	}
	systable_endscan(scan);
	table_close(conrel, AccessShareLock);
	return checks;
}

/*
 * NOT NULL: check_columns refused a target column that is NOT NULL in the
 * target only; one that is NOT NULL in staging only must have no null in the
 * target's rows.  Appends to checks (pairs: errdetail, SQL).
 */
static List *
not_null_checks(List *checks, Oid target, Oid staging, const char *tgtname,
				const char *stgname)
{
	Relation	tgt = table_open(target, NoLock);
	Relation	stg = table_open(staging, NoLock);
	TupleDesc	td = RelationGetDescr(tgt);
	TupleDesc	sd = RelationGetDescr(stg);

	for (int i = 0; i < sd->natts && i < td->natts; i++)
	{
		Form_pg_attribute sa = TupleDescAttr(sd, i);

		if (sa->attisdropped || !sa->attnotnull || TupleDescAttr(td, i)->attnotnull)
			continue;
		checks = lappend(checks, psprintf("Column \"%s\" is NOT NULL in %s, but the rows of %s that it receives in the swap have nulls in it.",
										  NameStr(sa->attname), stgname, tgtname));
		checks = lappend(checks, psprintf("SELECT FROM %s WHERE %s IS NULL LIMIT 1",
										  rows_after(staging, target, staging),
										  quote_identifier(NameStr(sa->attname))));
	}
	table_close(tgt, NoLock);
	table_close(stg, NoLock);
	return checks;
}

/* Every constraint that the rows must satisfy after the swap, or an error */
static void
check_constraints(Oid target, Oid staging, const char *tgtname, const char *stgname)
{
	List	   *checks = constraint_checks(target, staging, tgtname, stgname);
	ListCell   *lc;

	checks = not_null_checks(checks, target, staging, tgtname, stgname);
	for (lc = list_head(checks); lc; lc = lnext(checks, lnext(checks, lc)))
	{
		char	   *detail = lfirst(lc);
		char	   *sql = lfirst(lnext(checks, lc));

		if (query_finds_row(sql))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("staging table %s cannot replace %s", stgname, tgtname),
					 errdetail_internal("%s", detail),
					 errhint("Find the offending rows with: %s", sql)));
	}
}
/* The arguments of hwm.swap, read and checked */
typedef struct SwapArgs
{
	Oid			target;
	Oid			staging;
	char	   *tgtname;
	char	   *stgname;
	bool		has_min_rows;
	int64		min_rows;
	bool		has_min_ratio;
	double		min_ratio;
	char	   *check_query;	/* NULL: none */
	Interval   *lock_timeout;
} SwapArgs;

static void
swap_args(FunctionCallInfo fcinfo, SwapArgs *a)
{
	hwm_require_arg(fcinfo, 0, "target");
	hwm_require_arg(fcinfo, 1, "staging");
	hwm_require_arg(fcinfo, 5, "lock_timeout");
	a->target = PG_GETARG_OID(0);
	a->staging = PG_GETARG_OID(1);
	a->has_min_rows = !PG_ARGISNULL(2);
	a->min_rows = a->has_min_rows ? PG_GETARG_INT64(2) : 0;
	a->has_min_ratio = !PG_ARGISNULL(3);
	a->min_ratio = a->has_min_ratio ? PG_GETARG_FLOAT8(3) : 0;
	a->check_query = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	a->lock_timeout = PG_GETARG_INTERVAL_P(5);
	hwm_check_not_negative(a->lock_timeout, "lock_timeout",
						   "lock_timeout is how long the swap waits for each table's lock, such as '5s'; 0 does not wait.");
	hwm_check_timer_interval(a->lock_timeout, "lock_timeout",
							 "lock_timeout is how long the swap waits for each table's lock: pass for example '5s' or '10 minutes'.");
	if (a->has_min_rows && a->min_rows < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("min_rows must not be negative")));
	if (a->has_min_ratio && !(a->min_ratio >= 0))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("min_ratio must be zero or more"),
						errhint("min_ratio => 0.9 refuses a staging table with fewer than 90%% of the target's rows.")));
	if (a->target == a->staging)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("target and staging must be different tables")));
}

/*
 * Step 1: lock both tables (target first, bounded) and check that the
 * staging table has the target's physical layout: persistence, access
 * method, owner, columns, indexes (returned as pairs: target index, staging
 * index, ...) and TOAST.
 */
static List *
swap_validate(SwapArgs *a)
{
	const char *tgtname;
	const char *stgname;
	Relation	tgt;
	Relation	stg;
	List	   *pairs;
	ListCell   *lc;

	check_table(a->target, "target");
	check_table(a->staging, "staging table");
	tgtname = a->tgtname = hwm_qualified_name(a->target);
	stgname = a->stgname = hwm_qualified_name(a->staging);
	lock_both(a->target, a->staging, tgtname, stgname, a->lock_timeout);
	/* look again under the locks */
	check_table(a->target, "target");
	check_table(a->staging, "staging table");

	tgt = table_open(a->target, NoLock);
	stg = table_open(a->staging, NoLock);
	CheckTableNotInUse(tgt, "hwm.swap");
	CheckTableNotInUse(stg, "hwm.swap");
	if (tgt->rd_rel->relpersistence != stg->rd_rel->relpersistence)
		SWAP_REFUSE("%s is %s but %s is %s.", tgtname,
					tgt->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED ? "unlogged" : "logged",
					stgname,
					stg->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED ? "unlogged" : "logged");
	/*
	 * Logical decoding reads a user catalog table with historic snapshots,
	 * through the relfilenode its pg_class row had then; CLUSTER leaves
	 * mapping files for that, the swap does not.
	 */
	if (RelationIsUsedAsCatalogTable(tgt) || RelationIsUsedAsCatalogTable(stg))
		SWAP_REFUSE("%s or %s is a user catalog table (user_catalog_table = true), which logical decoding reads with historic snapshots.",
					tgtname, stgname);
	if (tgt->rd_rel->relam != stg->rd_rel->relam)
		SWAP_REFUSE("%s and %s use different table access methods.", tgtname, stgname);
	if (tgt->rd_rel->relowner != stg->rd_rel->relowner)
		SWAP_REFUSE("%s is owned by %s but %s by %s; the TOAST tables that trade places must keep one owner.",
					tgtname, GetUserNameFromId(tgt->rd_rel->relowner, false),
					stgname, GetUserNameFromId(stg->rd_rel->relowner, false));
	check_storage_not_new(tgt, "Target", stgname, tgtname);
	check_storage_not_new(stg, "Staging table", stgname, tgtname);
	check_columns(tgt, stg, tgtname, stgname);
	pairs = hwm_storage_match_indexes(tgt, stg, tgtname, stgname);
	foreach(lc, pairs)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessExclusiveLock);

		check_storage_not_new(idx, "Index", stgname, tgtname);
		index_close(idx, NoLock);
	}
	if (OidIsValid(tgt->rd_rel->reltoastrelid) != OidIsValid(stg->rd_rel->reltoastrelid))
		SWAP_REFUSE("Only one of %s and %s has a TOAST table.", tgtname, stgname);
	table_close(tgt, NoLock);
	table_close(stg, NoLock);
	return pairs;
}

/* The caller's check query, with the caller's rights and settings, read-only */
static void
run_check_query(const SwapArgs *a)
{
	const char *q = a->check_query;
	bool		isnull = true;
	bool		ok;
	int			rc;

	rc = SPI_execute(q, true, 2);
	if (rc != SPI_OK_SELECT || SPI_tuptable == NULL ||
		SPI_tuptable->tupdesc->natts != 1 ||
		SPI_gettypeid(SPI_tuptable->tupdesc, 1) != BOOLOID || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("check_query must return exactly one row of one boolean column"),
				 errdetail("check_query: %s", q)));
	ok = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull || !ok)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("staging table %s cannot replace %s", a->stgname, a->tgtname),
				 errdetail("check_query returned %s: %s", isnull ? "null" : "false", q)));
}

/*
 * Step 2: the contents.  The caller's check query first, then the
 * constraints and row counts (so that they hold whatever the check query
 * did).  Sets the row counts when min_rows or min_ratio asks for them.
 *
 * All of them read under a snapshot taken now that both locks are held.
 * The statement's snapshot is older than the wait for the locks (and a
 * REPEATABLE READ transaction's may be much older): rows committed into
 * either table meanwhile are in the storage that trades places, so the
 * checks must see them.  Nobody can change the two tables any more.
 */
static void
swap_check_contents(const SwapArgs *a, int64 *tgt_rows, int64 *stg_rows)
{
	HwmRoleSwitch sw;
	Oid			uid;
	int			sec;

	PushActiveSnapshot(GetLatestSnapshot());
	if (a->check_query)
		run_check_query(a);
	PopActiveSnapshot();
	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());

	/*
	 * Row security must not hide rows from the checks: the owner reads its
	 * tables whole even with FORCE ROW LEVEL SECURITY (as foreign key checks
	 * do), and a policy on a table of another owner is an error, not a
	 * filter (row_security = off).
	 */
	hwm_become(GetUserId(), true, &sw);
	GetUserIdAndSecContext(&uid, &sec);
	SetUserIdAndSecContext(uid, sec | SECURITY_NOFORCE_RLS);
	(void) set_config_option("row_security", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	check_constraints(a->target, a->staging, a->tgtname, a->stgname);
	if (a->has_min_rows || a->has_min_ratio)
	{
		*stg_rows = count_rows(a->staging);
		*tgt_rows = count_rows(a->target);
	}
	hwm_unbecome(&sw);
	PopActiveSnapshot();

	if (a->has_min_rows && *stg_rows < a->min_rows)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("staging table %s cannot replace %s", a->stgname, a->tgtname),
				 errdetail("Staging has " INT64_FORMAT " rows; min_rows is " INT64_FORMAT ".",
						   *stg_rows, a->min_rows)));
	if (a->has_min_ratio && (double) *stg_rows < a->min_ratio * (double) *tgt_rows)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("staging table %s cannot replace %s", a->stgname, a->tgtname),
				 errdetail("Staging has " INT64_FORMAT " rows and the target " INT64_FORMAT "; min_ratio is %g.",
						   *stg_rows, *tgt_rows, a->min_ratio)));
}

PG_FUNCTION_INFO_V1(hwm_swap);

/*
 * CALL hwm.swap(target, staging, min_rows, min_ratio, check_query,
 * lock_timeout): validate, check the contents, then trade storage (with the
 * planner statistics and missing values that describe the rows).
 */
Datum
hwm_swap(PG_FUNCTION_ARGS)
{
	HwmRunFacts run = HWM_RUN_FACTS_INIT(NULL, "swap", GetCurrentTimestamp());
	SwapArgs	a;
	List	   *pairs;

	swap_args(fcinfo, &a);
	pairs = swap_validate(&a);

	SPI_connect();
	swap_check_contents(&a, &run.rows_deleted, &run.rows_inserted);
	hwm_storage_trade(a.target, a.staging, pairs, true);
	(void) hwm_record_run(&run);
	ereport(NOTICE,
			(errmsg("hwm: swapped %s with %s; %s now holds the previous contents",
					a.tgtname, a.stgname, a.stgname),
			 errhint("CALL hwm.swap(%s, %s) again to swap them back.", quote_literal_cstr(a.tgtname), quote_literal_cstr(a.stgname))));
	SPI_finish();
	PG_RETURN_VOID();
}
PG_FUNCTION_INFO_V1(hwm_create_staging);

/*
 * hwm.create_staging(target): a new table <target>_hwm_staging next to the
 * target, with its columns, defaults, constraints, indexes, storage and
 * persistence (CREATE TABLE ... (LIKE target INCLUDING ALL)) and its owner,
 * ready to be loaded and swapped in.
 */
Datum
hwm_create_staging(PG_FUNCTION_ARGS)
{
	Oid			target;
	Relation	rel;
	char	   *nsp;
	char	   *relname;
	char	   *stgrel;
	Oid			owner;
	Oid			result;
	char		persistence;
	HwmRoleSwitch sw;
	StringInfoData sql;

	hwm_require_arg(fcinfo, 0, "target");
	target = PG_GETARG_OID(0);
	check_table(target, "target");
	rel = table_open(target, AccessShareLock);
	for (int i = 0; i < RelationGetDescr(rel)->natts; i++)
		if (TupleDescAttr(RelationGetDescr(rel), i)->attisdropped)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("target %s has dropped columns", hwm_qualified_name(target)),
					 errdetail("A table made with LIKE would not have the same physical layout, so it could not be swapped in."),
					 errhint("Create the staging table by hand with the same columns at the same positions, dropped ones included, or rebuild the target without them.")));
	nsp = get_namespace_name(RelationGetNamespace(rel));
	relname = RelationGetRelationName(rel);
	owner = rel->rd_rel->relowner;
	persistence = rel->rd_rel->relpersistence;
	table_close(rel, NoLock);

	stgrel = psprintf("%s_hwm_staging", relname);
	if (strlen(stgrel) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("staging table name \"%s\" would be too long", stgrel),
				 errhint("Create the staging table yourself with CREATE TABLE ... (LIKE %s INCLUDING ALL).",
						 hwm_qualified_name(target))));
	if (OidIsValid(get_relname_relid(stgrel, get_rel_namespace(target))))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("staging table %s already exists", quote_qualified_identifier(nsp, stgrel)),
				 errhint("Use it (TRUNCATE it and load it), or drop it first.")));

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE %sTABLE %s (LIKE %s INCLUDING ALL)",
					 persistence == RELPERSISTENCE_UNLOGGED ? "UNLOGGED " : "",
					 quote_qualified_identifier(nsp, stgrel), hwm_qualified_name(target));
	if (OidIsValid(get_rel_tablespace(target)))
		appendStringInfo(&sql, " TABLESPACE %s",
						 quote_identifier(get_tablespace_name(get_rel_tablespace(target))));

	SPI_connect();
	hwm_become(GetUserId(), false, &sw);
	hwm_spi_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	result = get_relname_relid(stgrel, get_rel_namespace(target));
	if (owner != GetUserId())
		hwm_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s", quote_qualified_identifier(nsp, stgrel),
							  quote_identifier(GetUserNameFromId(owner, false))),
					 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	hwm_spi_exec(psprintf("COMMENT ON TABLE %s IS %s", quote_qualified_identifier(nsp, stgrel),
						  quote_literal_cstr(psprintf("hwm staging table for %s: load it, then CALL hwm.swap(%s, %s).",
													  hwm_qualified_name(target),
													  quote_literal_cstr(hwm_qualified_name(target)),
													  quote_literal_cstr(quote_qualified_identifier(nsp, stgrel))))),
				 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	hwm_unbecome(&sw);
	SPI_finish();
	PG_RETURN_OID(result);
}
