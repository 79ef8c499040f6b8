/*
 * reconcile.c
 *		CALL hwm.reconcile(pipeline, from_key, to_key, batch_size, dry_run):
 *		delete the target rows whose unique key the source no longer has
 *		(rows deleted in the source, which no watermark sees), over the
 *		whole target or a range of the key's first column, batch_size keys
 *		of the target at a time, in the order of the key.
 *
 * A reconcile is a job (job.c): its step is a batch.  A batch, in its own
 * transaction outside a transaction block:
 *   1. takes the pipeline's lock (waiting for a run, an overwrite or a
 *      backfill of the pipeline to end, as a backfill does), so that no run
 *      of the pipeline is in progress while it reads and deletes;
 *   2. finds the batch's last key: the batch_size-th key of the target after
 *      the last one done, through the unique index;
 *   3. deletes, as the pipeline's owner, the target rows of the keys up to
 *      it that the source does not have: DELETE ... WHERE NOT EXISTS on the
 *      source by the key columns with their equality operators, one
 *      statement whose snapshot is taken after the lock (READ COMMITTED:
 *      each statement reads the source as it is then);
 *   4. records the batch in hwm.runs (kind 'reconcile', when it deleted rows
 *      or was the last) and its progress in hwm.backfills (kind 'reconcile':
 *      done_through is the batch's last key), and commits.
 *
 * Why this never deletes a row that the source holds (see README, Deletes,
 * "`hwm.reconcile`: hard deletes").  A target row is deleted only when no row of
 * the source with its key is visible to the DELETE's snapshot, which is taken
 * with the pipeline's lock held: every run that committed before has
 * committed before the snapshot, and no run is in progress.  So a source row
 * the DELETE does not see was not committed when the snapshot was taken, and
 * no run has loaded it (a run reads with its own snapshot, taken after it).
 * That row commits later, with a watermark value that the safe watermark of
 * every run so far is below (watermark.c: the stored watermark stays below
 * every value a transaction in flight can still commit, for values the
 * database assigns; for values the application supplies, within the
 * pipeline's delay), so the next run loads it again.  What a reconcile can
 * do to a row committed late is make the target miss it until the next run,
 * as for any row committed after a run.  A naive reconcile (the DELETE
 * without the pipeline's lock) can delete a row that a run in progress has
 * just loaded: its snapshot predates the row's commit, and READ COMMITTED
 * rechecks only the target row it deletes, not the source; the run then
 * moves the watermark past the row, and no run loads it again
 * (test/specs/reconcile_late_commit.spec).
 *
 * The key is the pipeline's one definition (key.c, from the plan): the
 * target's unique index's columns in its order, compared with its
 * operators and collations, the source's values in the target's types.
 * The key walk: rows with a NULL in a key column are never deleted (there
 * is no key to look for); a key of several columns is compared column by
 * column (hwm_key_cmp: the index's operators may live in several schemas),
 * the first column's bound alone first, for the index.  The range
 * from_key..to_key bounds the key's first column.  The same range bounds
 * the source's side of the anti-join (a source value of the key lies in
 * the range exactly when the target's does), so each batch reads two
 * ranges of two indexes where the source's key columns are as the
 * target's.  Only the source's live rows count (the overwrite's live test,
 * with a delete marker): a key whose rows are all tombstones, or whose
 * newest is one, is deleted, as an overwrite of its partition deletes it.
 */
#include "postgres.h"

#include "catalog.h"
#include "citus.h"
#include "job.h"
#include "key.h"
#include "pipeline.h"
#include "grid.h"
#include "privilege.h"
#include "reconcile.h"
#include "schedule.h"
#include "util.h"

#include "access/xact.h"
#include "funcapi.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

/* A reconcile's set-up, rebuilt by every batch under the pipeline's lock */
typedef struct Reconcile
{
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	const HwmKey *key;			/* the target's key (key.c), from the plan */
	char	   *target;			/* quoted */
	char	   *source;
	bool		has_from;
	bool		has_to;
	Datum		from;			/* the first key column's type */
	Datum		to;
} Reconcile;

/* Statement parameters, $1 first */
typedef struct Params
{
	int			n;
	Oid		   *types;
	Datum	   *values;
} Params;

