/*
 * privilege.h
 *		The checks of what a pipeline's owner may do, and a pipeline's plan
 *		built as its owner (privilege.c); the role switch itself, with its
 *		pinned search_path, is util.c's (hwm_become).
 */
#ifndef HWM_PRIVILEGE_H
#define HWM_PRIVILEGE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "pipeline.h"
#include "util.h"

/* hwm.allow_superuser_pipelines */
extern bool hwm_allow_superuser_pipelines;

extern void hwm_check_privileges(Oid role, const HwmPlanSpec *spec,
								 const HwmPlan *plan);
extern void hwm_check_owner_allowed(Oid owner, const char *pipeline,
									bool creating);
extern void hwm_check_pipeline_tables(const HwmPlanSpec *spec,
									  const Interval *delay);

/* a stored pipeline's plan, built as its owner (see privilege.c) */
struct HwmPipeline;
extern HwmPlan *hwm_plan_as_owner(const struct HwmPipeline *p, bool with_watermark,
								  bool with_partition, bool check_privileges,
								  HwmRoleSwitch *sw);

#endif							/* HWM_PRIVILEGE_H */
