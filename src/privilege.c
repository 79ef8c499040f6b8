/*
 * privilege.c
 *		Checking that a pipeline's owner may still read its source and write
 *		its target, and building a pipeline's plan as its owner.
 *
 * Everything a pipeline does to user tables runs as the pipeline's owner in
 * a security-restricted context (like REFRESH MATERIALIZED VIEW and VACUUM
 * do for the table owner), with search_path = pg_catalog, pg_temp so that no
 * object planted in another schema is ever resolved.  The statements hwm
 * builds qualify every user object anyway; the pinned path is the second
 * line of defence for what the executor resolves on its own.
 */
#include "postgres.h"

#include "catalog.h"
#include "pipeline.h"
#include "privilege.h"
#include "util.h"
#include "watermark.h"
#include "compat.h"

#include "access/attnum.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

/* hwm.allow_superuser_pipelines */
bool		hwm_allow_superuser_pipelines = false;

/*
 * Refuse, with SQLSTATE 42501, unless role has priv on the relation, or on
 * each of the given columns.
 */
static void
require(Oid role, Oid relid, AclMode priv, const char *privname,
		List *attnums, const char *what, const char *pipeline)
{
	ListCell   *lc;
	char	   *rolname = GetUserNameFromId(role, false);
	char	   *relname = hwm_qualified_name(relid);

	if (pg_class_aclcheck(relid, role, priv) == ACLCHECK_OK)
		return;

	foreach(lc, attnums)
	{
		AttrNumber	attno = (AttrNumber) lfirst_int(lc);

		if (pg_attribute_aclcheck(relid, attno, role, priv) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for %s %s", what, relname),
					 pipeline ?
					 errdetail("Pipeline \"%s\" runs as role \"%s\", which lacks %s on column \"%s\" of %s.",
							   pipeline, rolname, privname,
							   get_attname(relid, attno, false), relname) :
					 errdetail("Role \"%s\" lacks %s on column \"%s\" of %s.",
							   rolname, privname,
							   get_attname(relid, attno, false), relname),
					 errhint("GRANT %s ON %s TO %s;", privname, relname,
							 quote_identifier(rolname))));
	}
	if (attnums == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for %s %s", what, relname),
				 pipeline ?
				 errdetail("Pipeline \"%s\" runs as role \"%s\", which lacks %s on %s.",
						   pipeline, rolname, privname, relname) :
				 errdetail("Role \"%s\" lacks %s on %s.", rolname, privname, relname),
				 errhint("GRANT %s ON %s TO %s;", privname, relname,
						 quote_identifier(rolname))));
}

/*
 * Check, on every run and at creation, that role may do what the plan does:
 * SELECT the source columns it reads; INSERT into the target, UPDATE it when
 * upserting, DELETE from it when overwriting partitions.  The executor would
 * refuse too, but later and without saying which pipeline or how to fix it.
 */
/*
 * Refuse, with SQLSTATE 42501, unless role has USAGE on the relation's
 * schema: the statements name the relation through its schema, and would
 * fail later with a message that does not say which pipeline or why.
 */
static void
require_schema_usage(Oid role, Oid relid, const char *what, const char *pipeline)
{
	Oid			nsp = get_rel_namespace(relid);
	char	   *nspname;
	char	   *rolname;

	if (object_aclcheck(NamespaceRelationId, nsp, role, ACL_USAGE) == ACLCHECK_OK)
		return;
	nspname = get_namespace_name(nsp);
	rolname = GetUserNameFromId(role, false);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for schema %s of %s %s",
					quote_identifier(nspname), what, hwm_qualified_name(relid)),
			 pipeline ?
			 errdetail("Pipeline \"%s\" runs as role \"%s\", which lacks USAGE on schema %s.",
					   pipeline, rolname, quote_identifier(nspname)) :
			 errdetail("Role \"%s\" lacks USAGE on schema %s.", rolname, quote_identifier(nspname)),
			 errhint("GRANT USAGE ON SCHEMA %s TO %s;", quote_identifier(nspname),
					 quote_identifier(rolname))));
}

void
hwm_check_privileges(Oid role, const HwmPlanSpec *spec, const HwmPlan *plan)
{
	if (spec->pipeline)
		hwm_check_owner_allowed(role, spec->pipeline, false);
	require_schema_usage(role, spec->source, "source table", spec->pipeline);
	require(role, spec->source, ACL_SELECT, "SELECT", plan->source_columns,
			"source table", spec->pipeline);
	/* a command pipeline's command is checked by command.c and the executor */
	if (spec->source_only)
		return;
	require_schema_usage(role, spec->target, "target table", spec->pipeline);
	require(role, spec->target, ACL_SELECT, "SELECT", plan->target_columns,
			"target table", spec->pipeline);
	require(role, spec->target, ACL_INSERT, "INSERT", NIL,
			"target table", spec->pipeline);
	if (spec->unique_key != NIL)
		require(role, spec->target, ACL_UPDATE, "UPDATE", NIL,
				"target table", spec->pipeline);
	if (plan->has_part || plan->has_tombstones)
		require(role, spec->target, ACL_DELETE, "DELETE", NIL,
				"target table", spec->pipeline);
}

