/*
 * manage.c
 *		Declaring, dropping and re-pointing pipelines: hwm.create_pipeline,
 *		hwm.drop_pipeline, hwm.set_watermark, and the sql_drop event trigger
 *		that drops a pipeline with its source or target table.
 *
 * create_pipeline validates everything a run will rely on (by building the
 * run's statements once, see pipeline.c) before it writes the catalog, so a
 * pipeline that exists can run.  create_command_pipeline and
 * create_interval_pipeline declare the pipelines that run a command instead
 * of copying into a target (command.c, interval.c) the same way.  A schedule passed to it is stored through
 * schedule.c, as hwm.schedule would.
 */
#include "postgres.h"

#include "catalog.h"
#include "citus.h"
#include "command.h"
#include "interval.h"
#include "pipeline.h"
#include "privilege.h"
#include "running.h"
#include "schedule.h"
#include "util.h"
#include "watermark.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

/*
 * The column names of a text[] argument (what: its name; example: a value
 * of it, for the hints), refusing more than one dimension, NULLs and
 * repeats.
 */
static List *
column_name_list(ArrayType *arr, const char *what, const char *example)
{
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	List	   *cols = NIL;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what),
				 errhint("Pass the columns as a flat list, for example %s => '%s'.", what, example)));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elemnulls, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		char	   *col;
		ListCell   *lc;

		if (elemnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain null elements", what),
					 errhint("Pass the columns' names, for example %s => '%s'.", what, example)));
		col = TextDatumGetCString(elems[i]);
		foreach(lc, cols)
			if (strcmp(lfirst(lc), col) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears twice in %s", col, what),
						 errhint("Name each column once.")));
		cols = lappend(cols, col);
	}
	return cols;
}

/* unique_key: its columns, at least one */
static List *
key_list(ArrayType *arr)
{
	List	   *keys = column_name_list(arr, "unique_key", "{order_id,line}");

	if (keys == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unique_key must name at least one column"),
				 errhint("Pass the business key of the target, for example unique_key => '{id}'.")));
	return keys;
}

/* hwm.create_pipeline's arguments, checked, and what it derives from them */
typedef struct CreateArgs
{
	char	   *name;
	Oid			owner;			/* the caller */
	HwmPlanSpec spec;
	int32		lookback;
	Interval   *schedule;		/* NULL: not scheduled */
	Interval   *delay;			/* NULL: none */
	int64		batch_size;		/* 0: no cap */
	Oid			watermark_type; /* from the plan */
	char	   *watermark;		/* initial_watermark, canonical; NULL: none */
	Datum		unique_key;		/* text[] */
	Datum		watermark_column;	/* name */
	Datum		partition_column;	/* name; 0: none */
	/* command and interval pipelines */
	char	   *command;		/* NULL: a copy pipeline */
	Interval   *time_interval;	/* NULL: not an interval pipeline */
	char	   *anchor;			/* canonical */
	bool		batched;
	bool		skip_empty;
	char	   *caveat;			/* what the bound cannot make safe; NULL: none */
	Datum		history_columns;	/* text[]; (Datum) 0: the default */
} CreateArgs;

/*
 * Whether argument argno was given: a catalog older than the library
 * declares the function with fewer arguments (delete_column, issue 32),
 * which are read before its first statement on the catalog refuses it.
 */
#define ARG_GIVEN(argno) (PG_NARGS() > (argno) && !PG_ARGISNULL(argno))

/* create_pipeline's delete_column and a history's arguments (issue 40) */
#define CREATE_DELETE_COLUMN 11
#define CREATE_HISTORY 12
#define CREATE_HISTORY_COLUMNS 13
#define CREATE_VALID_FROM 14
#define CREATE_VALID_TO 15

/*
 * history, history_columns, valid_from_column, valid_to_column: a history
 * pipeline (issue 40), whose bounds default to valid_from and valid_to;
 * the others without history are refused.
 */
