/*
 * privilege.c
 *		Running as another role with a pinned search_path, and checking that
 *		a pipeline's owner may still read its source and write its target.
 *
 * Everything a pipeline does to user tables runs as the pipeline's owner in
 * a security-restricted context (like REFRESH MATERIALIZED VIEW and VACUUM
 * do for the table owner), with search_path = pg_catalog, pg_temp so that no
 * object planted in another schema is ever resolved.  The statements hwm
 * builds qualify every user object anyway; the pinned path is the second
 * line of defence for what the executor resolves on its own.
 */
#include "hwm.h"

#include "access/attnum.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

/* hwm.allow_superuser_pipelines */
bool		hwm_allow_superuser_pipelines = false;

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
void
hwm_check_privileges(Oid role, const HwmPlanSpec *spec, const HwmPlan *plan)
{
	if (spec->pipeline)
		hwm_check_owner_allowed(role, spec->pipeline, false);
	require(role, spec->source, ACL_SELECT, "SELECT", plan->source_columns,
			"source table", spec->pipeline);
	require(role, spec->target, ACL_SELECT, "SELECT", plan->target_columns,
			"target table", spec->pipeline);
	require(role, spec->target, ACL_INSERT, "INSERT", NIL,
			"target table", spec->pipeline);
	if (spec->unique_key != NIL)
		require(role, spec->target, ACL_UPDATE, "UPDATE", NIL,
				"target table", spec->pipeline);
	if (plan->has_part)
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
