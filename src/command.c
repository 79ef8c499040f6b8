/*
 * command.c
 *		The SQL command of command and interval pipelines.
 *
 * A command is one SQL statement with two parameters of the watermark (or
 * time) column's type: $1 and $2, the bounds of the range a run covers.
 * When the pipeline is declared it is parsed, planned and its tables'
 * privileges checked, as the owner with the pinned search_path a run uses,
 * so that a command naming a table without its schema, or one its owner may
 * not use, is refused then rather than at its first scheduled run; so is a
 * statement that can never run inside a run (VACUUM, LISTEN, SET ROLE, a
 * temporary table...: see never_in_run).  A run
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
#include "parser/parser.h"
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

/* Why a statement can never run as a pipeline's command, and the way out */
typedef struct NeverInRun
{
	const char *what;			/* the statement, as the message names it */
	const char *why;			/* errdetail */
	const char *hint;			/* errhint */
} NeverInRun;

static const char *const in_block =
"A run executes the command inside its own transaction, and this statement cannot run inside a transaction block.";
static const char *const restricted =
"A run executes the command as the pipeline's owner in a security-restricted operation, which forbids this statement; it would also change the session, not the data.";

/* Is this range variable a temporary relation's (TEMP, or in pg_temp)? */
static bool
is_temp(const RangeVar *rv)
{
	return rv != NULL && (rv->relpersistence == RELPERSISTENCE_TEMP ||
						  (rv->schemaname && strcmp(rv->schemaname, "pg_temp") == 0));
}

/* Does a REINDEX name CONCURRENTLY among its options? */
static bool
has_option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
		if (strcmp(lfirst_node(DefElem, lc)->defname, name) == 0)
			return true;
	return false;
}

/*
 * never_in_run for the statements that cannot run inside a transaction
 * block (n->why is already in_block); false for every other statement.
 */
static bool
never_in_block(Node *stmt, NeverInRun *n)
{
	switch (nodeTag(stmt))
	{
		case T_VacuumStmt:
			if (!((VacuumStmt *) stmt)->is_vacuumcmd)
				return false;	/* ANALYZE runs in a transaction block */
			n->what = "VACUUM";
			n->hint = "Leave VACUUM to autovacuum, or run it from a job of its own outside hwm.";
			return true;
		case T_CreatedbStmt:
			n->what = "CREATE DATABASE";
			return true;
		case T_DropdbStmt:
			n->what = "DROP DATABASE";
			return true;
		case T_CreateTableSpaceStmt:
			n->what = "CREATE TABLESPACE";
			return true;
		case T_DropTableSpaceStmt:
			n->what = "DROP TABLESPACE";
			return true;
		case T_AlterSystemStmt:
			n->what = "ALTER SYSTEM";
			return true;
		case T_IndexStmt:
			if (!((IndexStmt *) stmt)->concurrent)
				return false;
			n->what = "CREATE INDEX CONCURRENTLY";
			n->hint = "Create the index without CONCURRENTLY, or outside hwm.";
			return true;
		case T_DropStmt:
			if (!((DropStmt *) stmt)->concurrent)
				return false;
			n->what = "DROP INDEX CONCURRENTLY";
			n->hint = "Drop the index without CONCURRENTLY, or outside hwm.";
			return true;
		case T_ReindexStmt:
			if (!has_option(((ReindexStmt *) stmt)->params, "concurrently") &&
				((ReindexStmt *) stmt)->kind != REINDEX_OBJECT_SYSTEM &&
				((ReindexStmt *) stmt)->kind != REINDEX_OBJECT_DATABASE)
				return false;
			n->what = "REINDEX CONCURRENTLY, SYSTEM or DATABASE";
			return true;
		case T_ClusterStmt:
			if (((ClusterStmt *) stmt)->relation != NULL)
				return false;
			n->what = "CLUSTER without a table";
			n->hint = "Name the table to cluster, or run CLUSTER outside hwm.";
			return true;
		default:
			return false;
	}
}

/*
 * never_in_run for the statements a security-restricted operation forbids
 * (a run executes the command as the owner in one); false for every other
 * statement.
 */
