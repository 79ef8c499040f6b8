/*
 * storage.h
 *		Trading storage between two relations of the same layout, the way
 *		CLUSTER does (storage.c): hwm.swap trades a whole table with its
 *		staging copy, partition exchange a partition with its new contents.
 */
#ifndef HWM_STORAGE_H
#define HWM_STORAGE_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/relcache.h"

/*
 * Pair every index of rel1 with a distinct index of rel2 of the same
 * definition (a list of OIDs: rel1's index, rel2's index, ...), refusing
 * with "staging table <name2> cannot replace <name1>" when one lacks a match.
 */
extern List *hwm_storage_match_indexes(Relation rel1, Relation rel2,
									   const char *name1, const char *name2);

/*
 * Trade storage between the heaps r1 and r2 and between each index pair,
 * under ACCESS EXCLUSIVE locks the caller holds.  With row_facts, the
 * planner statistics and the fast-default missing values that describe the
 * rows trade places too.  Ends with the new catalog rows visible and the
 * TOAST tables named after their new owners.
 */
extern void hwm_storage_trade(Oid r1, Oid r2, List *index_pairs, bool row_facts);

#endif							/* HWM_STORAGE_H */
