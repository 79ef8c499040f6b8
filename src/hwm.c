/*
 * hwm.c
 *		Module entry point.
 *
 * hwm works without shared_preload_libraries: every SQL function loads the
 * module on first use.  Preloading it reserves the hwm.* settings prefix
 * now, and is where the background scheduler will be registered.
 */
#include "hwm.h"

#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("hwm.wait_timeout",
							"How long a run waits for writers of its source before holding the watermark back.",
							"A run waits at most this long for transactions that may still commit rows below the new watermark; "
							"if any is still running then, the run loads what it sees and keeps the watermark where it is safe.",
							&hwm_wait_timeout,
							1000, 0, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.start_margin",
							"How far behind the current time the watermark of a time-typed column stays at least.",
							"Covers a transaction that has taken its start time (now()) but is not yet visible to other sessions.",
							&hwm_start_margin,
							1000, 0, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("hwm.allow_superuser_pipelines",
							 "Allows pipelines owned by superusers.",
							 "A pipeline runs with its owner's rights; by default hwm refuses to create or run a pipeline whose owner is a superuser.",
							 &hwm_allow_superuser_pipelines,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("hwm.partition_exchange",
							 "Exchange whole partitions instead of overwriting them row by row.",
							 "When an overwrite or backfill range covers whole partitions of a declaratively partitioned target, "
							 "build their new contents aside and exchange them in, leaving no dead tuples; off: always the row-by-row diff.",
							 &hwm_partition_exchange,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("hwm.exchange_lock_timeout",
							"How long a partition exchange waits for its partition's lock.",
							"The exchange needs an ACCESS EXCLUSIVE lock on the partition for a moment; "
							"when it is not granted in this time, the partition is overwritten row by row instead.",
							&hwm_exchange_lock_timeout,
							1000, 1, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("hwm");
}
