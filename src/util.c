/*
 * util.c
 *		Helpers shared by hwm's modules (see util.h).  Nothing here knows
 *		about pipelines; nothing here calls another module of hwm.
 */
#include "util.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_operator.h"
#include "executor/spi.h"
#include "utils/memutils.h"
#include "utils/hsearch.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/*
 * Plans of hwm's statements, kept for the backend's life: a statement's
 * text is built from the catalog (quoted names, $n parameters, never
 * values), so one text always means one statement, and PostgreSQL's plan
 * cache re-plans a kept plan when a table, index or function it uses
 * changes (ALTER TABLE, a dropped index, a replaced function), when the
 * role or row security it was planned for differs, and chooses between a
 * generic plan and one planned for the parameters' values as it does for
 * any prepared statement.  What a run pays per statement is then its
 * execution and, where the plan cache finds it worth it, planning: not
 * parsing and rewriting.  Only SELECT, INSERT, UPDATE, DELETE and WITH
 * statements are kept (DDL names the objects it creates); at most
 * PLAN_CACHE_MAX, all let go when full.
 */
#define PLAN_CACHE_MAX 512

typedef struct PlanCacheKey
{
	uint32		hash;			/* of the text and the argument types */
	int			len;
} PlanCacheKey;

typedef struct PlanCacheEntry
{
	PlanCacheKey key;
	char	   *sql;			/* in the cache's context, to tell collisions */
	int			nargs;
	Oid			argtypes[FUNC_MAX_ARGS];
	SPIPlanPtr	plan;
} PlanCacheEntry;

static HTAB *plan_cache = NULL;
static MemoryContext plan_cache_cxt = NULL;
static int	exec_depth = 0;		/* kept plans executing (nested: a command that calls hwm.run) */

static bool
plan_cacheable(const char *sql)
{
	while (*sql == ' ' || *sql == '\n' || *sql == '\t' || *sql == '\r' || *sql == '(')
		sql++;
	return pg_strncasecmp(sql, "SELECT", 6) == 0 || pg_strncasecmp(sql, "INSERT", 6) == 0 ||
		pg_strncasecmp(sql, "UPDATE", 6) == 0 || pg_strncasecmp(sql, "DELETE", 6) == 0 ||
		pg_strncasecmp(sql, "WITH", 4) == 0;
}

static void
plan_cache_reset(void)
{
	HASH_SEQ_STATUS seq;
	PlanCacheEntry *e;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl = {0};

		plan_cache_cxt = AllocSetContextCreate(TopMemoryContext, "hwm statement texts",
											   ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(PlanCacheKey);
		ctl.entrysize = sizeof(PlanCacheEntry);
		ctl.hcxt = plan_cache_cxt;
		plan_cache = hash_create("hwm plans", PLAN_CACHE_MAX, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		return;
	}
	hash_seq_init(&seq, plan_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		SPI_freeplan(e->plan);
		pfree(e->sql);
		hash_search(plan_cache, &e->key, HASH_REMOVE, NULL);
	}
}

/* The kept plan of this statement, prepared and kept the first time */
static SPIPlanPtr
plan_for(const char *sql, int nargs, Oid *argtypes)
{
	PlanCacheKey key = {0};
	PlanCacheEntry *e;
	SPIPlanPtr	plan;
	bool		found;
	char	   *copy;

	if (nargs > FUNC_MAX_ARGS || !plan_cacheable(sql))
		return NULL;
	if (plan_cache == NULL)
		plan_cache_reset();
	key.len = (int) strlen(sql);
	key.hash = hash_bytes((const unsigned char *) sql, key.len);
	if (nargs > 0)
		key.hash = hash_combine(key.hash, hash_bytes((const unsigned char *) argtypes,
													 sizeof(Oid) * nargs));
	e = hash_search(plan_cache, &key, HASH_FIND, NULL);
	if (e != NULL)
		return (e->nargs == nargs && strcmp(e->sql, sql) == 0 &&
				memcmp(e->argtypes, argtypes, sizeof(Oid) * nargs) == 0) ? e->plan : NULL;
	/* full: let every plan go, unless one of them may be running above us */
	if (hash_get_num_entries(plan_cache) >= PLAN_CACHE_MAX)
	{
		if (exec_depth > 0)
			return NULL;
		plan_cache_reset();
	}
	plan = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_PARALLEL_OK);
	if (plan == NULL)
		elog(ERROR, "hwm: SPI_prepare failed (%s) for: %s",
			 SPI_result_code_string(SPI_result), sql);
	if (SPI_keepplan(plan) != 0)
		return plan;			/* used once, freed with the SPI connection */
	/* (the text copied first: an entry is never left half filled in) */
	copy = MemoryContextStrdup(plan_cache_cxt, sql);
	e = hash_search(plan_cache, &key, HASH_ENTER, &found);
	e->sql = copy;
	e->nargs = nargs;
	memcpy(e->argtypes, argtypes, sizeof(Oid) * nargs);
	e->plan = plan;
	return plan;
}

/*
 * Execute a kept plan, counted while it runs (see plan_for): with its own
 * snapshot (InvalidSnapshot), or with the one given
 */
