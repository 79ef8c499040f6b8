/*
 * exchange.c
 *		Partition exchange: when the target is declaratively partitioned and
 *		an overwrite range covers whole partitions, build each covered
 *		partition's new contents aside and exchange them in, instead of
 *		deleting and upserting row by row.  Called by range.c, which
 *		overwrites what the range leaves of a partition (a range that cuts
 *		through it) by the diff, in the same transaction; and by load.c for
 *		a first load into an empty target, which takes the same path for
 *		the whole target (hwm_aside_load, at the end of this file).
 *
 * For each covered leaf partition L (hwm_exchange_build builds every L
 * before range.c diffs the rest of the range, and only then does
 * hwm_exchange_finish lock any L, so the locks are short):
 *
 *	1. CREATE TABLE hwm_exchange_<oid of L> (LIKE L ...) next to L, with its
 *	   defaults, check constraints, storage, access method, persistence,
 *	   options, tablespace and owner, fill it from the source rows that fall
 *	   inside L's bounds, then build L's indexes (and the constraints they
 *	   carry) on it.  L stays readable and writable meanwhile.
 *	2. Lock L in ACCESS EXCLUSIVE mode, waiting at most
 *	   hwm.exchange_lock_timeout.
 *	3. Trade storage between L and the new table, heap and every index, the
 *	   way hwm.swap and CLUSTER do (storage.c), then drop the new table, which
 *	   now holds L's old storage: the old rows go with their files, so no
 *	   dead tuple is left behind and nothing needs VACUUM.
 *
 * L keeps its OID, name, index names, grants, comments, options and its
 * place in the partitioned table; the partitioned table itself is not
 * locked beyond what reading it takes.  (DETACH PARTITION, the other way to
 * exchange a partition, takes an ACCESS EXCLUSIVE lock on the partitioned
 * table until the transaction ends, and a new partition has a new identity.)
 *
 * The exchange must give the rows the diff would give, so anything that
 * makes a partition differ from "the source rows inside its bounds, loaded
 * with the target's defaults" makes hwm overwrite it row by row instead,
 * with a NOTICE saying why: triggers (they would not fire), foreign keys
 * from or to it (they would not be checked), logical replication (the
 * exchange is not sent as row changes), row level security, an identity
 * column or a default the source does not provide, dropped columns, a
 * partition that is itself partitioned, not owned by the role that runs the
 * overwrite, in use by the session, or whose lock is not granted in time,
 * and a Citus table (the coordinator's relation is a shell; its rows live
 * on the shards, which the diff reaches by pushing down).
 * Each exchange runs in a subtransaction, so giving up after the build
 * leaves nothing behind.
 */
#include "postgres.h"

#include "bulk.h"
#include "catalog.h"
#include "citus.h"
#include "exchange.h"
#include "pipeline.h"
#include "privilege.h"
#include "storage.h"
#include "util.h"
#include "compat.h"

#include "access/attmap.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_utilcmd.h"
#include "partitioning/partdesc.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

/* settings (hwm.c defines them) */
bool		hwm_partition_exchange = true;
int			hwm_exchange_lock_timeout = 1000;

/* A leaf partition that the range covers entirely */
typedef struct CoveredLeaf
{
	Oid			relid;
	char	   *name;			/* qualified, quoted */
	Datum		lo;				/* RANGE: [lo, hi) */
	Datum		hi;
	Datum	   *values;			/* LIST: its values */
	int			nvalues;
	/* once built (see build_leaf) */
	bool		built;
	Oid			newoid;			/* the table aside */
	char	   *newqual;
	int64		old_rows;
	int64		new_rows;
	/* where refuse() says why it gave up: the caller's, read after the error */
	const char **refusal;
} CoveredLeaf;

/* The partitioning of a target, when hwm can exchange its partitions */
typedef struct Partitioning
{
	bool		is_list;		/* else RANGE */
	Oid			array_type;		/* LIST: array of the column type */
	List	   *covered;		/* CoveredLeaf * */
} Partitioning;

static void refuse(const CoveredLeaf *lf, const char *why);

/*
 * The smallest value above v of a type whose values are discrete (integers,
 * dates, timestamps: one microsecond), if there is one.
 */
static bool
successor(Oid type, Datum v, Datum *next)
{
	switch (getBaseType(type))
	{
		case INT2OID:
			if (DatumGetInt16(v) == PG_INT16_MAX)
				return false;
			*next = Int16GetDatum(DatumGetInt16(v) + 1);
			return true;
		case INT4OID:
			if (DatumGetInt32(v) == PG_INT32_MAX)
				return false;
			*next = Int32GetDatum(DatumGetInt32(v) + 1);
			return true;
		case INT8OID:
			if (DatumGetInt64(v) == PG_INT64_MAX)
				return false;
			*next = Int64GetDatum(DatumGetInt64(v) + 1);
			return true;
		case DATEOID:
			if (DATE_NOT_FINITE(DatumGetDateADT(v)) ||
				DatumGetDateADT(v) >= DATEVAL_NOEND - 1)
				return false;
			*next = DateADTGetDatum(DatumGetDateADT(v) + 1);
			return true;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(v)) ||
				DatumGetTimestamp(v) >= DT_NOEND - 1)
				return false;
			*next = TimestampGetDatum(DatumGetTimestamp(v) + 1);
			return true;
		default:
			return false;
	}
}

