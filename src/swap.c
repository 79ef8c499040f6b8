/*
 * swap.c
 *		CALL hwm.swap(target, staging, ...): validate a staging table, then
 *		exchange its contents with the target's in one transaction, keeping
 *		the target's identity; and hwm.create_staging(target).
 *
 * The exchange swaps storage, the way CLUSTER and REFRESH MATERIALIZED VIEW
 * do (cluster.c, swap_relation_files): in pg_class, the two heaps trade
 * relfilenode, tablespace, frozen xid and multixact limits, size statistics
 * and their TOAST tables (by link: a TOAST pointer names its TOAST table by
 * OID, so the TOAST table must follow the heap whose tuples point to it), and
 * every index of the target trades storage with the staging index of the
 * same definition.  Nothing is copied, so the swap costs the same for ten
 * rows or ten billion, and every OID stays where it was: views, grants,
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
#include "hwm.h"

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
 * Take an ACCESS EXCLUSIVE lock waiting at most lock_timeout, with an error
 * that says which table and what to do.
 */
static void
lock_bounded(Oid relid, const char *role, const char *name, Interval *timeout)
{
	int			nest = NewGUCNestLevel();
	MemoryContext oldcxt = CurrentMemoryContext;
	char	   *ms;
	int64		usecs;

	usecs = timeout->time + (timeout->day * USECS_PER_DAY) +
		((int64) timeout->month * DAYS_PER_MONTH * USECS_PER_DAY);
	ms = psprintf(INT64_FORMAT, usecs <= 0 ? 1 : (usecs + 999) / 1000);
	(void) set_config_option("lock_timeout", ms, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		LockRelationOid(relid, AccessExclusiveLock);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		AtEOXact_GUC(false, nest);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not lock %s %s within %s ms", role, name, ms),
				 errdetail("The swap needs an ACCESS EXCLUSIVE lock on both tables; other sessions hold locks on %s.", name),
				 errhint("Retry when the long queries or transactions on %s are done (pg_locks shows them), or pass a longer lock_timeout.", name)));
	}
	PG_END_TRY();
	AtEOXact_GUC(false, nest);
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

static void rel_am_toast(Oid relid, Oid *am, Oid *toast);

/* The conexclop array of the exclusion constraint that owns an index */
static char *
exclusion_ops(Oid indexoid)
{
	Oid			conoid = get_index_constraint(indexoid);
	HeapTuple	tup;
	bool		isnull;
	Datum		ops;
	char	   *result;

	if (!OidIsValid(conoid))
		return NULL;
	tup = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for constraint %u", conoid);
	ops = SysCacheGetAttr(CONSTROID, tup, Anum_pg_constraint_conexclop, &isnull);
	result = isnull ? NULL : OidOutputFunctionCall(F_ARRAY_OUT, ops);
	ReleaseSysCache(tup);
	return result;
}

static bool
exclusion_ops_equal(Oid tidx, Oid sidx)
{
	char	   *t = exclusion_ops(tidx);
	char	   *s = exclusion_ops(sidx);

	return t != NULL && s != NULL && strcmp(t, s) == 0;
}