static void
read_history_args(FunctionCallInfo fcinfo, CreateArgs *a)
{
	bool		history = ARG_GIVEN(CREATE_HISTORY) && PG_GETARG_BOOL(CREATE_HISTORY);

	if (!history)
	{
		const char *given = ARG_GIVEN(CREATE_HISTORY_COLUMNS) ? "history_columns" :
			ARG_GIVEN(CREATE_VALID_FROM) ? "valid_from_column" :
			ARG_GIVEN(CREATE_VALID_TO) ? "valid_to_column" : NULL;

		if (given)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s needs history => true", given),
					 errhint("Pass history => true to keep every version of a row, or leave %s out.", given)));
		return;
	}
	a->spec.valid_from_column = ARG_GIVEN(CREATE_VALID_FROM) ?
		pstrdup(NameStr(*PG_GETARG_NAME(CREATE_VALID_FROM))) : "valid_from";
	a->spec.valid_to_column = ARG_GIVEN(CREATE_VALID_TO) ?
		pstrdup(NameStr(*PG_GETARG_NAME(CREATE_VALID_TO))) : "valid_to";
	if (ARG_GIVEN(CREATE_HISTORY_COLUMNS))
	{
		a->spec.history_columns_given = true;
		a->spec.history_columns = column_name_list(PG_GETARG_ARRAYTYPE_P(CREATE_HISTORY_COLUMNS), "history_columns", "{status,amount}");
		a->history_columns = PG_GETARG_DATUM(CREATE_HISTORY_COLUMNS);
	}
}

/* Where each create function has its run arguments (-1: it has none) */
typedef struct RunArgPos
{
	int			schedule;
	int			initial;
	int			delay;
	int			batch_size;
} RunArgPos;

static const RunArgPos copy_pos = {7, 8, 9, 10};
static const RunArgPos command_pos = {4, 5, 6, 7};
static const RunArgPos interval_pos = {9, 6, 10, -1};

/* A pipeline's name is an identifier: not empty, shorter than NAMEDATALEN */
static void
check_pipeline_name(const char *name)
{
	bool		blank = true;

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pipeline name must not be empty"),
				 errhint("Name the pipeline after what it loads, for example 'orders'.")));
	for (const unsigned char *c = (const unsigned char *) name; *c; c++)
	{
		if (*c < 0x20 || *c == 0x7f)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("pipeline name must not contain control characters"),
					 errdetail("The name holds the character with code %d at byte %d.",
							   *c, (int) (c - (const unsigned char *) name) + 1),
					 errhint("Use letters, digits, spaces and punctuation: the name is shown in logs, notifications and hwm.status.")));
		if (*c != ' ')
			blank = false;
	}
	if (blank)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pipeline name must not be only spaces"),
				 errhint("Name the pipeline after what it loads, for example 'orders'.")));
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("pipeline name is too long"),
				 errdetail("The name has %d bytes; at most %d are allowed, as for any PostgreSQL identifier.",
						   (int) strlen(name), NAMEDATALEN - 1),
				 errhint("Choose a shorter name.")));
}

/* The tables and columns, and the lookback that needs a partition column */
static void
read_columns_args(FunctionCallInfo fcinfo, CreateArgs *a)
{
	hwm_require_arg(fcinfo, 1, "source");
	hwm_require_arg(fcinfo, 2, "target");
	hwm_require_arg(fcinfo, 3, "unique_key");
	hwm_require_arg(fcinfo, 4, "watermark_column");
	hwm_require_arg(fcinfo, 6, "lookback");

	a->spec.source = PG_GETARG_OID(1);
	a->spec.target = PG_GETARG_OID(2);
	a->spec.unique_key = key_list(PG_GETARG_ARRAYTYPE_P(3));
	a->spec.watermark_column = NameStr(*PG_GETARG_NAME(4));
	a->spec.partition_column = PG_ARGISNULL(5) ? NULL : NameStr(*PG_GETARG_NAME(5));
	a->spec.pipeline = a->name;
	a->unique_key = PG_GETARG_DATUM(3);
	a->watermark_column = PG_GETARG_DATUM(4);
	a->partition_column = PG_ARGISNULL(5) ? (Datum) 0 : PG_GETARG_DATUM(5);
	a->lookback = PG_GETARG_INT32(6);
	if (ARG_GIVEN(CREATE_DELETE_COLUMN))
		a->spec.delete_column = pstrdup(NameStr(*PG_GETARG_NAME(CREATE_DELETE_COLUMN)));
	read_history_args(fcinfo, a);

	if (a->lookback < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback must not be negative"),
				 errdetail("lookback is the number of newest partitions every run overwrites again.")));
	if (a->lookback > 0 && a->spec.partition_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback needs a partition column"),
				 errhint("Pass partition_column => '...' naming the column whose newest values are overwritten again on every run.")));
}