static int
param_add(Params *ps, Oid type, Datum value)
{
	ps->types[ps->n] = type;
	ps->values[ps->n] = value;
	return ++ps->n;
}

static void
params_init(Params *ps, const HwmKey *k)
{
	int			max = 4 * k->n + 8;

	ps->n = 0;
	ps->types = palloc(sizeof(Oid) * max);
	ps->values = palloc(sizeof(Datum) * max);
}

/*
 * Refuse what reconcile cannot do: a pipeline without a target table (a
 * command or interval pipeline), without a unique key, a history, or on
 * Citus.
 */
static void
reconcile_check_pipeline(const HwmPipeline *p)
{
	if (!OidIsValid(p->target))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pipeline \"%s\" has no target table to reconcile", p->name),
				 errdetail("It is a %s pipeline: it runs a command, and hwm does not know which rows the command wrote.",
						   p->time_interval ? "interval" : "command"),
				 errhint("Delete what the source no longer has in the command itself, or reconcile its target with a DELETE ... WHERE NOT EXISTS of your own.")));
	if (p->unique_key == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no unique key", p->name),
				 errdetail("Reconcile finds the target rows to delete by their key in the source."),
				 errhint("Declare the pipeline with unique_key => '{...}'.")));
	if (p->valid_from_column)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pipeline \"%s\" keeps a history, which hwm.reconcile does not change", p->name),
				 errdetail("Reconcile deletes the target rows whose key the source no longer has; in a history they are the versions of a deleted key."),
				 errhint("Mark deletions in the source with a delete_column: a tombstone closes the key's current version and keeps its history.")));
	if (pg_class_aclcheck(p->target, p->owner, ACL_DELETE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("owner of pipeline \"%s\" may not delete from its target %s",
						p->name, hwm_qualified_name(p->target)),
				 errdetail("Reconcile deletes target rows with the rights of the pipeline's owner."),
				 errhint("GRANT DELETE ON %s TO the pipeline's owner.", hwm_qualified_name(p->target))));
	if (hwm_citus_is_table(p->target) || hwm_citus_is_table(p->source))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("hwm.reconcile does not run on Citus tables"),
				 errdetail("The source or the target of pipeline \"%s\" is a Citus table, and reconcile walks the target's keys through one index.", p->name),
				 errhint("Run DELETE FROM target AS t WHERE NOT EXISTS (SELECT FROM source AS s WHERE s.key = t.key) by hand, while no run of the pipeline is in progress; for a partitioned pipeline, hwm.backfill deletes what the source's partitions no longer have.")));
}

/*
 * Read the pipeline (with lock: waiting for its lock), check it, and become
 * its owner until reconcile_end.
 */
static void
reconcile_begin(Reconcile *r, const char *name, bool lock)
{
	r->p = hwm_pipeline_fetch(name, lock, false);
	reconcile_check_pipeline(r->p);
	r->plan = hwm_plan_as_owner(r->p, false, false, true, &r->sw);
	r->key = r->plan->key;
	r->target = hwm_qualified_name(r->p->target);
	r->source = hwm_qualified_name(r->p->source);
}

static void
reconcile_end(Reconcile *r)
{
	hwm_unbecome(&r->sw);
}

/* A key's text: the value's for one column, a text[] literal for several */
static char *
key_out(const HwmKey *k, const Datum *key)
{
	Datum	   *elems;
	ArrayType  *arr;

	if (k->n == 1)
		return hwm_value_out(&k->cols[0].vt, key[0]);
	elems = palloc(sizeof(Datum) * k->n);
	for (int i = 0; i < k->n; i++)
		elems[i] = CStringGetTextDatum(hwm_value_out(&k->cols[i].vt, key[i]));
	arr = construct_array(elems, k->n, TEXTOID, -1, false, TYPALIGN_INT);
	return OidOutputFunctionCall(F_ARRAY_OUT, PointerGetDatum(arr));
}

/* The key of key_out's text */
static Datum *
key_in(const HwmKey *k, const char *txt)
{
	Datum	   *key = palloc(sizeof(Datum) * k->n);
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (k->n == 1)
	{
		key[0] = hwm_value_in(&k->cols[0].vt, txt, "done_through");
		return key;
	}
	deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, unconstify(char *, txt),
															  TEXTOID, -1)),
					  TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n != k->n)
		elog(ERROR, "hwm: done_through \"%s\" has %d keys, not %d", txt, n, k->n);
	for (int i = 0; i < n; i++)
		key[i] = hwm_value_in(&k->cols[i].vt, TextDatumGetCString(elems[i]), "done_through");
	return key;
}