static int
execute_kept(SPIPlanPtr plan, Datum *values, const char *nulls, Snapshot snapshot)
{
	volatile int rc = 0;

	exec_depth++;
	PG_TRY();
	{
		if (snapshot == InvalidSnapshot)
			rc = SPI_execute_plan(plan, values, nulls, false, 0);
		else
			rc = SPI_execute_snapshot(plan, values, nulls, snapshot, InvalidSnapshot,
									  false, true, 0);
	}
	PG_FINALLY();
	{
		exec_depth--;
	}
	PG_END_TRY();
	return rc;
}

/*
 * Run a statement with $n parameters (its kept plan, see above), with its
 * own snapshot (InvalidSnapshot) or the one given: SPI's code
 */
static int
spi_run(const char *sql, int nargs, Oid *argtypes, Datum *values,
		const char *nulls, Snapshot snapshot)
{
	SPIPlanPtr	plan = plan_for(sql, nargs, argtypes);
	int			rc;

	if (plan != NULL)
		return execute_kept(plan, values, nulls, snapshot);
	if (snapshot == InvalidSnapshot)
		return SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	plan = SPI_prepare(sql, nargs, argtypes);
	if (plan == NULL)
		elog(ERROR, "hwm: SPI_prepare failed (%s) for: %s",
			 SPI_result_code_string(SPI_result), sql);
	rc = SPI_execute_snapshot(plan, values, nulls, snapshot, InvalidSnapshot, false, true, 0);
	SPI_freeplan(plan);
	return rc;
}

/* ... and insist on its SPI_OK_* code (0: any success) */
static void
spi_check(int rc, int expected, const char *sql)
{
	if (rc < 0 || (expected != 0 && rc != expected))
		elog(ERROR, "hwm: SPI_execute failed (%s) for: %s",
			 SPI_result_code_string(rc), sql);
}

int
hwm_spi_run(const char *sql, int nargs, Oid *argtypes, Datum *values,
			const char *nulls)
{
	return spi_run(sql, nargs, argtypes, values, nulls, InvalidSnapshot);
}

void
hwm_spi_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
			 const char *nulls, int expected)
{
	spi_check(spi_run(sql, nargs, argtypes, values, nulls, InvalidSnapshot), expected, sql);
}

/*
 * hwm_spi_exec with the snapshot given, for a statement whose parameters
 * must be read after the snapshot it reads with was taken
 * (hwm_state_apply_wakes)
 */
void
hwm_spi_exec_snapshot(const char *sql, int nargs, Oid *argtypes, Datum *values,
					  const char *nulls, Snapshot snapshot, int expected)
{
	spi_check(spi_run(sql, nargs, argtypes, values, nulls, snapshot), expected, sql);
}

/*
 * The first column of the first row that the last SPI statement returned:
 * false when it returned no row or a NULL there.  The value lives in SPI's
 * memory; copy it to keep it.
 */
bool
hwm_spi_first(Datum *value)
{
	bool		isnull;

	if (SPI_processed == 0)
		return false;
	*value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return !isnull;
}

/* Has the interval a negative part (months, days or time)? */
bool
hwm_interval_has_negative_part(const Interval *iv)
{
	return iv->month < 0 || iv->day < 0 || iv->time < 0;
}

/* Is the interval shorter than usecs microseconds (as interval < says)? */
bool
hwm_interval_shorter_than(const Interval *iv, int64 usecs)
{
	Interval	limit = {0};

	limit.time = usecs;
	return DatumGetBool(DirectFunctionCall2(interval_lt,
											IntervalPGetDatum(unconstify(Interval *, iv)),
											IntervalPGetDatum(&limit)));
}

/* Refuse a negative interval (what); hint says what it is for */
void
hwm_check_not_negative(const Interval *iv, const char *what, const char *hint)
{
	Interval	zero = {0};

	if (DatumGetBool(DirectFunctionCall2(interval_lt,
										 IntervalPGetDatum(unconstify(Interval *, iv)),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", what),
				 errhint("%s", hint)));
}

/*
 * Refuse a time limit (what) longer than a timer holds, HWM_TIMER_MAX_MS,
 * an infinite one (17) included, rather than arm a shorter one than asked
 * for; hint says what to pass instead.
 */
void
hwm_check_timer_interval(const Interval *iv, const char *what, const char *hint)
{
	Interval	limit = {0};

	limit.time = HWM_TIMER_MAX_MS * 1000;
	if (DatumGetBool(DirectFunctionCall2(interval_gt,
										 IntervalPGetDatum(unconstify(Interval *, iv)),
										 IntervalPGetDatum(&limit))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at most " INT64_FORMAT " milliseconds (24 days 20:31:23.647)",
						what, HWM_TIMER_MAX_MS),
				 errdetail("%s is %s: the server's timers, as statement_timeout and lock_timeout, hold no longer time.",
						   what, DatumGetCString(DirectFunctionCall1(interval_out,
																	 IntervalPGetDatum(unconstify(Interval *, iv))))),
				 errhint("%s", hint)));
}