/* schedule, delay and batch_size, each optional */
static void
read_run_args(FunctionCallInfo fcinfo, CreateArgs *a, const RunArgPos *pos)
{
	if (!PG_ARGISNULL(pos->schedule))
	{
		a->schedule = PG_GETARG_INTERVAL_P(pos->schedule);
		hwm_check_schedule(a->schedule, "schedule");
	}

	if (!PG_ARGISNULL(pos->delay))
	{
		a->delay = PG_GETARG_INTERVAL_P(pos->delay);
		hwm_check_not_negative(a->delay, "delay",
							   "delay is how long rows need to settle: the watermark never moves past now() - delay.");
	}

	if (pos->batch_size >= 0 && !PG_ARGISNULL(pos->batch_size))
	{
		a->batch_size = PG_GETARG_INT64(pos->batch_size);
		if (a->batch_size <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch_size must be positive"),
					 errhint("batch_size caps the rows of one run; pass NULL for no cap.")));
	}
}

/*
 * As the owner, build the run's statements once (which checks the tables and
 * columns), check the owner's privileges and the tables, and check what
 * needs the watermark column's type: delay, the watermark, the interval and
 * the command.  Create (fcinfo and pos given) parses initial_watermark or
 * start_at, and the anchor, with the column's type.  Alter (fcinfo and pos
 * NULL) checks the altered settings, and that the watermark kept is still a
 * value of the column, whose type must be stored_type (InvalidOid: not
 * stored).
 */
static void
check_as_owner(FunctionCallInfo fcinfo, CreateArgs *a, const RunArgPos *pos, Oid stored_type)
{
	HwmRoleSwitch sw;
	HwmPlan    *plan;
	char	   *caveat;

	hwm_become(a->owner, true, &sw);
	plan = hwm_plan_build(&a->spec);
	hwm_check_privileges(a->owner, &a->spec, plan);
	hwm_check_pipeline_tables(&a->spec, a->delay);
	if (OidIsValid(stored_type) && !hwm_watermark_type_kept(stored_type, plan->wm.type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("watermark column \"%s\" has type %s in the new source, not %s",
						a->spec.watermark_column, format_type_be(plan->wm.type),
						format_type_be(stored_type)),
				 errdetail("Pipeline \"%s\" keeps its watermark, a value of type %s.", a->name,
						   format_type_be(stored_type)),
				 errhint("Give the new source's column the same type, or drop the pipeline and create it again (its watermark is lost).")));
	if (a->delay && !hwm_is_time_type(plan->wm.type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delay needs a time-typed watermark column"),
				 errdetail("Watermark column \"%s\" has type %s.", a->spec.watermark_column,
						   format_type_be(plan->wm.type)),
				 errhint("delay applies to timestamptz, timestamp and date columns; leave it NULL for this pipeline.")));
	caveat = hwm_watermark_caveat(plan, a->spec.source, a->delay != NULL);
	a->caveat = caveat;
	if (caveat)
		ereport(WARNING,
				(errmsg("the watermark of pipeline \"%s\" may pass rows that commit late", a->name),
				 errdetail("%s.", caveat),
				 errhint("%s", hwm_is_time_type(plan->wm.type) ?
						 "Give the pipeline a delay longer than the longest such lag (delay => '5 minutes'), or a lookback over its newest partitions; or load that table with an hwm pipeline." :
						 "Give the pipeline a lookback over its newest partitions, or reconcile it now and then; or load that table with an hwm pipeline.")));
	if (fcinfo == NULL)
	{
		/* alter: the watermark kept */
		if (a->watermark)
			(void) hwm_value_in(&plan->wm, a->watermark, "watermark");
	}
	else
	{
		/* before start_at and the anchor are parsed with the column's type */
		if (a->time_interval)
			hwm_interval_check_column(plan, a->spec.watermark_column);
		if (!PG_ARGISNULL(pos->initial))
			a->watermark = hwm_value_out(&plan->wm,
										 hwm_value_in(&plan->wm,
													  hwm_text_arg(fcinfo, pos->initial,
																   a->time_interval ? "start_at" : "initial_watermark"),
													  a->time_interval ? "start_at" : "initial_watermark"));
		if (a->time_interval)
			a->anchor = hwm_value_out(&plan->wm, hwm_value_in(&plan->wm, a->anchor, "anchor"));
	}
	if (a->time_interval)
		hwm_interval_check(plan, a->time_interval, a->anchor, a->watermark);
	if (a->command)
		hwm_command_check(a->name, a->command, plan->wm.type);
	a->watermark_type = plan->wm.type;
	hwm_unbecome(&sw);
}

