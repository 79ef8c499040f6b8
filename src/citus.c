/*
 * citus.c
 *		Detect Citus tables.  Citus keeps a row per table it manages in its
 *		catalog pg_catalog.pg_dist_partition; a table there has its rows on
 *		the shards (or, for a reference table, on every node), and the
 *		relation the coordinator shows is a shell: trading its storage
 *		(exchange, swap) would change nothing that queries read.
 *
 * The lookup reads the catalog table directly (found by name, so hwm does
 * not link with Citus and works without it): no SPI, cheap enough for every
 * run, and safe inside a subtransaction or under an exclusive lock.  A
 * helper: it calls no other module of hwm.
 *
 * It also lists the transactions in flight on the other nodes, for the safe
 * watermark (watermark.c), through Citus's own functions.
 */
#include "postgres.h"

#include "citus.h"
#include "util.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "access/xact.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "utils/syscache.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "catalog/pg_authid.h"
#include "nodes/primnodes.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* pg_dist_partition, or InvalidOid when Citus is not installed here */
static Oid
dist_partition_relid(void)
{
	if (!OidIsValid(get_extension_oid("citus", true)))
		return InvalidOid;
	return get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
}

static bool
citus_present(void)
{
	return OidIsValid(dist_partition_relid());
}

/* The distribution column of a partkey (a Var's node string), or 0 */
static AttrNumber
partkey_column(const char *partkey)
{
	Node	   *n = stringToNode(partkey);

	return IsA(n, Var) ? ((Var *) n)->varattno : InvalidAttrNumber;
}