/* Do two pg_index rows describe the same index (OIDs of the tables aside)? */
static bool
index_matches(Oid tidx, Oid sidx)
{
	HeapTuple	tt = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(tidx));
	HeapTuple	st = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(sidx));
	Form_pg_index ti;
	Form_pg_index si;
	bool		ok;
	Oid			tam;
	Oid			sam;
	static const AttrNumber vecs[] = {Anum_pg_index_indclass, Anum_pg_index_indcollation,
	Anum_pg_index_indoption};
	static const AttrNumber trees[] = {Anum_pg_index_indexprs, Anum_pg_index_indpred};

	if (!HeapTupleIsValid(tt) || !HeapTupleIsValid(st))
		elog(ERROR, "cache lookup failed for index %u or %u", tidx, sidx);
	ti = (Form_pg_index) GETSTRUCT(tt);
	si = (Form_pg_index) GETSTRUCT(st);
	rel_am_toast(tidx, &tam, NULL);
	rel_am_toast(sidx, &sam, NULL);
	ok = tam == sam &&
		ti->indnatts == si->indnatts && ti->indnkeyatts == si->indnkeyatts &&
		ti->indisunique == si->indisunique &&
		ti->indnullsnotdistinct == si->indnullsnotdistinct &&
		ti->indisexclusion == si->indisexclusion &&
		ti->indimmediate == si->indimmediate &&
		si->indisvalid && si->indisready && si->indislive && !si->indcheckxmin &&
		ti->indisvalid && ti->indisready && ti->indislive &&
		memcmp(ti->indkey.values, si->indkey.values, sizeof(int16) * ti->indnatts) == 0;
	for (int i = 0; ok && i < lengthof(vecs); i++)
	{
		bool		tn;
		bool		sn;
		Datum		td = SysCacheGetAttr(INDEXRELID, tt, vecs[i], &tn);
		Datum		sd = SysCacheGetAttr(INDEXRELID, st, vecs[i], &sn);

		ok = tn == sn && (tn || datumIsEqual(td, sd, false, -1));
	}
	for (int i = 0; ok && i < lengthof(trees); i++)
	{
		bool		tn;
		bool		sn;
		Datum		td = SysCacheGetAttr(INDEXRELID, tt, trees[i], &tn);
		Datum		sd = SysCacheGetAttr(INDEXRELID, st, trees[i], &sn);

		/* equal() ignores parse locations, which differ between two CREATEs */
		ok = tn == sn && (tn || equal(stringToNode(TextDatumGetCString(td)),
									  stringToNode(TextDatumGetCString(sd))));
	}
	/* opclass parameters (siglen...) live in the index's pg_attribute */
	for (int i = 1; ok && i <= ti->indnatts; i++)
	{
		Datum		to = get_attoptions(tidx, i);
		Datum		so = get_attoptions(sidx, i);

		ok = (to == (Datum) 0) == (so == (Datum) 0) &&
			(to == (Datum) 0 ||
			 strcmp(OidOutputFunctionCall(F_ARRAY_OUT, to),
					OidOutputFunctionCall(F_ARRAY_OUT, so)) == 0);
	}
	/* an exclusion constraint is also its operators, kept in pg_constraint */
	if (ok && ti->indisexclusion)
		ok = exclusion_ops_equal(tidx, sidx);
	ReleaseSysCache(tt);
	ReleaseSysCache(st);
	return ok;
}

/*
 * Pair every index of the target with a distinct staging index of the same
 * definition, and insist that staging has no other index (it would go on
 * describing rows the staging table no longer has).
 */
static List *
match_indexes(Relation tgt, Relation stg, const char *tgtname, const char *stgname)
{
	List	   *tidx = RelationGetIndexList(tgt);
	List	   *sidx = list_copy(RelationGetIndexList(stg));
	List	   *pairs = NIL;
	ListCell   *lc;

	foreach(lc, tidx)
	{
		Oid			t = lfirst_oid(lc);
		Oid			found = InvalidOid;
		ListCell   *sc;

		if (!get_index_isvalid(t))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("staging table %s cannot replace %s", stgname, tgtname),
					 errdetail("Index %s of %s is not valid (a CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY failed or is running).",
							   quote_identifier(get_rel_name(t)), tgtname),
					 errhint("Drop the index or rebuild it with REINDEX INDEX, then swap.")));
		foreach(sc, sidx)
		{
			if (index_matches(t, lfirst_oid(sc)))
			{
				found = lfirst_oid(sc);
				sidx = foreach_delete_current(sidx, sc);
				break;
			}
		}
		if (!OidIsValid(found))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("staging table %s cannot replace %s", stgname, tgtname),
					 errdetail("Staging has no valid index matching index %s of the target: %s.",
							   quote_identifier(get_rel_name(t)),
							   exclusion_ops(t) != NULL ?
							   pg_get_constraintdef_command(get_index_constraint(t)) :
							   pg_get_indexdef_string(t)),
					 errhint("Create the same index on the staging table (hwm.create_staging(target) makes a table with all of the target's indexes).")));
		pairs = lappend_oid(pairs, t);
		pairs = lappend_oid(pairs, found);
	}
	if (sidx != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("staging table %s cannot replace %s", stgname, tgtname),
				 errdetail("Staging index %s matches no index of the target.",
						   quote_identifier(get_rel_name(linitial_oid(sidx)))),
				 errhint("Drop it, or create the same index on the target, so both tables have the same indexes.")));
	return pairs;
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

