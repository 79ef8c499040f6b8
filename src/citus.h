/*
 * citus.h
 *		What Citus makes of a table (citus.c): hwm's paths that would act on
 *		the coordinator's shell of a Citus table (exchange, swap) or that
 *		Citus cannot run (a recursive CTE) ask here first.
 */
#ifndef HWM_CITUS_H
#define HWM_CITUS_H

#include "postgres.h"

#include "access/attnum.h"
#include "datatype/timestamp.h"

typedef enum HwmCitusKind
{
	HWM_CITUS_NONE,				/* not a Citus table (or no Citus) */
	HWM_CITUS_DISTRIBUTED,		/* sharded on a distribution column */
	HWM_CITUS_SINGLE_SHARD,		/* distributed without a column (schema-based) */
	HWM_CITUS_REFERENCE,		/* replicated to every node */
	HWM_CITUS_LOCAL				/* on the coordinator, in Citus's metadata */
} HwmCitusKind;

/* What Citus knows of a table */
typedef struct HwmCitusTable
{
	HwmCitusKind kind;
	AttrNumber	distcol;		/* DISTRIBUTED: the distribution column */
	int32		colocation;		/* co-location group (0: none) */
} HwmCitusTable;

/* Transactions in flight that other Citus nodes started (hwm_citus_remote_xacts) */
typedef struct HwmCitusRemote
{
	int64		count;			/* in this database, started on another node */
	int64		writers;		/* ... of those, with a transaction id */
	bool		unknown_start;	/* one of them has no start time */
	TimestampTz oldest;			/* the oldest start (0: none known) */
	int64		prepared;		/* prepared transactions on the other nodes */
} HwmCitusRemote;

/* what Citus makes of relid (a partition: that of its partitioned table) */
extern void hwm_citus_table(Oid relid, HwmCitusTable *t);
/* shorthand: is relid a Citus table of any kind */
extern bool hwm_citus_is_table(Oid relid);
/* is relid a shard of a Citus table; *logical: that table */
extern bool hwm_citus_shard_of(Oid relid, Oid *logical);
/* the table Citus is converting nspname.relname into now, or InvalidOid */
extern Oid	hwm_citus_successor(const char *nspname, const char *relname);
/* the transactions in flight on the other nodes (needs SPI; Citus present) */
extern void hwm_citus_remote_xacts(HwmCitusRemote *r);
/* "distributed table", "reference table", ... for messages */
extern const char *hwm_citus_kind_name(HwmCitusKind kind);

#endif							/* HWM_CITUS_H */