/* A partition's bound, from pg_class.relpartbound */
static PartitionBoundSpec *
partition_bound(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Datum		d;
	bool		isnull;
	PartitionBoundSpec *spec;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);
	spec = isnull ? NULL : castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(d)));
	ReleaseSysCache(tup);
	return spec;
}

/*
 * Is the target's partitioning one whose partitions hwm can exchange?  RANGE
 * or LIST on exactly the partition column, with the column type's default
 * btree ordering and collation (so a partition's bounds mean what hwm's
 * range means), and not itself a partition.  Sets pt->is_list and, for
 * LIST, pt->array_type.
 */
static bool
partitioning_usable(const HwmPlan *plan, Relation tgt, Partitioning *pt)
{
	PartitionKey key;
	TypeCacheEntry *tc;
	AttrNumber	attno;

	if (tgt->rd_rel->relkind != RELKIND_PARTITIONED_TABLE || tgt->rd_rel->relispartition)
		return false;
	key = RelationGetPartitionKey(tgt);
	attno = get_attnum(plan->target, plan->partition_column);
	tc = lookup_type_cache(getBaseType(plan->part.type),
						   TYPECACHE_BTREE_OPFAMILY | TYPECACHE_EQ_OPR);
	if ((key->strategy != PARTITION_STRATEGY_RANGE && key->strategy != PARTITION_STRATEGY_LIST) ||
		key->partnatts != 1 || key->partattrs[0] != attno ||
		key->partopfamily[0] != tc->btree_opf ||
		key->partcollation[0] != plan->part.collation ||
		key->partcollation[0] != TupleDescAttr(RelationGetDescr(tgt), attno - 1)->attcollation)
		return false;
	pt->is_list = key->strategy == PARTITION_STRATEGY_LIST;
	if (pt->is_list)
	{
		pt->array_type = get_array_type(plan->part.type);
		if (!OidIsValid(pt->array_type) || !OidIsValid(tc->eq_opr))
			return false;
	}
	return true;
}

/*
 * Does a LIST partition with bound b lie inside [from, to]?  Collects its
 * values into leaf->values.
 */
static bool
list_leaf_covered(const HwmPlan *plan, PartitionBoundSpec *b, Datum from, Datum to,
				  CoveredLeaf *leaf)
{
	bool		covered = true;
	ListCell   *lc;

	leaf->values = palloc(sizeof(Datum) * list_length(b->listdatums));
	foreach(lc, b->listdatums)
	{
		Const	   *c = lfirst_node(Const, lc);

		/* rows with NULL are in no range, so such a partition is never covered */
		covered = covered && !c->constisnull &&
			hwm_value_cmp(&plan->part, c->constvalue, from) >= 0 &&
			hwm_value_cmp(&plan->part, c->constvalue, to) <= 0;
		if (!c->constisnull)
			leaf->values[leaf->nvalues++] = c->constvalue;
	}
	return covered;
}

/*
 * Does a RANGE partition with bound b lie inside [from, to]?  after_to is the
 * value just above to (NULL: none, or a type without one).  Sets leaf->lo
 * and leaf->hi when both bounds are values.
 */
static bool
range_leaf_covered(const HwmPlan *plan, PartitionBoundSpec *b, Datum from, Datum to,
				   const Datum *after_to, CoveredLeaf *leaf)
{
	PartitionRangeDatum *lo = linitial_node(PartitionRangeDatum, b->lowerdatums);
	PartitionRangeDatum *hi = linitial_node(PartitionRangeDatum, b->upperdatums);

	/* [lo, hi) inside [from, to]: lo >= from, and no value below hi is above to */
	if (lo->kind != PARTITION_RANGE_DATUM_VALUE || hi->kind != PARTITION_RANGE_DATUM_VALUE)
		return false;
	leaf->lo = castNode(Const, lo->value)->constvalue;
	leaf->hi = castNode(Const, hi->value)->constvalue;
	return hwm_value_cmp(&plan->part, leaf->lo, from) >= 0 &&
		(hwm_value_cmp(&plan->part, leaf->hi, to) <= 0 ||
		 (after_to && hwm_value_cmp(&plan->part, leaf->hi, *after_to) <= 0));
}

/*
 * Is the target partitioned so that hwm can exchange partitions (see
 * partitioning_usable), and which of its partitions lie entirely inside
 * [from, to]?  Returns false when it cannot exchange them.
 */
