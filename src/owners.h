/*
 * owners.h
 *		DROP ROLE, REASSIGN OWNED and DROP OWNED applied to the pipelines a
 *		role owns (owners.c).
 */
#ifndef HWM_OWNERS_H
#define HWM_OWNERS_H

#include "postgres.h"

#include "nodes/nodes.h"

/*
 * hwm's ProcessUtility hook (hwm.c) calls these around every utility
 * statement: before, what a DROP ROLE must read while its roles exist (an
 * opaque pointer, NULL: nothing); after, DROP ROLE refused while a role
 * dropped owns pipelines, REASSIGN OWNED and DROP OWNED applied to them.
 */
extern void *hwm_owners_before_utility(Node *stmt);
extern void hwm_owners_after_utility(Node *stmt, void *before);

#endif							/* HWM_OWNERS_H */
