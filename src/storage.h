/* transitional */
#ifndef HWM_STORAGE_H
#define HWM_STORAGE_H
#include "postgres.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"
extern List *hwm_match_indexes(Relation tgt, Relation stg,
							   const char *tgtname, const char *stgname);
extern void hwm_swap_storage(Oid r1, Oid r2, List *index_pairs);
#endif
