/*
 * catalog.c
 *		hwm's tables, every SQL statement on them: reading and locking a
 *		pipeline's row in hwm.state, what the SQL functions change in it
 *		(declare, drop, schedule, pause, owners...) and writing the state
 *		back after a run, the run history in hwm.runs (and the scheduler's
 *		run rows), the resumable jobs' rows in hwm.backfills (job.c's), the
 *		homes in hwm.homes; the refusal of a catalog older than this
 *		library's.  Rows leave as structs, their columns read here.
 *
 * Ordinary users cannot write hwm's tables (the install script revokes it),
 * so every access here runs as the catalog's owner, with search_path pinned;
 * who may act on which pipeline is decided by check_may_manage() before
 * anything is changed.  All statements go through SPI with $n parameters;
 * the caller must have called SPI_connect().
 */
#include "postgres.h"

#include "catalog.h"
#include "clock.h"
#include "running.h"
#include "slots.h"
#include "util.h"
#include "wakeup.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/datum.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

int			hwm_max_runs_per_pipeline = 1000;
int			hwm_history_days = 0;

/* A run whose number is a multiple of this prunes its pipeline's history */
#define PRUNE_EVERY 16

/*
 * The texts of a run's status (HwmRunStatus), the one definition: the CHECK
 * on hwm.runs.status lists the same five.  Every statement that moves a
 * run's row checks its move (run_status_move).  A status the caller chooses
 * is the statement's parameter ($n); a status the statement always reads or
 * writes is its literal, made here (SQL_STATUS), so that its plan, kept from
 * one call to the next, is the one for that value (the partial index
 * runs_running_idx serves status = 'running').
 */
#define RUNNING_TEXT		"running"
#define SUCCEEDED_TEXT		"succeeded"
#define FAILED_TEXT			"failed"
#define SKIPPED_TEXT		"skipped"
#define INTERRUPTED_TEXT	"interrupted"
#define SQL_STATUS(s)		"'" s##_TEXT "'"

static const char *const run_status_names[] = {
	[HWM_RUN_NONE] = "(none)",
	[HWM_RUN_RUNNING] = RUNNING_TEXT,
	[HWM_RUN_SUCCEEDED] = SUCCEEDED_TEXT,
	[HWM_RUN_FAILED] = FAILED_TEXT,
	[HWM_RUN_SKIPPED] = SKIPPED_TEXT,
	[HWM_RUN_INTERRUPTED] = INTERRUPTED_TEXT,
};
StaticAssertDecl(lengthof(run_status_names) == HWM_RUN_INTERRUPTED + 1,
				 "every HwmRunStatus has its text (and a status added has its place in the CHECK on hwm.runs.status)");

/* A run's status as hwm.runs stores it ("(none)" for HWM_RUN_NONE) */
const char *
hwm_run_status_name(HwmRunStatus status)
{
	if ((int) status < 0 || (int) status >= (int) lengthof(run_status_names))
		elog(ERROR, "hwm: unknown run status %d", (int) status);
	return run_status_names[status];
}

/* A status read from hwm.runs or hwm.backfills; anything else is an internal error */
HwmRunStatus
hwm_run_status_parse(const char *text)
{
	for (int s = HWM_RUN_RUNNING; s < (int) lengthof(run_status_names); s++)
		if (text != NULL && strcmp(text, run_status_names[s]) == 0)
			return (HwmRunStatus) s;
	elog(ERROR, "hwm: unknown run status \"%s\"", text ? text : "(null)");
	return HWM_RUN_NONE;		/* keep the compiler quiet */
}

/*
 * May a run's row move from one status to the other?  The one statement of
 * the moves (see catalog.h's table, and src/README.md's, which says who
 * makes each): HWM_RUN_NONE is no row, before its insert or after its
 * delete.
 */
bool
hwm_run_status_can_move(HwmRunStatus from, HwmRunStatus to)
{
	switch (from)
	{
		case HWM_RUN_NONE:
			return to == HWM_RUN_RUNNING || to == HWM_RUN_SUCCEEDED || to == HWM_RUN_FAILED;
		case HWM_RUN_RUNNING:
			return to == HWM_RUN_SUCCEEDED || to == HWM_RUN_FAILED ||
				to == HWM_RUN_SKIPPED || to == HWM_RUN_INTERRUPTED || to == HWM_RUN_NONE;
		case HWM_RUN_SUCCEEDED:
		case HWM_RUN_FAILED:
		case HWM_RUN_SKIPPED:
		case HWM_RUN_INTERRUPTED:
			return false;		/* final */
	}
	return false;
}

/*
 * A move that a statement below is about to make, checked (an illegal one
 * is a bug of hwm's, never the caller's); the status written, as the
 * statement's parameter (a text Datum; NULL for a row deleted).
 */
static Datum
run_status_move(HwmRunStatus from, HwmRunStatus to)
{
	if (!hwm_run_status_can_move(from, to))
		elog(ERROR, "hwm: a run cannot move from status %s to %s",
			 hwm_run_status_name(from), hwm_run_status_name(to));
	return to == HWM_RUN_NONE ? (Datum) 0 : CStringGetTextDatum(hwm_run_status_name(to));
}


/* one parameter: value, or NULL when absent */
static void
set_arg(Datum *values, char *nulls, int i, Datum value, bool present)
{
	values[i] = present ? value : (Datum) 0;
	nulls[i] = present ? ' ' : 'n';
}

/*
 * Reading the rows of a statement below: its columns by number, in the
 * order its SELECT list or RETURNING writes them (the only place that
 * numbers them), each tested for NULL.  A column that hwm's tables declare
 * NOT NULL, or that the statement cannot make NULL, is read with
 * col_not_null: a NULL there is a broken catalog, an internal error naming
 * the column.
 */
static Datum
col_not_null(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	if (isnull)
		elog(ERROR, "hwm: column \"%s\" of a row of hwm's catalog is NULL", SPI_fname(desc, col));
	return d;
}

/* the same of the first row of the last statement's result, which has one */
static Datum
first_not_null(int col)
{
	if (SPI_processed == 0)
		elog(ERROR, "hwm: a statement on hwm's catalog returned no row");
	return col_not_null(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
}

/* a column of type interval, copied (NULL: NULL) */
static Interval *
col_interval(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? NULL : DatumGetIntervalP(datumCopy(d, false, sizeof(Interval)));
}

static void hwm_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
							 const char *nulls, int expected);
static void catalog_exec_any_version(const char *sql, int nargs, Oid *argtypes, Datum *values,
									 const char *nulls, int expected);
static void catalog_exec_snapshot(const char *sql, int nargs, Oid *argtypes, Datum *values,
								  const char *nulls, Snapshot snapshot, int expected);
static void check_may_manage(HwmPipeline *p, bool orphan_ok);
static int64 prune_runs(const char *pipeline, Oid owner, int64 above);

/*
 * The catalog this library serves: hwm 1.3's (default_version in
 * hwm.control).  A database whose catalog is older (between installing
 * this library and ALTER EXTENSION hwm UPDATE, or restored by pg_upgrade
 * from a cluster with an older hwm) is refused by every statement below
 * but the few that catalog_exec_any_version runs: see "Old catalogs" in
 * src/README.md.  Its mark is the newest column of hwm.state, the one
 * hwm--1.2--1.3.sql adds last; a later change to the catalog adds a column
 * to hwm.state last and moves the mark to it.
 */
#define CATALOG_VERSION			"1.3"
#define CATALOG_NEWEST_COLUMN	"on_commit"

/* hwm.state, or InvalidOid when the schema or the table is missing */
static Oid
state_relid(void)
{
	Oid			nsp = get_namespace_oid("hwm", true);

	return OidIsValid(nsp) ? get_relname_relid("state", nsp) : InvalidOid;
}

/*
 * Is this database's hwm catalog the one this library serves?  false
 * without hwm, and before ALTER EXTENSION hwm UPDATE.
 */
bool
hwm_catalog_is_current(void)
{
	Oid			relid = state_relid();

	return OidIsValid(relid) && get_attnum(relid, CATALOG_NEWEST_COLUMN) != InvalidAttrNumber;
}

/* The refusal of everything on an older catalog (hwm_catalog_is_current) */
static void
refuse_old_catalog(void)
{
	Datum		version;
	const char *installed = "older";

	(void) hwm_catalog_owner();	/* no hwm.state at all: that error */
	if (SPI_execute("SELECT extversion FROM pg_catalog.pg_extension"
					" WHERE extname OPERATOR(pg_catalog.=) 'hwm'", true, 1) == SPI_OK_SELECT &&
		hwm_spi_first(&version))
		installed = TextDatumGetCString(version);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("hwm's catalog in this database is version %s, and the installed hwm library serves version %s",
					installed, CATALOG_VERSION),
			 errdetail("Until the catalog is updated, hwm runs, schedules and changes no pipeline here; "
					   "watermarks, schedules and the run history stay as they are."),
			 errhint("Run ALTER EXTENSION hwm UPDATE in this database.")));
}

/*
 * Pipeline name is declared, or resumed, in this database: its row of
 * hwm.homes says so (the scheduler leaves alone a pipeline whose row names
 * another database: it came with a copy of that database).
 */
void
hwm_pipeline_set_home(const char *name)
{
	Oid			argtypes[2] = {TEXTOID, OIDOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(name);
	values[1] = ObjectIdGetDatum(MyDatabaseId);
	hwm_catalog_exec("INSERT INTO hwm.homes (pipeline, dboid) VALUES ($1, $2)"
					 " ON CONFLICT (pipeline) DO UPDATE SET dboid = EXCLUDED.dboid",
					 2, argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * The role that owns hwm's catalog (the role that ran CREATE EXTENSION).
 */
Oid
hwm_catalog_owner(void)
{
	Oid			relid = state_relid();
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("hwm catalog table hwm.state is missing"),
				 errhint("Reinstall the extension with DROP EXTENSION hwm; CREATE EXTENSION hwm.")));
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Run a statement on hwm's catalog as its owner (to whom row security does
 * not apply), with hwm_spi_exec's checks; the caller's SPI connection and
 * role are kept.  Every read and write of hwm.state, hwm.runs,
 * hwm.backfills and hwm.homes on the caller's behalf goes through here
 * (static: no other file writes SQL on them), and is refused on a catalog
 * older than this library's (refuse_old_catalog): the statements are
 * written for this version's tables alone.
 */
static void
hwm_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
				 const char *nulls, int expected)
{
	if (!hwm_catalog_is_current())
		refuse_old_catalog();
	catalog_exec_any_version(sql, nargs, argtypes, values, nulls, expected);
}

/*
 * hwm_catalog_exec without the version's refusal, for the statements on
 * what every catalog since 1.0 has (a pipeline's name, source, target and
 * owner in hwm.state) that an older catalog must not block: the sql_drop
 * event trigger's (DROP TABLE) and the role hooks' (DROP ROLE, REASSIGN
 * OWNED, DROP OWNED).
 */
static void
catalog_exec_any_version(const char *sql, int nargs, Oid *argtypes, Datum *values,
						 const char *nulls, int expected)
{
	catalog_exec_snapshot(sql, nargs, argtypes, values, nulls, InvalidSnapshot, expected);
}

/* ... with the snapshot given (InvalidSnapshot: its own) */
static void
catalog_exec_snapshot(const char *sql, int nargs, Oid *argtypes, Datum *values,
					  const char *nulls, Snapshot snapshot, int expected)
{
	HwmRoleSwitch sw;

	hwm_become(hwm_catalog_owner(), false, &sw);
	hwm_spi_exec_snapshot(sql, nargs, argtypes, values, nulls, snapshot, expected);
	hwm_unbecome(&sw);
}

/*
 * Does a pipeline of this name exist?  (Visible to anyone: names are not
 * secret, and refusing a duplicate name needs it.)
 */
bool
hwm_pipeline_exists(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	bool		found;

	values[0] = CStringGetTextDatum(name);
	hwm_catalog_exec("SELECT 1 FROM hwm.state WHERE pipeline OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	return found;
}

/*
 * The copy pipelines whose target is one of relids (n of them): each one's
 * committed watermark (NULL: nothing loaded yet), its type and how far it
 * last found its source complete (hwm.state.data_as_of), for the
 * bound of a pipeline that reads their targets (watermark.c, a chain).
 * Read as the catalog's owner: the bound needs every owner's pipelines,
 * and nothing read here is shown.
 */
List *
hwm_state_upstreams(const Oid *relids, int n)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1];
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	List	   *result = NIL;

	for (int i = 0; i < n; i++)
		elems[i] = ObjectIdGetDatum(relids[i]);
	values[0] = PointerGetDatum(construct_array(elems, n, OIDOID, sizeof(Oid), true,
												TYPALIGN_INT));
	hwm_catalog_exec("SELECT watermark, watermark_type::pg_catalog.oid, data_as_of FROM hwm.state"
					 " WHERE target::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HwmUpstream *u = palloc0(sizeof(HwmUpstream));
		bool		isnull;
		Datum		type = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);

		if (isnull)
			continue;			/* NOT NULL in every catalog: no such row */
		u->type = DatumGetObjectId(type);
		u->watermark = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		type = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull);
		u->as_of = isnull ? 0 : DatumGetTimestampTz(type);
		result = lappend(result, u);
	}
	return result;
}

/*
 * The pipeline whose lock this backend was last refused (nowait), NULL
 * after hwm_pipeline_busy_forget: what tells the scheduler's worker that
 * its run met a busy pipeline, whatever language the error is in
 * (hwm_pipeline_was_busy).  Kept in TopMemoryContext.
 */
static char *busy_pipeline = NULL;

/*
 * Take the pipeline's lock until the end of the transaction: every run,
 * overwrite, backfill step, watermark change and drop of one pipeline takes
 * it, so they never interleave, while different pipelines proceed in
 * parallel.  It is a heavyweight lock (so waits show in pg_locks and take
 * part in deadlock detection) on an advisory tag whose key is a 64-bit hash
 * of the pipeline's name and whose fourth field, HWM_LOCK_SPACE, keeps it
 * apart from the advisory locks that users take.  With nowait, a busy
 * pipeline is an error at once instead of a wait.
 */
#define HWM_LOCK_SPACE 0x686d

static void
pipeline_lock(const char *name, bool nowait)
{
	LOCKTAG		tag;
	uint64		h = hash_bytes_extended((const unsigned char *) name, strlen(name),
										UINT64CONST(0x68776d));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 HWM_LOCK_SPACE);
	if (LockAcquire(&tag, ExclusiveLock, false, nowait) == LOCKACQUIRE_NOT_AVAIL)
	{
		hwm_pipeline_busy_forget();
		busy_pipeline = MemoryContextStrdup(TopMemoryContext, name);
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("pipeline \"%s\" is busy", name),
				 errdetail("Another run, overwrite, backfill or change of this pipeline holds its lock."),
				 errhint("Wait for it to finish, or call without nowait to queue behind it.")));
	}
}

/*
 * Was the last pipeline lock this backend was refused (since
 * hwm_pipeline_busy_forget) the lock of this pipeline?  The scheduler's
 * worker asks after its run failed with 55P03: a run refused its own
 * pipeline's lock never held it, so the pipeline was busy with another run
 * (recorded as skipped), where a lock timeout, a job already running or a
 * 55P03 that the pipeline's command raised is a failure.  Not the message:
 * it is in the server's language.
 */
bool
hwm_pipeline_was_busy(const char *name)
{
	return busy_pipeline != NULL && name != NULL && strcmp(busy_pipeline, name) == 0;
}

/* Forget the last refused pipeline lock (before a scheduled run) */
void
hwm_pipeline_busy_forget(void)
{
	if (busy_pipeline != NULL)
		pfree(busy_pipeline);
	busy_pipeline = NULL;
}

/*
 * What the last load remembered (see watermark.c), from the four columns
 * starting at column first: reread_from, reread_vxids, reread_starts,
 * reread_epoch.  Lists that do not match leave no memory.
 */
static void
memory_read(HwmLoadMemory *mem, HeapTuple tup, TupleDesc desc, int first)
{
	bool		isnull;
	bool		vnull;
	bool		snull;
	Datum		vxids = SPI_getbinval(tup, desc, first + 1, &vnull);
	Datum		starts = SPI_getbinval(tup, desc, first + 2, &snull);
	Datum		epoch = SPI_getbinval(tup, desc, first + 3, &isnull);
	Datum	   *v = NULL;
	Datum	   *t = NULL;
	bool	   *tnulls = NULL;
	int			nv = 0;
	int			nt = 0;

	memset(mem, 0, sizeof(*mem));
	mem->null_watermarks = -1;
	mem->reread_from = SPI_getvalue(tup, desc, first);
	if (mem->reread_from == NULL || isnull)
	{
		mem->reread_from = NULL;
		return;
	}
	mem->epoch = DatumGetTimestampTz(epoch);
	if (!vnull)
		deconstruct_array(DatumGetArrayTypeP(vxids), TEXTOID, -1, false, TYPALIGN_INT,
						  &v, NULL, &nv);
	if (!snull)
		deconstruct_array(DatumGetArrayTypeP(starts), TIMESTAMPTZOID, sizeof(TimestampTz),
						  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &t, &tnulls, &nt);
	if (nv != nt)
	{
		mem->reread_from = NULL;
		return;
	}
	for (int i = 0; i < nv; i++)
	{
		HwmXact    *x = palloc(sizeof(HwmXact));

		x->vxid = TextDatumGetCString(v[i]);
		x->start = tnulls[i] ? 0 : DatumGetTimestampTz(t[i]);
		mem->xacts = lappend(mem->xacts, x);
	}
}