static bool
find_covered(const HwmPlan *plan, Datum from, Datum to, Partitioning *pt)
{
	Relation	tgt = table_open(plan->target, AccessShareLock);
	PartitionDesc pd;
	Datum		after_to = (Datum) 0;
	bool		has_after;

	memset(pt, 0, sizeof(*pt));
	if (!partitioning_usable(plan, tgt, pt))
	{
		table_close(tgt, NoLock);
		return false;
	}
	has_after = successor(plan->part.type, to, &after_to);

	pd = RelationGetPartitionDesc(tgt, true);
	for (int i = 0; i < pd->nparts; i++)
	{
		PartitionBoundSpec *b = partition_bound(pd->oids[i]);
		CoveredLeaf *leaf;
		bool		covered;

		if (b == NULL || b->is_default)
			continue;
		leaf = palloc0(sizeof(CoveredLeaf));
		if (pt->is_list)
			covered = list_leaf_covered(plan, b, from, to, leaf);
		else
			covered = range_leaf_covered(plan, b, from, to,
										 has_after ? &after_to : NULL, leaf);
		if (!covered)
			continue;
		leaf->relid = pd->oids[i];
		leaf->name = hwm_qualified_name(leaf->relid);
		pt->covered = lappend(pt->covered, leaf);
	}
	table_close(tgt, NoLock);
	return true;
}

/* A column's default expression (NULL: none) */
static Node *
column_default(Relation rel, AttrNumber attno)
{
	TupleConstr *c = RelationGetDescr(rel)->constr;

	for (int i = 0; c && i < c->num_defval; i++)
		if (c->defval[i].adnum == attno)
			return stringToNode(c->defval[i].adbin);
	return NULL;
}

static bool
loaded(const HwmPlan *plan, const char *colname)
{
	ListCell   *lc;

	foreach(lc, plan->load_columns)
		if (strcmp((char *) lfirst(lc), colname) == 0)
			return true;
	return false;
}

/*
 * leaf_refusal for the leaf's columns: a dropped column, or one the source
 * does not provide (not loaded, not generated) whose identity or default
 * differs from the target's.  NULL when they allow the exchange.
 */
static const char *
columns_refusal(const HwmPlan *plan, Relation leaf, Relation tgt)
{
	TupleDesc	desc = RelationGetDescr(leaf);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		AttrNumber	tattno;

		if (att->attisdropped)
			return "it has dropped columns";
		if (att->attgenerated || loaded(plan, NameStr(att->attname)))
			continue;
		tattno = get_attnum(RelationGetRelid(tgt), NameStr(att->attname));
		if (att->attidentity || TupleDescAttr(RelationGetDescr(tgt), tattno - 1)->attidentity)
			return psprintf("its identity column %s is not in the source",
							quote_identifier(NameStr(att->attname)));
		if (!equal(column_default(leaf, att->attnum), column_default(tgt, tattno)))
			return psprintf("column %s, which the source lacks, has another default in the partition than in the target",
							quote_identifier(NameStr(att->attname)));
	}
	return NULL;
}

/*
 * leaf_refusal for foreign keys from the leaf or to it, which the exchange
 * would not check.  NULL when there is none.
 */
static const char *
foreign_key_refusal(Oid relid)
{
	Relation	conrel = table_open(ConstraintRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(conrel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tup;
	const char *fk = NULL;

	while (fk == NULL && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);

		if (con->contype == CONSTRAINT_FOREIGN && con->conrelid == relid)
			fk = psprintf("its foreign key %s would not be checked",
						  quote_identifier(NameStr(con->conname)));
		else if (con->contype == CONSTRAINT_FOREIGN && con->confrelid == relid)
			fk = psprintf("foreign key %s of %s refers to it",
						  quote_identifier(NameStr(con->conname)),
						  hwm_qualified_name(con->conrelid));
	}
	systable_endscan(scan);
	table_close(conrel, AccessShareLock);
	return fk;
}

/* leaf_refusal for the leaf's indexes: one that is not valid, or NULL */
static const char *
index_refusal(Relation leaf)
{
	List	   *indexes = RelationGetIndexList(leaf);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		HeapTuple	itup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index idx;
		bool		ok;

		if (!HeapTupleIsValid(itup))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		idx = (Form_pg_index) GETSTRUCT(itup);
		ok = idx->indisvalid && idx->indisready && idx->indislive;
		ReleaseSysCache(itup);
		if (!ok)
			return psprintf("its index %s is not valid",
							quote_identifier(get_rel_name(lfirst_oid(lc))));
	}
	return NULL;
}

/*
 * Why the leaf cannot be exchanged (a phrase for the NOTICE), or NULL.
 * Called before the build and again under the exclusive lock.
 */