static bool
never_restricted(Node *stmt, NeverInRun *n)
{
	switch (nodeTag(stmt))
	{
		case T_ListenStmt:
		case T_UnlistenStmt:
			n->what = IsA(stmt, ListenStmt) ? "LISTEN" : "UNLISTEN";
			n->why = restricted;
			n->hint = "Listen in the application's own session; a command may NOTIFY.";
			return true;
		case T_DiscardStmt:
			n->what = "DISCARD";
			n->why = restricted;
			n->hint = "Remove it: a scheduled run starts from a reset session, and a run by hand must leave the caller's session as it was.";
			return true;
		case T_VariableSetStmt:
			{
				const char *name = ((VariableSetStmt *) stmt)->name;

				if (name == NULL || (strcmp(name, "role") != 0 &&
									 strcmp(name, "session_authorization") != 0))
					return false;
				n->what = strcmp(name, "role") == 0 ? "SET ROLE" : "SET SESSION AUTHORIZATION";
				n->why = restricted;
				n->hint = "Grant the pipeline's owner what the command needs, or declare the pipeline as the role the command should run as.";
				return true;
			}
		case T_DeclareCursorStmt:
			if ((((DeclareCursorStmt *) stmt)->options & CURSOR_OPT_HOLD) == 0)
				return false;
			n->what = "DECLARE ... WITH HOLD";
			n->why = restricted;
			n->hint = "A cursor WITH HOLD outlives the run's transaction: declare it without WITH HOLD, or use a query.";
			return true;
		case T_CreateStmt:
		case T_CreateTableAsStmt:
		case T_ViewStmt:
		case T_CreateSeqStmt:
			if (!is_temp(IsA(stmt, CreateStmt) ? ((CreateStmt *) stmt)->relation :
						 IsA(stmt, CreateTableAsStmt) ? ((CreateTableAsStmt *) stmt)->into->rel :
						 IsA(stmt, ViewStmt) ? ((ViewStmt *) stmt)->view :
						 ((CreateSeqStmt *) stmt)->sequence))
				return false;
			n->what = "CREATE TEMP TABLE, VIEW or SEQUENCE";
			n->why = restricted;
			n->hint = "Hold intermediate rows in a WITH query, or in an ordinary table the command empties.";
			return true;
		default:
			return false;
	}
}

/*
 * never_in_run for the statements that act on the server or the session
 * rather than the data, or need a client (CHECKPOINT, LOAD, COPY FROM STDIN
 * or TO STDOUT); false for every other statement.
 */
static bool
never_elsewhere(Node *stmt, NeverInRun *n)
{
	switch (nodeTag(stmt))
	{
		case T_CheckPointStmt:
			n->what = "CHECKPOINT";
			n->why = "A checkpoint is work of the whole server, not of a load, and needs rights a pipeline's owner should not hold.";
			n->hint = "Leave checkpoints to the server (checkpoint_timeout, max_wal_size).";
			return true;
		case T_LoadStmt:
			n->what = "LOAD";
			n->why = "LOAD changes the session that runs the command, not the data, and a scheduled run's session ends with its queue.";
			n->hint = "Load the library through shared_preload_libraries or session_preload_libraries; a function in it loads it when first called.";
			return true;
		case T_CopyStmt:
			if (((CopyStmt *) stmt)->filename != NULL)
				return false;
			n->what = "COPY FROM STDIN or TO STDOUT";
			n->why = "A run has no client to send rows to or read them from.";
			n->hint = "Use INSERT ... SELECT, or COPY to or from a file the server can read.";
			return true;
		default:
			return false;
	}
}

/*
 * Statements that can never run inside a run (parsed, not yet analysed):
 * those that cannot run in a transaction block, those a security-restricted
 * operation forbids (a run executes the command as the owner in one), and
 * those that need a client; false for everything else.  Each statement type
 * is handled by one of the three helpers.
 */
static bool
never_in_run(Node *stmt, NeverInRun *n)
{
	n->why = in_block;
	n->hint = "Run it on its own, outside hwm.";
	return never_in_block(stmt, n) || never_restricted(stmt, n) ||
		never_elsewhere(stmt, n);
}

/*
 * Refuse, by their parse trees, the statements a run can never execute
 * (see never_in_run), naming the statement.  The command is parsed again
 * later, with its parameters, to plan it.
 */
static void
check_never_in_run(const char *command)
{
	List	   *raw = raw_parser(command, RAW_PARSE_DEFAULT);
	ListCell   *lc;

	foreach(lc, raw)
	{
		Node	   *stmt = lfirst_node(RawStmt, lc)->stmt;
		NeverInRun n;

		if (IsA(stmt, TransactionStmt))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
					 errmsg("the command of a pipeline cannot control transactions"),
					 errdetail("A run executes the command inside its own transaction, which also stores the watermark."),
					 errhint("Remove BEGIN, COMMIT, ROLLBACK or SAVEPOINT from the command.")));
		if (never_in_run(stmt, &n))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the command of a pipeline cannot be %s", n.what),
					 errdetail("%s", n.why),
					 errhint("%s", n.hint)));
	}
}

/* What the executor will check on every run, checked now */
static void
check_statement(const PlannedStmt *stmt)
{
	if (stmt->commandType == CMD_UTILITY)
		return;
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
	/* parsed again, once SPI has reported any syntax error where it is */
	check_never_in_run(command);
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
