/*
 * key.c
 *		The one definition of a pipeline's key, and the SQL that compares
 *		keys with it.
 *
 * A key is what the target's unique index that the load's upsert takes
 * as its conflict target says it is: its columns, in its order, compared
 * with the operators of its operator families under its collations, on
 * source values stored in the target columns' types (typmod included, as
 * the INSERT stores them: a source numeric 1.4 is key 1 of a numeric(10,0)
 * target).  INSERT ... ON CONFLICT applies that definition by itself; every
 * other statement that compares keys (the MERGE and its key-twice check,
 * the tombstones' newest row per key and their DELETE, the live test of
 * the partition statements, the overwrite's anti-join, the reconcile's
 * walk, batch bounds and anti-join) writes its comparisons with the
 * functions below, from the HwmKey that hwm_key_build read once from the
 * index.  So no statement deletes or keeps a row that another would treat
 * otherwise (DESIGN.md, guarantee 10; README, Keys).
 *
 * A definition that cannot be honoured is refused where the plan is built
 * (create_pipeline, alter_pipeline, every run): an index whose operator
 * family lacks an operator, or two unique indexes on the key's columns that
 * disagree about equality (both are the upsert's arbiters).
 */
#include "postgres.h"

#include "key.h"
#include "util.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "access/genam.h"
#include "utils/builtins.h"
#include "fmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

/* The index's operator of a strategy, refused when its family lacks it */
static char *
family_operator(Oid opfamily, Oid opcintype, int16 strategy, const char *col,
				const char *tgtname)
{
	Oid			opno = get_opfamily_member(opfamily, opcintype, opcintype, strategy);

	if (!OidIsValid(opno))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("the unique index of target %s on key column %s has an operator class without the operators hwm compares keys with",
						tgtname, col),
				 errdetail("hwm compares keys with the equality and ordering operators of the index's btree operator family, and family %u has no operator of strategy %d for type %s.",
						   opfamily, strategy, format_type_be(opcintype)),
				 errhint("Build the unique index with the type's default operator class.")));
	return hwm_operator_sql(opno);
}

/* " COLLATE c" or "" */
static const char *
collate_clause(Oid collation)
{
	if (!OidIsValid(collation))
		return "";
	return psprintf(" COLLATE %s", generate_collation_name(collation));
}

/*
 * Whether a typmod of type only limits a value's length (varchar, char,
 * bit, varbit): the INSERT refuses a value that does not fit, where a CAST
 * would cut it, so the key compares such a source value in the type
 * without its typmod (the same value, whatever the typmod).  Others
 * (numeric, timestamp, time, interval) round, as the INSERT does.
 */
static bool
length_only(Oid type)
{
	Oid			base = getBaseType(type);

	return base == VARCHAROID || base == BPCHAROID || base == BITOID || base == VARBITOID;
}

/*
 * The key's columns from the index: types, operators, and how a source
 * column is written to be compared as the target stores it.
 */