static const char *
leaf_refusal(const HwmPlan *plan, Relation leaf, Relation tgt)
{
	Oid			relid = RelationGetRelid(leaf);
	PublicationDesc pubdesc;
	const char *why;

	/* the coordinator's relation is an empty shell: the rows are elsewhere */
	if (hwm_citus_is_table(RelationGetRelid(tgt)) || hwm_citus_is_table(relid))
		return "it is a Citus table, whose rows live on the shards";
	if (leaf->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		return "it is partitioned itself";
	if (leaf->rd_rel->relkind != RELKIND_RELATION)
		return "it is not an ordinary table";
	if (leaf->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		return "it is a temporary table";
	if (leaf->rd_rel->relispartition && PartitionHasPendingDetach(relid))
		return "it is being detached";
	if (!object_ownercheck(RelationRelationId, relid, GetUserId()))
		return psprintf("role %s does not own it",
						quote_identifier(GetUserNameFromId(GetUserId(), false)));
	if (check_enable_rls(RelationGetRelid(tgt), InvalidOid, true) == RLS_ENABLED)
		return "row level security applies to the target";
	if ((why = columns_refusal(plan, leaf, tgt)) != NULL)
		return why;
	if (leaf->trigdesc)
		for (int i = 0; i < leaf->trigdesc->numtriggers; i++)
			if (!leaf->trigdesc->triggers[i].tgisinternal)
				return psprintf("its trigger %s would not fire",
								quote_identifier(leaf->trigdesc->triggers[i].tgname));
	if ((why = foreign_key_refusal(relid)) != NULL)
		return why;

	RelationBuildPublicationDesc(leaf, &pubdesc);
	if (pubdesc.pubactions.pubinsert || pubdesc.pubactions.pubupdate ||
		pubdesc.pubactions.pubdelete || pubdesc.pubactions.pubtruncate)
		return "it is published for logical replication, which would not see the exchange";

	return index_refusal(leaf);
}

/*
 * Give up the exchange of lf from inside the subtransaction: why goes to
 * the caller's *lf->refusal (see exchange_guarded, hwm_aside_load), which
 * reads it once the error has rolled the subtransaction back.
 */
static void
refuse(const CoveredLeaf *lf, const char *why)
{
	*lf->refusal = why;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", why)));
}

/* " WITH (k = 'v', ...)" for a relation's storage options, or "" */
static char *
with_options(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	StringInfoData buf;
	Datum		d;
	bool		isnull;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	initStringInfo(&buf);
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	if (!isnull)
	{
		Datum	   *opts;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &opts, NULL, &n);
		for (int i = 0; i < n; i++)
		{
			char	   *opt = TextDatumGetCString(opts[i]);
			char	   *eq = strchr(opt, '=');

			if (eq == NULL)
				continue;
			*eq = '\0';
			appendStringInfo(&buf, "%s%s = %s", buf.len ? ", " : " WITH (",
							 quote_identifier(opt), quote_literal_cstr(eq + 1));
		}
		if (buf.len)
			appendStringInfoChar(&buf, ')');
	}
	ReleaseSysCache(tup);
	return buf.data;
}

/*
 * The relcache must know that r1 now has storage created in this
 * transaction and r2 the storage r1 had (as CLUSTER does in
 * swap_relation_files), so WAL is skipped or written as that storage needs.
 */
static void
storage_now_new(Oid r1, Oid r2)
{
	Relation	rel1 = relation_open(r1, NoLock);
	Relation	rel2 = relation_open(r2, NoLock);

	rel2->rd_createSubid = rel1->rd_createSubid;
	rel2->rd_newRelfilelocatorSubid = rel1->rd_newRelfilelocatorSubid;
	rel2->rd_firstRelfilelocatorSubid = rel1->rd_firstRelfilelocatorSubid;
	RelationAssumeNewRelfilelocator(rel1);
	relation_close(rel1, NoLock);
	relation_close(rel2, NoLock);
}

/* Size statistics of a freshly filled table (and its indexes) in pg_class */
static void
set_size_stats(Relation rel, int64 rows)
{
	Relation	relrel = table_open(RelationRelationId, RowExclusiveLock);
	List	   *rels = lcons_oid(RelationGetRelid(rel), RelationGetIndexList(rel));
	ListCell   *lc;

	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	r = relation_open(relid, NoLock);
		HeapTuple	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
		Form_pg_class form;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for relation %u", relid);
		form = (Form_pg_class) GETSTRUCT(tup);
		form->relpages = (int32) RelationGetNumberOfBlocks(r);
		form->reltuples = (r->rd_rel->relkind == RELKIND_INDEX && r->rd_indpred != NIL) ?
			-1 : (float4) rows;
		form->relallvisible = 0;
		HWM_SET_RELALLFROZEN(form, 0);
		CatalogTupleUpdate(relrel, &tup->t_self, tup);
		heap_freetuple(tup);
		relation_close(r, NoLock);
	}
	table_close(relrel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Create on the table newoid (schema.name, made LIKE the leaf) a copy of
 * each index of the leaf, constraints included, and build it.
 */
static void
clone_indexes(Oid leafoid, Oid newoid, const char *nspname, const char *name)
{
	Relation	leaf = table_open(leafoid, AccessShareLock);
	Relation	newrel = table_open(newoid, ShareLock);
	AttrMap    *map = build_attrmap_by_name(RelationGetDescr(newrel), RelationGetDescr(leaf), false);
	RangeVar   *rv = makeRangeVar(pstrdup(nspname), pstrdup(name), -1);
	List	   *indexes = RelationGetIndexList(leaf);
	ListCell   *lc;

	table_close(newrel, NoLock);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		IndexStmt  *stmt = generateClonedIndexStmt(rv, idx, map, NULL);

		index_close(idx, AccessShareLock);
		DefineIndex(newoid, stmt, InvalidOid, InvalidOid, InvalidOid, -1,
					false, true, true, false, true);
		CommandCounterIncrement();
	}
	list_free(indexes);
	free_attrmap(map);
	table_close(leaf, NoLock);
}

/*
 * Create the table aside for build_leaf, newname in the leaf's schema nsp:
 * LIKE the leaf, with its persistence, access method, options, tablespace
 * and owner; sets lf->newoid.
 */
static void
create_aside(CoveredLeaf *lf, const char *newname, Oid nsp)
{
	Relation	leaf = table_open(lf->relid, AccessShareLock);
	Oid			owner = leaf->rd_rel->relowner;
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "CREATE %sTABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING GENERATED"
					 " INCLUDING CONSTRAINTS INCLUDING STORAGE"
					 " INCLUDING COMPRESSION) USING %s%s",
					 leaf->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED ? "UNLOGGED " : "",
					 lf->newqual, lf->name, quote_identifier(get_am_name(leaf->rd_rel->relam)),
					 with_options(lf->relid));
	if (OidIsValid(leaf->rd_rel->reltablespace))
		appendStringInfo(&sql, " TABLESPACE %s",
						 quote_identifier(get_tablespace_name(leaf->rd_rel->reltablespace)));
	table_close(leaf, NoLock);
	hwm_spi_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	lf->newoid = get_relname_relid(newname, nsp);
	if (owner != GetUserId())
		hwm_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s", lf->newqual,
							  quote_identifier(GetUserNameFromId(owner, false))),
					 0, NULL, NULL, NULL, SPI_OK_UTILITY);
}

