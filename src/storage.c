/*
 * storage.c
 *		Trading storage between two relations of the same layout: the heart
 *		of hwm.swap (swap.c) and of partition exchange (exchange.c).
 *
 * As CLUSTER and REFRESH MATERIALIZED VIEW do (cluster.c,
 * swap_relation_files): in pg_class, the two heaps trade relfilenode,
 * tablespace, frozen xid and multixact limits, size statistics and their
 * TOAST tables (by link: a TOAST pointer names its TOAST table by OID, so the
 * TOAST table must follow the heap whose tuples point to it), and every
 * index trades storage with its partner of the same definition.  Nothing is
 * copied, and every OID stays where it was.  The callers check everything
 * the executor would have checked on INSERT before they trade.
 */
#include "postgres.h"

#include "storage.h"
#include "util.h"
#include "compat.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_statistic.h"
#include "commands/tablecmds.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

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
List *
hwm_storage_match_indexes(Relation tgt, Relation stg, const char *tgtname, const char *stgname)
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


/*
 * Trade the storage of r1 and r2 and of each index pair (see storage.h).
 *
 * Serializable transactions' predicate locks on pages and tuples of the
 * heaps and of the indexes would name other storage afterwards: they are
 * promoted to locks on the heaps first (as CLUSTER does for the heap, and
 * REINDEX for each index).  The smgr links are closed before the relcache
 * entries are rebuilt with each other's relfilenode (as swap_relation_files
 * does), then the new catalog rows are made visible.
 */
void
hwm_storage_trade(Oid r1, Oid r2, List *index_pairs, bool row_facts)
{
	List	   *all = list_concat(list_make2_oid(r1, r2), index_pairs);
	ListCell   *lc;

	foreach(lc, all)
	{
		Relation	rel = relation_open(lfirst_oid(lc), AccessExclusiveLock);

		TransferPredicateLocksToHeapRelation(rel);
		relation_close(rel, NoLock);
	}
	for (lc = list_head(all); lc; lc = lnext(all, lnext(all, lc)))
		swap_pg_class(lfirst_oid(lc), lfirst_oid(lnext(all, lc)));
	if (row_facts)
	{
		Relation	rel = relation_open(r1, NoLock);
		int			natts = RelationGetDescr(rel)->natts;

		relation_close(rel, NoLock);
		swap_missing_values(r1, r2, natts);
		for (lc = list_head(all); lc; lc = lnext(all, lnext(all, lc)))
			swap_statistics(lfirst_oid(lc), lfirst_oid(lnext(all, lc)));
	}
	foreach(lc, all)
		RelationCloseSmgrByOid(lfirst_oid(lc));
	CommandCounterIncrement();
	rename_toast(r1, r2);
	list_free(all);
}