static void
key_column(HwmKeyColumn *c, Relation index, int i, Relation target, Relation source,
		   const char *tgtname, const char *srcname)
{
	Form_pg_attribute tatt = TupleDescAttr(RelationGetDescr(target),
										   index->rd_index->indkey.values[i] - 1);
	Oid			opcintype = index->rd_opcintype[i];
	Oid			opfamily = index->rd_opfamily[i];
	Oid			collation = index->rd_indcollation[i];
	TypeCacheEntry *tc = lookup_type_cache(getBaseType(tatt->atttypid),
										   TYPECACHE_BTREE_OPFAMILY);
	const char *name = NameStr(tatt->attname);
	Oid			cmp_proc;
	Oid			equalimage;

	c->name = pstrdup(quote_identifier(name));
	c->attnum = tatt->attnum;
	c->opfamily = opfamily;
	c->default_opfamily = tc->btree_opf == opfamily;
	c->eq = family_operator(opfamily, opcintype, BTEqualStrategyNumber, c->name, tgtname);
	c->target_collate = collation != tatt->attcollation ? collate_clause(collation) : "";

	/* the index's ordering, the target type's input and output */
	memset(&c->vt, 0, sizeof(c->vt));
	c->vt.type = tatt->atttypid;
	c->vt.typmod = tatt->atttypmod;
	c->vt.collation = collation;
	get_typlenbyval(tatt->atttypid, &c->vt.typlen, &c->vt.typbyval);
	c->vt.lt = family_operator(opfamily, opcintype, BTLessStrategyNumber, c->name, tgtname);
	c->vt.le = family_operator(opfamily, opcintype, BTLessEqualStrategyNumber, c->name, tgtname);
	c->vt.ge = family_operator(opfamily, opcintype, BTGreaterEqualStrategyNumber, c->name, tgtname);
	c->vt.gt = family_operator(opfamily, opcintype, BTGreaterStrategyNumber, c->name, tgtname);
	cmp_proc = get_opfamily_proc(opfamily, opcintype, opcintype, BTORDER_PROC);
	if (!OidIsValid(cmp_proc))
		elog(ERROR, "btree operator family %u has no comparison function for type %u",
			 opfamily, opcintype);
	c->vt.cmp_proc = cmp_proc;

	/* the index's own answer (btree deduplication asks it too) */
	equalimage = get_opfamily_proc(opfamily, opcintype, opcintype, BTEQUALIMAGE_PROC);
	c->spelled = !OidIsValid(equalimage) ||
		!DatumGetBool(OidFunctionCall1Coll(equalimage, collation, ObjectIdGetDatum(opcintype)));

	/* a source column: as is, or in the target's type, under the index's collation */
	c->source_open = "";
	c->source_close = "";
	c->source_cast = false;
	c->source_as_is = true;
	if (source != NULL)
	{
		AttrNumber	sattno = get_attnum(RelationGetRelid(source), name);
		Form_pg_attribute satt;
		int32		typmod;
		bool		cast;

		if (sattno == InvalidAttrNumber || sattno < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("unique key column \"%s\" does not exist in source %s", name, srcname),
					 errhint("The source must provide every column of the unique key.")));
		satt = TupleDescAttr(RelationGetDescr(source), sattno - 1);
		typmod = length_only(tatt->atttypid) ? -1 : tatt->atttypmod;
		cast = satt->atttypid != tatt->atttypid ||
			(typmod >= 0 && satt->atttypmod != typmod);
		c->source_cast = cast;
		c->source_as_is = !cast && satt->attcollation == collation;
		if (cast)
		{
			c->source_open = "CAST(";
			c->source_close = psprintf(" AS %s)%s",
									   format_type_extended(tatt->atttypid, typmod,
															FORMAT_TYPE_FORCE_QUALIFY |
															FORMAT_TYPE_TYPEMOD_GIVEN),
									   collate_clause(collation));
		}
		else if (satt->attcollation != collation)
			c->source_close = collate_clause(collation);
	}
}

/*
 * Whether two unique indexes on the key's columns say the same about
 * equality: the same operator family and collation for each column.
 */
static bool
same_equality(Relation a, Relation b)
{
	for (int i = 0; i < a->rd_index->indnkeyatts; i++)
	{
		int			j = 0;

		while (j < b->rd_index->indnkeyatts &&
			   b->rd_index->indkey.values[j] != a->rd_index->indkey.values[i])
			j++;
		if (j == b->rd_index->indnkeyatts ||
			a->rd_opfamily[i] != b->rd_opfamily[j] ||
			a->rd_indcollation[i] != b->rd_indcollation[j])
			return false;
	}
	return true;
}

/*
 * Whether index idx (valid, unique, immediate, plain) covers exactly the key
 * (with version, a history's key: the key's columns and that one;
 * InvalidAttrNumber: none)
 */