/*
 * Every constraint must hold after the swap: the CHECK constraints and
 * NOT NULL columns of both tables for the rows each receives, and the
 * foreign keys from and to either of them, with the rows as they will be.
 * Each is checked by an SQL query over the table that holds those rows now,
 * with the constraint's own expressions and operators.  A CHECK that the
 * other table has too, validated, is skipped: its rows satisfy it already.
 */
static void
check_constraints(Oid target, Oid staging, const char *tgtname, const char *stgname)
{
	Relation	conrel = table_open(ConstraintRelationId, AccessShareLock);
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *valid_rels = NIL;	/* validated CHECKs: their tables */
	List	   *valid_bins = NIL;	/* ... and expressions */
	List	   *checks = NIL;	/* pairs: errdetail, SQL */
	ListCell   *lc;
	TupleDesc	sd;
	TupleDesc	td;
	Relation	tgt;
	Relation	stg;

	for (int pass = 0; pass < 2; pass++)
	{
		scan = systable_beginscan(conrel, InvalidOid, false, NULL, 0, NULL);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
			bool		mine = con->conrelid == target || con->conrelid == staging;
			const char *owner = con->conrelid == target || con->confrelid == target ? tgtname : stgname;
			StringInfoData buf;

			if (con->contype == CONSTRAINT_CHECK && mine)
			{
				bool		isnull;
				Datum		bin = heap_getattr(tup, Anum_pg_constraint_conbin,
											   RelationGetDescr(conrel), &isnull);
				Oid			other = con->conrelid == target ? staging : target;
				char	   *expr;

				if (isnull)
					continue;
				if (pass == 0)
				{
					if (con->convalidated)
					{
						valid_rels = lappend_oid(valid_rels, con->conrelid);
						valid_bins = lappend(valid_bins, TextDatumGetCString(bin));
					}
					continue;
				}
				if (has_valid_check(valid_rels, valid_bins, other, TextDatumGetCString(bin)))
					continue;
				expr = TextDatumGetCString(DirectFunctionCall2(pg_get_expr, bin,
															   ObjectIdGetDatum(con->conrelid)));
				initStringInfo(&buf);
				appendStringInfo(&buf, "SELECT FROM %s WHERE NOT (%s) LIMIT 1",
								 rows_after(con->conrelid, target, staging), expr);
				checks = lappend(checks, con->conrelid == target ?
								 psprintf("Constraint %s of %s would be violated by the staging rows.",
										  quote_identifier(NameStr(con->conname)), tgtname) :
								 psprintf("Constraint %s of %s would be violated by the rows of %s, which it receives in the swap.",
										  quote_identifier(NameStr(con->conname)), stgname, tgtname));
				checks = lappend(checks, buf.data);
			}
			else if (pass == 1 && con->contype == CONSTRAINT_FOREIGN &&
					 (mine || con->confrelid == target || con->confrelid == staging) &&
					 !OidIsValid(con->conparentid))
			{
				/*
				 * A constraint with a parent is a partition's copy of its
				 * parent's foreign key, which is checked over the whole
				 * partitioned table instead.
				 */
				int			n;
				AttrNumber	conkey[INDEX_MAX_KEYS];
				AttrNumber	confkey[INDEX_MAX_KEYS];
				Oid			pfeqop[INDEX_MAX_KEYS];

				DeconstructFkConstraintRow(tup, &n, conkey, confkey, pfeqop, NULL, NULL, NULL, NULL);
				initStringInfo(&buf);
				fk_sql(&buf, con->conrelid, rows_after(con->conrelid, target, staging),
					   con->confrelid, rows_after(con->confrelid, target, staging),
					   n, conkey, confkey, pfeqop, con->confmatchtype == FKCONSTR_MATCH_FULL);
				checks = lappend(checks, owner == tgtname ?
								 psprintf("Constraint %s of %s would be violated by the staging rows.",
										  quote_identifier(NameStr(con->conname)), tgtname) :
								 psprintf("Constraint %s of %s would be violated by the rows of %s, which it receives in the swap.",
										  quote_identifier(NameStr(con->conname)), stgname, tgtname));
				checks = lappend(checks, buf.data);
			}
		}
		systable_endscan(scan);
	}
	table_close(conrel, AccessShareLock);

	/*
	 * NOT NULL: check_columns refused a target column that is NOT NULL in
	 * the target only; one that is NOT NULL in staging only must have no
	 * null in the target's rows.
	 */
	tgt = table_open(target, NoLock);
	stg = table_open(staging, NoLock);
	td = RelationGetDescr(tgt);
	sd = RelationGetDescr(stg);
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