/* The columns of pipeline_read's statement, in order */
enum
{
	ROW_PIPELINE = 1, ROW_SOURCE, ROW_TARGET, ROW_UNIQUE_KEY, ROW_WATERMARK_COLUMN,
	ROW_PARTITION_COLUMN, ROW_LOOKBACK, ROW_WATERMARK, ROW_OWNER, ROW_ENABLED,
	ROW_DELAY, ROW_BATCH_SIZE,
	ROW_REREAD_FROM,			/* ... and the three after it: memory_read */
	ROW_COMMAND = ROW_REREAD_FROM + 4, ROW_TIME_INTERVAL, ROW_INTERVAL_ANCHOR,
	ROW_BATCHED, ROW_SKIP_EMPTY, ROW_CREATED_AT, ROW_DELETE_COLUMN, ROW_DATA_AS_OF,
	ROW_HISTORY_COLUMNS, ROW_VALID_FROM_COLUMN, ROW_VALID_TO_COLUMN, ROW_WATERMARK_TYPE
};

/*
 * A pipeline from a row of pipeline_read's statement (ROW_*): the columns
 * that hwm.state declares NOT NULL are never NULL; the others are NULL,
 * InvalidOid, 0 or false in HwmPipeline when they are.
 */
static HwmPipeline *
pipeline_from_row(HeapTuple tup, TupleDesc desc)
{
	HwmPipeline *p = palloc0(sizeof(HwmPipeline));
	ArrayType  *key = DatumGetArrayTypeP(col_not_null(tup, desc, ROW_UNIQUE_KEY));
	Datum	   *elems;
	bool	   *elem_nulls;
	int			nelems;
	bool		isnull;
	Datum		d;

	p->name = TextDatumGetCString(col_not_null(tup, desc, ROW_PIPELINE));
	p->source = DatumGetObjectId(col_not_null(tup, desc, ROW_SOURCE));
	d = SPI_getbinval(tup, desc, ROW_TARGET, &isnull);
	p->target = isnull ? InvalidOid : DatumGetObjectId(d);
	deconstruct_array(key, TEXTOID, -1, false, TYPALIGN_INT, &elems, &elem_nulls, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		if (elem_nulls[i])
			elog(ERROR, "hwm: pipeline \"%s\" has a NULL among its unique_key columns", p->name);
		p->unique_key = lappend(p->unique_key, TextDatumGetCString(elems[i]));
	}
	p->watermark_column = TextDatumGetCString(col_not_null(tup, desc, ROW_WATERMARK_COLUMN));
	p->partition_column = SPI_getvalue(tup, desc, ROW_PARTITION_COLUMN);
	p->lookback = DatumGetInt32(col_not_null(tup, desc, ROW_LOOKBACK));
	p->watermark = SPI_getvalue(tup, desc, ROW_WATERMARK);
	p->owner = DatumGetObjectId(col_not_null(tup, desc, ROW_OWNER));
	p->enabled = DatumGetBool(col_not_null(tup, desc, ROW_ENABLED));
	p->delay = col_interval(tup, desc, ROW_DELAY);
	d = SPI_getbinval(tup, desc, ROW_BATCH_SIZE, &isnull);
	p->batch_size = isnull ? 0 : DatumGetInt64(d);
	memory_read(&p->memory, tup, desc, ROW_REREAD_FROM);
	p->command = SPI_getvalue(tup, desc, ROW_COMMAND);
	p->time_interval = col_interval(tup, desc, ROW_TIME_INTERVAL);
	p->interval_anchor = SPI_getvalue(tup, desc, ROW_INTERVAL_ANCHOR);
	p->batched = DatumGetBool(col_not_null(tup, desc, ROW_BATCHED));
	p->skip_empty = DatumGetBool(col_not_null(tup, desc, ROW_SKIP_EMPTY));
	p->created_at = DatumGetTimestampTz(col_not_null(tup, desc, ROW_CREATED_AT));
	p->delete_column = SPI_getvalue(tup, desc, ROW_DELETE_COLUMN);
	d = SPI_getbinval(tup, desc, ROW_DATA_AS_OF, &isnull);
	p->data_as_of = isnull ? 0 : DatumGetTimestampTz(d);
	p->valid_from_column = SPI_getvalue(tup, desc, ROW_VALID_FROM_COLUMN);
	p->valid_to_column = SPI_getvalue(tup, desc, ROW_VALID_TO_COLUMN);
	p->watermark_type = DatumGetObjectId(col_not_null(tup, desc, ROW_WATERMARK_TYPE));
	d = SPI_getbinval(tup, desc, ROW_HISTORY_COLUMNS, &isnull);
	if (!isnull)
	{
		p->history_columns_given = true;
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &elem_nulls, &nelems);
		for (int i = 0; i < nelems; i++)
			if (!elem_nulls[i])
				p->history_columns = lappend(p->history_columns, TextDatumGetCString(elems[i]));
	}
	return p;
}

/* Read a pipeline's catalog row as it is now, or NULL */
static HwmPipeline *
pipeline_read(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(name);
	hwm_catalog_exec("SELECT pipeline, source::pg_catalog.oid, target::pg_catalog.oid,"
					 " unique_key::pg_catalog.text[], watermark_column::pg_catalog.text,"
					 " partition_column::pg_catalog.text, lookback, watermark,"
					 " owner::pg_catalog.oid, enabled, delay, batch_size,"
					 " reread_from, reread_vxids::pg_catalog.text[], reread_starts, reread_epoch,"
					 " command, time_interval, interval_anchor, batched, skip_empty,"
					 " created_at, delete_column::pg_catalog.text, data_as_of,"
					 " history_columns::pg_catalog.text[], valid_from_column::pg_catalog.text,"
					 " valid_to_column::pg_catalog.text, watermark_type::pg_catalog.oid"
					 " FROM hwm.state WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return NULL;
	Assert(SPI_tuptable->tupdesc->natts == ROW_WATERMARK_TYPE);
	return pipeline_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
}

/*
 * Read a pipeline's catalog row, refusing callers that may not manage it.
 * With lock, also take the pipeline's lock (see pipeline_lock) and read the
 * row again under it, so a caller that waited sees what the previous holder
 * committed.  Permission is checked before locking, so nobody can hold up a
 * pipeline that is not theirs.
 */
HwmPipeline *
hwm_pipeline_fetch(const char *name, bool lock, bool nowait)
{
	return hwm_pipeline_fetch_extended(name, lock, nowait, false);
}

/*
 * The owner of every pipeline this backend has read (by name), so that a
 * run of one it ran before reads its row once, under its lock.
 */
typedef struct KnownOwner
{
	char		name[NAMEDATALEN];
	Oid			owner;
} KnownOwner;

static HTAB *known_owners = NULL;

static void
remember_owner(const char *name, Oid owner)
{
	KnownOwner *k;

	if (strlen(name) >= NAMEDATALEN)
		return;
	if (known_owners == NULL)
	{
		HASHCTL		ctl = {0};

		ctl.keysize = NAMEDATALEN;
		ctl.entrysize = sizeof(KnownOwner);
		known_owners = hash_create("hwm pipeline owners", 64, &ctl, HASH_ELEM | HASH_STRINGS);
	}
	if (hash_get_num_entries(known_owners) >= 10000)
	{
		hash_destroy(known_owners);
		known_owners = NULL;
		remember_owner(name, owner);
		return;
	}
	k = hash_search(known_owners, name, HASH_ENTER, NULL);
	k->owner = owner;
}

static bool
known_owner(const char *name, Oid *owner)
{
	KnownOwner *k;

	if (known_owners == NULL || strlen(name) >= NAMEDATALEN)
		return false;
	k = hash_search(known_owners, name, HASH_FIND, NULL);
	if (k == NULL)
		return false;
	*owner = k->owner;
	return true;
}

/*
 * The pipeline's row, which must exist (waited: it was there before its lock
 * was waited for), its owner remembered before the rights check (so that a
 * caller refused once, on a name another owner has taken over, never locks
 * that pipeline first again), and the check.
 */
static HwmPipeline *
read_checked(const char *name, bool orphan_ok, bool waited)
{
	HwmPipeline *p = pipeline_read(name);

	if (p == NULL && waited)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" was dropped while waiting for its lock", name)));
	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", name),
				 errhint("SELECT pipeline FROM hwm.status lists the pipelines.")));
	remember_owner(name, p->owner);
	check_may_manage(p, orphan_ok);
	return p;
}

/*
 * hwm_pipeline_fetch, and with orphan_ok also a pipeline whose owner role
 * was dropped, provided the caller is a superuser: such a pipeline runs for
 * nobody, and only a superuser may remove it (see check_may_manage).
 */
HwmPipeline *
hwm_pipeline_fetch_extended(const char *name, bool lock, bool nowait,
							bool orphan_ok)
{
	HwmPipeline *p;
	Oid			owner;

	/* nothing acts on a pipeline from inside its own run (running.c) */
	hwm_running_refuse(name);

	/*
	 * A pipeline this backend has run before, whose owner the caller may act
	 * for: locked first and read once, the only read that the lock makes
	 * current.  Otherwise read (and refused) before its lock is taken, so
	 * that nobody who may not run a pipeline ever holds its lock, and read
	 * again under the lock.
	 */
	if (lock && known_owner(name, &owner) && has_privs_of_role(GetUserId(), owner))
	{
		pipeline_lock(name, nowait);
		return read_checked(name, orphan_ok, false);
	}
	p = read_checked(name, orphan_ok, false);
	if (!lock)
		return p;
	pipeline_lock(name, nowait);
	return read_checked(name, orphan_ok, true);
}


/*
 * Only the pipeline's owner, a member of the owner role, or a superuser may
 * run or change it.  A pipeline whose owner role is gone runs for nobody:
 * with orphan_ok a superuser may still act on it (to drop it).
 */
static void
check_may_manage(HwmPipeline *p, bool orphan_ok)
{
	char	   *owner_name = GetUserNameFromId(p->owner, true);

	if (owner_name == NULL)
	{
		if (orphan_ok && superuser())
			return;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("owner of pipeline \"%s\" no longer exists", p->name),
				 errdetail("The role with OID %u that created the pipeline has been dropped; the pipeline runs for nobody.", p->owner),
				 errhint("A superuser can drop it with SELECT hwm.drop_pipeline(%s); create it again as an existing role.",
						 quote_literal_cstr(p->name))));
	}

	if (!has_privs_of_role(GetUserId(), p->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for pipeline \"%s\"", p->name),
				 errdetail("Pipeline \"%s\" is owned by role \"%s\".", p->name, owner_name),
				 errhint("Only the pipeline's owner, a member of its owner role, or a superuser can run or change it.")));
}


/*
 * Does the scheduler keep this database's history pruned?  Its dispatcher
 * prunes every pipeline's history at every upkeep (every 10 seconds while
 * runs are due, every five minutes otherwise): then a run by hand leaves it
 * that work, which costs as much as a small run.
 */
static bool
scheduler_prunes_here(void)
{
	return hwm_scheduler_preloaded && hwm_database_listed(get_database_name(MyDatabaseId));
}

/* The parameters of hwm_record_run's statements, $1 first */
enum
{
	RUN_PIPELINE, RUN_KIND, RUN_STARTED_AT, RUN_ROWS_UPSERTED, RUN_PARTITIONS,
	RUN_ROWS_DELETED, RUN_ROWS_INSERTED, RUN_WATERMARK_BEFORE, RUN_WATERMARK_AFTER,
	RUN_FROM_PARTITION, RUN_TO_PARTITION, RUN_RUN_BY, RUN_CALLER, RUN_METHOD,
	RUN_STATUS, RUN_ERROR_SQLSTATE, RUN_ERROR, RUN_ROWS_REFUSED,
	RUN_NARGS,
	RUN_SCHEDULED_ID = RUN_NARGS,	/* the UPDATE of a scheduled run's row only */
	RUN_NARGS_SCHEDULED
};

/* a text parameter, NULL when str is */
static void
set_text_arg(Datum *values, char *nulls, int i, const char *str)
{
	set_arg(values, nulls, i, str ? CStringGetTextDatum(str) : (Datum) 0, str != NULL);
}

/* a count parameter, NULL when negative (not applicable to this kind of run) */
static void
set_count_arg(Datum *values, char *nulls, int i, int64 count, bool int4)
{
	set_arg(values, nulls, i, int4 ? Int32GetDatum((int32) count) : Int64GetDatum(count),
			count >= 0);
}

/* A run's facts as hwm_record_run's parameters (RUN_*), the caller's too */
static void
run_args(const HwmRunFacts *run, Oid *argtypes, Datum *values, char *nulls)
{
	static const Oid types[RUN_NARGS_SCHEDULED] = {
		[RUN_PIPELINE] = TEXTOID, [RUN_KIND] = TEXTOID, [RUN_STARTED_AT] = TIMESTAMPTZOID,
		[RUN_ROWS_UPSERTED] = INT8OID, [RUN_PARTITIONS] = INT4OID,
		[RUN_ROWS_DELETED] = INT8OID, [RUN_ROWS_INSERTED] = INT8OID,
		[RUN_WATERMARK_BEFORE] = TEXTOID, [RUN_WATERMARK_AFTER] = TEXTOID,
		[RUN_FROM_PARTITION] = TEXTOID, [RUN_TO_PARTITION] = TEXTOID,
		[RUN_RUN_BY] = NAMEOID, [RUN_CALLER] = OIDOID, [RUN_METHOD] = TEXTOID,
		[RUN_STATUS] = TEXTOID, [RUN_ERROR_SQLSTATE] = TEXTOID, [RUN_ERROR] = TEXTOID,
		[RUN_ROWS_REFUSED] = INT8OID,
	[RUN_SCHEDULED_ID] = INT8OID};

	memcpy(argtypes, types, sizeof(types));
	set_text_arg(values, nulls, RUN_PIPELINE, run->pipeline);
	set_text_arg(values, nulls, RUN_KIND, run->kind);
	set_arg(values, nulls, RUN_STARTED_AT, TimestampTzGetDatum(run->started_at), true);
	set_count_arg(values, nulls, RUN_ROWS_UPSERTED, run->rows_upserted, false);
	set_count_arg(values, nulls, RUN_PARTITIONS, run->partitions, true);
	set_count_arg(values, nulls, RUN_ROWS_DELETED, run->rows_deleted, false);
	set_count_arg(values, nulls, RUN_ROWS_INSERTED, run->rows_inserted, false);
	set_text_arg(values, nulls, RUN_WATERMARK_BEFORE, run->watermark_before);
	set_text_arg(values, nulls, RUN_WATERMARK_AFTER, run->watermark_after);
	set_text_arg(values, nulls, RUN_FROM_PARTITION, run->from_partition);
	set_text_arg(values, nulls, RUN_TO_PARTITION, run->to_partition);
	set_arg(values, nulls, RUN_RUN_BY,
			DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(GetUserId(), false))),
			true);
	set_arg(values, nulls, RUN_CALLER, ObjectIdGetDatum(GetUserId()), true);
	set_text_arg(values, nulls, RUN_METHOD, run->method);
	/* (RUN_STATUS: set by the move hwm_record_run makes, run_status_move) */
	set_arg(values, nulls, RUN_STATUS, (Datum) 0, true);
	set_text_arg(values, nulls, RUN_ERROR_SQLSTATE, run->error_sqlstate);
	set_text_arg(values, nulls, RUN_ERROR, run->error ? hwm_clip_error(run->error) : NULL);
	set_count_arg(values, nulls, RUN_ROWS_REFUSED, run->rows_refused, false);
	set_arg(values, nulls, RUN_SCHEDULED_ID, Int64GetDatum(run->scheduled_run_id), true);
}

/*
 * Append a run with its outcome (run->status) to hwm.runs, with every fact
 * in its first write, and return its run_id.  A negative count is recorded
 * as NULL (not applicable).
 */