/* " AND a.k1 IS NOT NULL ..." */
static void
append_not_null(StringInfo buf, const HwmKey *k, const char *alias)
{
	for (int i = 0; i < k->n; i++)
		appendStringInfo(buf, " AND %s.%s IS NOT NULL", alias, k->cols[i].name);
}

/*
 * " AND <the key of alias> > key" (greater) or "<= key", in the key's
 * order (key.c), its values added.
 */
static void
append_key_cmp(StringInfo buf, const HwmKey *k, const char *alias, bool source,
			   bool greater, const Datum *key, Params *ps)
{
	int			first = ps->n + 1;

	for (int i = 0; i < k->n; i++)
		(void) param_add(ps, k->cols[i].vt.type, key[i]);
	hwm_key_cmp(buf, k, alias, source, greater, first);
}

/*
 * The conditions on one side (alias t, or s for the source) of a batch:
 * after the last key done (else from the range's start), up to the batch's
 * last key (NULL: to the range's end).  The range from_key..to_key bounds
 * the key's first column.
 */
static void
append_range(StringInfo buf, const Reconcile *r, const char *alias, bool source,
			 const Datum *after, const Datum *upto, Params *ps)
{
	const HwmKeyColumn *c = &r->key->cols[0];

	if (after)
		append_key_cmp(buf, r->key, alias, source, true, after, ps);
	else if (r->has_from)
	{
		appendStringInfoString(buf, " AND ");
		hwm_key_expr(buf, c, alias, source);
		appendStringInfo(buf, " %s $%d", c->vt.ge, param_add(ps, c->vt.type, r->from));
	}
	if (upto)
		append_key_cmp(buf, r->key, alias, source, false, upto, ps);
	else if (r->has_to)
	{
		appendStringInfoString(buf, " AND ");
		hwm_key_expr(buf, c, alias, source);
		appendStringInfo(buf, " %s $%d", c->vt.le, param_add(ps, c->vt.type, r->to));
	}
}

/* " ORDER BY t.k1 USING <, ..." (desc: greatest first), the key's order */
static void
append_order(StringInfo buf, const HwmKey *k, bool desc)
{
	appendStringInfoString(buf, " ORDER BY ");
	hwm_key_order(buf, k, "t", false, desc);
}

/* "SELECT t.k1, ... FROM target AS t WHERE <keys not NULL>" */
static void
append_select_keys(StringInfo buf, const Reconcile *r)
{
	appendStringInfoString(buf, "SELECT ");
	for (int i = 0; i < r->key->n; i++)
		appendStringInfo(buf, "%st.%s", i ? ", " : "", r->key->cols[i].name);
	appendStringInfo(buf, " FROM %s AS t WHERE true", r->target);
	append_not_null(buf, r->key, "t");
}

/*
 * " AND NOT EXISTS (SELECT FROM source AS s WHERE <range> <s's key = t's
 * key> <s is live>)": the source's rows compared as the key compares them
 * (the load stores them so), and only its live ones (a row that carries
 * the delete marker, or whose key's newest row does, is no row the load
 * keeps: the overwrite's live test).  The same range bounds the source's
 * side, so each batch reads two ranges of two indexes where the source's
 * key columns are as the target's.
 */
static void
append_absent(StringInfo buf, const Reconcile *r, const Datum *after,
			  const Datum *upto, Params *ps)
{
	appendStringInfo(buf, " AND NOT EXISTS (SELECT FROM %s AS s WHERE true", r->source);
	append_range(buf, r, "s", true, after, upto, ps);
	hwm_key_match(buf, r->key, "s", true, "t", false);
	appendStringInfo(buf, "%s)", r->plan->live_filter);
}

/* The key of the first row of the last SPI result, copied */
static Datum *
spi_key(const HwmKey *k)
{
	Datum	   *key = palloc(sizeof(Datum) * k->n);

	for (int i = 0; i < k->n; i++)
	{
		bool		isnull;
		Datum		v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  i + 1, &isnull);

		key[i] = isnull ? (Datum) 0 : hwm_value_copy(&k->cols[i].vt, v);
	}
	return key;
}

