/*-------------------------------------------------------------------------
 *
 * bulk.c
 *		Fill a table aside (exchange.c) as COPY FROM fills a table: rows
 *		inserted a page at a time (table_multi_insert), not one by one.
 *
 * A table aside is hwm's own, new, and has no index, trigger or policy
 * while it is filled (its indexes are built after the rows are in): an
 * INSERT ... SELECT into it spends most of its time writing one WAL record
 * and taking one buffer lock per row.  heap_multi_insert writes one record
 * per page of rows; COPY FROM uses it for the same reason.
 *
 * The statement stays the INSERT that exchange.c and load.c build, so that
 * what reaches the table is what the INSERT would put there: it is parsed,
 * analyzed and rewritten as an INSERT (the source's values coerced to the
 * table's types with the INSERT's assignment casts, typmods and domains,
 * the defaults of the columns it does not list), then planned and run as
 * the SELECT of those values, whose rows go to the table through a
 * DestReceiver that checks the table's NOT NULL and CHECK constraints
 * (ExecConstraints, as ExecInsert does) and buffers them for
 * table_multi_insert.  A table the receiver cannot fill as ExecInsert would
 * (generated columns, triggers, indexes, row security, another access
 * method) and a statement that is not a plain INSERT ... SELECT take the
 * INSERT through SPI, as before.
 *
 * A batch ends where COPY FROM's do (src/backend/commands/copyfrom.c):
 * at 1000 rows or 64 kB of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "bulk.h"
#include "util.h"
#include "compat.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/params.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* a batch is at most this many rows, or this many bytes (COPY FROM's) */
#define BULK_MAX_ROWS	1000
#define BULK_MAX_BYTES	65535

typedef struct BulkReceiver
{
	DestReceiver pub;
	Relation	rel;			/* the table filled */
	MemoryContext cxt;			/* the slots' (outliving the executor's) */
	EState	   *estate;			/* for ExecConstraints */
	ResultRelInfo *rri;
	bool		check;			/* the table has constraints to check */
	int			ncols;			/* the SELECT's columns ... */
	AttrNumber *attnum;			/* ... and the table's column each fills */
	TupleTableSlot *slots[BULK_MAX_ROWS];
	int			nbuffered;
	Size		bytes;
	BulkInsertState bistate;
	CommandId	cid;
	uint64		rows;
} BulkReceiver;

/* Write the rows buffered, in one table_multi_insert */
static void
bulk_flush(BulkReceiver *br)
{
	if (br->nbuffered == 0)
		return;
	table_multi_insert(br->rel, br->slots, br->nbuffered, br->cid, TABLE_INSERT_SKIP_FSM,
					   br->bistate);
	for (int i = 0; i < br->nbuffered; i++)
		ExecClearTuple(br->slots[i]);
	br->rows += br->nbuffered;
	br->nbuffered = 0;
	br->bytes = 0;
}

static void
bulk_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

/*
 * A row of the SELECT: into the next free slot as the table's row (the
 * columns the INSERT does not fill NULL, as its plan makes them), checked,
 * copied out of the executor's memory, buffered.
 */
static bool
bulk_receive(TupleTableSlot *slot, DestReceiver *self)
{
	BulkReceiver *br = (BulkReceiver *) self;
	TupleTableSlot *row;
	HeapTuple	tuple;

	if (br->slots[br->nbuffered] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(br->cxt);

		br->slots[br->nbuffered] = table_slot_create(br->rel, NULL);
		MemoryContextSwitchTo(old);
	}
	row = br->slots[br->nbuffered];
	ExecClearTuple(row);
	slot_getallattrs(slot);
	memset(row->tts_isnull, true, sizeof(bool) * row->tts_tupleDescriptor->natts);
	for (int i = 0; i < br->ncols; i++)
	{
		row->tts_values[br->attnum[i] - 1] = slot->tts_values[i];
		row->tts_isnull[br->attnum[i] - 1] = slot->tts_isnull[i];
	}
	ExecStoreVirtualTuple(row);
	if (br->check)
	{
		ExecConstraints(br->rri, row, br->estate);
		ResetPerTupleExprContext(br->estate);
	}
	tuple = ExecFetchSlotHeapTuple(row, true, NULL);
	br->bytes += tuple->t_len;
	if (++br->nbuffered == BULK_MAX_ROWS || br->bytes >= BULK_MAX_BYTES)
		bulk_flush(br);
	return true;
}

static void
bulk_shutdown(DestReceiver *self)
{
}

static void
bulk_destroy(DestReceiver *self)
{
}

/*
 * Whether ExecInsert would do more for a row of rel than check its
 * constraints and insert it: then the INSERT runs through SPI.
 */