/*
 * Refuse a pipeline owned by a superuser unless hwm.allow_superuser_pipelines
 * is on: a pipeline runs its statements (and so the triggers, defaults,
 * domain checks and views of its tables) with its owner's rights, which for
 * a superuser are unlimited.  Checked when the pipeline is created and on
 * every run, so that an owner who became superuser later is refused too.
 */
void
hwm_check_owner_allowed(Oid owner, const char *pipeline, bool creating)
{
	char	   *rolname;

	if (hwm_allow_superuser_pipelines || !superuser_arg(owner))
		return;
	rolname = GetUserNameFromId(owner, false);
	if (creating)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("pipeline \"%s\" would be owned by superuser \"%s\"",
						pipeline, rolname),
				 errdetail("A pipeline runs with its owner's rights, which for a superuser are unlimited, and hwm.allow_superuser_pipelines is off."),
				 errhint("Create the pipeline as an ordinary role that has only the privileges it needs (SET ROLE ... first), or have a superuser set hwm.allow_superuser_pipelines = on.")));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("pipeline \"%s\" is owned by superuser \"%s\"",
					pipeline, rolname),
			 errdetail("A pipeline runs with its owner's rights, which for a superuser are unlimited, and hwm.allow_superuser_pipelines is off."),
			 errhint("Remove the attribute with ALTER ROLE %s NOSUPERUSER, or recreate the pipeline as an ordinary role, or have a superuser set hwm.allow_superuser_pipelines = on.",
					 quote_identifier(rolname))));
}

/* now() - delay, in a subtransaction (it may be out of range) */
typedef struct DelayCheck
{
	const Interval *delay;
	TimestampTz settled;
} DelayCheck;

static void
settle(void *arg)
{
	DelayCheck *c = arg;

	c->settled = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														 TimestampTzGetDatum(GetCurrentTimestamp()),
														 IntervalPGetDatum(unconstify(Interval *, c->delay))));
}

/*
 * What create_pipeline refuses on top of what a run checks: temporary
 * tables (a pipeline outlives the session, and no other session, the
 * scheduler included, can read them), and a delay so large that
 * now() - delay is out of range, which would fail every run, or infinite
 * (17), which would keep the watermark from ever moving.
 */
void
hwm_check_pipeline_tables(const HwmPlanSpec *spec, const Interval *delay)
{
	Oid			rels[2] = {spec->source, spec->target};
	const char *what[2] = {"source", "target"};

	for (int i = 0; i < 2; i++)
		if (OidIsValid(rels[i]) && get_rel_persistence(rels[i]) == RELPERSISTENCE_TEMP)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s \"%s\" is a temporary table", what[i], get_rel_name(rels[i])),
					 errdetail("A pipeline outlives the session, and no other session can read a temporary table."),
					 errhint("Use an ordinary or unlogged table, or hwm.overwrite_partition for a one-off load.")));
	if (delay)
	{
		DelayCheck	c = {.delay = delay};
		ErrorData  *edata = hwm_try_subxact(settle, &c, CurrentMemoryContext);
		char	   *shown = DatumGetCString(DirectFunctionCall1(interval_out,
																IntervalPGetDatum(unconstify(Interval *, delay))));

		if (edata != NULL && edata->sqlerrcode != ERRCODE_DATETIME_VALUE_OUT_OF_RANGE)
			ReThrowError(edata);
		/* an infinite delay (17) settles at -infinity: nothing would ever load */
		if (edata != NULL || TIMESTAMP_NOT_FINITE(c.settled))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("delay is too long: now() - delay is before the first time PostgreSQL can store"),
					 errdetail("Timestamps begin in 4714 BC; now() - %s is not one.", shown),
					 errhint("delay is how long rows need to settle: pass at most a few thousand years, such as '10 minutes' or '1 day'.")));
	}
}

/*
 * A stored pipeline's plan, built as its owner (or kept from an earlier
 * run, plancache.c), who stays current (with search_path pinned, in a
 * security-restricted operation) until the caller's hwm_unbecome; with
 * check_privileges, the owner's rights on the
 * tables are checked too, as every run does.
 */
HwmPlan *
hwm_plan_as_owner(const HwmPipeline *p, bool with_watermark, bool with_partition,
				  bool check_privileges, HwmRoleSwitch *sw)
{
	HwmPlanSpec spec;
	HwmPlan    *plan;

	hwm_spec_for(p, with_watermark, with_partition, &spec);
	hwm_become(p->owner, true, sw);
	plan = hwm_plan_cached(&spec, p->owner);
	if (with_watermark && OidIsValid(p->watermark_type) &&
		!hwm_watermark_type_kept(p->watermark_type, plan->wm.type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("watermark column \"%s\" of pipeline \"%s\" has type %s, not %s",
						p->watermark_column, p->name, format_type_be(plan->wm.type),
						format_type_be(p->watermark_type)),
				 errdetail("The column's type was changed after the pipeline was declared; its watermark%s%s%s is a value of type %s, and compared as %s new rows could sort below it and never be loaded.",
						   p->watermark ? " (" : "", p->watermark ? p->watermark : "",
						   p->watermark ? ")" : "", format_type_be(p->watermark_type),
						   format_type_be(plan->wm.type)),
				 errhint("Change the column's type back, or drop the pipeline and declare it again (with initial_watermark to start from a value of the new type).")));
	if (check_privileges)
		hwm_check_privileges(p->owner, &spec, plan);
	return plan;
}