/*
 * The batch's last key: the count-th key of the range after after (NULL:
 * from the range's start); NULL when fewer are left (the last batch).
 */
static Datum *
batch_end(const Reconcile *r, const Datum *after, int64 count)
{
	StringInfoData buf;
	Params		ps;
	int			n;

	params_init(&ps, r->key);
	initStringInfo(&buf);
	append_select_keys(&buf, r);
	append_range(&buf, r, "t", false, after, NULL, &ps);
	append_order(&buf, r->key, false);
	n = param_add(&ps, INT8OID, Int64GetDatum(count - 1));
	appendStringInfo(&buf, " OFFSET $%d LIMIT 1", n);
	hwm_spi_exec(buf.data, ps.n, ps.types, ps.values, NULL, SPI_OK_SELECT);
	return SPI_processed == 0 ? NULL : spi_key(r->key);
}

/* Delete the target rows of the keys after after up to upto that the source lacks */
static int64
delete_absent(const Reconcile *r, const Datum *after, const Datum *upto)
{
	StringInfoData buf;
	Params		ps;

	params_init(&ps, r->key);
	initStringInfo(&buf);
	appendStringInfo(&buf, "DELETE FROM %s AS t WHERE true", r->target);
	append_not_null(&buf, r->key, "t");
	append_range(&buf, r, "t", false, after, upto, &ps);
	append_absent(&buf, r, after, upto, &ps);
	hwm_spi_exec(buf.data, ps.n, ps.types, ps.values, NULL, SPI_OK_DELETE);
	return (int64) SPI_processed;
}

/* The range's bounds from their canonical text ("": none) */
static void
bounds_in(Reconcile *r, const char *from_text, const char *to_text)
{
	r->has_from = from_text[0] != '\0';
	r->has_to = to_text[0] != '\0';
	if (r->has_from)
		r->from = hwm_value_in(&r->key->cols[0].vt, from_text, "from_key");
	if (r->has_to)
		r->to = hwm_value_in(&r->key->cols[0].vt, to_text, "to_key");
}

/* What a reconcile keeps besides its job (HwmJob.arg) */
typedef struct ReconcileJob
{
	char	   *batch_from;		/* the batch in progress, for a failed run */
	char	   *batch_to;
} ReconcileJob;

/* The bounds of a batch, as hwm.runs shows them (NULL: the range's end) */
static void
batch_bounds(const HwmJob *job, const HwmKey *k, const Datum *upto,
			 char **from, char **to)
{
	*from = job->done_through ? job->done_through :
		job->from_text[0] ? job->from_text : NULL;
	*to = upto ? key_out(k, upto) : job->to_text[0] ? job->to_text : NULL;
}

/*
 * One batch, the step of a reconcile, in the current transaction: under the
 * pipeline's lock, delete the target rows of the next batch_size keys that
 * the source no longer has, record the batch.  True when the range is done.
 */
static bool
reconcile_batch(HwmJob *job)
{
	ReconcileJob *rj = job->arg;
	Reconcile	r;
	TimestampTz started_at = GetCurrentTimestamp();
	Datum	   *after;
	Datum	   *upto;
	int64		deleted;
	char	   *from;
	char	   *to;

	reconcile_begin(&r, job->pipeline, true);
	bounds_in(&r, job->from_text, job->to_text);
	after = job->done_through ? key_in(r.key, job->done_through) : NULL;
	upto = batch_end(&r, after, job->batch_size);
	batch_bounds(job, r.key, upto, &from, &to);
	rj->batch_from = from ? MemoryContextStrdup(job->cxt, from) : NULL;
	rj->batch_to = to ? MemoryContextStrdup(job->cxt, to) : NULL;
	deleted = delete_absent(&r, after, upto);
	reconcile_end(&r);

	/* recorded as the caller, like a backfill's partitions */
	if (deleted > 0 || upto == NULL)
	{
		HwmRunFacts run = HWM_RUN_FACTS_INIT(r.p->name, "reconcile", started_at);

		run.rows_deleted = deleted;
		run.from_partition = from;
		run.to_partition = to;
		(void) hwm_record_run(&run);
	}
	if (upto)
		job->done_through = MemoryContextStrdup(job->cxt, key_out(r.key, upto));
	job->steps_done++;
	job->rows_deleted += deleted;
	return upto == NULL;
}