/*
 * Fill the table aside with the source rows inside the leaf's bounds (its
 * values for LIST, [lo, hi) for RANGE); sets lf->new_rows.
 */
static void
fill_aside(const HwmPlan *plan, const Partitioning *pt, CoveredLeaf *lf)
{
	if (pt->is_list)
	{
		Oid			argtypes[1] = {pt->array_type};
		Datum		values[1];
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(plan->part.type, &typlen, &typbyval, &typalign);
		values[0] = PointerGetDatum(construct_array(lf->values, lf->nvalues, plan->part.type,
													typlen, typbyval, typalign));
		lf->new_rows = (int64) hwm_bulk_insert(hwm_plan_fill_sql(plan, lf->newqual, true),
											   1, argtypes, values, NULL);
	}
	else
	{
		Oid			argtypes[2] = {plan->part.type, plan->part.type};
		Datum		values[2] = {lf->lo, lf->hi};

		lf->new_rows = (int64) hwm_bulk_insert(hwm_plan_fill_sql(plan, lf->newqual, false),
											   2, argtypes, values, NULL);
	}
}

/*
 * Create the table aside for lf->relid (see create_aside), named
 * hwm_exchange_<its oid> in its schema; sets lf->newqual and lf->newoid.
 */
static void
start_aside(CoveredLeaf *lf)
{
	Oid			nsp = get_rel_namespace(lf->relid);
	char	   *newname = psprintf("hwm_exchange_%u", lf->relid);

	lf->newqual = quote_qualified_identifier(get_namespace_name(nsp), newname);
	if (OidIsValid(get_relname_relid(newname, nsp)))
		refuse(lf, psprintf("a table named %s is in the way", lf->newqual));
	create_aside(lf, newname, nsp);
}

/*
 * The indexes of lf->relid (and the constraints they carry), built on the
 * table aside now that its rows are all there: a sorted build takes about
 * half the time of inserting every row into every index.  They are cloned
 * the way CREATE TABLE ... (LIKE ... INCLUDING INDEXES) clones them, so
 * that trade_in pairs them with the original's.  A key twice among the rows
 * fails the build of a unique index with unique_violation.
 */
static void
index_aside(CoveredLeaf *lf)
{
	Oid			nsp = get_rel_namespace(lf->newoid);

	clone_indexes(lf->relid, lf->newoid, get_namespace_name(nsp), get_rel_name(lf->newoid));
}

/*
 * Step 1 for one covered leaf: build its new contents in a table aside
 * (see the file header), and count the rows that will go.  Runs inside
 * exchange_guarded's subtransaction, as the role that runs the overwrite.
 */
