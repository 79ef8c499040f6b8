/*
 * key.h
 *		The one definition of a pipeline's key (key.c): what the target's
 *		unique index, the load's conflict target, says a key is, and the
 *		SQL every statement that compares keys is written with.
 */
#ifndef HWM_KEY_H
#define HWM_KEY_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

#include "pipeline.h"

/* One column of the key, in the order of the index's columns */
typedef struct HwmKeyColumn
{
	char	   *name;			/* quoted */
	AttrNumber	attnum;			/* in the target */
	Oid			opfamily;		/* the index's btree operator family */
	bool		default_opfamily;	/* ... is the type's default one */
	char	   *eq;				/* that family's operators, OPERATOR(s.op) */
	const char *target_collate; /* " COLLATE c" after a target column, or "" */
	const char *source_open;	/* around a source column: "" or "CAST(" */
	const char *source_close;	/* "" or " AS type(typmod))" + " COLLATE c" */
	bool		spelled;		/* equal keys may differ in their bytes ('Ada'
								 * and 'ADA' under citext, 3.0 and 3.00): the
								 * load writes the source's, as any column */
	bool		source_cast;	/* source values are cast to the target's type */
	bool		source_as_is;	/* the source column has the target's type,
								 * typmod and the index's collation */
	HwmValueType vt;			/* the target column's type and typmod, the
								 * index's collation (InvalidOid: none) and
								 * ordering: key values in and out */
} HwmKeyColumn;

typedef struct HwmKey
{
	int			n;
	HwmKeyColumn *cols;
	Oid			index;			/* the unique index it was read from */
} HwmKey;

extern HwmKey *hwm_key_build(Relation target, Relation source, List *unique_key,
							 const char *tgtname, const char *srcname);
extern HwmKey *hwm_key_build_versioned(Relation target, Relation source, List *unique_key,
									   const char *version, const char *tgtname,
									   const char *srcname);

/* the column of a source row (s) or a target row (t) as the key compares it */
extern void hwm_key_expr(StringInfo buf, const HwmKeyColumn *c, const char *alias,
						 bool source);

/* " AND <a's key> = <b's key>" column by column */
extern void hwm_key_match(StringInfo buf, const HwmKey *k, const char *a, bool a_source,
						  const char *b, bool b_source);

/*
 * " AND <alias's key> > ($first, ...)" (greater) or "<= ($first, ...)",
 * in the key's order, column by column with the index's operators
 */
extern void hwm_key_cmp(StringInfo buf, const HwmKey *k, const char *alias, bool source,
						bool greater, int first);

/* "<alias's k1> USING <, ..." (desc: >), the order of the index */
extern void hwm_key_order(StringInfo buf, const HwmKey *k, const char *alias, bool source,
						  bool desc);

#endif							/* HWM_KEY_H */
