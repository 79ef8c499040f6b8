/*
 * compat.h
 *		Differences between the PostgreSQL major versions hwm builds against
 *		(15, 17 and 18), kept in one place but for two: a privilege check
 *		each in command.c (ExecCheckPermissions, 16) and wakeup.c
 *		(object_ownercheck, 16) is written with its own #if.
 *
 * The code is written against the newest server API; this header supplies
 * it on older servers, with a macro or a small inline function each.  Each
 * entry names the version that changed the API.  Where a newer server no
 * longer needs a call at all, the call stays in the code and is a no-op
 * here for the newer server (RelationCloseSmgrByOid).
 *
 * Include it after postgres.h (the .c files that need it include it after
 * their module headers).  It includes the server headers
 * that declare what it wraps first, so that a wrapper macro is defined only
 * after the prototype it would otherwise rewrite.
 *
 * Not a compile-time difference, but one to keep in mind in swap.c and
 * exchange.c: pg_class gained relallfrozen in 18, and PostgreSQL's own
 * storage swap (cluster.c, swap_relation_files) trades it with relpages,
 * reltuples and relallvisible; see HWM_SWAP_RELALLFROZEN.
 */
#ifndef HWM_COMPAT_H
#define HWM_COMPAT_H

#include "access/attmap.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#if PG_VERSION_NUM < 150000
#error "hwm needs PostgreSQL 15 or newer"
#endif

/*
 * 16: ownership and privilege checks take the catalog of the object
 * (object_ownercheck, object_aclcheck) instead of one function per catalog.
 * hwm checks tables, schemas and (for schedules) databases.
 */
#if PG_VERSION_NUM < 160000
static inline bool
hwm_compat_object_ownercheck(Oid classid, Oid objectid, Oid roleid)
{
	if (classid == RelationRelationId)
		return pg_class_ownercheck(objectid, roleid);
	if (classid == NamespaceRelationId)
		return pg_namespace_ownercheck(objectid, roleid);
	elog(ERROR, "hwm compat: object_ownercheck for catalog %u", classid);
	return false;				/* keep the compiler quiet */
}

static inline AclResult
hwm_compat_object_aclcheck(Oid classid, Oid objectid, Oid roleid, AclMode mode)
{
	if (classid == NamespaceRelationId)
		return pg_namespace_aclcheck(objectid, roleid, mode);
	if (classid == RelationRelationId)
		return pg_class_aclcheck(objectid, roleid, mode);
	if (classid == DatabaseRelationId)
		return pg_database_aclcheck(objectid, roleid, mode);
	elog(ERROR, "hwm compat: object_aclcheck for catalog %u", classid);
	return ACLCHECK_NO_PRIV;	/* keep the compiler quiet */
}

#define object_ownercheck(classid, objectid, roleid) \
	hwm_compat_object_ownercheck((classid), (objectid), (roleid))
#define object_aclcheck(classid, objectid, roleid, mode) \
	hwm_compat_object_aclcheck((classid), (objectid), (roleid), (mode))
#endif

/*
 * 16: RelFileNode became RelFileLocator, and the relcache's bookkeeping of
 * storage created in this transaction was renamed with it.
 */
#if PG_VERSION_NUM < 160000
#define rd_newRelfilelocatorSubid rd_newRelfilenodeSubid
#define rd_firstRelfilelocatorSubid rd_firstRelfilenodeSubid
#define RelationAssumeNewRelfilelocator(rel) RelationAssumeNewRelfilenode(rel)
#endif

/*
 * 16: build_attrmap_by_name gained missing_ok (false: every column of the
 * output must be found, which is what 15 always did).
 */
#if PG_VERSION_NUM < 160000
#define build_attrmap_by_name(indesc, outdesc, missing_ok) \
	(AssertMacro(!(missing_ok)), build_attrmap_by_name((indesc), (outdesc)))
#endif

/*
 * 16: DefineIndex gained total_parts (after parentConstraintId), the number
 * of partitions for progress reporting; -1 when not known.
 */