/* The pipeline's row in hwm.state, written as the catalog owner */
static void
insert_pipeline(const CreateArgs *a)
{
	HwmNewPipeline row = {
		.pipeline = a->name,
		.source = a->spec.source,
		.target = a->spec.source_only ? InvalidOid : a->spec.target,
		.unique_key = a->unique_key,
		.watermark_column = a->watermark_column,
		.watermark_type = a->watermark_type,
		.partition_column = a->spec.partition_column ? a->partition_column : (Datum) 0,
		.lookback = a->lookback,
		.schedule = a->schedule,
		.watermark = a->watermark,
		.owner = a->owner,
		.delay = a->delay,
		.batch_size = a->batch_size,
		.command = a->command,
		.time_interval = a->time_interval,
		.interval_anchor = a->anchor,
		.batched = a->batched,
		.skip_empty = a->skip_empty,
		.delete_column = a->spec.delete_column,
		.history_columns = a->history_columns,
		.valid_from_column = a->spec.valid_from_column,
		.valid_to_column = a->spec.valid_to_column,
	};

	hwm_state_insert(&row);
	hwm_pipeline_set_home(a->name);
}

/*
 * The steps every create function shares once its own arguments are read:
 * refuse a duplicate name, check everything as the owner, write the row,
 * store the schedule.
 */
static void
create_checked(FunctionCallInfo fcinfo, CreateArgs *a, const RunArgPos *pos)
{
	read_run_args(fcinfo, a, pos);
	/* not from inside a run of a pipeline of that name (running.c) */
	hwm_running_refuse(a->name);
	SPI_connect();
	if (hwm_pipeline_exists(a->name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pipeline \"%s\" already exists", a->name),
				 errhint("Choose another name, or drop the existing pipeline with hwm.drop_pipeline first.")));
	check_as_owner(fcinfo, a, pos, InvalidOid);
	insert_pipeline(a);
	hwm_state_set_caveat(a->name, a->caveat);
	/* the first run is due at once; the scheduler takes it from there */
	if (a->schedule)
		(void) hwm_schedule_set(a->name, a->schedule, GetCurrentTransactionStartTimestamp());
	SPI_finish();
}

/* The name and the owner, checked */
static void
read_name_args(FunctionCallInfo fcinfo, CreateArgs *a)
{
	a->name = hwm_text_arg(fcinfo, 0, "pipeline");
	a->owner = GetUserId();
	check_pipeline_name(a->name);
	hwm_check_owner_allowed(a->owner, a->name, true);
}

PG_FUNCTION_INFO_V1(hwm_create_pipeline);

/*
 * hwm.create_pipeline: check the arguments, then (as the owner) everything a
 * run relies on, and only then write the catalog; a schedule is stored last.
 */
Datum
hwm_create_pipeline(PG_FUNCTION_ARGS)
{
	CreateArgs	a = {0};

	read_name_args(fcinfo, &a);
	read_columns_args(fcinfo, &a);
	create_checked(fcinfo, &a, &copy_pos);
	PG_RETURN_VOID();
}

/* A command pipeline's source, watermark column and command */
static void
read_command_args(FunctionCallInfo fcinfo, CreateArgs *a, int column_arg,
				  const char *column_what, int command_arg)
{
	hwm_require_arg(fcinfo, 1, "source");
	hwm_require_arg(fcinfo, column_arg, column_what);
	a->spec.source = PG_GETARG_OID(1);
	a->spec.target = InvalidOid;
	a->spec.source_only = true;
	a->spec.watermark_column = NameStr(*PG_GETARG_NAME(column_arg));
	a->spec.pipeline = a->name;
	a->unique_key = PointerGetDatum(construct_empty_array(TEXTOID));
	a->watermark_column = PG_GETARG_DATUM(column_arg);
	a->command = hwm_text_arg(fcinfo, command_arg, "command");
}

PG_FUNCTION_INFO_V1(hwm_create_command_pipeline);

/*
 * hwm.create_command_pipeline(pipeline, source, watermark_column, command,
 * schedule, initial_watermark, delay, batch_size)
 */
Datum
hwm_create_command_pipeline(PG_FUNCTION_ARGS)
{
	CreateArgs	a = {0};

	read_name_args(fcinfo, &a);
	read_command_args(fcinfo, &a, 2, "watermark_column", 3);
	create_checked(fcinfo, &a, &command_pos);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_create_interval_pipeline);

