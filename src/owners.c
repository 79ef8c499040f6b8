/*
 * owners.c
 *		What PostgreSQL's commands about roles do to the pipelines those
 *		roles own, in the database where the command runs: pipelines are
 *		rows of hwm.state, not objects PostgreSQL tracks, so hwm applies to
 *		them what PostgreSQL applies to a role's tables.
 *
 *	- DROP ROLE r is refused while r owns pipelines here, as PostgreSQL
 *	  refuses it while r owns a table ("some objects depend on it"), with
 *	  the way out in the hint;
 *	- REASSIGN OWNED BY r TO s makes s the owner of r's pipelines here;
 *	- DROP OWNED BY r drops r's pipelines here (with their schedules).
 *
 * Each acts only once PostgreSQL's own processing of the command has
 * succeeded, so that its checks of rights apply first: a role that may not
 * drop r gets PostgreSQL's permission error, never the names of r's
 * pipelines; DROP ROLE is then refused, which rolls the drop back.
 * PostgreSQL checks a role's objects in every database of the server
 * through pg_shdepend; hwm sees only the database
 * the command runs in, so DROP ROLE run elsewhere leaves this database's
 * pipelines of that role without an owner: the scheduler no longer runs
 * them, hwm.status says so, and a superuser drops them.  hwm.c's
 * ProcessUtility hook calls in around every utility statement; it is set
 * in every backend that loads hwm, which with shared_preload_libraries is
 * every backend.  Calls go down into catalog.c and util.c.
 */
#include "postgres.h"

#include "catalog.h"
#include "owners.h"
#include "util.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* The OIDs of the roles a statement names (those that exist), as oid[] */
static Datum
role_array(List *roles)
{
	Datum	   *oids = palloc(sizeof(Datum) * (list_length(roles) + 1));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, roles)
	{
		Oid			role = get_rolespec_oid(lfirst(lc), true);

		if (OidIsValid(role))
			oids[n++] = ObjectIdGetDatum(role);
	}
	return PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/* Does this database have hwm's catalog? */
static bool
has_pipelines_here(void)
{
	return IsTransactionState() && OidIsValid(get_extension_oid("hwm", true));
}

/*
 * Run fn with SPI and a snapshot (a utility statement may have none).
 */
static void
with_spi(void (*fn) (void *), void *arg)
{
	bool		pushed = false;

	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	SPI_connect();
	fn(arg);
	SPI_finish();
	if (pushed)
		PopActiveSnapshot();
}

/*
 * The roles a DROP ROLE names, read before PostgreSQL drops them: their
 * OIDs (as oid[]) and names, which the refusal needs once they are gone.
 */
typedef struct DroppedRoles
{
	Datum		oids;
	List	   *ids;			/* Oid, as in oids */
	List	   *names;			/* char *, in the same order */
} DroppedRoles;

static void
dropped_roles_read(DropRoleStmt *stmt, DroppedRoles *d)
{
	ListCell   *lc;

	d->oids = role_array(stmt->roles);
	d->ids = NIL;
	d->names = NIL;
	foreach(lc, stmt->roles)
	{
		Oid			role = get_rolespec_oid(lfirst(lc), true);

		if (OidIsValid(role))
		{
			d->ids = lappend_oid(d->ids, role);
			d->names = lappend(d->names, GetUserNameFromId(role, false));
		}
	}
}

/*
 * DROP ROLE, once PostgreSQL has checked the caller's right to drop the
 * roles and their objects and dropped them (in this transaction): refuse it
 * while a role dropped owns pipelines here, which rolls the drop back.
 */
static void
refuse_drop_role(void *arg)
{
	DroppedRoles *d = arg;
	const char *role = "?";
	Oid			owner;
	int64		n;
	char	   *names;
	ListCell   *lc;
	ListCell   *lc2;

	if (!hwm_state_owned_by_any(d->oids, &owner, &n, &names))
		return;
	forboth(lc, d->ids, lc2, d->names)
		if (lfirst_oid(lc) == owner)
			role = lfirst(lc2);
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("role \"%s\" cannot be dropped because some objects depend on it", role),
			 errdetail("owner of " INT64_FORMAT " hwm pipeline%s in database \"%s\": %s",
					   n, n == 1 ? "" : "s", get_database_name(MyDatabaseId),
					   hwm_clip_error(names)),
			 errhint("Run REASSIGN OWNED BY %s TO another role, or DROP OWNED BY %s, in this database (and in every other database where the role owns hwm pipelines) first.",
					 quote_identifier(role), quote_identifier(role))));
}

/* REASSIGN OWNED BY ... TO new: the pipelines go with the tables */
static void
reassign_pipelines(void *arg)
{
	ReassignOwnedStmt *stmt = arg;
	Oid			newrole = get_rolespec_oid(stmt->newrole, true);
	uint64		n;

	if (!OidIsValid(newrole))
		return;
	n = hwm_state_reassign_owners(role_array(stmt->roles), newrole);
	if (n > 0 && superuser_arg(newrole))
		ereport(WARNING,
				(errmsg("%d hwm pipeline%s now owned by superuser \"%s\", which hwm does not run",
						(int) n, n == 1 ? " is" : "s are",
						GetUserNameFromId(newrole, false)),
				 errhint("Pipelines run with their owner's rights, never a superuser's: reassign them to an ordinary role.")));
}

/* DROP OWNED BY ...: the pipelines go with the tables */
static void
drop_pipelines(void *arg)
{
	DropOwnedStmt *stmt = arg;
	uint64		n = hwm_state_delete_owned(role_array(stmt->roles));

	if (n > 0)
		ereport(NOTICE,
				(errmsg("hwm: dropped %d pipeline%s owned by the role%s dropped",
						(int) n, n == 1 ? "" : "s",
						list_length(stmt->roles) == 1 ? "" : "s")));
}

/*
 * Before a utility statement runs (hwm.c's ProcessUtility hook): a DROP
 * ROLE where hwm has pipelines reads the roles' names, before they are
 * gone; returns what hwm_owners_after_utility needs (NULL: nothing).
 */
void *
hwm_owners_before_utility(Node *stmt)
{
	DroppedRoles *dropped;

	if (!(IsA(stmt, DropRoleStmt) && has_pipelines_here()))
		return NULL;
	dropped = palloc0(sizeof(DroppedRoles));
	dropped_roles_read((DropRoleStmt *) stmt, dropped);
	return dropped;
}

/*
 * After it ran: DROP ROLE refused while a role dropped owns pipelines,
 * REASSIGN OWNED and DROP OWNED applied to the pipelines.
 */
void
hwm_owners_after_utility(Node *stmt, void *before)
{
	if (before)
		with_spi(refuse_drop_role, before);
	else if (IsA(stmt, ReassignOwnedStmt) && has_pipelines_here())
		with_spi(reassign_pipelines, stmt);
	else if (IsA(stmt, DropOwnedStmt) && has_pipelines_here())
		with_spi(drop_pipelines, stmt);
}