int64
hwm_record_run(const HwmRunFacts *run)
{
	Oid			argtypes[RUN_NARGS_SCHEDULED];
	Datum		values[RUN_NARGS_SCHEDULED];
	char		nulls[RUN_NARGS_SCHEDULED];
	bool		isnull;
	int64		run_id;
	Oid			owner;

	/* the statements below write parameter RUN_X as $(RUN_X + 1) */
	StaticAssertStmt(RUN_METHOD + 1 == 14 && RUN_ERROR + 1 == 17 && RUN_ROWS_REFUSED + 1 == 18 &&
					 RUN_SCHEDULED_ID + 1 == 19,
					 "hwm_record_run's statements number their parameters as RUN_* does");
	run_args(run, argtypes, values, nulls);

	/*
	 * A scheduled run records itself in the 'running' row the dispatcher
	 * inserted for it: one run id per run.
	 */
	if (run->scheduled_run_id != 0 && run->pipeline && strcmp(run->kind, "load") == 0)
	{
		values[RUN_STATUS] = run_status_move(HWM_RUN_RUNNING, run->status);
		hwm_catalog_exec("UPDATE hwm.runs SET started_at = $3, finished_at = pg_catalog.clock_timestamp(), status = $15,"
						 " rows_upserted = $4, partitions_overwritten = $5, rows_deleted = $6,"
						 " rows_inserted = $7, watermark_before = $8, watermark_after = $9,"
						 " from_partition = $10, to_partition = $11, method = $14,"
						 " error_sqlstate = $16, error = $17, rows_refused = $18"
						 " WHERE run_id OPERATOR(pg_catalog.=) $19 AND status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING)
						 "  AND pipeline OPERATOR(pg_catalog.=) $1"
						 " RETURNING run_id",
						 RUN_NARGS_SCHEDULED, argtypes, values, nulls, SPI_OK_UPDATE_RETURNING);
		if (SPI_processed > 0)
			return DatumGetInt64(first_not_null(1));
	}
	/*
	 * Else a row of its own, whose owner (who may see the row, see the row
	 * security policy on hwm.runs) is the pipeline's owner, or the caller for
	 * a run without a pipeline.
	 */
	values[RUN_STATUS] = run_status_move(HWM_RUN_NONE, run->status);
	hwm_catalog_exec("INSERT INTO hwm.runs (pipeline, kind, started_at, finished_at, status,"
					 " rows_upserted, partitions_overwritten, rows_deleted, rows_inserted,"
					 " watermark_before, watermark_after, from_partition, to_partition, run_by,"
					 " owner, method, error_sqlstate, error, rows_refused)"
					 " VALUES ($1, $2, $3, pg_catalog.clock_timestamp(), $15,"
					 " $4, $5, $6, $7, $8, $9, $10, $11, $12,"
					 " COALESCE((SELECT s.owner FROM hwm.state AS s"
					 " WHERE s.pipeline OPERATOR(pg_catalog.=) $1), $13::pg_catalog.regrole), $14,"
					 " $16, $17, $18)"
					 " RETURNING run_id, owner::pg_catalog.oid",
					 RUN_NARGS, argtypes, values, nulls, SPI_OK_INSERT_RETURNING);
	run_id = DatumGetInt64(first_not_null(1));
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	/* its own history: the pipeline's under its owner, or the caller's runs without one */
	if (!isnull && run_id % PRUNE_EVERY == 0 && !scheduler_prunes_here())
		hwm_prune_runs(run->pipeline, owner);
	return run_id;
}

/*
 * Apply hwm.max_runs_per_pipeline and hwm.history_days to the history of
 * one owner: with pipeline, to that pipeline's runs made with the rights of
 * owner (InvalidOid: of its owner now); without, to owner's runs without a
 * pipeline (hwm.overwrite_partition, hwm.swap); with neither, to every
 * such history of the database at once.  A history is never counted across
 * owners: the runs without a pipeline of one role, and the runs of a
 * pipeline name under one owner, are each a history of their own (so a
 * role that makes many runs deletes only its own).  Never deleted: runs in
 * progress, and, by age only, the backfill runs of a pipeline with an
 * unfinished backfill (by count they go as any other run, so that a long
 * backfill or rerun stays within the bound).  Each database's dispatcher
 * prunes all of it at its upkeep (dispatch.c); in a database the scheduler
 * does not serve, runs by hand prune their own history every PRUNE_EVERY
 * runs; a loop of runs (hwm.catch_up, a backfill, a rerun) prunes its
 * pipeline's every PRUNE_EVERY runs wherever it is (hwm_prune_runs_in_loop).
 */
void
hwm_prune_runs(const char *pipeline, Oid owner)
{
	(void) prune_runs(pipeline, owner, 0);
}

/* Never pruned: a run in progress; by age, a backfill's runs while it is unfinished */
#define KEEP_RUNNING " AND r.status OPERATOR(pg_catalog.<>) " SQL_STATUS(RUNNING)
#define KEEP_BACKFILL \
	" AND NOT (r.kind OPERATOR(pg_catalog.=) 'backfill' AND EXISTS (SELECT FROM hwm.backfills AS b" \
	"  WHERE b.pipeline OPERATOR(pg_catalog.=) r.pipeline" \
	"   AND b.status OPERATOR(pg_catalog.<>) " SQL_STATUS(SUCCEEDED) "))"

/*
 * hwm.history_days: the runs of one history (scope: prune_runs's condition
 * on r, with its parameters $2 and $3; "" and nargs 1 for every history)
 * that started longer ago.
 */
static void
prune_by_age(const char *scope, int nargs, Oid *argtypes, Datum *values, const char *nulls)
{
	values[0] = Int32GetDatum(hwm_history_days);
	hwm_catalog_exec(psprintf("DELETE FROM hwm.runs AS r"
							  " WHERE r.started_at OPERATOR(pg_catalog.<) (pg_catalog.now()"
							  "  OPERATOR(pg_catalog.-) pg_catalog.make_interval(days => $1))%s"
							  KEEP_RUNNING KEEP_BACKFILL, scope),
					 nargs, argtypes, values, nulls, SPI_OK_DELETE);
}

/* hwm.max_runs_per_pipeline, in every history of the database at once */
static void
prune_all_by_count(void)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(hwm_max_runs_per_pipeline)};

	hwm_catalog_exec("DELETE FROM hwm.runs AS r WHERE r.run_id OPERATOR(pg_catalog.=) ANY (ARRAY("
					 " SELECT x.run_id FROM (SELECT run_id, pg_catalog.row_number() OVER"
					 "   (PARTITION BY pipeline, owner ORDER BY run_id DESC) AS n"
					 "  FROM hwm.runs) AS x"
					 " WHERE x.n OPERATOR(pg_catalog.>) $1))" KEEP_RUNNING,
					 1, argtypes, values, NULL, SPI_OK_DELETE);
}

/*
 * hwm.max_runs_per_pipeline in one history (scope, as prune_by_age's), for
 * the runs after run_id above: returns the newest run_id beyond the bound
 * (above when there is none).  That run is found through the index on
 * (pipeline, run_id) from its newest end (a pipeline's rows by its name,
 * runs without a pipeline by the IS NULL part of it); then the runs up to
 * it, after the last cut, go: a loop that prunes as it goes reads the
 * bound's rows and the few beyond it, never the index entries of the runs
 * it deleted before (dead until VACUUM).
 */
static int64
prune_by_count(const char *scope, int64 above, Oid *argtypes, Datum *values, const char *nulls)
{
	int64		cut;

	values[0] = Int32GetDatum(hwm_max_runs_per_pipeline);
	hwm_catalog_exec(psprintf("SELECT r.run_id FROM hwm.runs AS r WHERE TRUE%s"
							  " ORDER BY r.pipeline DESC, r.run_id DESC OFFSET $1 LIMIT 1", scope),
					 3, argtypes, values, nulls, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return above;
	cut = DatumGetInt64(first_not_null(1));
	if (cut <= above)
		return above;
	values[3] = Int64GetDatum(above);
	values[4] = Int64GetDatum(cut);
	hwm_catalog_exec(psprintf("DELETE FROM hwm.runs AS r"
							  " WHERE r.run_id OPERATOR(pg_catalog.>) $4 AND r.run_id OPERATOR(pg_catalog.<=) $5%s"
							  KEEP_RUNNING, scope),
					 5, argtypes, values, nulls, SPI_OK_DELETE);
	return cut;
}

/*
 * hwm_prune_runs, and by count only the runs after run_id above (0: all) of
 * one history; returns the newest run_id beyond the bound there (above when
 * there is none), from which the next prune of the same history may start.
 */
static int64
prune_runs(const char *pipeline, Oid owner, int64 above)
{
	/* whose history: $2 the pipeline (NULL: none), $3 the owner (NULL: the pipeline's) */
	const char *scope = psprintf(" AND r.pipeline %s"
								 " AND r.owner::pg_catalog.oid OPERATOR(pg_catalog.=)"
								 " COALESCE($3, (SELECT s.owner::pg_catalog.oid FROM hwm.state AS s"
								 "  WHERE s.pipeline OPERATOR(pg_catalog.=) $2))",
								 pipeline ? "OPERATOR(pg_catalog.=) $2" : "IS NULL AND $2 IS NULL");
	Oid			argtypes[5] = {INT4OID, TEXTOID, OIDOID, INT8OID, INT8OID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		all = pipeline == NULL && !OidIsValid(owner);

	set_text_arg(values, nulls, 1, pipeline);
	set_arg(values, nulls, 2, ObjectIdGetDatum(owner), OidIsValid(owner));
	if (hwm_history_days > 0)
		prune_by_age(all ? "" : scope, all ? 1 : 3, argtypes, values, nulls);
	if (hwm_max_runs_per_pipeline <= 0)
		return above;
	if (all)
	{
		prune_all_by_count();
		return above;
	}
	return prune_by_count(scope, above, argtypes, values, nulls);
}

/*
 * A loop of runs of one pipeline (CALL hwm.catch_up, hwm.backfill,
 * hwm.rerun_intervals) calls this when it starts or after its first run
 * (first), and after each of its runs: the first call and every
 * PRUNE_EVERY-th after it prune that pipeline's history, so that it stays
 * within hwm.max_runs_per_pipeline (at most PRUNE_EVERY - 1 more between two
 * prunes) however long the loop goes on, the scheduler's upkeep or not.
 * After the first, a prune reads only the bound's rows and those beyond it
 * since the last one (prune_runs): a catch-up of many runs costs the same
 * per run at its end as at its start.
 */
void
hwm_prune_runs_in_loop(const char *pipeline, bool first)
{
	static uint32 calls = 0;
	static int64 last_cut = 0;

	if (first)
	{
		calls = 0;
		last_cut = 0;
	}
	if (calls++ % PRUNE_EVERY == 0)
		last_cut = prune_runs(pipeline, InvalidOid, last_cut);
}

/*
 * The memory columns of hwm.state as parameters $first.. (reread_from,
 * reread_vxids, reread_starts, reread_epoch, held_by_pid,
 * held_by_application, held_since, null_watermarks, data_as_of); all NULL
 * without memory, the first four without reread_from.
 */
#define MEMORY_NARGS 9
static void
memory_args(const HwmLoadMemory *mem, Oid *argtypes, Datum *values, char *nulls)
{
	static const Oid types[MEMORY_NARGS] = {TEXTOID, TEXTARRAYOID, TIMESTAMPTZARRAYOID,
		TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID};
	int			n = mem ? list_length(mem->xacts) : 0;
	Datum	   *v = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *t = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *tnulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};

	memcpy(argtypes, types, sizeof(types));
	memset(nulls, 'n', MEMORY_NARGS);
	if (mem == NULL)
		return;
	for (int i = 0; i < n; i++)
	{
		HwmXact    *x = list_nth(mem->xacts, i);

		v[i] = CStringGetTextDatum(x->vxid);
		t[i] = TimestampTzGetDatum(x->start);
		tnulls[i] = x->start == 0;
	}
	if (mem->reread_from != NULL)
	{
		values[0] = CStringGetTextDatum(mem->reread_from);
		values[1] = PointerGetDatum(construct_array(v, n, TEXTOID, -1, false, TYPALIGN_INT));
		values[2] = PointerGetDatum(construct_md_array(t, tnulls, 1, dims, lbs, TIMESTAMPTZOID,
													   sizeof(TimestampTz), FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
		values[3] = TimestampTzGetDatum(mem->epoch);
		memset(nulls, ' ', 4);
	}
	if (mem->held_by_pid != 0)
	{
		values[4] = Int32GetDatum(mem->held_by_pid);
		values[5] = CStringGetTextDatum(mem->held_by_application ? mem->held_by_application : "");
		values[6] = TimestampTzGetDatum(mem->held_since);
		memset(nulls + 4, ' ', 3);
	}
	if (mem->null_watermarks >= 0)
	{
		values[7] = Int64GetDatum(mem->null_watermarks);
		nulls[7] = ' ';
	}
	if (mem->as_of != 0)
	{
		values[8] = TimestampTzGetDatum(mem->as_of);
		nulls[8] = ' ';
	}
}

/*
 * A scheduled worker applies the wakes of its runs itself, right after each
 * run commits (worker.c): while hwm_wakes_by_worker is set, a wake rings no
 * doorbell at commit, and hwm_woke says that one was written (the worker
 * rings it afterwards when the dispatcher is still needed).
 */
bool		hwm_wakes_by_worker = false;
bool		hwm_woke = false;

/*
 * A run of upstream that commits rows or moves its watermark (changed), or
 * that found its source complete further, wakes the pipelines that follow
 * it: one row in hwm.wakes, in the run's transaction (a rolled-back run
 * wakes nobody), and the doorbell when it commits (in a scheduled worker,
 * the worker's own chaining instead: see hwm_wakes_by_worker).  The
 * dispatcher, or that worker, applies the row (hwm_state_apply_wakes).
 * Nothing here locks another pipeline's
 * row: a transaction that runs an upstream and then, by hand, a pipeline
 * after it cannot deadlock with the scheduler's run of that pipeline.
 *
 * The upstream's wakes not yet applied go (those the dispatcher is applying,
 * which it has locked, stay): this one, applied after this run commits,
 * wakes the same pipelines after every row those runs committed too; a
 * wake that changed nothing does not replace one that did.  So the table
 * holds about one row per upstream where no scheduler applies them (a
 * database hwm.database leaves out), not one per run.
 */
static void
wake_downstreams(const char *upstream, Oid target, bool changed)
{
	Oid			argtypes[3] = {TEXTOID, OIDOID, BOOLOID};
	Datum		values[3] = {CStringGetTextDatum(upstream), ObjectIdGetDatum(target),
	BoolGetDatum(changed)};
	char		nulls[3] = {' ', OidIsValid(target) ? ' ' : 'n', ' '};

	hwm_catalog_exec("DELETE FROM hwm.wakes WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
					 " SELECT ctid FROM hwm.wakes WHERE upstream OPERATOR(pg_catalog.=) $1 AND (NOT changed OR $2)"
					 " FOR UPDATE SKIP LOCKED))",
					 2, (Oid[]) {TEXTOID, BOOLOID}, (Datum[]) {values[0], values[2]}, NULL,
					 SPI_OK_DELETE);
	/* (only where some pipeline follows it) */
	hwm_catalog_exec("INSERT INTO hwm.wakes (upstream, target, changed)"
					 " SELECT $1, $2, $3 WHERE EXISTS (SELECT FROM hwm.state AS d"
					 "  WHERE ($3 AND $1 OPERATOR(pg_catalog.=) ANY (d.after))"
					 "   OR ($2 IS NOT NULL AND d.target_lag IS NOT NULL AND d.schedule IS NULL AND d.after IS NULL"
					 "    AND d.on_commit IS NULL))",
					 3, argtypes, values, nulls, SPI_OK_INSERT);
	if (SPI_processed > 0)
	{
		if (hwm_wakes_by_worker)
			hwm_woke = true;
		else
			hwm_wakeup_at_commit();
	}
}

/*
 * Record a successful run in the pipeline's row: its facts, with
 * set_watermark the new watermark, and with memory what the load
 * remembers for the next one (NULL: leave that as it is).  The row is the
 * one the run started from, found by the pipeline's identity (its name and
 * created_at, which a declaration sets to the clock, so that a pipeline
 * dropped and declared again in one transaction is another): a run whose
 * pipeline was dropped, or replaced by another of the same name, fails
 * rather than store its result in the wrong row.
 */
void
hwm_update_state_after_run(const HwmPipeline *p, int64 run_id,
						   TimestampTz started_at, bool set_watermark,
						   const char *watermark, int64 rows,
						   const HwmLoadMemory *memory)
{
	Oid			argtypes[8 + MEMORY_NARGS] = {TEXTOID, INT8OID, TIMESTAMPTZOID, BOOLOID,
	TEXTOID, INT8OID, BOOLOID, TIMESTAMPTZOID};
	Datum		values[8 + MEMORY_NARGS];
	char		nulls[8 + MEMORY_NARGS];
	bool		changed;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(p->name);
	values[1] = Int64GetDatum(run_id);
	values[2] = TimestampTzGetDatum(started_at);
	values[3] = BoolGetDatum(set_watermark);
	if (watermark)
		values[4] = CStringGetTextDatum(watermark);
	else
		nulls[4] = 'n';
	values[5] = Int64GetDatum(rows);
	values[6] = BoolGetDatum(memory != NULL);
	values[7] = TimestampTzGetDatum(p->created_at);
	memory_args(memory, argtypes + 8, values + 8, nulls + 8);

	hwm_catalog_exec("UPDATE hwm.state SET"
					 " watermark = CASE WHEN $4 THEN $5 ELSE watermark END,"
					 " last_run_id = $2, last_run_started_at = $3,"
					 " last_run_finished_at = pg_catalog.clock_timestamp(),"
					 " last_status = " SQL_STATUS(SUCCEEDED) ", last_rows = $6,"
					 " consecutive_failures = 0, last_error = NULL,"
					 " reread_from = CASE WHEN $7 THEN $9 ELSE reread_from END,"
					 " reread_vxids = CASE WHEN $7 THEN $10 ELSE reread_vxids END,"
					 " reread_starts = CASE WHEN $7 THEN $11 ELSE reread_starts END,"
					 " reread_epoch = CASE WHEN $7 THEN $12 ELSE reread_epoch END,"
					 " held_by_pid = CASE WHEN $7 THEN $13 ELSE held_by_pid END,"
					 " held_by_application = CASE WHEN $7 THEN $14 ELSE held_by_application END,"
					 " held_since = CASE WHEN $7 THEN $15 ELSE held_since END,"
					 " null_watermarks = CASE WHEN $7 THEN $16 ELSE null_watermarks END,"
					 " data_as_of = COALESCE($17, data_as_of)"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1"
					 "  AND created_at OPERATOR(pg_catalog.=) $8",
					 8 + MEMORY_NARGS, argtypes, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" was dropped or declared again during its run", p->name),
				 errdetail("The run's result belongs to the pipeline it started with, declared at %s, which is gone; nothing of the run is kept.",
						   timestamptz_to_str(p->created_at)),
				 errhint("Drop or declare the pipeline again before or after its runs, never from inside one.")));
	changed = rows > 0 || (set_watermark && watermark != NULL &&
						   (p->watermark == NULL || strcmp(watermark, p->watermark) != 0));
	if (changed || (memory != NULL && memory->as_of != 0))
		wake_downstreams(p->name, p->target, changed);
}

/* ------------------------------------------------------------------------
 * The scheduler's rows (dispatch.c, worker.c)
 * ------------------------------------------------------------------------
 */

/*
 * A pipeline the scheduler runs (alias a, with its dot): every so often
 * (hwm.schedule), after its upstreams (hwm.schedule_after), or, with
 * neither, to stay under its target lag (hwm.set_target_lag).
 */
#define SQL_SCHEDULED(a) \
	" (" a "schedule IS NOT NULL OR " a "after IS NOT NULL OR " a "on_commit IS NOT NULL" \
	"  OR " a "target_lag IS NOT NULL) "

/*
 * How often it runs (NULL: after its upstreams alone): its schedule, or
 * half its target lag when it has neither a schedule nor upstreams, so
 * that a run that starts when its data is half the target old has the
 * other half to finish in.
 */
#define SQL_EVERY(a) \
	" COALESCE(" a "schedule, CASE WHEN " a "after IS NULL AND " a "on_commit IS NULL" \
	"  THEN " a "target_lag OPERATOR(pg_catalog./) 2::pg_catalog.float8 END) "

/*
 * What makes a pipeline the dispatcher's to run: enabled, scheduled (every
 * so often, or after its upstreams), due some time, no run of the
 * scheduler's in progress, and at home in this database (not a copy that
 * came with CREATE DATABASE ... TEMPLATE: see hwm.homes).  $1 is this
 * database, in every statement that uses it.
 */
#define SCHEDULABLE \
	" s.enabled AND" SQL_SCHEDULED("s.") "AND s.next_run_at IS NOT NULL" \
	" AND NOT EXISTS (SELECT FROM hwm.runs AS r" \
	"  WHERE r.pipeline OPERATOR(pg_catalog.=) s.pipeline" \
	"   AND r.status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING) \
	"   AND r.kind OPERATOR(pg_catalog.=) 'load')" \
	" AND NOT EXISTS (SELECT FROM hwm.homes AS h" \
	"  WHERE h.pipeline OPERATOR(pg_catalog.=) s.pipeline" \
	"   AND h.dboid OPERATOR(pg_catalog.<>) $1)"