/*
 * hwm.create_interval_pipeline(pipeline, source, time_column, time_interval,
 * command, anchor, start_at, batched, skip_empty, schedule, delay)
 */
Datum
hwm_create_interval_pipeline(PG_FUNCTION_ARGS)
{
	CreateArgs	a = {0};

	read_name_args(fcinfo, &a);
	read_command_args(fcinfo, &a, 2, "time_column", 4);
	hwm_require_arg(fcinfo, 3, "time_interval");
	hwm_require_arg(fcinfo, 7, "batched");
	hwm_require_arg(fcinfo, 8, "skip_empty");
	a.time_interval = PG_GETARG_INTERVAL_P(3);
	/* the default anchor: midnight UTC of 2000-01-01, in the column's type */
	a.anchor = PG_ARGISNULL(5) ? "2000-01-01 00:00:00+00" : hwm_text_arg(fcinfo, 5, "anchor");
	a.batched = PG_GETARG_BOOL(7);
	a.skip_empty = PG_GETARG_BOOL(8);
	create_checked(fcinfo, &a, &interval_pos);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(hwm_drop_pipeline);

Datum
hwm_drop_pipeline(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");

	SPI_connect();
	/* a superuser may drop a pipeline whose owner role is gone */
	(void) hwm_pipeline_fetch_extended(name, true, false, true);
	hwm_state_delete(name);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * Citus converts a table (alter_distributed_table, undistribute_table...)
 * by building a new one, dropping the old and renaming the new: pipelines
 * of a table dropped that way follow the new one, with a NOTICE, instead of
 * going with the old.  Runs before the pipelines of dropped tables go.
 */
static void
follow_citus_conversions(void)
{
	List	   *dropped = hwm_state_dropped_tables();
	ListCell   *lc;

	foreach(lc, dropped)
	{
		HwmDroppedTable *t = lfirst(lc);
		Oid			new;
		ListCell   *lc2;

		if (t->schema == NULL || t->name == NULL)
			continue;			/* (no name: no successor of that name either) */
		new = hwm_citus_successor(t->schema, t->name);
		if (!OidIsValid(new))
			continue;
		foreach(lc2, hwm_state_follow_table(t->relid, new))
			ereport(NOTICE,
					(errmsg("hwm: pipeline \"%s\" follows %s.%s to the table Citus converts it into",
							(char *) lfirst(lc2),
							quote_identifier(t->schema), quote_identifier(t->name))));
	}
}

PG_FUNCTION_INFO_V1(hwm_on_sql_drop);

/*
 * The sql_drop event trigger: a pipeline goes with its source or target
 * table, the way an index or a trigger does.  Without this the catalog would
 * keep the dropped table's OID, which pg_dump would write out as a number
 * that may name another table after a restore.  Its runs stay in hwm.runs.
 */
Datum
hwm_on_sql_drop(PG_FUNCTION_ARGS)
{
	Oid			nsp;
	List	   *gone;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("hwm.on_sql_drop() can only be called as an event trigger")));

	/* DROP EXTENSION hwm, or hwm.state itself gone: nothing to do */
	nsp = get_namespace_oid("hwm", true);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("state", nsp)))
		PG_RETURN_NULL();

	SPI_connect();
	follow_citus_conversions();
	/* the notices in name order, whatever order the rows are stored in */
	gone = hwm_state_delete_of_dropped_tables();
	/* a run's command that drops its own pipeline's table: refused */
	foreach(lc, gone)
		hwm_running_refuse(lfirst(lc));
	foreach(lc, gone)
		ereport(NOTICE,
				(errmsg("hwm: pipeline \"%s\" dropped with its source or target table",
						(char *) lfirst(lc)),
				 errdetail("Its run history stays in hwm.runs.")));
	SPI_finish();
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(hwm_set_watermark);

/*
 * hwm.set_watermark(pipeline, watermark): the value is parsed with the
 * watermark column's type and stored in canonical form; NULL means that the
 * next run loads everything again.
 */
