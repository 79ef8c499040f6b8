/*
 * command.h
 *		The SQL command of command and interval pipelines: checked when the
 *		pipeline is declared, run over one range (command.c).
 */
#ifndef HWM_COMMAND_H
#define HWM_COMMAND_H

#include "postgres.h"

extern void hwm_command_check(const char *pipeline, const char *command,
							  Oid type);
extern int64 hwm_command_exec(const char *pipeline, const char *command,
							  Oid type, Datum lo, bool lo_null, Datum hi);

#endif							/* HWM_COMMAND_H */