static bool
covers_key(Relation idx, Relation target, List *unique_key, AttrNumber version)
{
	Form_pg_index form = idx->rd_index;
	ListCell   *lc;

	if (version != InvalidAttrNumber)
	{
		bool		found = false;

		for (int i = 0; !found && i < form->indnkeyatts; i++)
			found = form->indkey.values[i] == version;
		if (!found)
			return false;
	}
	if (!form->indisunique || !form->indimmediate || !form->indisvalid ||
		form->indnkeyatts != list_length(unique_key) + (version != InvalidAttrNumber) ||
		!heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL))
		return false;
	foreach(lc, unique_key)
	{
		AttrNumber	attno = get_attnum(RelationGetRelid(target), (char *) lfirst(lc));
		bool		found = false;

		for (int i = 0; !found && i < form->indnkeyatts; i++)
			found = form->indkey.values[i] == attno;
		if (!found)
			return false;
	}
	return true;
}

/*
 * The key of target (and how source's columns compare with it; source may
 * be NULL): read from the unique index that covers exactly the key's
 * columns, which INSERT ... ON CONFLICT (key) takes as its arbiter.
 * Refuses a target without one, an index whose btree operator family
 * lacks an operator, and two such indexes that disagree about equality.
 */
HwmKey *
hwm_key_build(Relation target, Relation source, List *unique_key,
			  const char *tgtname, const char *srcname)
{
	return hwm_key_build_versioned(target, source, unique_key, NULL, tgtname, srcname);
}

/*
 * The key of a history's target (version: its valid_from column, NULL: a
 * plain key): read from the unique index on the key's columns and version,
 * whose columns but version make the key, compared as that index compares
 * them; the versions of one key are told apart by version.
 */
HwmKey *
hwm_key_build_versioned(Relation target, Relation source, List *unique_key,
						const char *version, const char *tgtname, const char *srcname)
{
	AttrNumber	version_attno = version ? get_attnum(RelationGetRelid(target), version) : InvalidAttrNumber;
	int			n;
	List	   *indexes = RelationGetIndexList(target);
	HwmKey	   *key = NULL;
	Relation	first = NULL;
	ListCell   *lc;
	StringInfoData cols;

	/* (a history's bounds are checked first: version is target's column) */
	Assert(version == NULL || version_attno > 0);

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);

		if (!covers_key(idx, target, unique_key, version_attno))
		{
			index_close(idx, AccessShareLock);
			continue;
		}
		if (first == NULL)
		{
			first = idx;
			continue;
		}
		if (!same_equality(first, idx))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("unique indexes %s and %s of target %s disagree about what a key is",
							quote_identifier(RelationGetRelationName(first)),
							quote_identifier(RelationGetRelationName(idx)), tgtname),
					 errdetail("Both cover exactly the key's columns, so the upsert takes both as its arbiters, but their operator classes or collations compare the key differently."),
					 errhint("Drop one of them, or build both with the same operator classes and collations.")));
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);

	if (first == NULL)
	{
		initStringInfo(&cols);
		foreach(lc, unique_key)
			appendStringInfo(&cols, "%s%s", cols.len ? ", " : "",
							 quote_identifier((char *) lfirst(lc)));
		if (version != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("no unique index on target %s covers exactly the unique key and %s (%s, %s)",
							tgtname, quote_identifier(version), cols.data, quote_identifier(version)),
					 errdetail("A history keeps one row per version of a key: the key and the start of the version make a row's identity."),
					 errhint("Add one with ALTER TABLE %s ADD PRIMARY KEY (%s, %s).",
							 tgtname, cols.data, quote_identifier(version))));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("no unique index on target %s covers exactly the unique key (%s)",
						tgtname, cols.data),
				 errdetail("hwm upserts with INSERT ... ON CONFLICT, which needs a unique, non-deferrable, non-partial index on exactly the key columns."),
				 errhint("Add one with CREATE UNIQUE INDEX ON %s (%s), or name the columns of the primary key.",
						 tgtname, cols.data)));
	}
	if (first->rd_rel->relam != BTREE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the unique index %s of target %s is not a btree index",
						quote_identifier(RelationGetRelationName(first)), tgtname),
				 errhint("hwm compares keys with the operators of a btree unique index.")));

	key = palloc0(sizeof(HwmKey));
	key->index = RelationGetRelid(first);
	key->cols = palloc0(sizeof(HwmKeyColumn) * first->rd_index->indnkeyatts);
	n = 0;
	for (int i = 0; i < first->rd_index->indnkeyatts; i++)
		if (first->rd_index->indkey.values[i] != version_attno)
			key_column(&key->cols[n++], first, i, target, source, tgtname, srcname);
	key->n = n;
	index_close(first, AccessShareLock);
	return key;
}