Datum
hwm_set_watermark(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	TimestampTz started_at = GetCurrentTimestamp();
	HwmPipeline *p;
	HwmPlan    *plan;
	HwmRoleSwitch sw;
	char	   *watermark = NULL;

	SPI_connect();
	p = hwm_pipeline_fetch(name, true, false);
	plan = hwm_plan_as_owner(p, true, false, false, &sw);
	if (!PG_ARGISNULL(1))
		watermark = hwm_value_out(&plan->wm,
								  hwm_value_in(&plan->wm, hwm_text_arg(fcinfo, 1, "watermark"),
											   "watermark"));
	/* an interval pipeline's watermark is the start of its next interval */
	if (watermark && p->time_interval)
		hwm_interval_check_boundary(plan, p->time_interval, p->interval_anchor,
									watermark, "watermark");
	hwm_unbecome(&sw);

	{
		HwmRunFacts run = HWM_RUN_FACTS_INIT(p->name, "set_watermark", started_at);

		run.watermark_before = p->watermark;
		run.watermark_after = watermark;
		(void) hwm_record_run(&run);
	}
	/* what the last load remembered no longer describes the new watermark */
	hwm_state_set_watermark(p->name, watermark);
	SPI_finish();
	PG_RETURN_VOID();
}

/* hwm.alter_pipeline's argument positions */
enum
{
	ALTER_SOURCE = 1, ALTER_TARGET, ALTER_UNIQUE_KEY, ALTER_PARTITION_COLUMN,
	ALTER_LOOKBACK, ALTER_SCHEDULE, ALTER_DELAY, ALTER_BATCH_SIZE, ALTER_COMMAND,
	ALTER_BATCHED, ALTER_SKIP_EMPTY, ALTER_RESET, ALTER_DELETE_COLUMN,
	ALTER_HISTORY_COLUMNS
};

/* The settings that reset => '{...}' may clear, with their argument */
static const struct
{
	const char *name;
	int			argno;
}			alter_resettable[] = {
	{"partition_column", ALTER_PARTITION_COLUMN},
	{"lookback", ALTER_LOOKBACK},
	{"schedule", ALTER_SCHEDULE},
	{"delay", ALTER_DELAY},
	{"batch_size", ALTER_BATCH_SIZE},
	{"delete_column", ALTER_DELETE_COLUMN},
	{"history_columns", ALTER_HISTORY_COLUMNS},
};

/*
 * alter_pipeline's reset => '{...}': a bit per alter_resettable entry,
 * refusing unknown names and a setting both given and reset.
 */
static int
alter_reset_mask(FunctionCallInfo fcinfo)
{
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	int			mask = 0;

	if (PG_ARGISNULL(ALTER_RESET))
		return 0;
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(ALTER_RESET), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elemnulls, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		char	   *what = elemnulls[i] ? "NULL" : TextDatumGetCString(elems[i]);
		int			k;

		for (k = 0; k < (int) lengthof(alter_resettable); k++)
			if (!elemnulls[i] && strcmp(what, alter_resettable[k].name) == 0)
				break;
		if (k == (int) lengthof(alter_resettable))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("reset names \"%s\", which is not a setting alter_pipeline can clear", what),
					 errdetail("reset clears partition_column, lookback (to 0), schedule, delay, batch_size and delete_column, and sets history_columns back to its default."),
					 errhint("Change the other settings by passing their new value, for example source => 'schema.view'.")));
		if (ARG_GIVEN(alter_resettable[k].argno))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s is both given and reset", what),
					 errhint("Pass either %s => ... or reset => '{%s}'.", what, what)));
		mask |= 1 << k;
	}
	return mask;
}

/* Whether reset => '{...}' named the setting of argument argno */
static bool
alter_resets(int mask, int argno)
{
	for (int k = 0; k < (int) lengthof(alter_resettable); k++)
		if (alter_resettable[k].argno == argno)
			return (mask & (1 << k)) != 0;
	return false;
}

/* Refuse a setting given to a kind of pipeline that does not have it */
static void
alter_refuse_arg(FunctionCallInfo fcinfo, int argno, bool has, const HwmPipeline *p,
				 const char *what, const char *kind)
{
	if (has || !ARG_GIVEN(argno))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s does not apply to pipeline \"%s\"", what, p->name),
			 errdetail("Only %s have it.", kind),
			 errhint("Leave %s out, or drop the pipeline and create it as the kind of pipeline you need.", what)));
}

/*
 * The pipeline's settings with the arguments applied (into a, as
 * create_pipeline's are), and the checks that need no plan.
 */
