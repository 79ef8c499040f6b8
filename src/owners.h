/*
 * owners.h
 *		DROP ROLE, REASSIGN OWNED and DROP OWNED applied to the pipelines a
 *		role owns (owners.c).
 */
#ifndef HWM_OWNERS_H
#define HWM_OWNERS_H

/* called by _PG_init: the ProcessUtility hook */
extern void hwm_owners_init(void);

#endif							/* HWM_OWNERS_H */