static bool
bulk_refuses(Relation rel)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		rel->rd_rel->relispartition || rel->rd_rel->relhasindex ||
		rel->rd_rel->relrowsecurity || rel->trigdesc != NULL)
		return true;
	if (constr != NULL && constr->has_generated_stored)
		return true;
#if PG_VERSION_NUM >= 180000
	if (constr != NULL && constr->has_generated_virtual)
		return true;
#endif
	return false;
}

/*
 * The INSERT sql as the SELECT of what it inserts (see the file header),
 * *attnum[i] the table's column that the SELECT's column i + 1 fills, and
 * the table in *relid; NULL when it is not a plain INSERT ... SELECT.
 */
static Query *
bulk_select(const char *sql, int nargs, Oid *argtypes, Oid *relid, AttrNumber **attnum,
			int *ncols)
{
	List	   *raw = pg_parse_query(sql);
	List	   *queries;
	Query	   *q;
	RangeTblEntry *rte;
	ListCell   *lc;
	int			i = 0;

	if (list_length(raw) != 1)
		return NULL;
	queries = pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, raw), sql,
												 argtypes, nargs, NULL);
	if (list_length(queries) != 1)
		return NULL;
	q = linitial_node(Query, queries);
	if (q->commandType != CMD_INSERT || q->returningList != NIL || q->onConflict != NULL ||
		q->withCheckOptions != NIL || q->hasModifyingCTE || q->resultRelation == 0)
		return NULL;
	rte = rt_fetch(q->resultRelation, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		return NULL;
	*relid = rte->relid;
	*ncols = list_length(q->targetList);
	*attnum = palloc(sizeof(AttrNumber) * Max(*ncols, 1));
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			return NULL;
		(*attnum)[i] = tle->resno;
		tle->resno = ++i;
	}

	/*
	 * The table stays in the range table, unread, with the INSERT's
	 * privilege to check; the plan reads the source only.
	 */
	q->commandType = CMD_SELECT;
	q->resultRelation = 0;
	q->canSetTag = true;
	return q;
}

/* See bulk.h */
uint64
hwm_bulk_insert(const char *sql, int nargs, Oid *argtypes, Datum *values, const char *nulls)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "hwm bulk fill",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	BulkReceiver *br;
	Query	   *q;
	Oid			relid = InvalidOid;
	ParamListInfo params = NULL;
	PlannedStmt *stmt;
	QueryDesc  *qd;
	uint64		rows;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());

	br = palloc0(sizeof(BulkReceiver));
	q = bulk_select(sql, nargs, argtypes, &relid, &br->attnum, &br->ncols);
	if (q != NULL)
	{
		br->rel = table_open(relid, RowExclusiveLock);
		if (bulk_refuses(br->rel))
		{
			table_close(br->rel, NoLock);
			q = NULL;
		}
	}
	if (q == NULL)
	{
		PopActiveSnapshot();
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		hwm_spi_exec(sql, nargs, argtypes, values, nulls, SPI_OK_INSERT);
		return SPI_processed;
	}

	if (nargs > 0)
	{
		params = makeParamList(nargs);
		for (int i = 0; i < nargs; i++)
		{
			ParamExternData *prm = &params->params[i];

			prm->ptype = argtypes[i];
			prm->isnull = nulls != NULL && nulls[i] == 'n';
			prm->value = prm->isnull ? (Datum) 0 : values[i];
			prm->pflags = PARAM_FLAG_CONST;
		}
	}
	stmt = pg_plan_query(q, sql, 0, params);

	br->pub.receiveSlot = bulk_receive;
	br->pub.rStartup = bulk_startup;
	br->pub.rShutdown = bulk_shutdown;
	br->pub.rDestroy = bulk_destroy;
	br->pub.mydest = DestNone;
	br->cxt = cxt;
	br->estate = CreateExecutorState();
	br->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(br->rri, br->rel, 0, NULL, 0);
	br->check = RelationGetDescr(br->rel)->constr != NULL;
	br->bistate = GetBulkInsertState();
	br->cid = GetCurrentCommandId(true);

	qd = CreateQueryDesc(stmt, sql, GetActiveSnapshot(), InvalidSnapshot,
						 &br->pub, params, NULL, 0);
	ExecutorStart(qd, 0);
	ExecutorRun(qd, ForwardScanDirection, 0);
	bulk_flush(br);
	ExecutorFinish(qd);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);

	for (int i = 0; i < BULK_MAX_ROWS && br->slots[i] != NULL; i++)
		ExecDropSingleTupleTableSlot(br->slots[i]);
	FreeBulkInsertState(br->bistate);
	FreeExecutorState(br->estate);
	table_close(br->rel, NoLock);
	rows = br->rows;
	PopActiveSnapshot();
	/* the rows, to the statements after this one (as SPI's would be) */
	CommandCounterIncrement();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return rows;
}