/* A batch that failed: its run in hwm.runs, 'failed' */
static void
reconcile_failed(HwmJob *job, ErrorData *edata, TimestampTz started_at)
{
	ReconcileJob *rj = job->arg;

	hwm_job_record_failed_step(job, rj->batch_from, rj->batch_to, edata, started_at);
}

/* A reconcile is a job of hwm.backfills (job.c), a batch of keys its step */
static const HwmJobKind reconcile_kind = {
	.procedure = "hwm.reconcile",
	.job = "reconcile",
	.step_name = "batch",
	.snapshot_detail = "Each batch must read the source as it is once the pipeline's lock is held, not as a snapshot taken earlier saw it.",
	.busy = "reconcile {id} of pipeline \"{pipeline}\" is running in another session",
	.busy_detail = "The same pipeline and key range are being reconciled by another CALL that has not finished.",
	.resuming = "hwm: resuming the unfinished reconcile of pipeline \"{pipeline}\" after key {done}",
	.stopped = "The reconcile stopped; its batches up to key {done} are committed (hwm.backfills shows its progress).",
	.again = "Fix the cause and CALL hwm.reconcile again with the same pipeline and key range: it resumes after key {done}.",
	.step = reconcile_batch,
	.failed = reconcile_failed,
};

/*
 * The dry run's reads: the number of target rows the reconcile would delete
 * now (what < 0), or the first (0) or last (1) of their keys (NULL: none).
 */
static char *
dry_read(const Reconcile *r, int what, int64 *count)
{
	StringInfoData buf;
	Params		ps;
	Datum		v;

	params_init(&ps, r->key);
	initStringInfo(&buf);
	if (what < 0)
		appendStringInfo(&buf, "SELECT pg_catalog.count(*) FROM %s AS t WHERE true",
						 r->target);
	else
		append_select_keys(&buf, r);
	append_not_null(&buf, r->key, "t");
	append_range(&buf, r, "t", false, NULL, NULL, &ps);
	append_absent(&buf, r, NULL, NULL, &ps);
	if (what >= 0)
	{
		append_order(&buf, r->key, what == 1);
		appendStringInfoString(&buf, " LIMIT 1");
	}
	hwm_spi_exec(buf.data, ps.n, ps.types, ps.values, NULL, SPI_OK_SELECT);
	if (what < 0)
	{
		*count = hwm_spi_first(&v) ? DatumGetInt64(v) : 0;
		return NULL;
	}
	return SPI_processed > 0 ? key_out(r->key, spi_key(r->key)) : NULL;
}

/*
 * dry_run: how many target rows the reconcile would delete now, and their
 * first and last keys, in a NOTICE; nothing is written or recorded.
 */
static void
reconcile_dry_run(Reconcile *r, const char *from_text, const char *to_text)
{
	int64		count;
	char	   *first = NULL;
	char	   *last = NULL;
	HwmJob		job = {.kind = &reconcile_kind};

	(void) dry_read(r, -1, &count);
	if (count > 0)
	{
		first = dry_read(r, 0, &count);
		last = dry_read(r, 1, &count);
	}
	reconcile_end(r);

	job.pipeline = r->p->name;
	job.from_text = pstrdup(from_text);
	job.to_text = pstrdup(to_text);
	job.cxt = CurrentMemoryContext;
	if (hwm_job_find_unfinished(&job))
		ereport(NOTICE,
				(errmsg("hwm: a reconcile of this range is unfinished: a CALL without dry_run resumes it after key %s",
						job.done_through ? job.done_through : "(none)")));
	if (count == 0)
		ereport(NOTICE,
				(errmsg("hwm: dry run of reconcile of pipeline \"%s\": no target row to delete; nothing was changed",
						r->p->name)));
	else
		ereport(NOTICE,
				(errmsg("hwm: dry run of reconcile of pipeline \"%s\": " INT64_FORMAT " target rows would be deleted, keys %s to %s; nothing was changed",
						r->p->name, count, first ? first : "?", last ? last : "?")));
}

/*
 * The range's bound in argument argno (NULL: none) as canonical text ("":
 * none), in the key's first column's type.
 */
