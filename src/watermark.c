/*
 * watermark.c
 *		The safe watermark bound: how far a run may move the watermark without
 *		skipping a row that a transaction still in flight could commit.
 *
 * A loader that advances to the greatest value it sees loses rows whenever
 * writers commit out of order: S1 inserts updated_at = now() = 10:00:00 and
 * has not committed, S2 inserts 10:00:05 and commits, the run moves the
 * watermark to 10:00:05, S1 commits, and its row is never above the
 * watermark again.  hwm.run avoids this for values that the database assigns
 * by finding the greatest visible value W0 first (statement 1, snapshot S0),
 * then computing here a limit from the transactions in flight *after* S0,
 * and only then loading with a fresh snapshot.  The stored watermark is the
 * greatest visible value that is at most W0 and below the limit; rows above
 * it are still loaded, and loaded again (as no-op upserts) until the
 * watermark passes them.
 *
 * Time-typed watermark columns (timestamptz, timestamp, date) filled with
 * now(), statement_timestamp() or clock_timestamp(): every value a
 * transaction writes is at least its start time.  The limit is the oldest
 * start time of the transactions in flight in this database (from the
 * activity statistics), and no later than the current time less
 * hwm.start_margin, which covers a transaction that has taken its start time
 * but is not yet visible in the process array.  A transaction whose start
 * time is unknown (a prepared transaction, or a session with
 * track_activities off) is waited for, up to hwm.wait_timeout; if it is still
 * there, the watermark stays where it is.  A per-pipeline delay lowers the
 * limit to now() - delay, for values that applications supply.
 *
 * Other types (integers filled from a sequence or identity column): a
 * transaction draws its value while inserting, that is while it holds
 * RowExclusiveLock on the source or one of its leaf partitions, and the
 * sequence hands out increasing values.  So every value at most W0 that is
 * not yet visible belongs to a transaction holding such a lock now; hwm waits
 * for those (up to hwm.wait_timeout, not forever), and if one is still
 * running the watermark stays where it is.
 *
 * In both cases the rows that are visible are loaded; only the watermark is
 * held back, so freshness does not suffer.
 *
 * A Citus source can also be written by sessions connected to other nodes:
 * their transactions (citus_stat_activity) bound the watermark too (see
 * citus_bound).
 *
 * What a run reads.  The stored watermark W must stay below every value a
 * transaction in flight may still commit, so with a transaction open for an
 * hour W stays an hour behind.  Reading everything above W on every run
 * would make each run cost that hour of rows.  Instead each run remembers
 * (HwmLoadMemory, in hwm.state) a floor F and the transactions that may
 * still commit rows below it: for time types F is the current time less
 * hwm.start_margin and delay, and the transactions are those in flight that
 * started before F (every row they write is at least their start); for
 * other types F is W0 and the transactions are the writers still holding
 * their lock.  A row the run did not see is at least F, or belongs to one of
 * those transactions.  The next run reads from F, lowered to the start of
 * each remembered transaction that has ended since (to W when the start is
 * unknown); one still in flight has made nothing visible and is remembered
 * again.  A set_watermark, a restart of the server, or a list that cannot be
 * trusted means reading from W, as before; W itself moves exactly as before.
 */
#include "postgres.h"

#include "catalog.h"
#include "citus.h"
#include "pipeline.h"
#include "util.h"
#include "watermark.h"
#include "compat.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "tcop/tcopprot.h"
#include "utils/syscache.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "rewrite/prs2lock.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

int			hwm_wait_timeout = 1000;	/* ms */
int			hwm_start_margin = 1000;	/* ms */

/* Is this a type whose values can come from now() and friends? */
bool
hwm_is_time_type(Oid type)
{
	Oid			base = getBaseType(type);

	return base == TIMESTAMPTZOID || base == TIMESTAMPOID || base == DATEOID;
}