static void
alter_read_args(FunctionCallInfo fcinfo, const HwmPipeline *p, CreateArgs *a)
{
	bool		copy = p->command == NULL;
	bool		interval = p->time_interval != NULL;
	int			reset = alter_reset_mask(fcinfo);
	static const RunArgPos pos = {ALTER_SCHEDULE, -1, ALTER_DELAY, ALTER_BATCH_SIZE};

	alter_refuse_arg(fcinfo, ALTER_TARGET, copy, p, "target", "copy pipelines (hwm.create_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_UNIQUE_KEY, copy, p, "unique_key", "copy pipelines (hwm.create_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_PARTITION_COLUMN, copy, p, "partition_column", "copy pipelines (hwm.create_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_LOOKBACK, copy, p, "lookback", "copy pipelines (hwm.create_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_COMMAND, !copy, p, "command", "command and interval pipelines");
	alter_refuse_arg(fcinfo, ALTER_BATCHED, interval, p, "batched", "interval pipelines (hwm.create_interval_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_SKIP_EMPTY, interval, p, "skip_empty", "interval pipelines (hwm.create_interval_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_BATCH_SIZE, !interval, p, "batch_size", "copy and command pipelines");
	alter_refuse_arg(fcinfo, ALTER_DELETE_COLUMN, copy, p, "delete_column", "copy pipelines (hwm.create_pipeline)");
	alter_refuse_arg(fcinfo, ALTER_HISTORY_COLUMNS, p->valid_from_column != NULL, p, "history_columns",
					 "history pipelines (hwm.create_pipeline(..., history => true))");
	if (alter_resets(reset, ALTER_HISTORY_COLUMNS) && p->valid_from_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("history_columns does not apply to pipeline \"%s\"", p->name),
				 errdetail("Only history pipelines (hwm.create_pipeline(..., history => true)) have it."),
				 errhint("Leave history_columns out of reset.")));

	a->name = p->name;
	a->owner = p->owner;
	a->spec.source = PG_ARGISNULL(ALTER_SOURCE) ? p->source : PG_GETARG_OID(ALTER_SOURCE);
	a->spec.target = PG_ARGISNULL(ALTER_TARGET) ? p->target : PG_GETARG_OID(ALTER_TARGET);
	a->spec.source_only = !copy;
	a->spec.unique_key = PG_ARGISNULL(ALTER_UNIQUE_KEY) ? p->unique_key :
		key_list(PG_GETARG_ARRAYTYPE_P(ALTER_UNIQUE_KEY));
	a->spec.watermark_column = p->watermark_column;
	a->spec.partition_column = alter_resets(reset, ALTER_PARTITION_COLUMN) ? NULL :
		PG_ARGISNULL(ALTER_PARTITION_COLUMN) ? p->partition_column :
		NameStr(*PG_GETARG_NAME(ALTER_PARTITION_COLUMN));
	a->spec.pipeline = p->name;
	a->spec.delete_column = alter_resets(reset, ALTER_DELETE_COLUMN) ? NULL :
		ARG_GIVEN(ALTER_DELETE_COLUMN) ? pstrdup(NameStr(*PG_GETARG_NAME(ALTER_DELETE_COLUMN))) :
		p->delete_column;
	/*
	 * a history stays one; history_columns changes what later runs track
	 * (the versions kept stay as they are), reset: the default
	 */
	a->spec.valid_from_column = p->valid_from_column;
	a->spec.valid_to_column = p->valid_to_column;
	a->spec.history_columns_given = p->history_columns_given;
	a->spec.history_columns = p->history_columns;
	if (ARG_GIVEN(ALTER_HISTORY_COLUMNS))
	{
		a->spec.history_columns_given = true;
		a->spec.history_columns = column_name_list(PG_GETARG_ARRAYTYPE_P(ALTER_HISTORY_COLUMNS),
												   "history_columns", "{status,amount}");
	}
	else if (alter_resets(reset, ALTER_HISTORY_COLUMNS))
	{
		a->spec.history_columns_given = false;
		a->spec.history_columns = NIL;
	}
	a->lookback = alter_resets(reset, ALTER_LOOKBACK) ? 0 :
		PG_ARGISNULL(ALTER_LOOKBACK) ? p->lookback : PG_GETARG_INT32(ALTER_LOOKBACK);
	if (a->lookback < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback must not be negative"),
				 errdetail("lookback is the number of newest partitions every run overwrites again.")));
	if (a->lookback > 0 && a->spec.partition_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback needs a partition column"),
				 errhint("Pass partition_column => '...' too, or lookback => 0.")));

	/* schedule, delay and batch_size: the new ones checked, else the old */
	read_run_args(fcinfo, a, &pos);
	if (PG_ARGISNULL(ALTER_DELAY) && !alter_resets(reset, ALTER_DELAY))
		a->delay = p->delay;
	if (PG_ARGISNULL(ALTER_BATCH_SIZE) && !alter_resets(reset, ALTER_BATCH_SIZE))
		a->batch_size = p->batch_size;
	/* (a->schedule: the new one only; NULL and not reset keeps the old) */
	a->batched = PG_ARGISNULL(ALTER_BATCHED) ? p->batched : PG_GETARG_BOOL(ALTER_BATCHED);
	a->skip_empty = PG_ARGISNULL(ALTER_SKIP_EMPTY) ? p->skip_empty : PG_GETARG_BOOL(ALTER_SKIP_EMPTY);
	a->command = PG_ARGISNULL(ALTER_COMMAND) ? p->command : hwm_text_arg(fcinfo, ALTER_COMMAND, "command");
	a->time_interval = p->time_interval;
	a->anchor = p->interval_anchor;
	a->watermark = p->watermark;
}

