/*
 * privilege.h
 *		Running as a pipeline's owner with a pinned search_path, and the
 *		checks of what that owner may do (privilege.c).
 */
#ifndef HWM_PRIVILEGE_H
#define HWM_PRIVILEGE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "plan.h"

/* Saved state of hwm_become(), restored by hwm_unbecome(). */
typedef struct HwmRoleSwitch
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} HwmRoleSwitch;

/* hwm.allow_superuser_pipelines */
extern bool hwm_allow_superuser_pipelines;

extern void hwm_become(Oid role, bool restricted, HwmRoleSwitch *sw);
extern void hwm_unbecome(HwmRoleSwitch *sw);
extern void hwm_check_privileges(Oid role, const HwmPlanSpec *spec,
								 const HwmPlan *plan);
extern void hwm_check_owner_allowed(Oid owner, const char *pipeline,
									bool creating);
extern void hwm_check_pipeline_tables(const HwmPlanSpec *spec,
									  const Interval *delay);

#endif							/* HWM_PRIVILEGE_H */