bool
hwm_watermark_type_kept(Oid stored, Oid now)
{
	Oid			a;
	Oid			b;
	char		cat_a;
	char		cat_b;
	bool		preferred;

	if (stored == now)
		return true;
	a = getBaseType(stored);
	b = getBaseType(now);
	if (a == b)
		return true;
	get_type_category_preferred(a, &cat_a, &preferred);
	get_type_category_preferred(b, &cat_b, &preferred);
	if (cat_a == TYPCATEGORY_NUMERIC && cat_b == TYPCATEGORY_NUMERIC)
		return true;
	return (a == TEXTOID || a == VARCHAROID) && (b == TEXTOID || b == VARCHAROID);
}

/* A point in time as a value of the (time-typed) watermark column */
static Datum
time_as_column_value(Oid type, TimestampTz t)
{
	switch (getBaseType(type))
	{
		case TIMESTAMPTZOID:
			return TimestampTzGetDatum(t);
		case TIMESTAMPOID:
			return DirectFunctionCall1(timestamptz_timestamp, TimestampTzGetDatum(t));
		case DATEOID:
			return DirectFunctionCall1(timestamptz_date, TimestampTzGetDatum(t));
	}
	elog(ERROR, "type %u is not a time type", type);
	return (Datum) 0;
}

/* A time type's value as a timestamptz (time_as_column_value's inverse) */
TimestampTz
hwm_time_value_timestamptz(Oid type, Datum value)
{
	switch (getBaseType(type))
	{
		case TIMESTAMPTZOID:
			return DatumGetTimestampTz(value);
		case TIMESTAMPOID:
			return DatumGetTimestampTz(DirectFunctionCall1(timestamp_timestamptz, value));
		case DATEOID:
			return DatumGetTimestampTz(DirectFunctionCall1(date_timestamptz, value));
	}
	elog(ERROR, "type %u is not a time type", type);
	return 0;
}

/*
 * Wait until each transaction is gone or the deadline passes; returns how
 * many are still running, and moves those to the front of vxids.  Polls, so
 * that a wait never takes part in a deadlock and always ends.
 */