static void
build_leaf(const HwmPlan *plan, const Partitioning *pt, CoveredLeaf *lf)
{
	bool		isnull;

	start_aside(lf);
	fill_aside(plan, pt, lf);
	index_aside(lf);

	/* the rows that go, counted now so readers wait less */
	hwm_spi_exec(psprintf("SELECT pg_catalog.count(*) FROM ONLY %s", lf->name),
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	lf->old_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Step 3 for a table whose new contents lf built aside (a leaf, or load.c's
 * whole target), locked ACCESS EXCLUSIVE and checked again under the lock:
 * check that the copy has its storage layout, trade storage, and drop the
 * table aside, which now holds the old rows.
 */
static void
trade_in(CoveredLeaf *lf)
{
	Relation	leaf = table_open(lf->relid, NoLock);
	Relation	newrel;
	List	   *pairs;
	ListCell   *lc;

	if (leaf->rd_refcnt != 1 || AfterTriggerPendingOnRel(lf->relid))
		refuse(lf, "it is in use by this session");
	newrel = table_open(lf->newoid, AccessExclusiveLock);
	if (RelationGetDescr(leaf)->natts != RelationGetDescr(newrel)->natts ||
		leaf->rd_rel->relam != newrel->rd_rel->relam ||
		leaf->rd_rel->relpersistence != newrel->rd_rel->relpersistence ||
		leaf->rd_rel->reltablespace != newrel->rd_rel->reltablespace ||
		leaf->rd_rel->relowner != newrel->rd_rel->relowner ||
		OidIsValid(leaf->rd_rel->reltoastrelid) != OidIsValid(newrel->rd_rel->reltoastrelid))
		refuse(lf, "a copy made with CREATE TABLE ... LIKE does not have its storage layout");
	for (int i = 0; i < RelationGetDescr(leaf)->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(RelationGetDescr(leaf), i);
		Form_pg_attribute b = TupleDescAttr(RelationGetDescr(newrel), i);

		if (a->atttypid != b->atttypid || a->atttypmod != b->atttypmod ||
			a->attcollation != b->attcollation || a->attlen != b->attlen ||
			a->attalign != b->attalign || a->attnotnull != b->attnotnull ||
			strcmp(NameStr(a->attname), NameStr(b->attname)) != 0)
			refuse(lf, "a copy made with CREATE TABLE ... LIKE does not have its storage layout");
	}
	pairs = hwm_storage_match_indexes(leaf, newrel, lf->name, lf->newqual);
	for (lc = list_head(pairs); lc; lc = lnext(pairs, lnext(pairs, lc)))
		if (get_rel_tablespace(lfirst_oid(lc)) != get_rel_tablespace(lfirst_oid(lnext(pairs, lc))))
			refuse(lf, psprintf("its index %s is in another tablespace than the table",
							quote_identifier(get_rel_name(lfirst_oid(lc)))));
	set_size_stats(newrel, lf->new_rows);
	table_close(newrel, NoLock);
	table_close(leaf, NoLock);

	hwm_storage_trade(lf->relid, lf->newoid, pairs, false);
	storage_now_new(lf->relid, lf->newoid);
	for (lc = list_head(pairs); lc; lc = lnext(pairs, lnext(pairs, lc)))
		storage_now_new(lfirst_oid(lc), lfirst_oid(lnext(pairs, lc)));

	/* the table's activity counters: as TRUNCATE and INSERT would leave them */
	leaf = table_open(lf->relid, NoLock);
	pgstat_count_truncate(leaf);
	pgstat_count_heap_insert(leaf, lf->new_rows);
	table_close(leaf, NoLock);

	hwm_spi_exec(psprintf("DROP TABLE %s", lf->newqual), 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	lf->newoid = InvalidOid;
}

/*
 * Steps 2 and 3 for one built leaf: lock it, check everything again under
 * the lock, trade storage and drop the table that now holds the old rows.
 * Runs inside exchange_guarded's subtransaction.
 */
static void
swap_leaf(const HwmPlan *plan, const Partitioning *pt, CoveredLeaf *lf)
{
	Relation	leaf;
	Relation	tgt;
	const char *why;

	hwm_lock_within(lf->relid, hwm_exchange_lock_timeout, lf->name, NULL, NULL);
	leaf = table_open(lf->relid, NoLock);
	tgt = table_open(plan->target, AccessShareLock);
	why = leaf_refusal(plan, leaf, tgt);
	table_close(tgt, NoLock);
	table_close(leaf, NoLock);
	if (why)
		refuse(lf, why);
	trade_in(lf);
}

/*
 * Why a build or a trade that raised edata gave up (a refusal, which
 * refuse() put in refusal; the lock not granted in time, a deadlock, a
 * missing privilege, a row that breaks a constraint or a value out of
 * range), or NULL when the error must be raised again (a cancel, say).
 * The row-by-row path that runs instead raises a bad row's error again, in
 * the target's terms.
 */
static const char *
gave_up(const ErrorData *edata, const char *refusal)
{
	if (refusal)
		return refusal;
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		return psprintf("its lock was not granted within hwm.exchange_lock_timeout (%d ms)",
						hwm_exchange_lock_timeout);
	if (edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ||
		edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		return psprintf("%s", edata->message);
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION ||
		ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_DATA_EXCEPTION)
		return psprintf("building its new contents failed with SQLSTATE %s",
						unpack_sql_state(edata->sqlerrcode));
	return NULL;
}

/*
 * Run build_leaf (swap false) or swap_leaf (swap true) in a subtransaction.
 * Returns false, with the reason, when the exchange gave up (gave_up): the
 * subtransaction is rolled back, so nothing of that step remains, and the
 * caller overwrites the partition row by row.  Any other error is raised
 * again at once.
 */
static bool
exchange_guarded(const HwmPlan *plan, const Partitioning *pt, CoveredLeaf *lf,
				 bool swap, const char **why)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	volatile bool ok = false;
	const char *refusal = NULL;	/* (set through lf: in memory, not a register) */

	lf->refusal = &refusal;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		if (swap)
			swap_leaf(plan, pt, lf);
		else
			build_leaf(plan, pt, lf);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		ok = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		lf->refusal = NULL;
		if ((*why = gave_up(edata, refusal)) == NULL)
			ReThrowError(edata);
	}
	PG_END_TRY();
	lf->refusal = NULL;
	return ok;
}

/* Sort datums with the partition column's ordering (few: insertion sort) */
static void
sort_datums(const HwmPlan *plan, Datum *d, Datum *d2, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && hwm_value_cmp(&plan->part, d[j - 1], d[j]) > 0; j--)
		{
			Datum		t = d[j];

			d[j] = d[j - 1];
			d[j - 1] = t;
			if (d2)
			{
				t = d2[j];
				d2[j] = d2[j - 1];
				d2[j - 1] = t;
			}
		}
}