/* Fill t from relid's row of pg_dist_partition (dist), if it has one */
static void
read_row(Oid dist, Oid relid, HwmCitusTable *t)
{
	Relation	rel = table_open(dist, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	a_rel = attnameAttNum(rel, "logicalrelid", false);
	AttrNumber	a_key = attnameAttNum(rel, "partkey", false);
	AttrNumber	a_coloc = attnameAttNum(rel, "colocationid", false);
	AttrNumber	a_repmodel = attnameAttNum(rel, "repmodel", false);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (a_rel <= 0 || a_key <= 0 || a_coloc <= 0 || a_repmodel <= 0)
		elog(ERROR, "pg_dist_partition of this Citus version is not understood");
	ScanKeyInit(&key, a_rel, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		null_key,
					null;
		Datum		partkey = heap_getattr(tup, a_key, desc, &null_key);
		char		repmodel = DatumGetChar(heap_getattr(tup, a_repmodel, desc, &null));
		Datum		coloc = heap_getattr(tup, a_coloc, desc, &null);

		t->colocation = null ? 0 : DatumGetInt32(coloc);
		if (!null_key)
		{
			t->kind = HWM_CITUS_DISTRIBUTED;
			t->distcol = partkey_column(TextDatumGetCString(partkey));
		}
		else if (repmodel == 't')
			t->kind = HWM_CITUS_REFERENCE;
		else if (t->colocation != 0)
			t->kind = HWM_CITUS_SINGLE_SHARD;
		else
			t->kind = HWM_CITUS_LOCAL;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

void
hwm_citus_table(Oid relid, HwmCitusTable *t)
{
	Oid			dist = dist_partition_relid();

	memset(t, 0, sizeof(*t));
	t->kind = HWM_CITUS_NONE;
	if (OidIsValid(dist))
		read_row(dist, relid, t);
}

bool
hwm_citus_is_table(Oid relid)
{
	HwmCitusTable t;

	hwm_citus_table(relid, &t);
	return t.kind != HWM_CITUS_NONE;
}

/*
 * The table that Citus is converting schema.relname into, in this
 * transaction, or InvalidOid.  alter_distributed_table, undistribute_table
 * and their kin build the new table under the name <relname>_<hash of
 * relname>, drop the old one, then rename the new one: a pipeline can
 * follow it through the drop.  Only a table of exactly that name created
 * in this very transaction counts (a long name that Citus truncates and
 * hashes does not: the pipeline is then dropped with its table).
 */
Oid
hwm_citus_successor(const char *nspname, const char *relname)
{
	Oid			nsp = get_namespace_oid(nspname, true);
	uint32		h = DatumGetUInt32(hash_any((const unsigned char *) relname, strlen(relname)));
	char	   *suffix = psprintf("_" UINT64_FORMAT, (uint64) h);
	char	   *name;
	Oid			relid;
	HeapTuple	tup;
	bool		created_now;

	if (!OidIsValid(nsp) || !citus_present() ||
		strlen(relname) >= NAMEDATALEN - strlen(suffix))
		return InvalidOid;
	name = psprintf("%s%s", relname, suffix);
	relid = get_relname_relid(name, nsp);
	if (!OidIsValid(relid))
		return InvalidOid;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	created_now = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data));
	ReleaseSysCache(tup);
	return created_now ? relid : InvalidOid;
}

/* A shard's name ends in _<shardid>: most names are ruled out here */
static bool
shard_like_name(const char *name)
{
	const char *u = name ? strrchr(name, '_') : NULL;

	return u != NULL && u[1] != '\0' && strspn(u + 1, "0123456789") == strlen(u + 1);
}

/*
 * Is relid a shard of a Citus table (named <table>_<shardid> next to it)?
 * Then *logical is that table.  A pipeline can point at one when Citus gave
 * its table's identity to a new shell (citus_add_local_table_to_metadata
 * renames the table into its shard).
 */
bool
hwm_citus_shard_of(Oid relid, Oid *logical)
{
	Oid			dist = dist_partition_relid();
	Oid			shardrel;
	Relation	rel;
	AttrNumber	a_rel,
				a_id;
	SysScanDesc scan;
	HeapTuple	tup;
	const char *name = get_rel_name(relid);
	Oid			nsp = get_rel_namespace(relid);

	*logical = InvalidOid;
	if (!shard_like_name(name) || !OidIsValid(dist) ||
		!OidIsValid(shardrel = get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE)))
		return false;
	rel = table_open(shardrel, AccessShareLock);
	a_rel = attnameAttNum(rel, "logicalrelid", false);
	a_id = attnameAttNum(rel, "shardid", false);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (!OidIsValid(*logical) && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		n1,
					n2;
		Oid			owner = DatumGetObjectId(heap_getattr(tup, a_rel, RelationGetDescr(rel), &n1));
		int64		id = DatumGetInt64(heap_getattr(tup, a_id, RelationGetDescr(rel), &n2));
		const char *lname;

		if (n1 || n2 || owner == relid || get_rel_namespace(owner) != nsp ||
			(lname = get_rel_name(owner)) == NULL)
			continue;
		if (strcmp(psprintf("%s_" INT64_FORMAT, lname, id), name) == 0)
			*logical = owner;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return OidIsValid(*logical);
}

/*
 * Transactions that a session on another node started (Citus lets any node
 * run distributed writes), in one round trip to every node: on each node,
 * the client backends of this database whose global process id names
 * another node than this one as the initiator, so that the backends running
 * this node's own statements are left out (this node's transactions are the
 * local check's; one without a global process id counts), and its prepared
 * transactions (those of other nodes count: they have no start time).  A
 * node that does not answer counts as one with a prepared transaction.
 * Each node answers "count|writers|unknown start|oldest start (UTC)|prepared".
 */
#define NODE_XACTS_SQL \
	"SELECT pg_catalog.concat_ws('|', pg_catalog.count(*), pg_catalog.count(a.backend_xid)," \
	" COALESCE(pg_catalog.bool_or(a.xact_start IS NULL), false)," \
	" COALESCE(pg_catalog.to_char(pg_catalog.min(a.xact_start) AT TIME ZONE 'UTC'," \
	"                             'YYYY-MM-DD\"T\"HH24:MI:SS.US'), '')," \
	" (SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xacts AS p" \
	"   WHERE p.database OPERATOR(pg_catalog.=) pg_catalog.current_database()))" \
	" FROM pg_catalog.pg_stat_activity AS a" \
	" LEFT JOIN pg_catalog.get_all_active_transactions() AS t ON t.process_id OPERATOR(pg_catalog.=) a.pid" \
	" WHERE a.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()" \
	" AND a.backend_type OPERATOR(pg_catalog.=) 'client backend'" \
	" AND (a.xact_start IS NOT NULL OR a.backend_xid IS NOT NULL)" \
	" AND (pg_catalog.citus_nodeid_for_gpid(t.global_pid) OPERATOR(pg_catalog.<>) %s" \
	"      OR pg_catalog.citus_nodeid_for_gpid(t.global_pid) IS NULL)"
#define REMOTE_XACTS_SQL \
	"WITH me AS (SELECT pg_catalog.citus_nodeid_for_gpid(pg_catalog.citus_backend_gpid()) AS id)," \
	" w AS (SELECT r.nodeid, r.success, pg_catalog.string_to_array(r.result, '|') AS f" \
	"       FROM me, pg_catalog.run_command_on_all_nodes(pg_catalog.format($hwm$" NODE_XACTS_SQL "$hwm$, me.id)) AS r)" \
	" SELECT COALESCE(pg_catalog.sum(CASE WHEN w.success THEN w.f[1]::pg_catalog.int8 END), 0)::pg_catalog.int8," \
	" COALESCE(pg_catalog.sum(CASE WHEN w.success THEN w.f[2]::pg_catalog.int8 END), 0)::pg_catalog.int8," \
	" COALESCE(pg_catalog.bool_or(CASE WHEN w.success THEN w.f[3]::pg_catalog.bool END), false)," \
	" pg_catalog.min(CASE WHEN w.success AND w.f[4] OPERATOR(pg_catalog.<>) ''" \
	"                     THEN w.f[4]::pg_catalog.timestamp END) AT TIME ZONE 'UTC'," \
	" (COALESCE(pg_catalog.sum(CASE WHEN w.success AND w.nodeid OPERATOR(pg_catalog.<>) me.id" \
	"                               THEN w.f[5]::pg_catalog.int8 END), 0)" \
	"  OPERATOR(pg_catalog.+) pg_catalog.count(*) FILTER (WHERE NOT w.success))::pg_catalog.int8" \
	" FROM w, me"

/* The first row's column i as a Datum (false when NULL) */
static bool
spi_col(int i, Datum *value)
{
	bool		isnull;

	*value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i, &isnull);
	return !isnull;
}