static int
wait_for(VirtualTransactionId *vxids, int n, TimestampTz deadline)
{
	int			running = 0;

	for (int i = 0; i < n && VirtualTransactionIdIsValid(vxids[i]); i++)
	{
		while (!VirtualXactLock(vxids[i], false))
		{
			if (GetCurrentTimestamp() >= deadline)
			{
				vxids[running++] = vxids[i];
				break;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 5L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return running;
}

/* The activity entry of the backend running vxid, or NULL (prepared, gone) */
static PgBackendStatus *
backend_of(VirtualTransactionId vxid)
{
	PGPROC	   *proc;
	int			pid;
	int			n;

	if (vxid.procNumber == INVALID_PROC_NUMBER)
		return NULL;			/* a prepared transaction recovered at startup */
	proc = ProcNumberGetProc(vxid.procNumber);
	if (proc == NULL)
		return NULL;

	/*
	 * A prepared transaction keeps the vxid of the session that prepared it
	 * (current minor releases do), and that session may run another
	 * transaction by now, which started later: only when the process still
	 * runs vxid is its entry the one of vxid.
	 */
	if (hwm_proc_lxid(proc) != vxid.localTransactionId)
		return NULL;
	pid = proc->pid;
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);

		if (local && local->backendStatus.st_procpid == pid)
			return &local->backendStatus;
	}
	return NULL;
}

/* The start time of the transaction vxid, or 0 when unknown */
static TimestampTz
xact_start_of(VirtualTransactionId vxid)
{
	PgBackendStatus *st = backend_of(vxid);

	return st ? st->st_xact_start_timestamp : 0;
}

/* Remember a transaction in flight for the next run (start 0: unknown) */
static void
remember(HwmSafeBound *b, VirtualTransactionId vxid, TimestampTz start)
{
	HwmXact    *x = palloc(sizeof(HwmXact));

	x->vxid = psprintf("%d/%u", vxid.procNumber, vxid.localTransactionId);
	x->start = start;
	b->xacts = lappend(b->xacts, x);
}

/* Note the transaction vxid as what holds the watermark, if it is the oldest */
static void
note_holder(HwmSafeBound *b, VirtualTransactionId vxid)
{
	PgBackendStatus *st = backend_of(vxid);

	if (st == NULL || (b->oldest_pid != 0 && st->st_xact_start_timestamp >= b->oldest_start))
		return;
	b->oldest_pid = st->st_procpid;
	b->oldest_application = pstrdup(st->st_appname);
	b->oldest_start = st->st_xact_start_timestamp;
}

/*
 * The bound of a time-typed watermark: the oldest start of a transaction in
 * flight, no later than now less hwm.start_margin and the pipeline's delay
 * (the floor: what no transaction that is not in flight now can write below).
 */
static void
time_bound(const HwmPlan *plan, const Interval *delay, TimestampTz deadline,
		   HwmSafeBound *b)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz floor = TimestampTzPlusMilliseconds(now, -hwm_start_margin);
	TimestampTz limit;
	const char *reason = "hwm.start_margin";
	VirtualTransactionId *vxids;
	VirtualTransactionId *unknown;
	int			n;
	int			nunknown = 0;

	if (delay)
	{
		TimestampTz settled = DatumGetTimestampTz(
												  DirectFunctionCall2(timestamptz_mi_interval,
																	  TimestampTzGetDatum(now),
																	  IntervalPGetDatum(delay)));

		if (settled < floor)
		{
			floor = settled;
			reason = "the pipeline's delay";
		}
	}
	limit = floor;
	vxids = GetCurrentVirtualXIDs(InvalidTransactionId, false, false,
								  PROC_IN_VACUUM, &n);
	unknown = palloc(sizeof(VirtualTransactionId) * Max(n, 1));
	pgstat_clear_backend_activity_snapshot();
	for (int i = 0; i < n; i++)
	{
		TimestampTz start = xact_start_of(vxids[i]);

		if (start == 0)
			unknown[nunknown++] = vxids[i];
		else if (start < floor)
		{
			/* it may commit rows at or above its start, below the floor */
			remember(b, vxids[i], start);
			note_holder(b, vxids[i]);
			if (start < limit)
			{
				limit = start;
				reason = "a transaction still in flight";
			}
		}
	}
	b->in_flight = n;
	b->has_floor = true;
	b->floor = time_as_column_value(plan->wm.type, floor);
	if (nunknown > 0)
		b->still_running = wait_for(unknown, nunknown, deadline);
	for (int i = 0; i < b->still_running; i++)
		remember(b, unknown[i], 0);
	if (b->still_running > 0)
	{
		b->hold = true;
		b->reason = "a prepared transaction or a transaction of unknown start still in flight";
		return;
	}
	b->has_limit = true;
	b->limit = time_as_column_value(plan->wm.type, limit);
	b->reason = reason;
}

/* What a view's rule or a function depends on, by pg_depend */
typedef struct Reads
{
	List	   *rels;			/* relations (the list being walked) */
	List	   *fns;			/* functions already followed */
} Reads;

/* Add what object (classid, objid) depends on: relations, and functions */
static void
add_dependencies(Reads *r, Oid classid, Oid objid)
{
	Relation	dep = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(classid));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(objid));
	scan = systable_beginscan(dep, DependDependerIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);

		if (d->refclassid == RelationRelationId)
			r->rels = list_append_unique_oid(r->rels, d->refobjid);
		else if (d->refclassid == ProcedureRelationId)
			r->fns = list_append_unique_oid(r->fns, d->refobjid);
	}
	systable_endscan(scan);
	table_close(dep, AccessShareLock);
}

/* query_tree_walker's walker: every relation a query reads, subqueries too */
static bool
query_relations_walker(Node *node, List **rels)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			*rels = list_append_unique_oid(*rels, rte->relid);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, query_relations_walker, rels,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, query_relations_walker, rels);
}

/* A SQL function's text body, to analyze (sql_body_relations) */
typedef struct SqlBody
{
	const char *src;
	List	   *rels;			/* what it reads, in cxt */
	MemoryContext cxt;
} SqlBody;