static char *
bound_arg(FunctionCallInfo fcinfo, int argno, const Reconcile *r, const char *what,
		  Datum *value)
{
	char	   *txt;

	if (PG_ARGISNULL(argno))
		return "";
	txt = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (txt[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what),
				 errhint("Pass NULL (the default) for a range without that bound.")));
	*value = hwm_value_in(&r->key->cols[0].vt, txt, what);
	return hwm_value_out(&r->key->cols[0].vt, *value);
}

/*
 * from_key and to_key (arguments 1 and 2) into r, in the key's first
 * column's type, and their canonical text ("": no bound); refuses a
 * reversed range.
 */
static void
range_args(FunctionCallInfo fcinfo, Reconcile *r, char **from_text, char **to_text)
{
	*from_text = bound_arg(fcinfo, 1, r, "from_key", &r->from);
	*to_text = bound_arg(fcinfo, 2, r, "to_key", &r->to);
	r->has_from = (*from_text)[0] != '\0';
	r->has_to = (*to_text)[0] != '\0';
	if (r->has_from && r->has_to && hwm_value_cmp(&r->key->cols[0].vt, r->from, r->to) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_key %s is after to_key %s", *from_text, *to_text),
				 errhint("The range is inclusive at both ends: pass the smaller key first.")));
}

/* The arguments that need no catalog: batch_size, dry_run */
static void
reconcile_check_args(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(3) || PG_GETARG_INT32(3) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_size must be at least 1"),
				 errdetail("batch_size is %s.", PG_ARGISNULL(3) ? "NULL" :
						   psprintf("%d", PG_GETARG_INT32(3))),
				 errhint("batch_size is the number of target keys examined per transaction (10000 by default).")));
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("dry_run must not be null"),
				 errhint("Pass true to only show what would be deleted, or false (the default) to delete it.")));
	hwm_job_require_read_committed(&reconcile_kind);
}

PG_FUNCTION_INFO_V1(hwm_reconcile);

/* CALL hwm.reconcile(pipeline, from_key, to_key, batch_size, dry_run) */
Datum
hwm_reconcile(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	HwmJob	   *job;
	Reconcile	r;
	char	   *from_text;
	char	   *to_text;

	reconcile_check_args(fcinfo);

	/* set-up: everything checked (an error here changes nothing) */
	job = hwm_job_new(&reconcile_kind, fcinfo);
	reconcile_begin(&r, name, false);
	range_args(fcinfo, &r, &from_text, &to_text);

	if (PG_GETARG_BOOL(4))
	{
		reconcile_dry_run(&r, from_text, to_text);
		SPI_finish();
		hwm_job_free(job);
		PG_RETURN_VOID();
	}
	reconcile_end(&r);

	job->batch_size = PG_GETARG_INT32(3);
	job->arg = MemoryContextAllocZero(job->cxt, sizeof(ReconcileJob));
	job->pipeline = MemoryContextStrdup(job->cxt, r.p->name);
	job->from_text = MemoryContextStrdup(job->cxt, from_text);
	job->to_text = MemoryContextStrdup(job->cxt, to_text);
	hwm_job_run(job);

	ereport(NOTICE,
			(errmsg("hwm: reconcile of pipeline \"%s\" finished: %d batches, " INT64_FORMAT " target rows deleted",
					job->pipeline, job->steps_done, job->rows_deleted)));
	hwm_job_free(job);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_reconcile_preview);

/*
 * hwm.reconcile_preview(pipeline, from_key, to_key): the dry run's reads as
 * a row, for callers that cannot read a NOTICE (dbt's hwm_reconcile): how
 * many target rows a reconcile of the range would delete now, and the
 * first and last of their keys (NULL: none), by the key's one definition
 * and the source's live rows, as the reconcile itself.  Changes and
 * records nothing.
 */
Datum
hwm_reconcile_preview(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	MemoryContext callercxt = CurrentMemoryContext;
	Reconcile	r;
	char	   *from_text;
	char	   *to_text;
	int64		count;
	char	   *first = NULL;
	char	   *last = NULL;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	MemoryContext old;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	reconcile_begin(&r, name, false);
	range_args(fcinfo, &r, &from_text, &to_text);
	(void) dry_read(&r, -1, &count);
	if (count > 0)
	{
		first = dry_read(&r, 0, &count);
		last = dry_read(&r, 1, &count);
	}
	reconcile_end(&r);
	old = MemoryContextSwitchTo(callercxt);
	values[0] = Int64GetDatum(count);
	nulls[1] = first == NULL;
	nulls[2] = last == NULL;
	if (first)
		values[1] = CStringGetTextDatum(first);
	if (last)
		values[2] = CStringGetTextDatum(last);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	MemoryContextSwitchTo(old);
	SPI_finish();
	return (Datum) 0;
}