/* The NOTICE for a covered partition that is overwritten row by row */
static void
fallback_notice(const HwmPlan *plan, const CoveredLeaf *lf, const char *why)
{
	ereport(NOTICE,
			(errmsg("hwm: partition %s of %s is overwritten row by row, not exchanged: %s",
					lf->name, hwm_qualified_name(plan->target), why)));
}


/* The built exchange of a range, between hwm_exchange_build and _finish */
struct HwmExchange
{
	const HwmPlan *plan;
	Partitioning pt;
	Datum		from;
	Datum		to;
};

/*
 * Step 1 (see exchange.h): build every covered partition that can be
 * exchanged; the others get a NOTICE and are left to the diff.
 */
HwmExchange *
hwm_exchange_build(const HwmPlan *plan, Datum from, Datum to)
{
	HwmExchange *x = palloc0(sizeof(HwmExchange));
	ListCell   *lc;
	bool		any = false;

	if (!hwm_partition_exchange || !plan->has_part ||
		!find_covered(plan, from, to, &x->pt) || x->pt.covered == NIL)
		return NULL;
	x->plan = plan;
	x->from = from;
	x->to = to;
	foreach(lc, x->pt.covered)
	{
		CoveredLeaf *lf = lfirst(lc);
		const char *why;
		Relation	leaf = table_open(lf->relid, AccessShareLock);
		Relation	tgt = table_open(plan->target, AccessShareLock);

		why = leaf_refusal(plan, leaf, tgt);
		table_close(tgt, NoLock);
		table_close(leaf, NoLock);
		if (why == NULL && exchange_guarded(plan, &x->pt, lf, false, &why))
			lf->built = any = true;
		else
			fallback_notice(plan, lf, why);
	}
	return any ? x : NULL;
}

/* A new HwmRange */
static HwmRange *
make_range(Datum lo, bool lo_incl, Datum hi, bool hi_incl)
{
	HwmRange   *r = palloc(sizeof(HwmRange));

	r->lo = lo;
	r->lo_incl = lo_incl;
	r->hi = hi;
	r->hi_incl = hi_incl;
	return r;
}

/*
 * The pieces of [from, to] between the built partitions, in ascending
 * order: a RANGE partition takes [lo, hi), a LIST partition its values.
 */
List *
hwm_exchange_gaps(const HwmExchange *x)
{
	const HwmPlan *plan = x->plan;
	int			nvalues = 0;
	int			n = 0;
	Datum	   *lo;
	Datum	   *hi;
	ListCell   *lc;
	List	   *gaps = NIL;
	Datum		start = x->from;
	bool		start_incl = true;

	foreach(lc, x->pt.covered)
		nvalues += x->pt.is_list ? ((CoveredLeaf *) lfirst(lc))->nvalues : 1;
	lo = palloc(sizeof(Datum) * nvalues);
	hi = palloc(sizeof(Datum) * nvalues);
	foreach(lc, x->pt.covered)
	{
		CoveredLeaf *lf = lfirst(lc);

		if (!lf->built)
			continue;
		if (x->pt.is_list)
			for (int i = 0; i < lf->nvalues; i++)
				lo[n++] = lf->values[i];
		else
		{
			lo[n] = lf->lo;
			hi[n++] = lf->hi;
		}
	}
	sort_datums(plan, lo, x->pt.is_list ? NULL : hi, n);
	for (int i = 0; i < n; i++)
	{
		gaps = lappend(gaps, make_range(start, start_incl, lo[i], false));
		start = x->pt.is_list ? lo[i] : hi[i];
		start_incl = !x->pt.is_list;
	}
	return lappend(gaps, make_range(start, start_incl, x->to, true));
}