static void
analyze_sql_body(void *arg)
{
	SqlBody    *b = arg;
	ListCell   *lc;

	foreach(lc, pg_parse_query(b->src))
	{
		Query	   *q = parse_analyze_fixedparams(lfirst_node(RawStmt, lc), b->src, NULL, 0, NULL);
		List	   *rels = NIL;
		MemoryContext old;

		(void) query_relations_walker((Node *) q, &rels);
		old = MemoryContextSwitchTo(b->cxt);
		b->rels = list_concat_unique_oid(b->rels, rels);
		MemoryContextSwitchTo(old);
	}
}

/*
 * The relations function fn reads, when it is a SQL function without
 * arguments whose body is text (PostgreSQL records no dependency of such a
 * body: dbt's hwm models read their model's SQL through one, so that dbt
 * may drop and create again what it reads): its body analyzed as a call
 * would (under the run's pinned search_path; a body that does not analyze
 * adds nothing).  A body in SQL-standard form (BEGIN ATOMIC) has its
 * dependencies in pg_depend, followed with the rest.
 */
static void
add_sql_body(Reads *r, Oid fn)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	Datum		src;
	SqlBody		b = {0};
	ErrorData  *edata;
	bool		isnull;

	if (!HeapTupleIsValid(tup))
		return;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->prolang != SQLlanguageId || proc->pronargs != 0 ||
		!heap_attisnull(tup, Anum_pg_proc_prosqlbody, NULL))
	{
		ReleaseSysCache(tup);
		return;
	}
	src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
	if (isnull)
	{
		ReleaseSysCache(tup);
		return;
	}
	b.src = TextDatumGetCString(src);
	ReleaseSysCache(tup);
	b.cxt = CurrentMemoryContext;
	edata = hwm_try_subxact(analyze_sql_body, &b, CurrentMemoryContext);
	if (edata)
		FreeErrorData(edata);
	r->rels = list_concat_unique_oid(r->rels, b.rels);
}

/*
 * The relations a source reads: itself, and through a view every relation
 * its rule reads (pg_depend: what the rule depends on), through the SQL
 * functions it calls too (add_sql_body), views within views; with each
 * table its partitions and the tables it is a partition of.  A view has no
 * writers of its own: its tables' are the writers of a sequence watermark
 * read through it, and its tables are what other pipelines may load (a
 * chain).  Also the tables whose commits wake a pipeline scheduled on commit
 * (watch.c, through worker.c and dispatch.c).
 */
List *
hwm_source_relations(Oid source)
{
	Reads		r = {list_make1_oid(source), NIL};
	int			nfns = 0;

	for (int i = 0; i < list_length(r.rels) || nfns < list_length(r.fns); i++)
	{
		Oid			relid;
		char		kind;

		/* the functions found so far, then the relations */
		while (nfns < list_length(r.fns))
		{
			Oid			fn = list_nth_oid(r.fns, nfns++);

			add_dependencies(&r, ProcedureRelationId, fn);
			add_sql_body(&r, fn);
		}
		if (i >= list_length(r.rels))
			break;
		relid = list_nth_oid(r.rels, i);
		kind = get_rel_relkind(relid);
		if (kind == RELKIND_VIEW)
		{
			Relation	view = try_relation_open(relid, AccessShareLock);
			RuleLock   *rules = view ? view->rd_rules : NULL;

			for (int k = 0; rules != NULL && k < rules->numLocks; k++)
				add_dependencies(&r, RewriteRelationId, rules->rules[k]->ruleId);
			if (view)
				relation_close(view, AccessShareLock);
		}
		else if (kind == RELKIND_RELATION || kind == RELKIND_PARTITIONED_TABLE)
		{
			ListCell   *lc;
			List	   *more = find_all_inheritors(relid, NoLock, NULL);

			foreach(lc, get_partition_ancestors(relid))
				more = lappend_oid(more, lfirst_oid(lc));
			foreach(lc, more)
				r.rels = list_append_unique_oid(r.rels, lfirst_oid(lc));
		}
	}
	return r.rels;
}