/* The columns of hwm_state_select_due's statement, in order */
enum
{
	DUE_PIPELINE = 1, DUE_OWNER, DUE_SCHEDULE, DUE_ANCHOR, DUE_TIMEOUT, DUE_LAG_DRIVEN
};

/*
 * A due row (DUE_*) into *due; false, logged, when a column it needs is
 * NULL (the statement states that none is: a row that breaks it is left
 * alone, never read).  The schedule is NULL for a pipeline scheduled after
 * its upstreams alone.
 */
static bool
due_from_row(HeapTuple tup, TupleDesc desc, HwmDueRow *due)
{
	bool		owner_null,
				every_null,
				anchor_null;
	Datum		owner = SPI_getbinval(tup, desc, DUE_OWNER, &owner_null);
	Datum		every = SPI_getbinval(tup, desc, DUE_SCHEDULE, &every_null);
	Datum		anchor = SPI_getbinval(tup, desc, DUE_ANCHOR, &anchor_null);

	due->pipeline = SPI_getvalue(tup, desc, DUE_PIPELINE);
	if (due->pipeline == NULL || owner_null || anchor_null)
	{
		ereport(LOG,
				(errmsg("hwm: due pipeline \"%s\" not claimed: its row lacks an owner or a run time",
						due->pipeline ? due->pipeline : "?")));
		return false;
	}
	due->owner = DatumGetObjectId(owner);
	due->periodic = !every_null;
	if (due->periodic)
		due->every = *DatumGetIntervalP(every);
	due->relative = DatumGetBool(col_not_null(tup, desc, DUE_LAG_DRIVEN));
	due->anchor = DatumGetTimestampTz(anchor);
	due->timeout = col_interval(tup, desc, DUE_TIMEOUT);
	return true;
}

/*
 * The pipelines due at now, oldest first in turns between owners (the
 * owner served longest ago first within a turn), at most limit rows of
 * hwm.state, locked until the end of the transaction (*nrows: how many);
 * returns those that can be claimed (*ndue of them), in that order.
 */