#if PG_VERSION_NUM < 160000
#define DefineIndex(relid, stmt, indexrelid, parentindexid, parentconstrid, total_parts, \
					is_alter_table, check_rights, check_not_in_use, skip_build, quiet) \
	DefineIndex((relid), (stmt), (indexrelid), (parentindexid), (parentconstrid), \
				(is_alter_table), (check_rights), (check_not_in_use), (skip_build), (quiet))
#endif

/*
 * 17: BackendId became ProcNumber (vxid.backendId is vxid.procNumber, and
 * BackendIdGetProc is ProcNumberGetProc).
 */
#if PG_VERSION_NUM < 170000
typedef BackendId ProcNumber;
#define INVALID_PROC_NUMBER InvalidBackendId
#define ProcNumberGetProc(n) BackendIdGetProc(n)
#define procNumber backendId
#endif

/*
 * 17: PGPROC's lxid moved into PGPROC.vxid (with the proc number).
 */
#if PG_VERSION_NUM >= 170000
#define hwm_proc_lxid(proc) ((proc)->vxid.lxid)
#else
#define hwm_proc_lxid(proc) ((proc)->lxid)
#endif

/*
 * 17: pgstat_fetch_stat_local_beentry (by index into the local snapshot of
 * backend statuses) was renamed pgstat_get_local_beentry_by_index.
 */
#if PG_VERSION_NUM < 170000
#define pgstat_get_local_beentry_by_index(idx) pgstat_fetch_stat_local_beentry(idx)
#endif

/*
 * 17: intervals can be infinite ('infinity', '-infinity'); before, none is.
 */
#if PG_VERSION_NUM < 170000
#define INTERVAL_NOT_FINITE(i) ((void) (i), false)
#endif

/*
 * 17: RelationCloseSmgrByOid is gone.  SMgrRelations now live until the end
 * of the transaction and a relcache rebuild drops its smgr link itself, so
 * PostgreSQL's own swap_relation_files no longer closes them; neither does
 * hwm's swap there.
 */
#if PG_VERSION_NUM >= 170000
#define RelationCloseSmgrByOid(relid) ((void) (relid))
#endif

/*
 * 18: MAX_BACKENDS moved from postmaster/postmaster.h to
 * storage/procnumber.h.
 */
#if PG_VERSION_NUM >= 180000
#include "storage/procnumber.h"
#else
#include "postmaster/postmaster.h"
#endif

/*
 * 18: RelationGetPrimaryKeyIndex gained deferrable_ok.  15 and 17 never
 * return a deferrable primary key, which is deferrable_ok = false.
 */
#if PG_VERSION_NUM < 180000
#define RelationGetPrimaryKeyIndex(rel, deferrable_ok) \
	(AssertMacro(!(deferrable_ok)), RelationGetPrimaryKeyIndex(rel))
#endif

/*
 * 18: pg_class.relallfrozen (pages all-frozen in the visibility map), a size
 * statistic like relallvisible: it trades places with the storage.
 */
#if PG_VERSION_NUM >= 180000
#define HWM_SWAP_RELALLFROZEN(f1, f2) \
	do { int32 tmp_ = (f1)->relallfrozen; (f1)->relallfrozen = (f2)->relallfrozen; (f2)->relallfrozen = tmp_; } while (0)
#define HWM_SET_RELALLFROZEN(form, value) ((form)->relallfrozen = (value))
#else
#define HWM_SWAP_RELALLFROZEN(f1, f2) ((void) 0)
#define HWM_SET_RELALLFROZEN(form, value) ((void) 0)
#endif

/*
 * 18: ExecutorRun lost execute_once (a plan run through ExecutorRun is
 * run once; bulk.c's is).
 */
#if PG_VERSION_NUM < 180000
#define ExecutorRun(queryDesc, direction, count) \
	ExecutorRun((queryDesc), (direction), (count), true)
#endif

#endif							/* HWM_COMPAT_H */