/* The query of hwm_citus_remote_xacts */
static void
remote_xacts(HwmCitusRemote *r)
{
	Datum		v;

	if (SPI_execute(REMOTE_XACTS_SQL, true, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the transactions in flight on the Citus nodes");
	r->count = spi_col(1, &v) ? DatumGetInt64(v) : 0;
	r->writers = spi_col(2, &v) ? DatumGetInt64(v) : 0;
	r->unknown_start = spi_col(3, &v) && DatumGetBool(v);
	r->oldest = spi_col(4, &v) ? DatumGetTimestampTz(v) : 0;
	r->prepared = spi_col(5, &v) ? DatumGetInt64(v) : 0;
}

/*
 * The queries run as the bootstrap superuser: pg_stat_activity hides other
 * roles' transaction start and xid from a pipeline's owner, and a writer
 * that hwm cannot see would lose its row.  Nothing of anyone else's may run
 * with those rights: they are fixed statements with every function and
 * operator qualified (IS DISTINCT FROM and NULLIF, which look "=" up by the
 * search_path, are not used), sent to each node's sessions as they are,
 * whatever search_path the database gives those, and search_path is pinned
 * again here, since the owner's code that ran in this transaction (a
 * domain's check, a trigger) may have set it since the run pinned it.
 */
void
hwm_citus_remote_xacts(HwmCitusRemote *r)
{
	HwmRoleSwitch sw;

	memset(r, 0, sizeof(*r));
	hwm_become(BOOTSTRAP_SUPERUSERID, false, &sw);
	PG_TRY();
	{
		remote_xacts(r);
	}
	PG_FINALLY();
	{
		hwm_unbecome(&sw);
	}
	PG_END_TRY();
}

const char *
hwm_citus_kind_name(HwmCitusKind kind)
{
	switch (kind)
	{
		case HWM_CITUS_NONE:
			return "table outside Citus's metadata";
		case HWM_CITUS_DISTRIBUTED:
			return "Citus distributed table";
		case HWM_CITUS_SINGLE_SHARD:
			return "Citus single-shard table";
		case HWM_CITUS_REFERENCE:
			return "Citus reference table";
		case HWM_CITUS_LOCAL:
			return "Citus local table";
	}
	return "table";
}
