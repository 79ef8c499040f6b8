/*
 * reconcile.h
 *		CALL hwm.reconcile and its schedule (reconcile.c).  What the
 *		scheduler's worker calls: the scheduled reconcile of a pipeline's
 *		whole target.
 */
#ifndef HWM_RECONCILE_H
#define HWM_RECONCILE_H

#include "postgres.h"

/*
 * The reconcile of the pipeline's whole target, batch_size keys per batch,
 * as CALL hwm.reconcile(pipeline, batch_size => batch_size) does it, in a
 * background worker's transactions: called after hwm_bgw_begin, returns in
 * an open transaction (util.c); its memory under cxt.
 */
extern void hwm_reconcile_scheduled(const char *pipeline, int batch_size, MemoryContext cxt);

#endif							/* HWM_RECONCILE_H */
