/*
 * command.c
 *		The SQL command of command and interval pipelines.
 *
 * A command is one SQL statement with two parameters of the watermark (or
 * time) column's type: $1 and $2, the bounds of the range a run covers.
 * When the pipeline is declared it is parsed, planned and its tables'
 * privileges checked, as the owner with the pinned search_path a run uses,
 * so that a command naming a table without its schema, or one its owner may
 * not use, is refused then rather than at its first scheduled run.  A run
 * executes it once over its range, in the run's transaction: if it fails,
 * the run fails and the watermark stays where it was.
 *
 * The caller has called SPI_connect() and switched to the pipeline's owner
 * (hwm_become); this file switches nothing.
 */
#include "postgres.h"

#include "command.h"
#include "util.h"

#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"

/* errcontext of everything the command raises */
typedef struct CommandContext
{
	const char *pipeline;
	bool		checking;
} CommandContext;

static void
command_callback(void *arg)
{
	CommandContext *c = (CommandContext *) arg;

	if (c->checking)
		errcontext("checking the command of pipeline \"%s\" as its owner, with search_path pg_catalog, pg_temp",
				   c->pipeline);
	else
		errcontext("command of pipeline \"%s\"", c->pipeline);
}

/* A command that is a transaction statement cannot run inside a run */
static void
check_statement(const PlannedStmt *stmt)
{
	if (stmt->commandType == CMD_UTILITY && IsA(stmt->utilityStmt, TransactionStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("the command of a pipeline cannot control transactions"),
				 errdetail("A run executes the command inside its own transaction, which also stores the watermark."),
				 errhint("Remove BEGIN, COMMIT, ROLLBACK or SAVEPOINT from the command.")));
	if (stmt->commandType == CMD_UTILITY)
		return;

	/* what the executor will check on every run, checked now */
#if PG_VERSION_NUM >= 160000
	(void) ExecCheckPermissions(stmt->rtable, stmt->permInfos, true);
#else
	(void) ExecCheckRTPerms(stmt->rtable, true);
#endif
}

/*
 * Check a command when its pipeline is declared: not empty, one statement,
 * it parses and plans with $1 and $2 of the given type, and the current
 * role (the owner) has the privileges its tables need.
 */
void
hwm_command_check(const char *pipeline, const char *command, Oid type)
{
	Oid			argtypes[2] = {type, type};
	CommandContext ctx = {pipeline, true};
	ErrorContextCallback cb;
	SPIPlanPtr	plan;
	CachedPlan *cplan;
	ListCell   *lc;

	if (command[strspn(command, " \t\r\n;")] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("command must not be empty"),
				 errhint("Pass one SQL statement using $1 and $2, for example an INSERT ... SELECT ... WHERE t > $1 AND t <= $2.")));

	cb.callback = command_callback;
	cb.arg = &ctx;
	cb.previous = error_context_stack;
	error_context_stack = &cb;

	plan = SPI_prepare(command, 2, argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (list_length(SPI_plan_get_plan_sources(plan)) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the command of a pipeline must be exactly one SQL statement"),
				 errdetail("The command has %d statements.",
						   list_length(SPI_plan_get_plan_sources(plan))),
				 errhint("Combine them into one statement (a WITH query can hold several), or call a function that runs them.")));
	cplan = SPI_plan_get_cached_plan(plan);
	if (cplan == NULL)
		elog(ERROR, "could not plan the command of pipeline \"%s\"", pipeline);
	foreach(lc, cplan->stmt_list)
		check_statement(lfirst_node(PlannedStmt, lc));
	ReleaseCachedPlan(cplan, NULL);
	SPI_freeplan(plan);

	error_context_stack = cb.previous;
}

/*
 * Run the command over one range: $1 = lo (NULL with lo_null), $2 = hi.
 * Returns the rows it processed.
 */
int64
hwm_command_exec(const char *pipeline, const char *command, Oid type,
				 Datum lo, bool lo_null, Datum hi)
{
	Oid			argtypes[2] = {type, type};
	Datum		values[2] = {lo, hi};
	char		nulls[2] = {lo_null ? 'n' : ' ', ' '};
	CommandContext ctx = {pipeline, false};
	ErrorContextCallback cb;
	int			rc;

	cb.callback = command_callback;
	cb.arg = &ctx;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	rc = hwm_spi_run(command, 2, argtypes, values, nulls);
	if (rc < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the command of pipeline \"%s\" failed: %s",
						pipeline, SPI_result_code_string(rc))));
	error_context_stack = cb.previous;
	return (int64) SPI_processed;
}