/*
 * The bound of any other watermark (sequences): the writers of the source's
 * tables (itself, its partitions, the tables of a view), waited for up to
 * the deadline.
 */
static void
writer_bound(List *rels, TimestampTz deadline, HwmSafeBound *b)
{
	ListCell   *lc;

	pgstat_clear_backend_activity_snapshot();
	foreach(lc, rels)
	{
		LOCKTAG		tag;
		int			count;
		int			running;
		VirtualTransactionId *holders;
		char		kind = get_rel_relkind(lfirst_oid(lc));

		if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE &&
			kind != RELKIND_FOREIGN_TABLE)
			continue;			/* a view: its tables are in the list */
		SET_LOCKTAG_RELATION(tag, MyDatabaseId, lfirst_oid(lc));
		holders = GetLockConflicts(&tag, ShareLock, &count);
		b->in_flight += count;
		running = wait_for(holders, count, deadline);
		for (int i = 0; i < running; i++)
		{
			remember(b, holders[i], xact_start_of(holders[i]));
			note_holder(b, holders[i]);
		}
		b->still_running += running;
	}
	b->hold = b->still_running > 0;
	b->reason = "a writer of the source still in flight";
}

/*
 * The remembered transactions that were still in flight when this run
 * decided where to start reading (carried) hold the watermark as if they
 * still were: one may have committed since, and its rows below where this
 * run reads are not loaded until the next run, which knows it has ended.
 * So the limit stays at their start (time types), or the watermark where it
 * is (unknown start, other types).
 */
static void
bound_carried(const HwmPlan *plan, List *carried, HwmSafeBound *b)
{
	ListCell   *lc;

	foreach(lc, carried)
	{
		HwmXact    *x = lfirst(lc);

		if (b->hold)
			return;
		if (x->start == 0 || !hwm_is_time_type(plan->wm.type))
		{
			b->hold = true;
			b->reason = "a transaction that was in flight at the last run";
		}
		else
		{
			Datum		start = time_as_column_value(plan->wm.type, x->start);

			if (!b->has_limit || hwm_value_cmp(&plan->wm, start, b->limit) < 0)
			{
				b->has_limit = true;
				b->limit = start;
				b->reason = "a transaction still in flight";
			}
		}
	}
}

/*
 * A Citus source: a writer connected to another node is not in this node's
 * process array or lock table.  Its start (that node's clock, within
 * hwm.start_margin of this one's) lowers the limit like a local one's; a
 * start unknown, a prepared transaction on a worker, or, for other types, a
 * remote writer holds the watermark.  Such transactions cannot be followed
 * from here, so when one mattered the next run reads from the watermark (an
 * entry of unknown start that never counts as running: see xact_ended).
 */
static void
citus_bound(const HwmPlan *plan, HwmSafeBound *b)
{
	HwmCitusRemote r;
	HwmXact    *marker;
	bool		matters = false;

	hwm_citus_remote_xacts(&r);
	b->in_flight += (int) r.count;
	if (r.prepared > 0 || r.unknown_start ||
		(r.writers > 0 && !hwm_is_time_type(plan->wm.type)))
	{
		matters = true;
		b->hold = true;
		b->reason = r.prepared > 0 ?
			"a prepared transaction on a Citus worker" :
			"a transaction in flight on another Citus node";
	}
	else if (r.oldest != 0 && hwm_is_time_type(plan->wm.type))
	{
		Datum		start = time_as_column_value(plan->wm.type, r.oldest);

		matters = !b->has_floor || hwm_value_cmp(&plan->wm, start, b->floor) < 0;
		if (b->has_limit && hwm_value_cmp(&plan->wm, start, b->limit) < 0)
		{
			b->limit = start;
			b->reason = "a transaction in flight on another Citus node";
		}
	}
	if (!matters)
		return;
	marker = palloc0(sizeof(HwmXact));
	marker->vxid = pstrdup("citus");
	b->xacts = lappend(b->xacts, marker);
}

/*
 * An upstream's time, for hwm.state.data_as_of (load.c, complete_below):
 * the later of its watermark, where that is a time of this pipeline's type,
 * and how far it last found its source complete; the oldest upstream's
 * counts (0: one of them knows none).
 */