/*
 * Step 2 (see exchange.h): lock and exchange each built partition; one that
 * cannot be exchanged now has its table aside dropped and its range handed
 * back for the diff.
 */
int
hwm_exchange_finish(HwmExchange *x, int64 *deleted, int64 *inserted, List **leftover)
{
	ListCell   *lc;
	int			exchanged = 0;

	foreach(lc, x->pt.covered)
	{
		CoveredLeaf *lf = lfirst(lc);
		const char *why;

		if (!lf->built)
			continue;
		if (exchange_guarded(x->plan, &x->pt, lf, true, &why))
		{
			exchanged++;
			*deleted += lf->old_rows;
			*inserted += lf->new_rows;
			ereport(NOTICE,
					(errmsg("hwm: exchanged partition %s of %s: " INT64_FORMAT " old rows out, " INT64_FORMAT " new rows in",
							lf->name, hwm_qualified_name(x->plan->target), lf->old_rows, lf->new_rows)));
			continue;
		}
		fallback_notice(x->plan, lf, why);
		hwm_spi_exec(psprintf("DROP TABLE %s", lf->newqual), 0, NULL, NULL, NULL, SPI_OK_UTILITY);
		if (x->pt.is_list)
			for (int i = 0; i < lf->nvalues; i++)
				*leftover = lappend(*leftover, make_range(lf->values[i], true, lf->values[i], true));
		else
			*leftover = lappend(*leftover, make_range(lf->lo, true, lf->hi, false));
	}
	return exchanged;
}

/*
 * The first load built aside (load.c): a whole target that is an ordinary
 * table without partitions, with no block yet (never written, or
 * truncated), takes the run's slice as a leaf takes its new contents: a
 * table aside made LIKE it, filled, its indexes built, then storage traded
 * under the lock and the table aside dropped.  No snapshot can see a row
 * in a target without blocks, so trading its storage hides nothing from
 * anyone; the new rows are the run's, visible when it commits.  It is
 * refused for what refuses a leaf (leaf_refusal), and for a target that is
 * a partition, when wal_level is minimal (storage made in this transaction
 * is not WAL-logged there) and for a target whose storage is new in this
 * transaction.
 */
static const char *
target_refusal(const HwmPlan *plan, Relation tgt)
{
	if (tgt->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		return "it is partitioned";
	if (tgt->rd_rel->relkind != RELKIND_RELATION)
		return "it is not an ordinary table";
	if (tgt->rd_rel->relispartition)
		return "it is a partition";
	if (!XLogIsNeeded())
		return "wal_level is minimal";
	if (tgt->rd_createSubid != InvalidSubTransactionId ||
		tgt->rd_firstRelfilelocatorSubid != InvalidSubTransactionId)
		return "its storage is new in this transaction";
	if (tgt->rd_refcnt != 1 || AfterTriggerPendingOnRel(RelationGetRelid(tgt)))
		return "it is in use by this session";
	return leaf_refusal(plan, tgt, tgt);
}

/* See exchange.h */
const char *
hwm_aside_refusal(const HwmPlan *plan, bool *empty)
{
	Relation	tgt = table_open(plan->target, AccessShareLock);
	const char *why = NULL;

	*empty = !RELKIND_HAS_STORAGE(tgt->rd_rel->relkind) ||
		RelationGetNumberOfBlocks(tgt) == 0;
	if (*empty)
		why = target_refusal(plan, tgt);
	table_close(tgt, NoLock);
	return why;
}

/* See exchange.h; runs inside the caller's subtransaction */
int64
hwm_aside_load(const HwmPlan *plan, int64 (*fill) (const char *table, void *arg), void *arg,
			   const char **refusal)
{
	CoveredLeaf lf = {0};
	Relation	tgt;
	const char *why;
	int			nest = NewGUCNestLevel();

	/*
	 * The table aside is hwm's own: its DDL's debug messages (index builds,
	 * event trigger calls, with OIDs) go to the server log only, so that
	 * DEBUG1 at the client shows the run's path (load.c) and not them.
	 */
	if (client_min_messages < NOTICE)
		(void) set_config_option("client_min_messages", "notice", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	*refusal = NULL;
	lf.refusal = refusal;
	lf.relid = plan->target;
	lf.name = hwm_qualified_name(plan->target);
	start_aside(&lf);
	lf.new_rows = fill(lf.newqual, arg);
	index_aside(&lf);

	hwm_lock_within(lf.relid, hwm_exchange_lock_timeout, lf.name, NULL, NULL);
	tgt = table_open(lf.relid, NoLock);
	why = RelationGetNumberOfBlocks(tgt) != 0 ? "it is no longer empty" :
		target_refusal(plan, tgt);
	table_close(tgt, NoLock);
	if (why)
		refuse(&lf, why);
	trade_in(&lf);
	AtEOXact_GUC(true, nest);
	return lf.new_rows;
}

/* See exchange.h */
const char *
hwm_aside_gave_up(const ErrorData *edata, const char *refusal)
{
	return gave_up(edata, refusal);
}