/*
 * The scheduled reconcile (reconcile.h): the job of the whole target, in the
 * worker's own transactions; a batch that fails is recorded as CALL records
 * it (hwm.backfills 'failed', a failed run of kind reconcile) and its error
 * raised, and the next scheduled reconcile resumes the job.
 */
void
hwm_reconcile_scheduled(const char *pipeline, int batch_size, MemoryContext cxt)
{
	HwmJob	   *job = hwm_job_new_background(&reconcile_kind, cxt);

	job->batch_size = batch_size;
	job->arg = MemoryContextAllocZero(job->cxt, sizeof(ReconcileJob));
	job->pipeline = MemoryContextStrdup(job->cxt, pipeline);
	job->from_text = MemoryContextStrdup(job->cxt, "");
	job->to_text = MemoryContextStrdup(job->cxt, "");
	hwm_job_run(job);
	ereport(DEBUG1,
			(errmsg("hwm: scheduled reconcile of pipeline \"%s\" finished: %d batches, " INT64_FORMAT " target rows deleted",
					job->pipeline, job->steps_done, job->rows_deleted)));
	hwm_job_free(job);
}

PG_FUNCTION_INFO_V1(hwm_schedule_reconcile);

/*
 * hwm.schedule_reconcile(pipeline, every, batch_size): the whole target
 * reconciled by the scheduler's worker after a scheduled run of the pipeline
 * succeeded, when due; the first is due at once.  Returns its time.
 */
Datum
hwm_schedule_reconcile(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	Interval   *every;
	int32		batch_size;
	HwmPipeline *p;
	TimestampTz anchor = GetCurrentTransactionStartTimestamp();
	TimestampTz second;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("every must not be null"),
				 errhint("To stop reconciling the pipeline on a schedule, call hwm.unschedule_reconcile(%s).", quote_literal_cstr(name))));
	every = PG_GETARG_INTERVAL_P(1);
	hwm_check_schedule(every, "every");
	if (PG_ARGISNULL(2) || PG_GETARG_INT32(2) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_size must be at least 1"),
				 errdetail("batch_size is %s.", PG_ARGISNULL(2) ? "NULL" :
						   psprintf("%d", PG_GETARG_INT32(2))),
				 errhint("batch_size is the number of target keys examined per transaction (10000 by default).")));
	batch_size = PG_GETARG_INT32(2);

	SPI_connect();
	p = hwm_pipeline_fetch(name, false, false);
	reconcile_check_pipeline(p);
	if (!hwm_grid_schedule_next(anchor, every, anchor, false, &second))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reconcile schedule of pipeline \"%s\" is too long: its second reconcile would fall after the last time PostgreSQL can store", name),
				 errhint("Pass an interval of at most a few thousand years, such as '1 day'.")));
	if (!hwm_state_set_reconcile_schedule(p->name, every, batch_size, anchor, anchor))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no schedule", name),
				 errdetail("A scheduled reconcile runs in the scheduler's worker, after a scheduled run of the pipeline has succeeded."),
				 errhint("Schedule the pipeline first with hwm.schedule(%s, ...), or CALL hwm.reconcile(%s) from a scheduler of your own.",
						 quote_literal_cstr(name), quote_literal_cstr(name))));
	SPI_finish();
	PG_RETURN_TIMESTAMPTZ(anchor);
}

PG_FUNCTION_INFO_V1(hwm_unschedule_reconcile);

/* hwm.unschedule_reconcile(pipeline): no scheduled reconcile; the load's schedule stays */
Datum
hwm_unschedule_reconcile(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	HwmPipeline *p;

	SPI_connect();
	p = hwm_pipeline_fetch(name, false, false);
	hwm_state_clear_reconcile_schedule(p->name);
	SPI_finish();
	PG_RETURN_VOID();
}