/*
 * Trade storage between two relations of the same kind in pg_class: the
 * heart of the swap (cf. swap_relation_files in cluster.c).  With heaps,
 * TOAST tables are traded by link and their dependencies moved.
 */
static void
swap_pg_class(Oid r1, Oid r2)
{
	Relation	relrel = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	t1 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(r1));
	HeapTuple	t2 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(r2));
	Form_pg_class f1;
	Form_pg_class f2;

	if (!HeapTupleIsValid(t1) || !HeapTupleIsValid(t2))
		elog(ERROR, "cache lookup failed for relation %u or %u", r1, r2);
	f1 = (Form_pg_class) GETSTRUCT(t1);
	f2 = (Form_pg_class) GETSTRUCT(t2);
	if (!OidIsValid(f1->relfilenode) || !OidIsValid(f2->relfilenode))
		elog(ERROR, "cannot swap mapped relations %u and %u", r1, r2);

#define SWAP_FIELD(type, field) do { type tmp_ = f1->field; f1->field = f2->field; f2->field = tmp_; } while (0)
	SWAP_FIELD(Oid, relfilenode);
	SWAP_FIELD(Oid, reltablespace);
	SWAP_FIELD(int32, relpages);
	SWAP_FIELD(float4, reltuples);
	SWAP_FIELD(int32, relallvisible);
	HWM_SWAP_RELALLFROZEN(f1, f2);
	if (f1->relkind == RELKIND_RELATION)
	{
		SWAP_FIELD(TransactionId, relfrozenxid);
		SWAP_FIELD(MultiXactId, relminmxid);
		SWAP_FIELD(Oid, reltoastrelid);
	}
#undef SWAP_FIELD

	CatalogTupleUpdate(relrel, &t1->t_self, t1);
	CatalogTupleUpdate(relrel, &t2->t_self, t2);

	if (f1->relkind == RELKIND_RELATION && (OidIsValid(f1->reltoastrelid) || OidIsValid(f2->reltoastrelid)))
	{
		ObjectAddress base;
		ObjectAddress toast;
		Oid			owners[2] = {r1, r2};
		Oid			toasts[2] = {f1->reltoastrelid, f2->reltoastrelid};

		for (int i = 0; i < 2; i++)
			if (OidIsValid(toasts[i]) &&
				deleteDependencyRecordsFor(RelationRelationId, toasts[i], false) != 1)
				elog(ERROR, "expected one dependency record for TOAST table %u", toasts[i]);
		for (int i = 0; i < 2; i++)
		{
			if (!OidIsValid(toasts[i]))
				continue;
			ObjectAddressSet(base, RelationRelationId, owners[i]);
			ObjectAddressSet(toast, RelationRelationId, toasts[i]);
			recordDependencyOn(&toast, &base, DEPENDENCY_INTERNAL);
		}
	}

	heap_freetuple(t1);
	heap_freetuple(t2);
	table_close(relrel, RowExclusiveLock);
}

/*
 * The planner statistics that ANALYZE stored describe rows, so they follow
 * the rows, like relpages and reltuples: pg_statistic rows of r1 go to r2 and
 * back.  Deleted first, then inserted, so that the unique index never sees
 * both at once.
 */
static void
swap_statistics(Oid r1, Oid r2)
{
	Relation	statrel = table_open(StatisticRelationId, RowExclusiveLock);
	List	   *moved = NIL;
	ListCell   *lc;

	for (int i = 0; i < 2; i++)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key, Anum_pg_statistic_starelid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(i == 0 ? r1 : r2));
		scan = systable_beginscan(statrel, StatisticRelidAttnumInhIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			HeapTuple	copy = heap_copytuple(tup);

			((Form_pg_statistic) GETSTRUCT(copy))->starelid = i == 0 ? r2 : r1;
			moved = lappend(moved, copy);
			CatalogTupleDelete(statrel, &tup->t_self);
		}
		systable_endscan(scan);
	}
	foreach(lc, moved)
		CatalogTupleInsert(statrel, (HeapTuple) lfirst(lc));
	table_close(statrel, RowExclusiveLock);
}

/*
 * Columns added with a fast default keep their value in pg_attribute for the
 * rows stored before; those rows now live in the other table, so the
 * missing values trade places too.
 */
