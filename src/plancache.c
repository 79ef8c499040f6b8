/*
 * plancache.c
 *		A stored pipeline's plan (pipeline.c's statements and value types),
 *		kept per backend between runs and rebuilt when anything it was
 *		built from may have changed (issue 31: a run with nothing new
 *		rebuilt every statement text each time).
 *
 * A plan is a function of its spec (hwm_spec_for: tables, key, columns,
 * delete marker: all read from the pipeline's row on every run) and of the
 * catalogs: the descriptors of the source and the target (columns, types,
 * indexes, triggers, rules, row security, identity columns), and the names
 * of the schemas, types and operators its statements spell out.  So an
 * entry is found by the whole spec (and the owner, as whom it was built):
 * a pipeline altered, dropped and created again, or given another key or
 * delete marker, has another spec and another entry.  What the catalogs
 * say is watched by invalidation callbacks: a relcache invalidation of the
 * source or the target (any ALTER TABLE, CREATE INDEX, CREATE TRIGGER,
 * CREATE RULE, ENABLE ROW LEVEL SECURITY, owner or privilege change, drop)
 * marks the entries on that relation stale; a change to any schema, type,
 * operator, operator class or operator family member, or collation marks
 * them all stale (renames are rare, and the texts spell those names: a
 * key's match names the target's collation when the source's differs).
 * Before looking, the caller's run locks the source and the target as the
 * build did, which reads the invalidations of whatever DDL committed
 * before it got the locks.
 *
 * Plans of Citus tables are not kept: their layout is in Citus's metadata.
 * A stale entry is not freed where the callback marks it (a run may be
 * using it): its memory goes to the transaction that replaces it.
 */
#include "postgres.h"

#include "pipeline.h"

#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* one kept plan */
typedef struct PlanEntry
{
	char	   *key;			/* the spec and the owner, spelled out */
	Oid			source;
	Oid			target;
	bool		valid;			/* false: built from catalogs since changed */
	MemoryContext cxt;			/* holds key, plan and the spec's copy */
	HwmPlan    *plan;
} PlanEntry;

/* the kept plans (in CacheMemoryContext), most recently built last */
static List *entries = NIL;

/* bumped by every invalidation callback: a build that saw one is not kept */
static uint64 inval_count = 0;

static bool callbacks_registered = false;

/* at most this many plans kept; beyond, the oldest goes */
#define PLAN_CACHE_MAX 256

/* relcache callback: entries on relid (all with InvalidOid) are stale */
static void
plan_cache_relcache_cb(Datum arg, Oid relid)
{
	ListCell   *lc;

	inval_count++;
	foreach(lc, entries)
	{
		PlanEntry  *e = lfirst(lc);

		if (!OidIsValid(relid) || e->source == relid || e->target == relid)
			e->valid = false;
	}
}

/* syscache callback (schemas, types, operators, opclasses, collations): all stale */
static void
plan_cache_syscache_cb(Datum arg, int cacheid, uint32 hashvalue)
{
	ListCell   *lc;

	inval_count++;
	foreach(lc, entries)
		((PlanEntry *) lfirst(lc))->valid = false;
}

/* "len:text" (or "-" for NULL): keys that no choice of names can confuse */
static void
append_key_string(StringInfo buf, const char *s)
{
	if (s == NULL)
		appendStringInfoString(buf, "-|");
	else
		appendStringInfo(buf, "%zu:%s|", strlen(s), s);
}

/* the cache key of spec built as owner */
static char *
plan_key(const HwmPlanSpec *spec, Oid owner)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%u|%u|%u|%d|%d|", owner, spec->source, spec->target,
					 (int) spec->source_only, (int) spec->stored);
	append_key_string(&buf, spec->pipeline);
	append_key_string(&buf, spec->watermark_column);
	append_key_string(&buf, spec->partition_column);
	append_key_string(&buf, spec->delete_column);
	append_key_string(&buf, spec->tombstone_order);
	appendStringInfo(&buf, "%d|", list_length(spec->unique_key));
	foreach(lc, spec->unique_key)
		append_key_string(&buf, (const char *) lfirst(lc));
	append_key_string(&buf, spec->valid_from_column);
	append_key_string(&buf, spec->valid_to_column);
	appendStringInfo(&buf, "%d|%d|", (int) spec->history_columns_given,
					 list_length(spec->history_columns));
	foreach(lc, spec->history_columns)
		append_key_string(&buf, (const char *) lfirst(lc));
	return buf.data;
}