void
hwm_key_expr(StringInfo buf, const HwmKeyColumn *c, const char *alias, bool source)
{
	if (source)
		appendStringInfo(buf, "%s%s.%s%s", c->source_open, alias, c->name, c->source_close);
	else
		appendStringInfo(buf, "%s.%s%s", alias, c->name, c->target_collate);
}

void
hwm_key_match(StringInfo buf, const HwmKey *k, const char *a, bool a_source,
			  const char *b, bool b_source)
{
	for (int i = 0; i < k->n; i++)
	{
		appendStringInfoString(buf, " AND ");
		hwm_key_expr(buf, &k->cols[i], a, a_source);
		appendStringInfo(buf, " %s ", k->cols[i].eq);
		hwm_key_expr(buf, &k->cols[i], b, b_source);
	}
}

/*
 * Column i on: "e_i S $i OR (e_i = $i AND <column i+1 on>)", the last
 * column "e_n F $n" (S: the strict operator, F: the last column's).
 */
static void
key_cmp_from(StringInfo buf, const HwmKey *k, int i, const char *alias, bool source,
			 bool greater, int first)
{
	const HwmKeyColumn *c = &k->cols[i];

	if (i == k->n - 1)
	{
		hwm_key_expr(buf, c, alias, source);
		appendStringInfo(buf, " %s $%d", greater ? c->vt.gt : c->vt.le, first + i);
		return;
	}
	appendStringInfoChar(buf, '(');
	hwm_key_expr(buf, c, alias, source);
	appendStringInfo(buf, " %s $%d OR (", greater ? c->vt.gt : c->vt.lt, first + i);
	hwm_key_expr(buf, c, alias, source);
	appendStringInfo(buf, " %s $%d AND ", c->eq, first + i);
	key_cmp_from(buf, k, i + 1, alias, source, greater, first);
	appendStringInfoString(buf, "))");
}

/*
 * A row comparison written out column by column, since the index's
 * operators may live in several schemas (citext's beside pg_catalog's), and
 * ROW(...) OPERATOR(s.>) ROW(...) names one operator for every column.  The
 * first column's bound comes first, alone, for the index.
 */
void
hwm_key_cmp(StringInfo buf, const HwmKey *k, const char *alias, bool source,
			bool greater, int first)
{
	if (k->n > 1)
	{
		appendStringInfoString(buf, " AND ");
		hwm_key_expr(buf, &k->cols[0], alias, source);
		appendStringInfo(buf, " %s $%d", greater ? k->cols[0].vt.ge : k->cols[0].vt.le, first);
	}
	appendStringInfoString(buf, " AND ");
	key_cmp_from(buf, k, 0, alias, source, greater, first);
}

void
hwm_key_order(StringInfo buf, const HwmKey *k, const char *alias, bool source, bool desc)
{
	for (int i = 0; i < k->n; i++)
	{
		if (i > 0)
			appendStringInfoString(buf, ", ");
		hwm_key_expr(buf, &k->cols[i], alias, source);
		appendStringInfo(buf, " USING %s", desc ? k->cols[i].vt.gt : k->cols[i].vt.lt);
	}
}