static void
swap_missing_values(Oid r1, Oid r2, int natts)
{
	Relation	attrel = table_open(AttributeRelationId, RowExclusiveLock);

	for (AttrNumber attno = 1; attno <= natts; attno++)
	{
		HeapTuple	a1 = SearchSysCacheCopy2(ATTNUM, ObjectIdGetDatum(r1), Int16GetDatum(attno));
		HeapTuple	a2 = SearchSysCacheCopy2(ATTNUM, ObjectIdGetDatum(r2), Int16GetDatum(attno));
		Datum		v[Natts_pg_attribute];
		bool		n[Natts_pg_attribute];
		bool		r[Natts_pg_attribute];
		HeapTuple	new1;
		HeapTuple	new2;
		bool		has1;
		bool		has2;
		bool		null1;
		bool		null2;
		Datum		m1;
		Datum		m2;

		if (!HeapTupleIsValid(a1) || !HeapTupleIsValid(a2))
			elog(ERROR, "cache lookup failed for attribute %d of %u or %u", attno, r1, r2);
		has1 = ((Form_pg_attribute) GETSTRUCT(a1))->atthasmissing;
		has2 = ((Form_pg_attribute) GETSTRUCT(a2))->atthasmissing;
		if (!has1 && !has2)
			continue;
		m1 = heap_getattr(a1, Anum_pg_attribute_attmissingval, RelationGetDescr(attrel), &null1);
		m2 = heap_getattr(a2, Anum_pg_attribute_attmissingval, RelationGetDescr(attrel), &null2);

		memset(r, false, sizeof(r));
		r[Anum_pg_attribute_atthasmissing - 1] = true;
		r[Anum_pg_attribute_attmissingval - 1] = true;
		memset(n, false, sizeof(n));
		v[Anum_pg_attribute_atthasmissing - 1] = BoolGetDatum(has2);
		v[Anum_pg_attribute_attmissingval - 1] = m2;
		n[Anum_pg_attribute_attmissingval - 1] = null2;
		new1 = heap_modify_tuple(a1, RelationGetDescr(attrel), v, n, r);
		v[Anum_pg_attribute_atthasmissing - 1] = BoolGetDatum(has1);
		v[Anum_pg_attribute_attmissingval - 1] = m1;
		n[Anum_pg_attribute_attmissingval - 1] = null1;
		new2 = heap_modify_tuple(a2, RelationGetDescr(attrel), v, n, r);
		CatalogTupleUpdate(attrel, &new1->t_self, new1);
		CatalogTupleUpdate(attrel, &new2->t_self, new2);
	}
	table_close(attrel, RowExclusiveLock);
}

/* A relation's access method and TOAST table, from its pg_class row */
static void
rel_am_toast(Oid relid, Oid *am, Oid *toast)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	if (am)
		*am = ((Form_pg_class) GETSTRUCT(tup))->relam;
	if (toast)
		*toast = ((Form_pg_class) GETSTRUCT(tup))->reltoastrelid;
	ReleaseSysCache(tup);
}

/*
 * Give the TOAST tables and their indexes the names that go with their new
 * owners (pg_toast_<owner OID>), through temporary names since each pair
 * holds the other's name.  Cosmetic, but keeps what CLUSTER keeps.
 */
static void
rename_toast(Oid r1, Oid r2)
{
	Oid			owners[2] = {r1, r2};
	Oid			toasts[2];
	Oid			idx[2];

	for (int i = 0; i < 2; i++)
	{
		Relation	toastrel;

		rel_am_toast(owners[i], NULL, &toasts[i]);
		if (!OidIsValid(toasts[i]))
			return;
		toastrel = relation_open(toasts[i], AccessExclusiveLock);
		idx[i] = toastrel->rd_rel->relhasindex ?
			linitial_oid(RelationGetIndexList(toastrel)) : InvalidOid;
		relation_close(toastrel, NoLock);
	}
	for (int i = 0; i < 2; i++)
	{
		RenameRelationInternal(toasts[i], psprintf("pg_toast_%u_hwm_swap", owners[i]), true, false);
		if (OidIsValid(idx[i]))
			RenameRelationInternal(idx[i], psprintf("pg_toast_%u_index_hwm_swap", owners[i]), true, true);
	}
	CommandCounterIncrement();
	for (int i = 0; i < 2; i++)
	{
		RenameRelationInternal(toasts[i], psprintf("pg_toast_%u", owners[i]), true, false);
		if (OidIsValid(idx[i]))
			RenameRelationInternal(idx[i], psprintf("pg_toast_%u_index", owners[i]), true, true);
	}
	CommandCounterIncrement();
}