/* a copy of spec in the current memory context */
static HwmPlanSpec *
copy_spec(const HwmPlanSpec *spec)
{
	HwmPlanSpec *c = palloc(sizeof(HwmPlanSpec));
	ListCell   *lc;

	*c = *spec;
	c->unique_key = NIL;
	foreach(lc, spec->unique_key)
		c->unique_key = lappend(c->unique_key, pstrdup((const char *) lfirst(lc)));
	c->watermark_column = spec->watermark_column ? pstrdup(spec->watermark_column) : NULL;
	c->partition_column = spec->partition_column ? pstrdup(spec->partition_column) : NULL;
	c->pipeline = spec->pipeline ? pstrdup(spec->pipeline) : NULL;
	c->delete_column = spec->delete_column ? pstrdup(spec->delete_column) : NULL;
	c->tombstone_order = spec->tombstone_order ? pstrdup(spec->tombstone_order) : NULL;
	c->valid_from_column = spec->valid_from_column ? pstrdup(spec->valid_from_column) : NULL;
	c->valid_to_column = spec->valid_to_column ? pstrdup(spec->valid_to_column) : NULL;
	c->history_columns = NIL;
	foreach(lc, spec->history_columns)
		c->history_columns = lappend(c->history_columns, pstrdup((const char *) lfirst(lc)));
	return c;
}

/* drop entry e from the list; its memory lives until this transaction ends */
static void
retire_entry(PlanEntry *e)
{
	entries = list_delete_ptr(entries, e);
	MemoryContextSetParent(e->cxt, TopTransactionContext);
	pfree(e);
}

/*
 * The plan of a stored pipeline's spec as owner (the current user): the
 * kept one when nothing it was built from changed since, else built by
 * hwm_plan_build (which validates, and raises the errors a run reports)
 * and kept.  Read-only for the caller, valid until its transaction ends.
 */
HwmPlan *
hwm_plan_cached(const HwmPlanSpec *spec, Oid owner)
{
	char	   *key;
	ListCell   *lc;
	PlanEntry  *e;
	MemoryContext cxt;
	MemoryContext old;
	HwmPlan    *plan;
	uint64		seen;

	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(plan_cache_relcache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, plan_cache_syscache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, plan_cache_syscache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(OPEROID, plan_cache_syscache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(CLAOID, plan_cache_syscache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(AMOPSTRATEGY, plan_cache_syscache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(COLLOID, plan_cache_syscache_cb, (Datum) 0);
		callbacks_registered = true;
	}

	/*
	 * The locks the build takes, taken first: the first lock on a relation
	 * in a transaction reads the invalidations committed before it, so an
	 * ALTER TABLE that committed while this run waited is seen here.
	 */
	LockRelationOid(spec->source, AccessShareLock);
	if (!spec->source_only && OidIsValid(spec->target))
		LockRelationOid(spec->target, AccessShareLock);

	key = plan_key(spec, owner);
	foreach(lc, entries)
	{
		e = lfirst(lc);
		if (strcmp(e->key, key) != 0)
			continue;
		if (e->valid)
		{
			pfree(key);
			return e->plan;
		}
		retire_entry(e);
		break;
	}

	/* built in a context of its own, which an error frees with the caller's */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "hwm plan", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	seen = inval_count;
	plan = hwm_plan_build(copy_spec(spec));
	MemoryContextSwitchTo(old);
	if (plan->citus || inval_count != seen)
		return plan;			/* not kept: freed with the caller's context */

	if (list_length(entries) >= PLAN_CACHE_MAX)
		retire_entry(linitial(entries));
	MemoryContextSetParent(cxt, CacheMemoryContext);
	old = MemoryContextSwitchTo(CacheMemoryContext);
	e = palloc(sizeof(PlanEntry));
	e->key = MemoryContextStrdup(cxt, key);
	e->source = spec->source;
	e->target = spec->target;
	e->valid = true;
	e->cxt = cxt;
	e->plan = plan;
	entries = lappend(entries, e);
	MemoryContextSwitchTo(old);
	pfree(key);
	return plan;
}