/*
 * Refuse a NULL for a required argument, saying what to pass instead.
 */
void
hwm_require_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	static const struct
	{
		const char *arg;
		const char *hint;
	}			hints[] =
	{
		{"pipeline", "Name a pipeline: SELECT pipeline FROM hwm.status lists them."},
		{"source", "Pass the source table, for example 'public.orders_raw'."},
		{"target", "Pass the target table, for example 'public.orders'."},
		{"unique_key", "Pass the business key of the target, for example unique_key => '{id}'."},
		{"watermark_column", "Name the source column whose growing values mark new rows, for example updated_at."},
		{"partition_column", "Name the column whose values identify partitions, for example load_date."},
		{"lookback", "Pass 0 for no lookback."},
		{"from_partition", "Pass the range's lower bound as a value of the partition column, for example '2026-03-01'."},
		{"to_partition", "Pass the range's upper bound as a value of the partition column, for example '2026-03-31'."},
		{"nowait", "Pass true to fail at once when the pipeline is busy, or false (the default) to wait for it."},
		{"batch_size", "Pass the number of partitions to overwrite per transaction (1 by default)."},
		{"dry_run", "Pass true to only show what would be overwritten, or false (the default) to do it."},
		{"staging", "Pass the staging table, for example hwm.create_staging('public.orders')."},
		{"lock_timeout", "Pass how long the swap may wait for its locks, for example '5s'."},
	};
	const char *hint = "Pass a value that is not null.";

	if (!PG_ARGISNULL(argno))
		return;
	for (int i = 0; i < lengthof(hints); i++)
		if (strcmp(hints[i].arg, what) == 0)
			hint = hints[i].hint;
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("%s must not be null", what),
			 errhint("%s", hint)));
}

/*
 * A required text argument, or a clear error naming it when it is NULL.
 */
char *
hwm_text_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	hwm_require_arg(fcinfo, argno, what);
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * Is a procedure called inside a transaction block (or from a function), so
 * that it may not commit?  A CALL on its own is non-atomic.
 */
bool
hwm_call_is_atomic(FunctionCallInfo fcinfo)
{
	return !(fcinfo->context && IsA(fcinfo->context, CallContext) &&
			 !castNode(CallContext, fcinfo->context)->atomic);
}

/* "schema"."relation", quoted as needed */
char *
hwm_qualified_name(Oid relid)
{
	char	   *relname = get_rel_name(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid),
				 errhint("The table may have been dropped; drop the pipeline or create it again.")));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  relname);
}

/* OPERATOR("schema".op), so that no look-alike operator is ever chosen */
char *
hwm_operator_sql(Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator op;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	op = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("OPERATOR(%s.%s)",
					  quote_identifier(get_namespace_name(op->oprnamespace)),
					  NameStr(op->oprname));
	ReleaseSysCache(tup);
	return result;
}

const char *
hwm_clip_error(const char *message)
{
	size_t		len = strlen(message);
	int			keep;

	if (len <= HWM_ERROR_MAX)
		return message;
	keep = pg_mbcliplen(message, (int) len, HWM_ERROR_MAX - 64);
	return psprintf("%.*s... (cut: %zu of %zu bytes shown)", keep, message,
					(size_t) keep, len);
}

ErrorData *
hwm_try_subxact(void (*fn) (void *), void *arg, MemoryContext errcxt)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(errcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return edata;
}

/*
 * Switch to role (restricted: also forbid what a security-restricted
 * operation forbids) and pin search_path, until hwm_unbecome().  An error in
 * between is safe: transaction abort restores the user and the settings.
 */
void
hwm_become(Oid role, bool restricted, HwmRoleSwitch *sw)
{
	int			sec;

	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	sec = sw->save_sec_context | SECURITY_LOCAL_USERID_CHANGE;
	if (restricted)
		sec |= SECURITY_RESTRICTED_OPERATION;
	SetUserIdAndSecContext(role, sec);
	sw->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

void
hwm_unbecome(HwmRoleSwitch *sw)
{
	AtEOXact_GUC(false, sw->save_nestlevel);
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
}

/*
 * Take an ACCESS EXCLUSIVE lock waiting at most ms milliseconds (lock_timeout
 * set for the wait alone), with an error that says which table and what to
 * do when it is not granted in time.
 */
void
hwm_lock_within(Oid relid, int64 ms, const char *what, const char *detail,
				const char *hint)
{
	int			nest = NewGUCNestLevel();
	MemoryContext oldcxt = CurrentMemoryContext;
	char	   *mstext = psprintf(INT64_FORMAT, Max(ms, 1));

	(void) set_config_option("lock_timeout", mstext, PGC_USERSET, PGC_S_SESSION,
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
				 errmsg("could not lock %s within %s ms", what, mstext),
				 detail ? errdetail("%s", detail) : 0,
				 hint ? errhint("%s", hint) : 0));
	}
	PG_END_TRY();
	AtEOXact_GUC(false, nest);
}

/* Start one transaction of a background worker, with SPI and a snapshot */
void
hwm_bgw_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* Commit what hwm_bgw_begin started, and report the worker idle */
void
hwm_bgw_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}