PG_FUNCTION_INFO_V1(hwm_swap);

/*
 * CALL hwm.swap(target, staging, min_rows, min_ratio, check_query,
 * lock_timeout)
 */
Datum
hwm_swap(PG_FUNCTION_ARGS)
{
	TimestampTz started_at = GetCurrentTimestamp();
	Oid			target;
	Oid			staging;
	char	   *tgtname;
	char	   *stgname;
	Interval   *timeout;
	Relation	tgt;
	Relation	stg;
	List	   *pairs;
	ListCell   *lc;
	int64		tgt_rows = -1;
	int64		stg_rows = -1;
	HwmRoleSwitch sw;
	int			natts;

	hwm_require_arg(fcinfo, 0, "target");
	hwm_require_arg(fcinfo, 1, "staging");
	hwm_require_arg(fcinfo, 5, "lock_timeout");
	target = PG_GETARG_OID(0);
	staging = PG_GETARG_OID(1);
	timeout = PG_GETARG_INTERVAL_P(5);
	if (!PG_ARGISNULL(2) && PG_GETARG_INT64(2) < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("min_rows must not be negative")));
	if (!PG_ARGISNULL(3) && !(PG_GETARG_FLOAT8(3) >= 0))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("min_ratio must be zero or more"),
						errhint("min_ratio => 0.9 refuses a staging table with fewer than 90%% of the target's rows.")));
	if (target == staging)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("target and staging must be different tables")));

	check_table(target, "target");
	check_table(staging, "staging table");
	tgtname = hwm_qualified_name(target);
	stgname = hwm_qualified_name(staging);

	/* lock both (target first), bounded, then look again */
	lock_bounded(target, "target", tgtname, timeout);
	lock_bounded(staging, "staging table", stgname, timeout);
	check_table(target, "target");
	check_table(staging, "staging table");

	tgt = table_open(target, NoLock);
	stg = table_open(staging, NoLock);
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
	pairs = match_indexes(tgt, stg, tgtname, stgname);
	foreach(lc, pairs)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessExclusiveLock);

		check_storage_not_new(idx, "Index", stgname, tgtname);
		index_close(idx, NoLock);
	}
	if (OidIsValid(tgt->rd_rel->reltoastrelid) != OidIsValid(stg->rd_rel->reltoastrelid))
		SWAP_REFUSE("Only one of %s and %s has a TOAST table.", tgtname, stgname);
	natts = RelationGetDescr(tgt)->natts;

	/*
	 * The contents: the caller's check query first, then the constraints and
	 * row counts (so that they hold whatever the check query did).
	 *
	 * All of them read under a snapshot taken now that both locks are held.
	 * The statement's snapshot is older than the wait for the locks (and a
	 * REPEATABLE READ transaction's may be much older): rows committed into
	 * either table meanwhile are in the storage that trades places, so the
	 * checks must see them.  Nobody can change the two tables any more.
	 */
	SPI_connect();
	PushActiveSnapshot(GetLatestSnapshot());
	if (!PG_ARGISNULL(4))
	{
		char	   *q = text_to_cstring(PG_GETARG_TEXT_PP(4));
		bool		isnull = true;
		bool		ok = false;
		int			rc;

		/* the caller's own query, with the caller's rights and settings, read-only */
		rc = SPI_execute(q, true, 2);
		if (rc != SPI_OK_SELECT || SPI_tuptable == NULL ||
			SPI_tuptable->tupdesc->natts != 1 ||
			SPI_gettypeid(SPI_tuptable->tupdesc, 1) != BOOLOID || SPI_processed != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("check_query must return exactly one row of one boolean column"),
					 errdetail("check_query: %s", q)));
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			ok = !isnull && DatumGetBool(d);
		}
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("staging table %s cannot replace %s", stgname, tgtname),
					 errdetail("check_query returned %s: %s", isnull ? "null" : "false", q)));
	}

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
	{
		Oid			uid;
		int			sec;

		GetUserIdAndSecContext(&uid, &sec);
		SetUserIdAndSecContext(uid, sec | SECURITY_NOFORCE_RLS);
		(void) set_config_option("row_security", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	check_constraints(target, staging, tgtname, stgname);
	if (!PG_ARGISNULL(2) || !PG_ARGISNULL(3))
	{
		stg_rows = count_rows(staging);
		tgt_rows = count_rows(target);
	}
	hwm_unbecome(&sw);
	PopActiveSnapshot();
	if (!PG_ARGISNULL(2) && stg_rows < PG_GETARG_INT64(2))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("staging table %s cannot replace %s", stgname, tgtname),
				 errdetail("Staging has " INT64_FORMAT " rows; min_rows is " INT64_FORMAT ".",
						   stg_rows, PG_GETARG_INT64(2))));
	if (!PG_ARGISNULL(3) && (double) stg_rows < PG_GETARG_FLOAT8(3) * (double) tgt_rows)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("staging table %s cannot replace %s", stgname, tgtname),
				 errdetail("Staging has " INT64_FORMAT " rows and the target " INT64_FORMAT "; min_ratio is %g.",
						   stg_rows, tgt_rows, PG_GETARG_FLOAT8(3))));
	/*
	 * The swap itself.  Serializable transactions' predicate locks on pages
	 * and tuples of the heaps and of the indexes would name other storage
	 * afterwards: promote them to locks on the heaps (as CLUSTER does for the
	 * heap, and REINDEX for each index).
	 */
	TransferPredicateLocksToHeapRelation(tgt);
	TransferPredicateLocksToHeapRelation(stg);
	foreach(lc, pairs)
	{
		Relation	idx = index_open(lfirst_oid(lc), NoLock);

		TransferPredicateLocksToHeapRelation(idx);
		index_close(idx, NoLock);
	}
	swap_pg_class(target, staging);
	for (lc = list_head(pairs); lc; lc = lnext(pairs, lnext(pairs, lc)))
		swap_pg_class(lfirst_oid(lc), lfirst_oid(lnext(pairs, lc)));
	swap_missing_values(target, staging, natts);
	swap_statistics(target, staging);
	for (lc = list_head(pairs); lc; lc = lnext(pairs, lnext(pairs, lc)))
		swap_statistics(lfirst_oid(lc), lfirst_oid(lnext(pairs, lc)));
	table_close(tgt, NoLock);
	table_close(stg, NoLock);

	/*
	 * Close the smgr links before the relcache entries are rebuilt with each
	 * other's relfilenode (as swap_relation_files does), then make the new
	 * catalog rows visible.
	 */
	RelationCloseSmgrByOid(target);
	RelationCloseSmgrByOid(staging);
	foreach(lc, pairs)
		RelationCloseSmgrByOid(lfirst_oid(lc));
	CommandCounterIncrement();
	rename_toast(target, staging);

	(void) hwm_record_run(NULL, "swap", started_at, -1, -1,
						  tgt_rows, stg_rows, NULL, NULL, NULL, NULL);
	{
		ereport(NOTICE,
				(errmsg("hwm: swapped %s with %s; %s now holds the previous contents",
						tgtname, stgname, stgname),
				 errhint("CALL hwm.swap('%s', '%s') again to swap them back.", tgtname, stgname)));
	}
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

/*
 * For exchange.c: pair the indexes of two tables of the same layout (see
 * match_indexes), and trade the storage of two heaps and of each index pair
 * (target index, staging index, ...) in pg_class.  The caller holds ACCESS
 * EXCLUSIVE locks on both tables and takes care of the relcache's view of
 * which storage is new.
 */
List *
hwm_match_indexes(Relation tgt, Relation stg, const char *tgtname, const char *stgname)
{
	return match_indexes(tgt, stg, tgtname, stgname);
}

void
hwm_swap_storage(Oid r1, Oid r2, List *index_pairs)
{
	ListCell   *lc;

	swap_pg_class(r1, r2);
	for (lc = list_head(index_pairs); lc; lc = lnext(index_pairs, lnext(index_pairs, lc)))
		swap_pg_class(lfirst_oid(lc), lfirst_oid(lnext(index_pairs, lc)));
	CommandCounterIncrement();
	RelationCloseSmgrByOid(r1);
	RelationCloseSmgrByOid(r2);
	foreach(lc, index_pairs)
		RelationCloseSmgrByOid(lfirst_oid(lc));
}