/* The altered settings written into the pipeline's row; the rest is kept */
static void
alter_update_row(const CreateArgs *a)
{
	int			nkeys = list_length(a->spec.unique_key);
	Datum	   *keys = palloc(sizeof(Datum) * Max(nkeys, 1));
	int			i = 0;
	ListCell   *lc;
	HwmNewPipeline row = {
		.pipeline = a->name,
		.source = a->spec.source,
		.target = a->spec.target,
		.lookback = a->lookback,
		.delay = a->delay,
		.batch_size = a->batch_size,
		.command = a->command,
		.batched = a->batched,
		.skip_empty = a->skip_empty,
		.delete_column = a->spec.delete_column,
		/* (a column widened since, integer to bigint: the type it has now) */
		.watermark_type = a->watermark_type,
	};

	foreach(lc, a->spec.unique_key)
		keys[i++] = CStringGetTextDatum((char *) lfirst(lc));
	row.unique_key = PointerGetDatum(construct_array(keys, nkeys, TEXTOID, -1, false, TYPALIGN_INT));
	if (a->spec.history_columns_given)
	{
		int			ncols = list_length(a->spec.history_columns);
		Datum	   *cols = palloc(sizeof(Datum) * Max(ncols, 1));

		i = 0;
		foreach(lc, a->spec.history_columns)
			cols[i++] = CStringGetTextDatum((char *) lfirst(lc));
		row.history_columns = PointerGetDatum(construct_array(cols, ncols, TEXTOID, -1, false,
															  TYPALIGN_INT));
	}
	if (a->spec.partition_column)
		row.partition_column = DirectFunctionCall1(namein, CStringGetDatum(a->spec.partition_column));
	hwm_state_alter(&row);
}

PG_FUNCTION_INFO_V1(hwm_alter_pipeline);

/*
 * hwm.alter_pipeline(pipeline, source, target, unique_key, partition_column,
 * lookback, schedule, delay, batch_size, command, batched, skip_empty,
 * reset, delete_column, history_columns): change a pipeline's settings in place, under its lock, checked as
 * create_pipeline checks them; its watermark, load memory, history, owner
 * and schedule (unless given) are kept.  NULL keeps a setting; reset clears
 * one.
 */
Datum
hwm_alter_pipeline(PG_FUNCTION_ARGS)
{
	char	   *name = hwm_text_arg(fcinfo, 0, "pipeline");
	HwmPipeline *p;
	CreateArgs	a = {0};
	int			reset;

	SPI_connect();
	p = hwm_pipeline_fetch(name, true, false);
	reset = alter_reset_mask(fcinfo);
	alter_read_args(fcinfo, p, &a);
	/* (a superuser-owned pipeline, once hwm.allow_superuser_pipelines is off) */
	hwm_check_owner_allowed(a.owner, a.name, false);
	/* as the owner, what create_pipeline checks, on the altered settings */
	check_as_owner(NULL, &a, NULL, hwm_state_watermark_type(name));
	alter_update_row(&a);
	hwm_state_set_caveat(a.name, a.caveat);
	if (a.schedule)
		(void) hwm_schedule_set(a.name, a.schedule, GetCurrentTransactionStartTimestamp());
	else if (alter_resets(reset, ALTER_SCHEDULE))
		hwm_schedule_clear(a.name);
	SPI_finish();
	PG_RETURN_VOID();
}
