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
	MarkGUCPrefixReserved("hwm");
}