HwmDueRow *
hwm_state_select_due(int limit, TimestampTz now, uint64 *nrows, uint64 *ndue)
{
	Oid			argtypes[3] = {OIDOID, TIMESTAMPTZOID, INT4OID};
	Datum		values[3];
	HwmDueRow  *due;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = TimestampTzGetDatum(now);
	values[2] = Int32GetDatum(limit);

	/*
	 * The turns (a window) cannot be computed at the level that locks, so
	 * they come from a copy of hwm.state, d; the row locked is s.  Every
	 * condition that makes a row due is stated on s too: under READ
	 * COMMITTED a row changed and committed after this statement's snapshot
	 * is locked in its newest version and checked again against the
	 * conditions on s, so a pipeline unscheduled, paused or moved later in
	 * that window is not claimed.  (SCHEDULABLE's two NOT EXISTS read
	 * hwm.runs and hwm.homes, which are not locked: they are checked again
	 * as the snapshot saw those tables.  A claim committed after it, a
	 * worker's of a run its run woke, has moved next_run_at on in the row,
	 * which is checked; only a wake applied after that claim makes the row
	 * due again, and then the second claim meets the first's pipeline lock,
	 * or its claimed_run_id, and is recorded as skipped.)
	 */
	hwm_catalog_exec("SELECT s.pipeline, s.owner::pg_catalog.oid," SQL_EVERY("s.") ","
					 " COALESCE(s.schedule_anchor, s.next_run_at), s.timeout,"
					 " (s.schedule IS NULL AND s.after IS NULL AND s.on_commit IS NULL)"
					 " FROM (SELECT s.pipeline, s.owner,"
					 "        pg_catalog.row_number() OVER"
					 "         (PARTITION BY s.owner ORDER BY s.next_run_at, s.pipeline) AS turn"
					 "       FROM hwm.state AS s"
					 "       WHERE" SCHEDULABLE " AND s.next_run_at OPERATOR(pg_catalog.<=) $2) AS d"
					 " JOIN (SELECT o.owner, pg_catalog.max(o.last_run_started_at) AS served"
					 "       FROM hwm.state AS o GROUP BY o.owner) AS w"
					 "  ON w.owner OPERATOR(pg_catalog.=) d.owner"
					 " JOIN hwm.state AS s ON s.pipeline OPERATOR(pg_catalog.=) d.pipeline"
					 " WHERE" SCHEDULABLE " AND s.next_run_at OPERATOR(pg_catalog.<=) $2"
					 " ORDER BY d.turn, w.served NULLS FIRST, s.next_run_at, s.pipeline LIMIT $3"
					 " FOR UPDATE OF s SKIP LOCKED",
					 3, argtypes, values, NULL, SPI_OK_SELECT);
	*nrows = SPI_processed;
	*ndue = 0;
	due = palloc0(sizeof(HwmDueRow) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		if (due_from_row(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &due[*ndue]))
			(*ndue)++;
	return due;
}

/*
 * Of the pipelines (a text[]) that a worker's hwm_state_apply_wakes has just
 * made due, those of owner that it may claim at now into its own queue
 * (worker.c): the rows the dispatcher would claim (SCHEDULABLE, due),
 * locked until the end of the transaction, skipping any another transaction
 * holds (a dispatcher claiming it, a run by hand, a change of its schedule:
 * those stay for the dispatcher), at most limit of them, the earliest due
 * first.  *ndue: how many can be claimed (a row that lacks what a claim
 * needs is logged and left out, as hwm_state_select_due does), and
 * expected_ms (limit entries) how long each one's last run took, as
 * hwm_state_last_durations says it (-1: unknown).
 */
HwmDueRow *
hwm_state_select_woken(Datum pipelines, Oid owner, int limit, TimestampTz now,
					   uint64 *ndue, int64 *expected_ms)
{
	Oid			argtypes[5] = {OIDOID, TIMESTAMPTZOID, INT4OID, OIDOID, TEXTARRAYOID};
	Datum		values[5];
	HwmDueRow  *due;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = TimestampTzGetDatum(now);
	values[2] = Int32GetDatum(limit);
	values[3] = ObjectIdGetDatum(owner);
	values[4] = pipelines;
	hwm_catalog_exec("SELECT s.pipeline, s.owner::pg_catalog.oid," SQL_EVERY("s.") ","
					 " COALESCE(s.schedule_anchor, s.next_run_at), s.timeout,"
					 " (s.schedule IS NULL AND s.after IS NULL AND s.on_commit IS NULL),"
					 " CASE WHEN s.last_run_finished_at OPERATOR(pg_catalog.>=) s.last_run_started_at"
					 "  THEN (pg_catalog.date_part('epoch', s.last_run_finished_at"
					 "   OPERATOR(pg_catalog.-) s.last_run_started_at) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8"
					 "  ELSE -1 END"
					 " FROM hwm.state AS s"
					 " WHERE" SCHEDULABLE " AND s.next_run_at OPERATOR(pg_catalog.<=) $2"
					 "  AND s.owner::pg_catalog.oid OPERATOR(pg_catalog.=) $4"
					 "  AND s.pipeline OPERATOR(pg_catalog.=) ANY ($5)"
					 " ORDER BY s.next_run_at, s.pipeline LIMIT $3"
					 " FOR UPDATE OF s SKIP LOCKED",
					 5, argtypes, values, NULL, SPI_OK_SELECT);
	*ndue = 0;
	due = palloc0(sizeof(HwmDueRow) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		if (due_from_row(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &due[*ndue]))
		{
			expected_ms[*ndue] = DatumGetInt64(col_not_null(SPI_tuptable->vals[i],
															SPI_tuptable->tupdesc,
															DUE_LAG_DRIVEN + 1));
			(*ndue)++;
		}
	return due;
}

/* When the next pipeline is due here (DT_NOEND: none is scheduled) */
TimestampTz
hwm_state_next_due(void)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(MyDatabaseId)};
	Datum		next;

	hwm_catalog_exec("SELECT pg_catalog.min(s.next_run_at) FROM hwm.state AS s"
					 " WHERE" SCHEDULABLE,
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	return hwm_spi_first(&next) ? DatumGetTimestampTz(next) : DT_NOEND;
}

/* The name the scheduler records as run_by: the owner's ("?" when gone) */
static Datum
owner_name_datum(Oid owner)
{
	char	   *name = GetUserNameFromId(owner, true);

	return DirectFunctionCall1(namein, CStringGetDatum(name ? name : "?"));
}

/*
 * A claimed run: its 'running' row (returns its run_id), and its
 * pipeline's next slot (NULL: none), which also marks the row's claim
 * (claimed_run_id; a change of schedule, pause or owner clears it).
 */
int64
hwm_runs_start(const char *pipeline, Oid owner, const TimestampTz *next)
{
	Oid			argtypes[5] = {TEXTOID, NAMEOID, TIMESTAMPTZOID, OIDOID, INT8OID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	int64		run_id;

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = owner_name_datum(owner);
	set_arg(values, nulls, 2, next ? TimestampTzGetDatum(*next) : (Datum) 0, next != NULL);
	values[3] = ObjectIdGetDatum(owner);
	(void) run_status_move(HWM_RUN_NONE, HWM_RUN_RUNNING);
	hwm_catalog_exec("INSERT INTO hwm.runs (pipeline, kind, started_at, status, run_by, owner)"
					 " VALUES ($1, 'load', pg_catalog.clock_timestamp(), " SQL_STATUS(RUNNING) ", $2,"
					 "  $4::pg_catalog.regrole)"
					 " RETURNING run_id",
					 4, argtypes, values, nulls, SPI_OK_INSERT_RETURNING);
	run_id = DatumGetInt64(first_not_null(1));
	values[4] = Int64GetDatum(run_id);
	hwm_catalog_exec("UPDATE hwm.state SET next_run_at = $3, claimed_run_id = $5"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 5, argtypes, values, nulls, SPI_OK_UPDATE);
	return run_id;
}

/*
 * Is the claimed run run_id of pipeline still to be run by this worker?
 * NULL when it is, else why not.  Takes the pipeline's lock (nowait: a
 * busy pipeline raises "is busy", which the worker records as skipped, see
 * hwm_pipeline_was_busy) and
 * reads the row again under it: a pause, an unschedule, a new schedule, a
 * new owner or a drop committed since the claim wins over the claim.  The
 * row is read once before the lock too, so that a worker whose role no
 * longer owns the pipeline never takes its lock.
 *
 * *checked_at is the time just before the read under the lock: the run's
 * start (hwm.runs.started_at).  A pause committed after it either shows in
 * that read (the run is skipped) or committed after the read's snapshot,
 * after the run started: a run never starts after its pause committed.
 */
const char *
hwm_state_claim_check(const char *pipeline, int64 run_id, Oid owner,
					  TimestampTz *checked_at)
{
	const char *why = NULL;

	for (int pass = 0; pass < 2 && why == NULL; pass++)
	{
		Oid			argtypes[3] = {TEXTOID, OIDOID, INT8OID};
		Datum		values[3] = {CStringGetTextDatum(pipeline), ObjectIdGetDatum(MyDatabaseId),
		Int64GetDatum(run_id)};
		HeapTuple	tup;
		TupleDesc	desc;

		if (pass == 1)
			pipeline_lock(pipeline, true);
		*checked_at = GetCurrentTimestamp();
		hwm_catalog_exec("SELECT s.enabled," SQL_SCHEDULED("s.") ","
						 " NOT EXISTS (SELECT FROM hwm.homes AS h"
						 "  WHERE h.pipeline OPERATOR(pg_catalog.=) s.pipeline"
						 "   AND h.dboid OPERATOR(pg_catalog.<>) $2),"
						 " s.claimed_run_id IS NOT DISTINCT FROM $3, s.owner::pg_catalog.oid"
						 " FROM hwm.state AS s WHERE s.pipeline OPERATOR(pg_catalog.=) $1",
						 3, argtypes, values, NULL, SPI_OK_SELECT);
		if (SPI_processed == 0)
			return "the pipeline was dropped after the run was claimed";
		tup = SPI_tuptable->vals[0];
		desc = SPI_tuptable->tupdesc;
		if (!DatumGetBool(col_not_null(tup, desc, 1)))
			why = "the pipeline was paused after the run was claimed";
		else if (!DatumGetBool(col_not_null(tup, desc, 2)))
			why = "the pipeline was unscheduled after the run was claimed";
		else if (!DatumGetBool(col_not_null(tup, desc, 3)))
			why = "the pipeline is not at home in this database (see hwm.homes)";
		else if (!DatumGetBool(col_not_null(tup, desc, 4)))
			why = "the pipeline's schedule or pause state changed after the run was claimed";
		else if (DatumGetObjectId(col_not_null(tup, desc, 5)) != owner)
			why = "the pipeline's owner changed after the run was claimed";
	}
	return why;
}

/*
 * A 'running' row ends, failed or skipped (status): false when it is no
 * longer 'running'; else its pipeline and the time it ended.  A failure
 * counts in its pipeline's row (consecutive_failures).
 */
bool
hwm_runs_finish(int64 run_id, HwmRunStatus status, const char *sqlstate,
				const char *error, char **pipeline, TimestampTz *finished)
{
	Oid			argtypes[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, BOOLOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(run_id);
	values[1] = run_status_move(HWM_RUN_RUNNING, status);
	set_text_arg(values, nulls, 2, sqlstate);
	set_text_arg(values, nulls, 3, error ? hwm_clip_error(error) : NULL);
	values[4] = BoolGetDatum(status == HWM_RUN_FAILED);	/* counts as a failure */
	hwm_catalog_exec("WITH r AS ("
					 " UPDATE hwm.runs SET status = $2, finished_at = pg_catalog.clock_timestamp(),"
					 "  error_sqlstate = $3, error = $4"
					 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING)
					 " RETURNING pipeline, run_id, started_at, finished_at),"
					 " s_upd AS (UPDATE hwm.state AS s SET"
					 "  last_run_id = r.run_id, last_run_started_at = r.started_at,"
					 "  last_run_finished_at = r.finished_at,"
					 "  last_status = $2, last_rows = NULL, last_error = $4,"
					 "  consecutive_failures = s.consecutive_failures OPERATOR(pg_catalog.+) 1"
					 " FROM r WHERE s.pipeline OPERATOR(pg_catalog.=) r.pipeline"
					 "  AND $5)"
					 " SELECT pipeline, finished_at FROM r",
					 5, argtypes, values, nulls, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	/* (a scheduled run's row always names its pipeline, and has just ended) */
	*pipeline = TextDatumGetCString(first_not_null(1));
	*finished = DatumGetTimestampTz(first_not_null(2));
	return true;
}

/* A scheduled pipeline's schedule and failure count; false: not scheduled */
bool
hwm_state_schedule_of(const char *pipeline, Interval *every, int *failures)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(pipeline)};

	/* (after its upstreams alone: retries count in seconds) */
	hwm_catalog_exec("SELECT COALESCE(" SQL_EVERY("") ", '1 second'::pg_catalog.interval), consecutive_failures"
					 " FROM hwm.state WHERE pipeline OPERATOR(pg_catalog.=) $1"
					 " AND" SQL_SCHEDULED(""),
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	*every = *DatumGetIntervalP(first_not_null(1));
	*failures = DatumGetInt32(first_not_null(2));
	return true;
}

/* A scheduled pipeline's next run time (NULL: none, it stops) */
void
hwm_state_set_next_run(const char *pipeline, const TimestampTz *next)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	values[0] = CStringGetTextDatum(pipeline);
	set_arg(values, nulls, 1, next ? TimestampTzGetDatum(*next) : (Datum) 0, next != NULL);
	/* (unscheduled since its schedule was read: stays unscheduled) */
	hwm_catalog_exec("UPDATE hwm.state SET next_run_at = $2 WHERE pipeline OPERATOR(pg_catalog.=) $1"
					 " AND" SQL_SCHEDULED(""),
					 2, argtypes, values, nulls, SPI_OK_UPDATE);
}

/*
 * A pipeline scheduled after its upstreams whose claimed run did not run
 * (skipped): what woke it is still to load, so it is due again at at
 * (unless sooner, or no longer scheduled after them).
 */
void
hwm_state_rearm_after(const char *pipeline, TimestampTz at)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = TimestampTzGetDatum(at);
	hwm_catalog_exec("UPDATE hwm.state SET next_run_at = $2 WHERE pipeline OPERATOR(pg_catalog.=) $1"
					 " AND (after IS NOT NULL OR on_commit IS NOT NULL)"
					 " AND (next_run_at IS NULL OR next_run_at OPERATOR(pg_catalog.>) $2)",
					 2, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * The dispatcher applies the wakes committed since the last dispatch
 * (hwm.wakes, deleted as they are read; one a run is replacing, locked by
 * it, is left to that run's own): a wake that changed something makes
 * due the pipelines scheduled after its upstream, and any wake the pipelines
 * run to stay under a target lag (neither a schedule nor upstreams of
 * their own) whose source reads the upstream's target: directly, through
 * views, as a parent of it, or as a partition of it (the relations
 * hwm.freshness follows); due now, or sooner than they were, paused or not
 * (a resume then runs them once).  One run follows any number of wakes
 * before it is claimed, and one more those applied while it is claimed or
 * runs (the claim moves next_run_at on, which this moves back to now).
 * A pipeline whose row another transaction holds (a run of it by hand, a
 * change of its schedule) is not waited for: the wakes stay, and the next
 * dispatch applies them again (as often as needed: applying is idempotent),
 * so the dispatch, and every other pipeline's run, does not wait for that
 * transaction.  What makes a pipeline woken is stated again on the row that
 * free locks, the only conditions READ COMMITTED checks again on its newest
 * version: a schedule changed after the statement's snapshot (hwm.schedule,
 * unschedule, another schedule_after) is not undone by a next_run_at of
 * now; the wakes stay, and the next dispatch reads the new schedule
 * (test/t/07a_wakes_schedule_race.pl).  The dispatcher applies them, and so
 * does a worker whose run wrote one, right after that run commits
 * (worker.c).
 *
 * The wakes of the runs whose workers apply them themselves (slots.c's
 * applies_wakes; but slot except_slotno's, -1: none) are left as they are,
 * so that the dispatcher (and another worker) never takes a hop of a chain
 * from the worker that is about to run it.  Those runs are read from the
 * slots after the snapshot that reads hwm.wakes is taken: a worker says so
 * just before its run commits the wakes, so a wake that snapshot sees
 * was committed by a run whose flag is read set (or already cleared, when
 * its worker has applied its wakes: a wake it deleted since is skipped by
 * FOR UPDATE).  Read before the snapshot, the flag could be read unset and
 * the wakes committed meanwhile applied here, the hop run in another
 * worker (075 failed so on PostgreSQL 15).  With
 * only_upstream (NULL: any), only the wakes of that upstream are applied:
 * a worker applies those of the run it has just made, and leaves the rest
 * to the dispatcher.
 *
 * Returns the pipelines it made due, as a text[] (their rows stay locked
 * until the end of the transaction), and *all_applied: whether every wake
 * it read was applied and deleted (false: some stay for the next dispatch),
 * and, with only_upstream, that no wake of another upstream waits for the
 * dispatcher (but those of the runs whose workers apply them themselves).
 */
/*
 * hwm_state_apply_wakes's statement: the wakes (w), the relations that read
 * their upstreams' targets (readers, for the pipelines run to stay under a
 * target lag), and what it does with them.  With no such pipeline, readers
 * is empty, and the statement is planned without it: the catalogs it
 * reads (pg_depend, pg_rewrite, pg_inherits) cost a worker that applies
 * its run's wakes (worker.c) a few ms to open and plan for the first time.
 */
#define APPLY_WAKES_W \
	"WITH RECURSIVE w AS (SELECT k.ctid AS wid, k.upstream, k.target, k.changed FROM hwm.wakes AS k" \
	"  WHERE NOT EXISTS (SELECT FROM hwm.runs AS r WHERE r.run_id OPERATOR(pg_catalog.=) ANY ($1)" \
	"   AND r.pipeline OPERATOR(pg_catalog.=) k.upstream)" \
	"   AND ($2::pg_catalog.text IS NULL OR k.upstream OPERATOR(pg_catalog.=) $2)" \
	"  FOR UPDATE OF k SKIP LOCKED),"
#define APPLY_WAKES_READERS \
	" readers (upstream, relid) AS (" \
	"  SELECT w.upstream, w.target FROM w WHERE w.target IS NOT NULL" \
	"   AND EXISTS (SELECT FROM hwm.state AS l" \
	"    WHERE l.target_lag IS NOT NULL AND l.schedule IS NULL AND l.after IS NULL" \
	"     AND l.on_commit IS NULL)" \
	"  UNION" \
	"  SELECT r.upstream, n.relid FROM readers AS r CROSS JOIN LATERAL (" \
	"   SELECT v.ev_class FROM pg_catalog.pg_depend AS d" \
	"    JOIN pg_catalog.pg_rewrite AS v ON v.oid OPERATOR(pg_catalog.=) d.objid" \
	"    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass" \
	"     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass" \
	"     AND d.refobjid OPERATOR(pg_catalog.=) r.relid AND v.ev_class OPERATOR(pg_catalog.<>) r.relid" \
	"   UNION" \
	"   SELECT i.inhparent FROM pg_catalog.pg_inherits AS i" \
	"    WHERE i.inhrelid OPERATOR(pg_catalog.=) r.relid" \
	"   UNION" \
	"   SELECT i.inhrelid FROM pg_catalog.pg_inherits AS i" \
	"    JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid" \
	"    WHERE i.inhparent OPERATOR(pg_catalog.=) r.relid AND c.relispartition) AS n (relid)),"
#define APPLY_WAKES_NO_READERS \
	" readers (upstream, relid) AS (SELECT NULL::pg_catalog.text, NULL::pg_catalog.oid WHERE false),"
/*
 * What makes the pipeline of a row of hwm.state (alias a, "s." say) woken:
 * woken reads it from the statement's snapshot, and free states it again
 * on the row it locks (see above)
 */
#define APPLY_WAKES_WOKEN(a) \
	" (EXISTS (SELECT FROM w WHERE w.changed AND w.upstream OPERATOR(pg_catalog.=) ANY (" a "after))" \
	"    OR (" a "target_lag IS NOT NULL AND " a "schedule IS NULL AND " a "after IS NULL AND " a "on_commit IS NULL" \
	"     AND EXISTS (SELECT FROM readers AS r" \
	"      WHERE r.relid OPERATOR(pg_catalog.=) " a "source::pg_catalog.oid" \
	"       AND r.upstream OPERATOR(pg_catalog.<>) " a "pipeline)))" \
	"   AND (" a "next_run_at IS NULL OR " a "next_run_at OPERATOR(pg_catalog.>) pg_catalog.now())"
#define APPLY_WAKES_REST \
	" woken AS (SELECT s.pipeline FROM hwm.state AS s WHERE" APPLY_WAKES_WOKEN("s.") ")," \
	" free AS (SELECT x.pipeline FROM hwm.state AS x" \
	"  WHERE x.pipeline OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT pipeline FROM woken))" \
	"   AND" APPLY_WAKES_WOKEN("x.") \
	"  FOR UPDATE SKIP LOCKED)," \
	" applied AS (UPDATE hwm.state AS s SET next_run_at = pg_catalog.now() FROM free" \
	"  WHERE s.pipeline OPERATOR(pg_catalog.=) free.pipeline RETURNING s.pipeline)," \
	" gone AS (DELETE FROM hwm.wakes WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT wid FROM w))" \
	"  AND (SELECT pg_catalog.count(*) FROM woken) OPERATOR(pg_catalog.=) (SELECT pg_catalog.count(*) FROM free)" \
	"  RETURNING 1)" \
	" SELECT ARRAY(SELECT pipeline FROM applied)::pg_catalog.text[]," \
	"  (SELECT pg_catalog.count(*) FROM gone) OPERATOR(pg_catalog.=) (SELECT pg_catalog.count(*) FROM w)" \
	"  AND ($2::pg_catalog.text IS NULL OR NOT EXISTS (SELECT FROM hwm.wakes AS o" \
	"   WHERE o.upstream OPERATOR(pg_catalog.<>) $2 AND NOT EXISTS (SELECT FROM hwm.runs AS r" \
	"    WHERE r.run_id OPERATOR(pg_catalog.=) ANY ($1) AND r.pipeline OPERATOR(pg_catalog.=) o.upstream)))"

Datum
hwm_state_apply_wakes(int except_slotno, const char *only_upstream, bool *all_applied)
{
	Oid			argtypes[2] = {INT8ARRAYOID, TEXTOID};
	Datum		values[2] = {(Datum) 0, only_upstream ? CStringGetTextDatum(only_upstream) : (Datum) 0};
	char		nulls[2] = {' ', only_upstream ? ' ' : 'n'};
	Datum		made_due;
	bool		lag_driven;
	Snapshot	snapshot;

	hwm_catalog_exec("SELECT EXISTS (SELECT FROM hwm.state"
					 " WHERE target_lag IS NOT NULL AND schedule IS NULL AND after IS NULL AND on_commit IS NULL)",
					 0, NULL, NULL, NULL, SPI_OK_SELECT);
	lag_driven = DatumGetBool(first_not_null(1));
	/* the snapshot first, then the slots (see above) */
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	values[0] = hwm_slots_applying_run_ids(MyDatabaseId, except_slotno);
	if (except_slotno < 0)
		hwm_pause_point("dispatcher_applies_wakes");
	catalog_exec_snapshot(lag_driven ? APPLY_WAKES_W APPLY_WAKES_READERS APPLY_WAKES_REST
						  : APPLY_WAKES_W APPLY_WAKES_NO_READERS APPLY_WAKES_REST,
						  2, argtypes, values, nulls, snapshot, SPI_OK_SELECT);
	UnregisterSnapshot(snapshot);
	made_due = first_not_null(1);
	*all_applied = DatumGetBool(first_not_null(2));
	return SPI_datumTransfer(made_due, false, -1);
}

/*
 * Lateness (hwm.freshness.late) as the dispatcher sees it, once per
 * dispatch: the pipelines late now and not before get late_since and are
 * returned (*n of them), in name order; those no longer late lose it.  A
 * row another transaction holds is left for the next dispatch, not waited
 * for.
 * *next: when the first pipeline not late now becomes late if nothing
 * changes (DT_NOEND: none).  Nothing is read while no pipeline has a
 * target lag.
 */
HwmLate *
hwm_state_note_late(int *n, TimestampTz *next)
{
	HwmLate    *late;
	Datum		d;

	*n = 0;
	*next = DT_NOEND;
	hwm_catalog_exec("SELECT FROM hwm.state WHERE target_lag IS NOT NULL OR late_since IS NOT NULL LIMIT 1",
					 0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return NULL;
	hwm_catalog_exec("WITH f AS (SELECT f.pipeline, f.data_as_of, f.lag, f.target_lag, f.late"
					 "   FROM hwm.freshness_rows() AS f),"
					 " b AS (SELECT x.pipeline, f.lag, f.target_lag FROM hwm.state AS x"
					 "  JOIN f ON f.pipeline OPERATOR(pg_catalog.=) x.pipeline"
					 "  WHERE f.late AND x.late_since IS NULL FOR UPDATE OF x SKIP LOCKED),"
					 " became AS (UPDATE hwm.state AS s SET late_since = pg_catalog.now() FROM b"
					 "  WHERE b.pipeline OPERATOR(pg_catalog.=) s.pipeline"
					 "  RETURNING s.pipeline, b.lag, b.target_lag),"
					 " o AS (SELECT x.pipeline FROM hwm.state AS x"
					 "  JOIN f ON f.pipeline OPERATOR(pg_catalog.=) x.pipeline"
					 "  WHERE f.late IS NOT TRUE AND x.late_since IS NOT NULL FOR UPDATE OF x SKIP LOCKED),"
					 " over AS (UPDATE hwm.state AS s SET late_since = NULL FROM o"
					 "  WHERE o.pipeline OPERATOR(pg_catalog.=) s.pipeline)"
					 " SELECT u.* FROM ("
					 "  SELECT b.pipeline, b.lag::pg_catalog.text, b.target_lag::pg_catalog.text,"
					 "   NULL::pg_catalog.timestamptz AS next"
					 "   FROM became AS b"
					 "  UNION ALL"
					 "  SELECT NULL, NULL, NULL, pg_catalog.min(f.data_as_of OPERATOR(pg_catalog.+) f.target_lag)"
					 "   FROM f WHERE f.late IS FALSE) AS u"
					 " ORDER BY u.pipeline COLLATE \"C\"",
					 0, NULL, NULL, NULL, SPI_OK_SELECT);
	late = palloc0(sizeof(HwmLate) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		late[*n].pipeline = SPI_getvalue(tup, desc, 1);
		if (late[*n].pipeline == NULL)
		{
			d = SPI_getbinval(tup, desc, 4, &isnull);
			if (!isnull)
				*next = DatumGetTimestampTz(d);
			continue;
		}
		late[*n].lag = SPI_getvalue(tup, desc, 2);
		late[*n].target_lag = SPI_getvalue(tup, desc, 3);
		(*n)++;
	}
	return late;
}

/*
 * The 'running' rows of kind 'load' that no live run of the slots holds
 * become 'interrupted'; returns their run_ids (*n of them).  The snapshot
 * that reads the rows is taken first, then the slots: a claim is added to
 * its slot before it commits (a worker's of the runs its run woke,
 * hwm_slot_extend), so a 'running' row the snapshot sees is read in the
 * slots.  Read before the snapshot, the slots missed a claim committed in
 * between, and its live run was swept (test/t/07b_sweep_claim_race.pl).
 */
int64 *
hwm_runs_sweep_interrupted(uint64 *n)
{
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		values[1];
	int64	   *run_ids;
	Snapshot	snapshot;

	(void) run_status_move(HWM_RUN_RUNNING, HWM_RUN_INTERRUPTED);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	values[0] = hwm_slots_live_run_ids(MyDatabaseId);
	hwm_pause_point("dispatcher_sweeps");
	catalog_exec_snapshot("WITH r AS ("
					 " UPDATE hwm.runs SET status = " SQL_STATUS(INTERRUPTED) ", finished_at = pg_catalog.clock_timestamp(),"
					 "  error = 'the run was interrupted: its worker ended with the server (crash, restart or immediate shutdown)'"
					 " WHERE status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING) " AND kind OPERATOR(pg_catalog.=) 'load'"
					 "  AND run_id OPERATOR(pg_catalog.<>) ALL ($1)"
					 " RETURNING pipeline, run_id, started_at, error),"
					 " s_upd AS (UPDATE hwm.state AS s SET last_run_id = r.run_id, last_run_started_at = r.started_at,"
					 "  last_run_finished_at = pg_catalog.clock_timestamp(), last_status = " SQL_STATUS(INTERRUPTED) ","
					 "  last_rows = NULL, last_error = r.error,"
					 /* after its upstreams: what it was woken for is still to load */
					 "  next_run_at = CASE WHEN s.after IS NOT NULL OR s.on_commit IS NOT NULL"
					 "   THEN COALESCE(s.next_run_at, pg_catalog.now()) ELSE s.next_run_at END"
					 " FROM r WHERE s.pipeline OPERATOR(pg_catalog.=) r.pipeline"
					 "  AND (s.last_run_started_at IS NULL OR s.last_run_started_at OPERATOR(pg_catalog.<) r.started_at))"
					 " SELECT run_id FROM r",
					 1, argtypes, values, NULL, snapshot, SPI_OK_SELECT);
	UnregisterSnapshot(snapshot);
	*n = SPI_processed;
	run_ids = palloc(sizeof(int64) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		run_ids[i] = DatumGetInt64(col_not_null(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	return run_ids;
}

/*
 * A claim that failed for a reason of the pipeline's row: a failed run of
 * its own, counted; returns when it ended (the caller sets the pipeline's
 * next try, an hour later on the scheduler's clock).
 */
TimestampTz
hwm_runs_claim_failed(const char *pipeline, Oid owner, const char *sqlstate,
					  const char *error)
{
	Oid			argtypes[5] = {TEXTOID, NAMEOID, TEXTOID, TEXTOID, OIDOID};
	Datum		values[5];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = owner_name_datum(owner);
	values[2] = CStringGetTextDatum(sqlstate);
	values[3] = CStringGetTextDatum(hwm_clip_error(error));
	values[4] = ObjectIdGetDatum(owner);
	(void) run_status_move(HWM_RUN_NONE, HWM_RUN_FAILED);
	hwm_catalog_exec("WITH r AS ("
					 " INSERT INTO hwm.runs (pipeline, kind, started_at, finished_at, status,"
					 "  run_by, error_sqlstate, error, owner)"
					 " VALUES ($1, 'load', pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp(),"
					 "  " SQL_STATUS(FAILED) ", $2, $3, $4, $5::pg_catalog.regrole)"
					 " RETURNING run_id, started_at, finished_at),"
					 " s_upd AS (UPDATE hwm.state AS s SET last_run_id = r.run_id,"
					 "  last_run_started_at = r.started_at, last_run_finished_at = r.finished_at,"
					 "  last_status = " SQL_STATUS(FAILED) ", last_rows = NULL, last_error = $4,"
					 "  consecutive_failures = s.consecutive_failures OPERATOR(pg_catalog.+) 1"
					 " FROM r WHERE s.pipeline OPERATOR(pg_catalog.=) $1)"
					 " SELECT finished_at FROM r",
					 5, argtypes, values, NULL, SPI_OK_SELECT);
	return DatumGetTimestampTz(first_not_null(1));
}

/* The pipeline of a 'running' row of kind 'load' (NULL: no such row) */
char *
hwm_runs_running_pipeline(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};

	hwm_catalog_exec("SELECT pipeline FROM hwm.runs WHERE run_id OPERATOR(pg_catalog.=) $1"
					 " AND status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING) " AND kind OPERATOR(pg_catalog.=) 'load'",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* A 'running' row goes (its run recorded itself in a row of its own) */
void
hwm_runs_delete_running(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};

	(void) run_status_move(HWM_RUN_RUNNING, HWM_RUN_NONE);
	hwm_catalog_exec("DELETE FROM hwm.runs WHERE run_id OPERATOR(pg_catalog.=) $1"
					 " AND status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING),
					 1, argtypes, values, NULL, SPI_OK_DELETE);
}

/*
 * For the dispatcher's fair shares: per owner of the pipelines at home here,
 * when its next scheduled run is due (the earliest next_run_at of its
 * schedulable pipelines); *n owners.
 */
HwmOwnerDue *
hwm_state_due_by_owner(int *n)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(MyDatabaseId)};
	HwmOwnerDue *owners;

	hwm_catalog_exec("SELECT s.owner::pg_catalog.oid, pg_catalog.min(s.next_run_at)"
					 " FROM hwm.state AS s WHERE" SCHEDULABLE " GROUP BY s.owner",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	owners = palloc(sizeof(HwmOwnerDue) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];

		/* (owner: NOT NULL; the earliest of next_run_at IS NOT NULL) */
		owners[i].owner = DatumGetObjectId(col_not_null(tup, SPI_tuptable->tupdesc, 1));
		owners[i].due = DatumGetTimestampTz(col_not_null(tup, SPI_tuptable->tupdesc, 2));
	}
	*n = (int) SPI_processed;
	return owners;
}

/*
 * How long the last run of each of n pipelines took, in ms, into ms[i]
 * (-1: unknown, no finished last run).
 */
void
hwm_state_last_durations(char *const *pipelines, int n, int64 *ms)
{
	Oid			argtypes[1] = {TEXTARRAYOID};
	Datum		values[1];
	Datum	   *names = palloc(sizeof(Datum) * (n + 1));

	for (int i = 0; i < n; i++)
	{
		names[i] = CStringGetTextDatum(pipelines[i]);
		ms[i] = -1;
	}
	values[0] = PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
	hwm_catalog_exec("SELECT s.pipeline, (pg_catalog.date_part('epoch', s.last_run_finished_at"
					 "  OPERATOR(pg_catalog.-) s.last_run_started_at) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8"
					 " FROM hwm.state AS s WHERE s.pipeline OPERATOR(pg_catalog.=) ANY ($1)"
					 "  AND s.last_run_finished_at OPERATOR(pg_catalog.>=) s.last_run_started_at",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		char	   *name = TextDatumGetCString(col_not_null(tup, SPI_tuptable->tupdesc, 1));
		int64		d = DatumGetInt64(col_not_null(tup, SPI_tuptable->tupdesc, 2));

		for (int i = 0; i < n; i++)
			if (strcmp(pipelines[i], name) == 0)
				ms[i] = d;
	}
}

/*
 * A worker's turn at its queue is over: the claimed runs it will not start
 * (int8[] of run_ids) are handed back.  Their 'running' rows go, nothing is
 * recorded, and each pipeline is due again at once: next_run_at goes back
 * to the claim, unless the pipeline was unscheduled since (or is due
 * earlier).  Returns how many runs were handed back.
 */
int64
hwm_runs_release(Datum run_ids)
{
	Oid			argtypes[1] = {INT8ARRAYOID};
	Datum		values[1] = {run_ids};

	/*
	 * Due again only where the claim still holds: a pipeline rescheduled,
	 * paused or unscheduled since keeps what its owner set (see
	 * claimed_run_id).
	 */
	(void) run_status_move(HWM_RUN_RUNNING, HWM_RUN_NONE);
	hwm_catalog_exec("WITH r AS ("
					 " DELETE FROM hwm.runs WHERE run_id OPERATOR(pg_catalog.=) ANY ($1)"
					 "  AND status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING) " AND kind OPERATOR(pg_catalog.=) 'load'"
					 " RETURNING pipeline, started_at, run_id),"
					 " u AS (UPDATE hwm.state AS s SET next_run_at = r.started_at FROM r"
					 "  WHERE s.pipeline OPERATOR(pg_catalog.=) r.pipeline"
					 "   AND" SQL_SCHEDULED("s.")
					 "   AND (s.next_run_at IS NULL OR s.next_run_at OPERATOR(pg_catalog.>) r.started_at)"
					 "   AND s.claimed_run_id OPERATOR(pg_catalog.=) r.run_id RETURNING 1)"
					 " SELECT pg_catalog.count(*) FROM r",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	return DatumGetInt64(first_not_null(1));
}

/*
 * Refuse to overwrite or backfill (verb) partitions of a pipeline that has
 * none: a command or interval pipeline (no target), or one declared without
 * a partition column; detail, when given, says why a partition column is
 * needed.
 */
void
hwm_pipeline_require_partitions(const HwmPipeline *p, const char *verb,
								const char *detail)
{
	if (p->command)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pipeline \"%s\" runs a command and has no target to %s", p->name, verb),
				 errhint("To run the command again over a range: hwm.rerun_intervals for an interval pipeline, hwm.set_watermark back then hwm.run for a command pipeline.")));
	if (p->partition_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no partition column", p->name),
				 detail ? errdetail("%s", detail) : 0,
				 errhint("Drop the pipeline and create it again with partition_column => '...' to %s partitions.", verb)));
}

/* ---- hwm.backfills: the rows of resumable jobs (job.c) ---- */

/*
 * The last job of this kind (hwm.backfills.kind: backfill, rerun_intervals,
 * reconcile), pipeline and range, if it is unfinished ('running' or
 * 'failed'): true, with its row in *row (done_through in the current memory
 * context).  A job that succeeded is done: calling it again starts another.
 * Only the pipeline's own jobs count, those begun since it was declared
 * (started_at, as hwm.status tells its reconciles): a job left unfinished by
 * a pipeline of that name dropped before is not resumed by this one.
 *
 * A job's row moves through three of a run's statuses (the CHECK on
 * hwm.backfills.status): (none) -> running (hwm_backfills_start); running
 * -> running, a step done, or succeeded, the last one (hwm_backfills_save);
 * running -> failed (hwm_backfills_fail); running or failed -> running,
 * taken over by the next call (hwm_backfills_resume).
 */
bool
hwm_backfills_find_unfinished(const char *pipeline, const char *kind,
							  const char *from_text, const char *to_text,
							  HwmBackfillRow *row)
{
	Oid			argtypes[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	HeapTuple	tup;
	TupleDesc	desc;

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = CStringGetTextDatum(from_text);
	values[2] = CStringGetTextDatum(to_text);
	values[3] = CStringGetTextDatum(kind);
	hwm_catalog_exec("SELECT b.backfill_id, b.status, b.done_through, b.partitions_done,"
					 " b.rows_deleted, b.rows_inserted FROM hwm.backfills AS b"
					 " WHERE b.pipeline OPERATOR(pg_catalog.=) $1"
					 " AND b.from_partition OPERATOR(pg_catalog.=) $2"
					 " AND b.to_partition OPERATOR(pg_catalog.=) $3"
					 " AND b.kind OPERATOR(pg_catalog.=) $4"
					 " AND b.started_at OPERATOR(pg_catalog.>=)"
					 "     (SELECT s.created_at FROM hwm.state AS s"
					 "       WHERE s.pipeline OPERATOR(pg_catalog.=) $1)"
					 " ORDER BY b.backfill_id DESC LIMIT 1",
					 4, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (hwm_run_status_parse(TextDatumGetCString(col_not_null(tup, desc, 2))) == HWM_RUN_SUCCEEDED)
		return false;			/* done: calling it again runs it again */
	row->backfill_id = DatumGetInt64(col_not_null(tup, desc, 1));
	row->done_through = SPI_getvalue(tup, desc, 3);
	row->partitions_done = DatumGetInt32(col_not_null(tup, desc, 4));
	row->rows_deleted = DatumGetInt64(col_not_null(tup, desc, 5));
	row->rows_inserted = DatumGetInt64(col_not_null(tup, desc, 6));
	return true;
}

/* the caller's name, as run_by records it */
static Datum
run_by_datum(void)
{
	return DirectFunctionCall1(namein,
							   CStringGetDatum(GetUserNameFromId(GetUserId(), false)));
}

/*
 * An unfinished job taken over by the caller: 'running' again, owned by
 * the pipeline's owner now (REASSIGN OWNED gave the pipeline to another
 * role since the job began: the job is the pipeline's, and its new owner
 * sees it).
 */
void
hwm_backfills_resume(int64 backfill_id, int batch_size)
{
	Oid			argtypes[3] = {INT8OID, INT4OID, NAMEOID};
	Datum		values[3] = {Int64GetDatum(backfill_id), Int32GetDatum(batch_size), run_by_datum()};

	hwm_catalog_exec("UPDATE hwm.backfills AS b SET status = " SQL_STATUS(RUNNING) ", batch_size = $2,"
					 " finished_at = NULL, error_sqlstate = NULL, error = NULL, run_by = $3,"
					 " owner = s.owner"
					 " FROM hwm.state AS s"
					 " WHERE b.backfill_id OPERATOR(pg_catalog.=) $1"
					 "  AND s.pipeline OPERATOR(pg_catalog.=) b.pipeline",
					 3, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * A new job's row, 'running', run by the caller and owned by the
 * pipeline's owner; returns its backfill_id.
 */
int64
hwm_backfills_start(const char *pipeline, const char *kind, const char *from_text,
					const char *to_text, int batch_size)
{
	Oid			argtypes[6] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, NAMEOID, TEXTOID};
	Datum		values[6];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = CStringGetTextDatum(from_text);
	values[2] = CStringGetTextDatum(to_text);
	values[3] = Int32GetDatum(batch_size);
	values[4] = run_by_datum();
	values[5] = CStringGetTextDatum(kind);
	hwm_catalog_exec("INSERT INTO hwm.backfills (pipeline, from_partition, to_partition,"
					 " batch_size, status, run_by, owner, kind)"
					 " SELECT $1, $2, $3, $4, " SQL_STATUS(RUNNING) ", $5, s.owner, $6 FROM hwm.state AS s"
					 " WHERE s.pipeline OPERATOR(pg_catalog.=) $1 RETURNING backfill_id",
					 6, argtypes, values, NULL, SPI_OK_INSERT_RETURNING);
	return DatumGetInt64(first_not_null(1));
}

/* A job's progress after a step; finished: 'succeeded', with its end time */
void
hwm_backfills_save(const HwmBackfillRow *row, bool finished)
{
	Oid			argtypes[6] = {INT8OID, TEXTOID, INT4OID, INT8OID, INT8OID, BOOLOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(row->backfill_id);
	if (row->done_through)
		values[1] = CStringGetTextDatum(row->done_through);
	else
		nulls[1] = 'n';
	values[2] = Int32GetDatum(row->partitions_done);
	values[3] = Int64GetDatum(row->rows_deleted);
	values[4] = Int64GetDatum(row->rows_inserted);
	values[5] = BoolGetDatum(finished);
	hwm_catalog_exec("UPDATE hwm.backfills SET done_through = $2, partitions_done = $3,"
					 " rows_deleted = $4, rows_inserted = $5,"
					 " status = CASE WHEN $6 THEN " SQL_STATUS(SUCCEEDED) " ELSE " SQL_STATUS(RUNNING) " END,"
					 " finished_at = CASE WHEN $6 THEN pg_catalog.clock_timestamp() END"
					 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
					 6, argtypes, values, nulls, SPI_OK_UPDATE);
}

/* A job whose step failed: 'failed', with the error (cut to 8 kB) */
void
hwm_backfills_fail(int64 backfill_id, const char *sqlstate, const char *error)
{
	Oid			argtypes[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3];

	values[0] = Int64GetDatum(backfill_id);
	values[1] = CStringGetTextDatum(sqlstate);
	values[2] = CStringGetTextDatum(hwm_clip_error(error));
	hwm_catalog_exec("UPDATE hwm.backfills SET status = " SQL_STATUS(FAILED) ","
					 " finished_at = pg_catalog.clock_timestamp(),"
					 " error_sqlstate = $2, error = $3"
					 " WHERE backfill_id OPERATOR(pg_catalog.=) $1",
					 3, argtypes, values, NULL, SPI_OK_UPDATE);
}

/* ---- hwm.state: what the SQL functions change in a pipeline's row ---- */

/* a pipeline's name as the $1 of a statement on its row */
#define PIPELINE_ARG(name) CStringGetTextDatum(name)

/*
 * A pipeline's schedule (every, anchored at anchor) and its next run; a run
 * claimed under the old schedule is not run (see claimed_run_id).
 */
void
hwm_state_set_schedule(const char *pipeline, const Interval *every,
					   TimestampTz anchor, TimestampTz next)
{
	Oid			argtypes[4] = {TEXTOID, INTERVALOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[4];

	values[0] = PIPELINE_ARG(pipeline);
	values[1] = IntervalPGetDatum(every);
	values[2] = TimestampTzGetDatum(anchor);
	values[3] = TimestampTzGetDatum(next);
	hwm_catalog_exec("UPDATE hwm.state SET schedule = $2, schedule_anchor = $3, next_run_at = $4,"
					 " after = NULL, on_commit = NULL, schedule_ended = NULL,"
					 " claimed_run_id = NULL WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 4, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * No schedule: no next run, and a claimed run is not run.  The target lag
 * goes too: with neither a schedule nor upstreams it would run the pipeline.
 */
void
hwm_state_clear_schedule(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};

	hwm_catalog_exec("UPDATE hwm.state SET schedule = NULL, schedule_anchor = NULL, next_run_at = NULL,"
					 " after = NULL, on_commit = NULL, schedule_ended = NULL, target_lag = NULL, late_since = NULL,"
					 " claimed_run_id = NULL WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 1, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * A pipeline scheduled after its upstreams (a text[] of pipeline names)
 * instead of every so often: no run until one of them commits (see
 * hwm_update_state_after_run), and a run claimed before is not run.
 */
void
hwm_state_set_after(const char *pipeline, Datum upstreams)
{
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), upstreams};

	hwm_catalog_exec("UPDATE hwm.state SET after = $2, on_commit = NULL, schedule = NULL, schedule_anchor = NULL,"
					 " next_run_at = NULL, schedule_ended = NULL, claimed_run_id = NULL"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 2, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * A pipeline scheduled on its source's commits, at most once per
 * min_interval, instead of every so often or after upstreams: due at now,
 * so that its first run arms the watches of its source's tables (watch.c);
 * then due again each time a commit writes them.  A run claimed before is
 * not run.
 */
void
hwm_state_set_on_commit(const char *pipeline, const Interval *min_interval, TimestampTz now)
{
	Oid			argtypes[3] = {TEXTOID, INTERVALOID, TIMESTAMPTZOID};
	Datum		values[3] = {PIPELINE_ARG(pipeline), IntervalPGetDatum(min_interval),
	TimestampTzGetDatum(now)};

	hwm_catalog_exec("UPDATE hwm.state SET on_commit = $2, after = NULL, schedule = NULL, schedule_anchor = NULL,"
					 " next_run_at = $3, schedule_ended = NULL, claimed_run_id = NULL"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 3, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * The pipelines at home in this database that wait for a commit to their
 * source's tables: scheduled on commit, enabled, not due (or due later
 * after a run that succeeded: its settling run, which a commit brings
 * forward; not a failure's backoff), no run of the scheduler's in progress
 * (that run armed the watches, or is about to);
 * *settle[i]: its last run succeeded and loaded rows, so that one more run
 * may find more complete than that run could (see hwm_state_commit_due).
 */
char	  **
hwm_state_commit_waiters(TimestampTz now, int *n, Oid **sources, bool **settle)
{
	Oid			argtypes[2] = {OIDOID, TIMESTAMPTZOID};
	Datum		values[2] = {ObjectIdGetDatum(MyDatabaseId), TimestampTzGetDatum(now)};
	char	  **names;

	hwm_catalog_exec("SELECT s.pipeline, s.source::pg_catalog.oid,"
					 " COALESCE(s.next_run_at IS NULL AND s.last_status OPERATOR(pg_catalog.=) " SQL_STATUS(SUCCEEDED)
					 "  AND s.last_rows OPERATOR(pg_catalog.>) 0, false)"
					 " FROM hwm.state AS s"
					 " WHERE s.enabled AND s.on_commit IS NOT NULL"
					 " AND (s.next_run_at IS NULL OR (s.next_run_at OPERATOR(pg_catalog.>) $2"
					 "  AND s.last_status OPERATOR(pg_catalog.=) " SQL_STATUS(SUCCEEDED) "))"
					 " AND NOT EXISTS (SELECT FROM hwm.runs AS r"
					 "  WHERE r.pipeline OPERATOR(pg_catalog.=) s.pipeline"
					 "   AND r.status OPERATOR(pg_catalog.=) " SQL_STATUS(RUNNING)
					 "   AND r.kind OPERATOR(pg_catalog.=) 'load')"
					 " AND NOT EXISTS (SELECT FROM hwm.homes AS h"
					 "  WHERE h.pipeline OPERATOR(pg_catalog.=) s.pipeline"
					 "   AND h.dboid OPERATOR(pg_catalog.<>) $1)"
					 " ORDER BY s.pipeline",
					 2, argtypes, values, NULL, SPI_OK_SELECT);
	*n = (int) SPI_processed;
	names = palloc(sizeof(char *) * (*n + 1));
	*sources = palloc(sizeof(Oid) * (*n + 1));
	*settle = palloc(sizeof(bool) * (*n + 1));
	for (int i = 0; i < *n; i++)
	{
		names[i] = TextDatumGetCString(col_not_null(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		(*sources)[i] = DatumGetObjectId(col_not_null(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
		(*settle)[i] = DatumGetBool(col_not_null(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3));
	}
	return names;
}

/*
 * The waiting pipelines (a text[]) whose source's tables a commit wrote are
 * due at now, or min_interval after their last run began (sooner than a
 * settling run set for them).  Those of
 * settling (a text[]), whose last run loaded rows and no commit wrote
 * since, are due once more when a run would find everything that run saw
 * complete: min_interval after it began, and at least settle_ms (the
 * watermark's start margin) and its delay, since a time watermark stays that
 * far behind its run's start (the run that then loads nothing settles it).
 * A row another transaction holds (a run by hand) is skipped, never waited
 * for, and the conditions are stated on the rows locked, so that one paused,
 * rescheduled or made due since is left as it is.
 */
int
hwm_state_commit_due(Datum pipelines, int n, Datum settling, int nsettling,
					 int32 settle_ms, TimestampTz now)
{
	Oid			argtypes[4] = {TEXTARRAYOID, TIMESTAMPTZOID, TEXTARRAYOID, INT4OID};
	Datum		values[4] = {pipelines, TimestampTzGetDatum(now), settling, Int32GetDatum(settle_ms)};

	if (n + nsettling == 0)
		return 0;
	hwm_catalog_exec("WITH f AS (SELECT x.pipeline, x.pipeline OPERATOR(pg_catalog.=) ANY ($1) AS written"
					 "  FROM hwm.state AS x"
					 "  WHERE ((x.pipeline OPERATOR(pg_catalog.=) ANY ($1)"
					 "     AND (x.next_run_at IS NULL OR x.last_status OPERATOR(pg_catalog.=) " SQL_STATUS(SUCCEEDED) "))"
					 "    OR (x.pipeline OPERATOR(pg_catalog.=) ANY ($3) AND x.next_run_at IS NULL))"
					 "   AND x.enabled AND x.on_commit IS NOT NULL"
					 "  FOR UPDATE SKIP LOCKED)"
					 " UPDATE hwm.state AS s"
					 " SET next_run_at = CASE WHEN f.written"
					 "  THEN LEAST(s.next_run_at, GREATEST($2, s.last_run_started_at OPERATOR(pg_catalog.+) s.on_commit))"
					 "  ELSE GREATEST($2, s.last_run_started_at OPERATOR(pg_catalog.+)"
					 "   GREATEST(s.on_commit, pg_catalog.make_interval(secs => $4 OPERATOR(pg_catalog./) 1000.0)"
					 "    OPERATOR(pg_catalog.+) COALESCE(s.delay, '0'::pg_catalog.interval))) END"
					 " FROM f WHERE s.pipeline OPERATOR(pg_catalog.=) f.pipeline",
					 4, argtypes, values, NULL, SPI_OK_UPDATE);
	return (int) SPI_processed;
}

/* The source of a pipeline scheduled on commit; false: it is not */
bool
hwm_state_on_commit_source(const char *pipeline, Oid *source)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};

	hwm_catalog_exec("SELECT source::pg_catalog.oid FROM hwm.state"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1 AND on_commit IS NOT NULL",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	*source = DatumGetObjectId(first_not_null(1));
	return true;
}

/*
 * Changes to who runs after whom wait for each other until commit, so that
 * two of them cannot close a cycle that neither sees (a transaction-level
 * lock on an advisory tag of hwm's own; runs do not take it).
 */
#define HWM_AFTER_LOCK_SPACE 0x6861

void
hwm_after_graph_lock(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, HWM_AFTER_LOCK_SPACE);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Would pipeline, scheduled after upstreams (text[]), run after itself?
 * Follows the upstreams' own upstreams (UNION: a cycle among them ends).
 */
bool
hwm_state_after_cycle(const char *pipeline, Datum upstreams)
{
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), upstreams};

	hwm_catalog_exec("WITH RECURSIVE up(p) AS ("
					 " SELECT u.p FROM pg_catalog.unnest($2) AS u(p)"
					 " UNION SELECT a.p FROM up JOIN hwm.state AS s ON s.pipeline OPERATOR(pg_catalog.=) up.p,"
					 "  pg_catalog.unnest(s.after) AS a(p))"
					 " SELECT 1 FROM up WHERE up.p OPERATOR(pg_catalog.=) $1 LIMIT 1",
					 2, argtypes, values, NULL, SPI_OK_SELECT);
	return SPI_processed > 0;
}

/*
 * An upstream for hwm.schedule_after: its owner and target (InvalidOid: a
 * command or interval pipeline); false when there is no such pipeline.
 * Its row is locked FOR KEY SHARE until the caller's transaction ends: a
 * drop of the upstream waits for the schedule_after to commit, so that its
 * later statement that ends the schedules of the upstream's followers
 * (hwm_state_end_orphaned_after) sees it; a drop that came first makes this
 * wait, and then find no row.
 */
bool
hwm_state_upstream(const char *name, Oid *owner, Oid *target)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(name)};
	bool		isnull;
	Datum		t;

	hwm_catalog_exec("SELECT owner::pg_catalog.oid, target::pg_catalog.oid FROM hwm.state"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1 FOR KEY SHARE",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	*owner = DatumGetObjectId(first_not_null(1));
	t = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	*target = isnull ? InvalidOid : DatumGetObjectId(t);
	return true;
}

/*
 * The pipelines scheduled after an upstream that no longer exists (dropped
 * by hwm.drop_pipeline, with its table, or with its owner's objects) are
 * no longer scheduled, and say why (schedule_ended, in hwm.status); their
 * target lag goes too, as with hwm.unschedule, since alone it would run
 * them.  Only
 * on the library's own catalog: an older one has no upstreams.
 */
void
hwm_state_end_orphaned_after(void)
{
	if (!hwm_catalog_is_current())
		return;
	hwm_catalog_exec("UPDATE hwm.state AS s SET after = NULL, next_run_at = NULL, claimed_run_id = NULL,"
					 " target_lag = NULL, late_since = NULL,"
					 " schedule_ended = 'its upstream pipeline ' OPERATOR(pg_catalog.||)"
					 "  (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(u.p), ', ' ORDER BY u.p)"
					 "    FROM pg_catalog.unnest(s.after) AS u(p)"
					 "   WHERE NOT EXISTS (SELECT FROM hwm.state AS x WHERE x.pipeline OPERATOR(pg_catalog.=) u.p))"
					 "  OPERATOR(pg_catalog.||) ' was dropped: schedule it again (hwm.schedule_after or hwm.schedule)'"
					 " WHERE s.after IS NOT NULL AND EXISTS (SELECT FROM pg_catalog.unnest(s.after) AS u(p)"
					 "  WHERE NOT EXISTS (SELECT FROM hwm.state AS x WHERE x.pipeline OPERATOR(pg_catalog.=) u.p))",
					 0, NULL, NULL, NULL, SPI_OK_UPDATE);
}

/*
 * The reconcile's schedule: every, its batch size, its anchor and its
 * first slot; false (nothing written) when the pipeline has no schedule of
 * its own, which the reconcile rides on.
 */
bool
hwm_state_set_reconcile_schedule(const char *pipeline, const Interval *every,
								 int batch_size, TimestampTz anchor, TimestampTz next)
{
	Oid			argtypes[5] = {TEXTOID, INTERVALOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[5];

	values[0] = PIPELINE_ARG(pipeline);
	values[1] = IntervalPGetDatum(every);
	values[2] = Int32GetDatum(batch_size);
	values[3] = TimestampTzGetDatum(anchor);
	values[4] = TimestampTzGetDatum(next);
	hwm_catalog_exec("UPDATE hwm.state SET reconcile_schedule = $2, reconcile_batch_size = $3,"
					 " reconcile_anchor = $4, reconcile_next_run_at = $5"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1 AND schedule IS NOT NULL",
					 5, argtypes, values, NULL, SPI_OK_UPDATE);
	return SPI_processed > 0;
}

/* No scheduled reconcile */
void
hwm_state_clear_reconcile_schedule(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};

	hwm_catalog_exec("UPDATE hwm.state SET reconcile_schedule = NULL, reconcile_batch_size = NULL,"
					 " reconcile_anchor = NULL, reconcile_next_run_at = NULL"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 1, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * Under the pipeline's lock (taken here, until the end of the transaction):
 * is its reconcile still one the scheduler runs (the pipeline enabled and
 * scheduled, its reconcile scheduled)?  What a worker asks again before it
 * starts a reconcile that hwm_state_reconcile_due found due.
 */
bool
hwm_state_reconcile_scheduled(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};

	(void) hwm_pipeline_fetch(pipeline, true, false);
	hwm_catalog_exec("SELECT FROM hwm.state WHERE pipeline OPERATOR(pg_catalog.=) $1"
					 " AND enabled AND schedule IS NOT NULL AND reconcile_schedule IS NOT NULL",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	return SPI_processed > 0;
}

/*
 * Is the pipeline's reconcile due at now (the worker, after a scheduled run
 * of it succeeded)?  Only for a pipeline that is scheduled and not paused, whose reconcile is scheduled and due; its row locked, with its
 * schedule, anchor and batch size.  The conditions are on the row it locks,
 * so a concurrent change (a pause, an unschedule) is seen by the recheck.
 */
bool
hwm_state_reconcile_due(const char *pipeline, TimestampTz now, Interval *every,
						TimestampTz *anchor, int *batch_size)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), TimestampTzGetDatum(now)};
	bool		null_every;
	bool		null_anchor;
	bool		null_batch;
	Datum		d_every;
	Datum		d_anchor;
	Datum		d_batch;

	hwm_catalog_exec("SELECT reconcile_schedule, reconcile_anchor, reconcile_batch_size FROM hwm.state"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1 AND enabled AND schedule IS NOT NULL"
					 " AND reconcile_schedule IS NOT NULL AND reconcile_anchor IS NOT NULL"
					 " AND reconcile_batch_size IS NOT NULL"
					 " AND reconcile_next_run_at OPERATOR(pg_catalog.<=) $2"
					 " FOR UPDATE",
					 2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	d_every = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &null_every);
	d_anchor = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &null_anchor);
	d_batch = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &null_batch);
	if (null_every || null_anchor || null_batch)
		return false;
	*every = *DatumGetIntervalP(d_every);
	*anchor = DatumGetTimestampTz(d_anchor);
	*batch_size = DatumGetInt32(d_batch);
	return true;
}

/* The reconcile's next slot (NULL: none can be represented: it stops) */
void
hwm_state_set_reconcile_next(const char *pipeline, const TimestampTz *next)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	values[0] = PIPELINE_ARG(pipeline);
	values[1] = next ? TimestampTzGetDatum(*next) : (Datum) 0;
	nulls[1] = next ? ' ' : 'n';
	/* (unscheduled since it was read: stays unscheduled) */
	hwm_catalog_exec("UPDATE hwm.state SET reconcile_next_run_at = $2"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1 AND reconcile_schedule IS NOT NULL",
					 2, argtypes, values, nulls, SPI_OK_UPDATE);
}

/*
 * Paused (false) or resumed (true); a pause, even undone at once, voids a
 * claimed run that has not started.
 */
void
hwm_state_set_enabled(const char *pipeline, bool enabled)
{
	Oid			argtypes[2] = {TEXTOID, BOOLOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), BoolGetDatum(enabled)};

	hwm_catalog_exec("UPDATE hwm.state SET enabled = $2, claimed_run_id = CASE"
					 " WHEN enabled OPERATOR(pg_catalog.=) $2 THEN claimed_run_id END"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 2, argtypes, values, NULL, SPI_OK_UPDATE);
}

/* A scheduled run's time limit; NULL: none */
void
hwm_state_set_timeout(const char *pipeline, const Interval *timeout)
{
	Oid			argtypes[2] = {TEXTOID, INTERVALOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), timeout ? IntervalPGetDatum(timeout) : (Datum) 0};
	char		nulls[2] = {' ', timeout ? ' ' : 'n'};

	hwm_catalog_exec("UPDATE hwm.state SET timeout = $2 WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 2, argtypes, values, nulls, SPI_OK_UPDATE);
}

/* A freshness goal (hwm.set_target_lag, freshness.c); NULL: none */
void
hwm_state_set_target_lag(const char *pipeline, const Interval *target_lag)
{
	Oid			argtypes[2] = {TEXTOID, INTERVALOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), target_lag ? IntervalPGetDatum(target_lag) : (Datum) 0};
	char		nulls[2] = {' ', target_lag ? ' ' : 'n'};

	/*
	 * With neither a schedule nor upstreams the goal is its schedule: due at
	 * once (its later runs are counted from each run: see
	 * hwm_state_select_due's DUE_LAG_DRIVEN); without the goal such a
	 * pipeline is no longer run, and a run claimed for it is not run.
	 * Lateness starts afresh.
	 */
	hwm_catalog_exec("UPDATE hwm.state SET target_lag = $2, late_since = NULL,"
					 " schedule_anchor = CASE WHEN schedule IS NULL AND after IS NULL AND on_commit IS NULL"
					 "   AND $2 IS NOT NULL"
					 "  THEN pg_catalog.now()"
					 "  ELSE schedule_anchor END,"
					 " next_run_at = CASE WHEN schedule IS NOT NULL OR after IS NOT NULL OR on_commit IS NOT NULL"
					 "  THEN next_run_at"
					 "  WHEN $2 IS NULL THEN NULL"
					 "  ELSE pg_catalog.now() END,"
					 " claimed_run_id = CASE WHEN schedule IS NULL AND after IS NULL AND on_commit IS NULL THEN NULL"
					 "  ELSE claimed_run_id END"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 2, argtypes, values, nulls, SPI_OK_UPDATE);
	hwm_wakeup_at_commit();
}

/*
 * What the safe bound cannot make safe for the pipeline, as create_pipeline
 * and alter_pipeline warned of it (NULL: nothing), for hwm.status.
 */
void
hwm_state_set_caveat(const char *pipeline, const char *caveat)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), caveat ? CStringGetTextDatum(caveat) : (Datum) 0};
	char		nulls[2] = {' ', caveat ? ' ' : 'n'};

	hwm_catalog_exec("UPDATE hwm.state SET watermark_caveat = $2 WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 2, argtypes, values, nulls, SPI_OK_UPDATE);
}

/*
 * The pipeline's owner as the caller sees hwm.state, for hwm.schedule's
 * warnings only: InvalidOid when the caller does not see the row.  The one
 * statement on hwm's tables that does not go through hwm_catalog_exec, as
 * its author wrote it (317ded0): it reads only what the caller may read
 * anyway (SELECT on hwm.state is granted to PUBLIC), as the caller, under
 * the row security policy on hwm.state, and any outcome but one row gives
 * no warning rather than an error (a warning is all it decides).  The
 * caller has just been checked to have the owner's privileges
 * (hwm_pipeline_fetch), which is what the policy asks, so it sees the row.
 */
Oid
hwm_state_owner_as_caller(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};
	bool		isnull;
	Oid			owner;

	if (SPI_execute_with_args("SELECT owner::pg_catalog.oid FROM hwm.state"
							  " WHERE pipeline OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		return InvalidOid;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return isnull ? InvalidOid : owner;
}

/* ---- hwm.state: pipelines by owner (owners.c: DROP ROLE, REASSIGN, DROP OWNED) ---- */

/*
 * Do roles of an oid[] own pipelines?  true, with the first such owner (by
 * oid), how many it owns and their names quoted, comma-separated, in name
 * order.
 */
bool
hwm_state_owned_by_any(Datum owners, Oid *owner, int64 *count, char **names)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1] = {owners};

	catalog_exec_any_version("SELECT s.owner::pg_catalog.oid, pg_catalog.count(*),"
							 " pg_catalog.string_agg(pg_catalog.quote_literal(s.pipeline), ', '"
							 "                       ORDER BY s.pipeline)"
							 " FROM hwm.state AS s WHERE s.owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)"
							 " GROUP BY 1 ORDER BY 1 LIMIT 1",
							 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	/* (a group of NOT NULL owners and pipelines: none is NULL) */
	*owner = DatumGetObjectId(first_not_null(1));
	*count = DatumGetInt64(first_not_null(2));
	*names = TextDatumGetCString(first_not_null(3));
	return true;
}

/* The pipelines of the roles of an oid[] go to newrole; how many */
uint64
hwm_state_reassign_owners(Datum owners, Oid newrole)
{
	Oid			argtypes[2] = {OIDARRAYOID, OIDOID};
	Datum		values[2] = {owners, ObjectIdGetDatum(newrole)};

	catalog_exec_any_version("UPDATE hwm.state SET owner = $2::pg_catalog.regrole"
							 " WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
							 2, argtypes, values, NULL, SPI_OK_UPDATE);
	return SPI_processed;
}

/* The pipelines of the roles of an oid[] are dropped; how many */
uint64
hwm_state_delete_owned(Datum owners)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1] = {owners};

	uint64		n;

	catalog_exec_any_version("DELETE FROM hwm.state"
							 " WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
							 1, argtypes, values, NULL, SPI_OK_DELETE);
	n = SPI_processed;
	if (n > 0)
		hwm_state_end_orphaned_after();
	return n;
}

/* ---- hwm.state: declaring and dropping pipelines (manage.c) ---- */

/* The parameters of hwm_state_insert's statement, $1 first */
enum
{
	NEW_PIPELINE, NEW_SOURCE, NEW_TARGET, NEW_UNIQUE_KEY, NEW_WATERMARK_COLUMN,
	NEW_WATERMARK_TYPE, NEW_PARTITION_COLUMN, NEW_LOOKBACK, NEW_SCHEDULE,
	NEW_WATERMARK, NEW_OWNER, NEW_DELAY, NEW_BATCH_SIZE,
	NEW_COMMAND, NEW_TIME_INTERVAL, NEW_INTERVAL_ANCHOR, NEW_BATCHED, NEW_SKIP_EMPTY,
	NEW_DELETE_COLUMN, NEW_HISTORY_COLUMNS, NEW_VALID_FROM_COLUMN, NEW_VALID_TO_COLUMN,
	NEW_NARGS
};

/* The watermark type stored for a pipeline (alter_pipeline checks a new source against it) */
Oid
hwm_state_watermark_type(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};
	Datum		d;

	hwm_catalog_exec("SELECT watermark_type::pg_catalog.oid FROM hwm.state"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "pipeline \"%s\" has no row in hwm.state", pipeline);
	return hwm_spi_first(&d) ? DatumGetObjectId(d) : InvalidOid;
}

/* The parameters of hwm_state_alter's statement, by name */
enum
{
	ALTER_PIPELINE = 1, ALTER_SOURCE, ALTER_TARGET, ALTER_UNIQUE_KEY, ALTER_PARTITION_COLUMN,
	ALTER_LOOKBACK, ALTER_DELAY, ALTER_BATCH_SIZE, ALTER_COMMAND, ALTER_BATCHED, ALTER_SKIP_EMPTY,
	ALTER_DELETE_COLUMN,
	ALTER_HISTORY_COLUMNS, ALTER_WATERMARK_TYPE,
	ALTER_NARGS = ALTER_WATERMARK_TYPE
};

/*
 * hwm.alter_pipeline: the settings a pipeline's row takes from row (its
 * name, source, target, key, partition column, lookback, delay,
 * batch_size, command, batched, skip_empty, delete column, a history's
 * tracked columns, and the watermark column's type: the same, or one the
 * stored watermark compares alike with, a number widened since); the rest
 * of the row is kept.
 */
void
hwm_state_alter(const HwmNewPipeline *row)
{
	Oid			argtypes[ALTER_NARGS];
	Datum		values[ALTER_NARGS];
	char		nulls[ALTER_NARGS];

#define SET_ARG(n, type, value, isnull) \
	(argtypes[(n) - 1] = (type), values[(n) - 1] = (value), nulls[(n) - 1] = (isnull) ? 'n' : ' ')
	SET_ARG(ALTER_PIPELINE, TEXTOID, PIPELINE_ARG(row->pipeline), false);
	SET_ARG(ALTER_SOURCE, REGCLASSOID, ObjectIdGetDatum(row->source), false);
	SET_ARG(ALTER_TARGET, REGCLASSOID, ObjectIdGetDatum(row->target), !OidIsValid(row->target));
	SET_ARG(ALTER_UNIQUE_KEY, TEXTARRAYOID, row->unique_key, false);
	SET_ARG(ALTER_PARTITION_COLUMN, NAMEOID, row->partition_column, row->partition_column == (Datum) 0);
	SET_ARG(ALTER_LOOKBACK, INT4OID, Int32GetDatum(row->lookback), false);
	SET_ARG(ALTER_DELAY, INTERVALOID, row->delay ? IntervalPGetDatum(row->delay) : (Datum) 0, row->delay == NULL);
	SET_ARG(ALTER_BATCH_SIZE, INT8OID, Int64GetDatum(row->batch_size), row->batch_size <= 0);
	SET_ARG(ALTER_COMMAND, TEXTOID, row->command ? CStringGetTextDatum(row->command) : (Datum) 0,
			row->command == NULL);
	SET_ARG(ALTER_BATCHED, BOOLOID, BoolGetDatum(row->batched), false);
	SET_ARG(ALTER_SKIP_EMPTY, BOOLOID, BoolGetDatum(row->skip_empty), false);
	SET_ARG(ALTER_DELETE_COLUMN, TEXTOID,
			row->delete_column ? CStringGetTextDatum(row->delete_column) : (Datum) 0,
			row->delete_column == NULL);
	SET_ARG(ALTER_HISTORY_COLUMNS, TEXTARRAYOID, row->history_columns, row->history_columns == (Datum) 0);
	SET_ARG(ALTER_WATERMARK_TYPE, REGTYPEOID, ObjectIdGetDatum(row->watermark_type), false);
#undef SET_ARG
	StaticAssertStmt(ALTER_NARGS == 14, "hwm_state_alter's statement numbers 14 parameters");
	hwm_catalog_exec("UPDATE hwm.state SET source = $2, target = $3, unique_key = $4::pg_catalog.name[],"
					 " partition_column = $5, lookback = $6, delay = $7, batch_size = $8,"
					 " command = $9, batched = $10, skip_empty = $11,"
					 " delete_column = $12::pg_catalog.name, history_columns = $13::pg_catalog.name[],"
					 " watermark_type = $14"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 ALTER_NARGS,
					 argtypes, values, nulls, SPI_OK_UPDATE);
}

/*
 * A new pipeline's row.  created_at comes from the clock, not the transaction's start:
 * with the name, it is the pipeline's identity, which a run writes its
 * result back by, so a pipeline dropped and declared again in one
 * transaction is another.
 */
void
hwm_state_insert(const HwmNewPipeline *row)
{
	Oid			argtypes[NEW_NARGS];
	Datum		values[NEW_NARGS];
	char		nulls[NEW_NARGS];

#define ARG(i, type, value, present) \
	(argtypes[i] = (type), set_arg(values, nulls, (i), (value), (present)))
	ARG(NEW_PIPELINE, TEXTOID, CStringGetTextDatum(row->pipeline), true);
	ARG(NEW_SOURCE, REGCLASSOID, ObjectIdGetDatum(row->source), true);
	ARG(NEW_TARGET, REGCLASSOID, ObjectIdGetDatum(row->target), OidIsValid(row->target));
	ARG(NEW_UNIQUE_KEY, TEXTARRAYOID, row->unique_key, true);
	ARG(NEW_WATERMARK_COLUMN, NAMEOID, row->watermark_column, true);
	ARG(NEW_WATERMARK_TYPE, REGTYPEOID, ObjectIdGetDatum(row->watermark_type), true);
	ARG(NEW_PARTITION_COLUMN, NAMEOID, row->partition_column, row->partition_column != (Datum) 0);
	ARG(NEW_LOOKBACK, INT4OID, Int32GetDatum(row->lookback), true);
	ARG(NEW_SCHEDULE, INTERVALOID, PointerGetDatum(row->schedule), row->schedule != NULL);
	ARG(NEW_WATERMARK, TEXTOID,
		row->watermark ? CStringGetTextDatum(row->watermark) : (Datum) 0, row->watermark != NULL);
	ARG(NEW_OWNER, OIDOID, ObjectIdGetDatum(row->owner), true);
	ARG(NEW_DELAY, INTERVALOID, PointerGetDatum(row->delay), row->delay != NULL);
	ARG(NEW_BATCH_SIZE, INT8OID, Int64GetDatum(row->batch_size), row->batch_size > 0);
	ARG(NEW_COMMAND, TEXTOID,
		row->command ? CStringGetTextDatum(row->command) : (Datum) 0, row->command != NULL);
	ARG(NEW_TIME_INTERVAL, INTERVALOID, PointerGetDatum(row->time_interval),
		row->time_interval != NULL);
	ARG(NEW_INTERVAL_ANCHOR, TEXTOID,
		row->interval_anchor ? CStringGetTextDatum(row->interval_anchor) : (Datum) 0,
		row->interval_anchor != NULL);
	ARG(NEW_BATCHED, BOOLOID, BoolGetDatum(row->batched), true);
	ARG(NEW_SKIP_EMPTY, BOOLOID, BoolGetDatum(row->skip_empty), true);
	ARG(NEW_DELETE_COLUMN, TEXTOID,
		row->delete_column ? CStringGetTextDatum(row->delete_column) : (Datum) 0,
		row->delete_column != NULL);
	ARG(NEW_HISTORY_COLUMNS, TEXTARRAYOID, row->history_columns, row->history_columns != (Datum) 0);
	ARG(NEW_VALID_FROM_COLUMN, TEXTOID,
		row->valid_from_column ? CStringGetTextDatum(row->valid_from_column) : (Datum) 0,
		row->valid_from_column != NULL);
	ARG(NEW_VALID_TO_COLUMN, TEXTOID,
		row->valid_to_column ? CStringGetTextDatum(row->valid_to_column) : (Datum) 0,
		row->valid_to_column != NULL);
#undef ARG
	/* the statement writes parameter NEW_X as $(NEW_X + 1) */
	StaticAssertStmt(NEW_OWNER + 1 == 11 && NEW_BATCH_SIZE + 1 == 13 && NEW_SKIP_EMPTY + 1 == 18 &&
					 NEW_DELETE_COLUMN + 1 == 19 && NEW_VALID_TO_COLUMN + 1 == 22,
					 "hwm_state_insert's statement numbers its parameters as NEW_* does");

	hwm_catalog_exec("INSERT INTO hwm.state (pipeline, source, target, unique_key,"
					 " watermark_column, watermark_type, partition_column, lookback,"
					 " schedule, watermark, owner, delay, batch_size, created_at,"
					 " command, time_interval, interval_anchor, batched, skip_empty, delete_column,"
					 " history_columns, valid_from_column, valid_to_column)"
					 " VALUES ($1, $2, $3, $4::pg_catalog.name[], $5, $6, $7, $8, $9, $10,"
					 " $11::pg_catalog.regrole, $12, $13, pg_catalog.clock_timestamp(),"
					 " $14, $15, $16, $17, $18, $19::pg_catalog.name,"
					 " $20::pg_catalog.name[], $21::pg_catalog.name, $22::pg_catalog.name)",
					 NEW_NARGS,
					 argtypes, values, nulls, SPI_OK_INSERT);
}

/* hwm.drop_pipeline: the pipeline's row goes (its runs stay) */
void
hwm_state_delete(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {PIPELINE_ARG(pipeline)};

	hwm_catalog_exec("DELETE FROM hwm.state WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 1, argtypes, values, NULL, SPI_OK_DELETE);
	hwm_state_end_orphaned_after();
}

/* The names in column 1 of the last statement's rows (pipelines: never NULL) */
static List *
pipeline_names(void)
{
	List	   *names = NIL;

	for (uint64 i = 0; i < SPI_processed; i++)
		names = lappend(names, TextDatumGetCString(col_not_null(SPI_tuptable->vals[i],
																SPI_tuptable->tupdesc, 1)));
	return names;
}

/*
 * In the sql_drop event trigger: the tables dropped that are some
 * pipeline's source or target (HwmDroppedTable *).
 */
List *
hwm_state_dropped_tables(void)
{
	List	   *tables = NIL;

	catalog_exec_any_version("SELECT d.objid, d.schema_name, d.object_name"
							 " FROM pg_catalog.pg_event_trigger_dropped_objects() AS d"
							 " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
							 " AND d.objsubid OPERATOR(pg_catalog.=) 0 AND EXISTS (SELECT FROM hwm.state AS s"
							 "  WHERE d.objid OPERATOR(pg_catalog.=) ANY (ARRAY[s.source::pg_catalog.oid, s.target::pg_catalog.oid]))",
							 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		HwmDroppedTable *t = palloc(sizeof(HwmDroppedTable));

		t->relid = DatumGetObjectId(col_not_null(tup, SPI_tuptable->tupdesc, 1));
		t->schema = SPI_getvalue(tup, SPI_tuptable->tupdesc, 2);
		t->name = SPI_getvalue(tup, SPI_tuptable->tupdesc, 3);
		tables = lappend(tables, t);
	}
	return tables;
}

/*
 * The pipelines of table old (as source or target) follow it to table new
 * (a Citus conversion); returns their names (char *).
 */
List *
hwm_state_follow_table(Oid old, Oid new)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		values[2] = {ObjectIdGetDatum(old), ObjectIdGetDatum(new)};

	catalog_exec_any_version("UPDATE hwm.state AS s SET"
							 " source = CASE WHEN s.source::pg_catalog.oid OPERATOR(pg_catalog.=) $1 THEN $2::pg_catalog.regclass ELSE s.source END,"
							 " target = CASE WHEN s.target::pg_catalog.oid OPERATOR(pg_catalog.=) $1 THEN $2::pg_catalog.regclass ELSE s.target END"
							 " WHERE $1 OPERATOR(pg_catalog.=) ANY (ARRAY[s.source::pg_catalog.oid, s.target::pg_catalog.oid])"
							 " RETURNING s.pipeline",
							 2, argtypes, values, NULL, SPI_OK_UPDATE_RETURNING);
	return pipeline_names();
}

/*
 * In the sql_drop event trigger: the pipelines of the tables dropped go;
 * returns their names (char *) in name order (whatever order the rows are
 * stored in, for the notices).
 */
List *
hwm_state_delete_of_dropped_tables(void)
{
	List	   *gone;

	catalog_exec_any_version("WITH dropped AS ("
							 " SELECT d.objid FROM pg_catalog.pg_event_trigger_dropped_objects() AS d"
							 " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
							 " AND d.objsubid OPERATOR(pg_catalog.=) 0),"
							 " gone AS (DELETE FROM hwm.state AS s"
							 " WHERE s.source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (SELECT objid FROM dropped)"
							 " OR s.target::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (SELECT objid FROM dropped)"
							 " RETURNING s.pipeline)"
							 " SELECT pipeline FROM gone ORDER BY pipeline COLLATE \"C\"",
							 0, NULL, NULL, NULL, SPI_OK_SELECT);
	gone = pipeline_names();
	if (gone != NIL)
		hwm_state_end_orphaned_after();
	return gone;
}

/*
 * hwm.set_watermark: the watermark (NULL: load everything again); what the
 * last load remembered goes too, since it no longer describes the new
 * watermark.
 */
void
hwm_state_set_watermark(const char *pipeline, const char *watermark)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {PIPELINE_ARG(pipeline), watermark ? CStringGetTextDatum(watermark) : (Datum) 0};
	char		nulls[2] = {' ', watermark ? ' ' : 'n'};

	hwm_catalog_exec("UPDATE hwm.state SET watermark = $2, data_as_of = NULL, reread_from = NULL, reread_vxids = NULL,"
					 " reread_starts = NULL, reread_epoch = NULL"
					 " WHERE pipeline OPERATOR(pg_catalog.=) $1",
					 2, argtypes, values, nulls, SPI_OK_UPDATE);
}