static void
upstream_as_of(const HwmPlan *plan, const HwmUpstream *u, HwmSafeBound *b)
{
	TimestampTz t = u->as_of;

	if (hwm_is_time_type(plan->wm.type) && u->watermark != NULL &&
		getBaseType(u->type) == getBaseType(plan->wm.type))
		t = Max(t, hwm_time_value_timestamptz(plan->wm.type,
											  hwm_value_in(&plan->wm, u->watermark,
														   "an upstream pipeline's watermark")));
	/* 0, not known, is the least */
	b->upstreams_as_of = Min(b->upstreams_as_of, t);
}

/*
 * A chain: the source reads the target of other pipelines (itself, or a
 * table of its view), which copy their source's watermark values.  A row
 * reaches such a target when the upstream's run commits it, which may be
 * long after the value was written (a late commit upstream, the upstream's
 * schedule), and that run copies old values, below its own start: neither
 * bound above sees it coming.  What is certain is the upstream's committed
 * watermark: every row at or below it is in its target, committed with it.
 * So the bound is capped there too (inclusive), at the oldest upstream's;
 * an upstream that has loaded nothing holds the watermark, and the run
 * remembers no place to read from (it may still load rows of any value:
 * load.c, remember_load).  Upstreams whose
 * watermark has another type than this one's cannot be compared: they are
 * warned of when the pipeline is declared (hwm_watermark_caveat).
 */
static void
upstream_cap(const HwmPlan *plan, List *rels, HwmSafeBound *b)
{
	Oid		   *relids = palloc(sizeof(Oid) * list_length(rels));
	List	   *ups;
	ListCell   *lc;
	int			n = 0;

	foreach(lc, rels)
		if (lfirst_oid(lc) != plan->target)
			relids[n++] = lfirst_oid(lc);
	ups = hwm_state_upstreams(relids, n);
	b->has_upstreams = ups != NIL;
	b->upstreams_as_of = DT_NOEND;
	foreach(lc, ups)
	{
		HwmUpstream *u = lfirst(lc);
		Datum		cap;

		upstream_as_of(plan, u, b);
		if (getBaseType(u->type) != getBaseType(plan->wm.type))
			continue;
		if (u->watermark == NULL)
		{
			b->hold = true;
			b->upstream_empty = true;
			b->reason = "a pipeline that loads a table of the source and has loaded nothing yet";
			return;
		}
		cap = hwm_value_in(&plan->wm, u->watermark, "an upstream pipeline's watermark");
		if (!b->has_cap || hwm_value_cmp(&plan->wm, cap, b->cap) < 0)
		{
			b->has_cap = true;
			b->cap = cap;
		}
	}
}

/*
 * Compute the limit for a run of plan over source: see the file header.
 * Must be called after the statement that found W0.  carried: the
 * transactions that hwm_reread_from found still in flight.
 */
void
hwm_safe_bound(const HwmPlan *plan, Oid source, const Interval *delay,
			   List *carried, HwmSafeBound *b)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   hwm_wait_timeout);
	List	   *rels = hwm_source_relations(source);

	memset(b, 0, sizeof(*b));
	if (hwm_is_time_type(plan->wm.type))
		time_bound(plan, delay, deadline, b);
	else
		writer_bound(rels, deadline, b);
	bound_carried(plan, carried, b);
	if (hwm_citus_is_table(source))
		citus_bound(plan, b);
	upstream_cap(plan, rels, b);
}

/*
 * What the bound cannot make safe for a pipeline reading source with plan
 * (said by create_pipeline and alter_pipeline as a WARNING), or NULL: a
 * foreign table (its writers are on another server) or a materialized view
 * (a REFRESH rebuilds it wholesale, with old values) that the source reads,
 * directly or through views; a pipeline loading a table the source reads
 * whose watermark has another type than this one's (the chain's cap cannot
 * compare them).  With a delay (a time-typed watermark) nothing is said of
 * the first two: the delay is their remedy.
 */
char *
hwm_watermark_caveat(const HwmPlan *plan, Oid source, bool has_delay)
{
	List	   *rels = hwm_source_relations(source);
	Oid		   *relids = palloc(sizeof(Oid) * list_length(rels));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, rels)
	{
		char		kind = get_rel_relkind(lfirst_oid(lc));

		if (!has_delay && (kind == RELKIND_FOREIGN_TABLE || kind == RELKIND_MATVIEW))
			return psprintf("%s %s, %s: hwm cannot see the transactions that write it, and a row committed there late may lie below the watermark",
							lfirst_oid(lc) == source ? "The source is" : "The source reads",
							hwm_qualified_name(lfirst_oid(lc)),
							kind == RELKIND_FOREIGN_TABLE ?
							"a foreign table written on another server" :
							"a materialized view that REFRESH rebuilds wholesale");
		if (lfirst_oid(lc) != plan->target)
			relids[n++] = lfirst_oid(lc);
	}
	foreach(lc, hwm_state_upstreams(relids, n))
	{
		HwmUpstream *u = lfirst(lc);

		if (getBaseType(u->type) != getBaseType(plan->wm.type))
			return psprintf("The source reads the target of a pipeline whose watermark has type %s, not %s: hwm cannot hold this pipeline's watermark below what that pipeline has loaded",
							format_type_be(u->type), format_type_be(plan->wm.type));
	}
	return NULL;
}

/* The server's start time: what a list of transactions in flight is valid for */
TimestampTz
hwm_memory_epoch(void)
{
	return PgStartTime;
}

/*
 * Has the remembered transaction x ended?  A vxid still running is the same
 * transaction when it is a prepared one recovered at startup (no process:
 * its local id is its xid) or when its start time is the remembered one;
 * otherwise (a vxid reused after a crash, a start time that was unknown,
 * such as a prepared transaction that kept its session's vxid) it counts as
 * ended, which costs a re-read from the watermark and nothing else: while
 * it is still in flight, the run's own bound holds the watermark for it.
 */
static bool
xact_ended(const HwmXact *x)
{
	VirtualTransactionId vxid;
	int			backend;

	if (sscanf(x->vxid, "%d/%u", &backend, &vxid.localTransactionId) != 2)
		return true;
	vxid.procNumber = backend;
	if (VirtualXactLock(vxid, false))
		return true;
	if (vxid.procNumber == INVALID_PROC_NUMBER)
		return false;
	return x->start == 0 || xact_start_of(vxid) != x->start;
}

/*
 * Where this run must start reading (inclusive), given what the last run
 * remembered: its floor, lowered to the start of each remembered
 * transaction that has ended since (an unknown start: no bound), never
 * below the watermark (NULL: none yet).  Transactions still in flight have
 * made nothing visible, so they do not lower it; they are returned in
 * *carried, to be remembered again.  Returns false when there is no bound
 * above the watermark: without a memory from this server's lifetime, or
 * when a transaction of unknown start has ended.
 */
bool
hwm_reread_from(const HwmPlan *plan, const HwmLoadMemory *mem, const Datum *watermark,
				Datum *from, List **carried)
{
	ListCell   *lc;
	bool		bounded = true;

	*carried = NIL;
	if (mem->reread_from == NULL || mem->epoch != PgStartTime)
		return false;
	*from = hwm_value_in(&plan->wm, mem->reread_from, "reread_from");
	pgstat_clear_backend_activity_snapshot();
	foreach(lc, mem->xacts)
	{
		HwmXact    *x = lfirst(lc);

		if (!xact_ended(x))
			*carried = lappend(*carried, x);
		else if (x->start == 0 || !hwm_is_time_type(plan->wm.type))
			bounded = false;
		else
		{
			Datum		start = time_as_column_value(plan->wm.type, x->start);

			if (hwm_value_cmp(&plan->wm, start, *from) < 0)
				*from = start;
		}
	}
	return bounded &&
		(watermark == NULL || hwm_value_cmp(&plan->wm, *from, *watermark) > 0);
}
