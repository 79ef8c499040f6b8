# The upgrade path: ALTER EXTENSION hwm UPDATE from every older version.
#
# For every upgrade script hwm--A--B.sql of the repository this test
#   1. installs version A (CREATE EXTENSION hwm VERSION 'A') and a pipeline
#      in it as version A left it after a run (written into hwm.state by
#      hand: the library under test serves only default_version's catalog);
#   2. checks the policy for older catalogs (README, Upgrades): the library
#      refuses to run or declare a pipeline on a catalog that lacks its mark
#      (CATALOG_NEWEST_COLUMN in src/catalog.c, read from there), with a
#      hint to ALTER EXTENSION hwm UPDATE, and runs the pipeline on one
#      that has it (a version that changed no table, as 1.3 so far); DROP
#      TABLE (the sql_drop event trigger) and DROP ROLE (the role hooks)
#      work on both;
#   3. runs ALTER EXTENSION hwm UPDATE TO 'B';
#   4. compares every object of the extension (functions with their full
#      definitions, tables with columns, defaults, constraints and indexes,
#      views, comments, grants, what pg_dump dumps) with a fresh
#      CREATE EXTENSION hwm VERSION 'B' in another database;
#   5. checks that the pipeline survived, and, when B's catalog has the
#      mark, runs on: it loads the new rows once (one without is still
#      refused).
# It does the same for ALTER EXTENSION hwm UPDATE from every older version
# to default_version, along whatever chain PostgreSQL picks.
#
# With no upgrade script yet (only 1.0 exists) it checks what it can: that
# CREATE EXTENSION hwm installs default_version, that every script of the
# repository is installed, that PostgreSQL knows no update path the
# repository lacks, and that the comparison would catch a difference; and
# says that no upgrade path exists yet.
#
# Keep every hwm--A.sql that a released version installed from (or a chain
# to it): the test installs A from what is installed, so deleting an old
# base script makes it fail.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# The repository: prove runs from it (PGXS cds to $(srcdir)).
my $control = slurp_file('hwm.control');
my ($default_version) = $control =~ /^\s*default_version\s*=\s*'([^']+)'/m
  or die "no default_version in hwm.control";
# the column whose presence in hwm.state makes a catalog the library's own
my ($mark) = slurp_file('src/catalog.c') =~ /^#define\s+CATALOG_NEWEST_COLUMN\s+"([^"]+)"/m
  or die "no CATALOG_NEWEST_COLUMN in src/catalog.c";
my @scripts = sort glob('hwm--*.sql');
my (@base_versions, @upgrades);
for my $f (@scripts)
{
	if ($f =~ /^hwm--([^-]+)--([^-]+)\.sql$/) { push @upgrades, [ $1, $2, $f ]; }
	elsif ($f =~ /^hwm--([^-]+)\.sql$/) { push @base_versions, $1; }
	else { fail("unexpected script name $f"); }
}

my $node = new_node('upgrade', shared_preload_libraries => '');
# pipelines belong to an ordinary role (hwm refuses superuser-owned ones)
$node->safe_psql('postgres', 'CREATE ROLE loader');

# --- what is installed agrees with the repository --------------------------
my %repo_versions = map { $_ => 1 } @base_versions, map { ($_->[0], $_->[1]) } @upgrades;
is($node->safe_psql('postgres',
		q{SELECT string_agg(version, ' ' ORDER BY version) FROM pg_available_extension_versions WHERE name = 'hwm'}),
	join(' ', sort keys %repo_versions),
	'every version of the repository\'s scripts is installed, and no other');
is($node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'hwm'}),
	$default_version, "the installed control file has default_version $default_version");
# One-step update paths that PostgreSQL finds are exactly the scripts.
is($node->safe_psql('postgres', q{
	SELECT coalesce(string_agg(source || '--' || target, ' ' ORDER BY source, target), '')
	  FROM pg_extension_update_paths('hwm') WHERE path = source || '--' || target}),
	join(' ', sort map { "$_->[0]--$_->[1]" } @upgrades),
	'the one-step update paths are exactly the hwm--A--B.sql scripts of the repository');

# --- a fresh install of default_version ------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE fresh_default');
$node->safe_psql('fresh_default', 'CREATE EXTENSION hwm');
is($node->safe_psql('fresh_default', q{SELECT extversion FROM pg_extension WHERE extname = 'hwm'}),
	$default_version, "CREATE EXTENSION hwm installs default_version $default_version");
my $fresh = snapshot('fresh_default');
for my $expected (
	'extension: schema hwm relocatable false',
	'member: table hwm.state',
	'member: table hwm.runs',
	'member: view hwm.status',
	'member: function hwm.run(text,boolean)',
	'member: function hwm.overwrite(text,text,text,boolean)',
	'config: hwm.state',
	'config: hwm.runs')
{
	ok((grep { $_ eq $expected } @$fresh), "the object snapshot of a fresh install has \"$expected\"");
}
ok((grep { /^member: function hwm\.create_pipeline\(text,regclass,regclass,text\[\],name,/ } @$fresh),
	'the object snapshot of a fresh install has hwm.create_pipeline');
ok((grep { /^function: CREATE OR REPLACE FUNCTION hwm\.run\(pipeline text, nowait boolean DEFAULT false/ } @$fresh),
	'the snapshot has full function definitions');
ok((grep { /^column: hwm\.state\.watermark text/ } @$fresh), 'the snapshot has table columns');
is($node->safe_psql('fresh_default', 'ALTER EXTENSION hwm UPDATE'), '',
	'ALTER EXTENSION hwm UPDATE at default_version is a no-op');

# The comparison catches a difference: the same install, changed by hand.
$node->safe_psql('postgres', 'CREATE DATABASE changed');
$node->safe_psql('changed', q{
	CREATE EXTENSION hwm;
	ALTER FUNCTION hwm.drop_pipeline(text) STRICT;
	ALTER TABLE hwm.runs ADD COLUMN note text;
	COMMENT ON VIEW hwm.status IS 'changed';
	GRANT INSERT ON hwm.state TO PUBLIC;
});
my @diff = snapshot_diff($fresh, snapshot('changed'));
is(scalar(grep { /drop_pipeline/ } @diff), 2, 'the comparison sees a changed function attribute') or diag(join("\n", @diff));
ok((grep { /^\+ column: hwm\.runs\.note text/ } @diff), 'the comparison sees a new column');
ok((grep { /^\+ comment: view hwm\.status = changed/ } @diff), 'the comparison sees a changed comment');
ok((grep { /^\+ acl: table hwm\.state = .*=a/ } @diff), 'the comparison sees a changed grant');

ok(scalar(@upgrades), "the repository has upgrade scripts to test (to $default_version)");

# --- every upgrade script, one step ----------------------------------------
my $dbn = 0;
for my $u (@upgrades)
{
	my ($from, $to, $file) = @$u;
	upgrade_and_compare($from, $to, "ALTER EXTENSION hwm UPDATE TO '$to'", $file);
}

# --- every older version straight to default_version -----------------------
for my $from (sort keys %repo_versions)
{
	next if $from eq $default_version;
	my $path = $node->safe_psql('postgres',
		"SELECT path FROM pg_extension_update_paths('hwm') WHERE source = '$from' AND target = '$default_version'");
	if ($path eq '')
	{
		# a version that is not older (or a dead branch): nothing to update
		note("no update path from $from to $default_version");
		next;
	}
	upgrade_and_compare($from, $default_version, 'ALTER EXTENSION hwm UPDATE', "path $path");
}

$node->stop;
done_testing();

# Install $from, make a pipeline and run it, run $update_sql, compare with a
# fresh install of $to, and run the pipeline again.
sub upgrade_and_compare
{
	my ($from, $to, $update_sql, $what) = @_;
	my $db = 'up' . ++$dbn;
	my $fresh_db = "fresh$dbn";

	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my ($rc, $out, $err) = $node->psql($db, "CREATE EXTENSION hwm VERSION '$from'");
	is($rc, 0, "$what: CREATE EXTENSION hwm VERSION '$from'")
	  or diag("$err\nKeep the install script of every released version (or a chain to it).");
	# the pipeline p after one run of version $from (20 rows, watermark 20),
	# and q, whose table goes below; written as 1.0 and 1.1 wrote them
	$node->safe_psql($db, q{
		CREATE TABLE src (id bigint PRIMARY KEY, day date NOT NULL, v text);
		CREATE TABLE tgt (id bigint PRIMARY KEY, day date NOT NULL, v text);
		CREATE TABLE gone (id bigint PRIMARY KEY);
		INSERT INTO src SELECT i, date '2024-01-01' + i / 5, 'v' || i FROM generate_series(1, 20) i;
		INSERT INTO tgt SELECT * FROM src;
		GRANT SELECT ON src TO loader;
		GRANT SELECT, INSERT, UPDATE, DELETE ON tgt TO loader;
		INSERT INTO hwm.state (pipeline, source, target, unique_key, watermark_column, watermark_type,
		                       partition_column, lookback, watermark, owner, last_status, last_rows)
		VALUES ('p', 'src', 'tgt', '{id}', 'id', 'bigint', 'day', 1, '20', 'loader', 'succeeded', 20),
		       ('q', 'gone', 'gone', '{id}', 'id', 'bigint', NULL, 0, NULL, 'loader', NULL, NULL);
	});
	if (catalog_is_old($db))
	{
		refused($db, $from, "$what: on the $from catalog");
	}
	else
	{
		is($node->safe_psql($db, q{SET ROLE loader; SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('p')}),
			'0|20|20', "$what: the $from catalog is the library's own, and the pipeline runs on it");
	}
	my ($rc2, $out2, $err2) = $node->psql($db, 'DROP TABLE gone');
	is($rc2, 0, "$what: DROP TABLE works on the $from catalog") or diag($err2);
	like($err2, qr/pipeline "q" dropped with its source or target table/,
		"$what: ... and drops the table's pipeline, as the event trigger of $from did");
	# (LOAD: this node does not preload hwm, whose role hooks come with the library)
	is($node->safe_psql($db, q{LOAD 'hwm'; CREATE ROLE passing; DROP ROLE passing; SELECT count(*) FROM hwm.state}), '1',
		"$what: DROP ROLE works on the $from catalog, and the pipeline p stays");

	my $state_sql = q{SELECT pipeline, source::text, target::text, unique_key, watermark_column, watermark,
	                         partition_column, lookback, owner::text, last_rows FROM hwm.state};
	my $state_before = $node->safe_psql($db, $state_sql);

	$node->safe_psql($db, $update_sql);
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'hwm'}),
		$to, "$what: $from updated to $to");

	$node->safe_psql('postgres', "CREATE DATABASE $fresh_db");
	$node->safe_psql($fresh_db, "CREATE EXTENSION hwm VERSION '$to'");
	my @d = snapshot_diff(snapshot($fresh_db), snapshot($db));
	is(scalar(@d), 0, "$what: $from updated to $to has the same objects as a fresh install of $to")
	  or diag("- fresh install, + updated:\n" . join("\n", @d));

	is($node->safe_psql($db, $state_sql), $state_before, "$what: the pipeline survived the update");
	if (catalog_is_old($db))
	{
		refused($db, $to, "$what: on the $to catalog, still older than the library's");
		return;
	}
	$node->safe_psql($db, q{INSERT INTO src SELECT i, date '2024-01-05', 'v' || i FROM generate_series(21, 23) i});
	is($node->safe_psql($db, q{SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('p')}),
		'3|20|23', "$what: the pipeline runs after the update and loads only the new rows");
	is($node->safe_psql($db, q{SELECT count(*), count(DISTINCT id) FROM tgt}), '23|23', "$what: nothing doubled");
	return;
}

# Whether database $db's catalog lacks the library's mark, and is refused
sub catalog_is_old
{
	my ($db) = @_;
	return $node->safe_psql($db, qq{
		SELECT count(*) FROM pg_attribute
		 WHERE attrelid = 'hwm.state'::regclass AND attname = '$mark' AND NOT attisdropped}) eq '0';
}

# In database $db, whose catalog is version $version (older than
# default_version), the library refuses to run or declare a pipeline, saying
# why and what to do; nothing is changed.
sub refused
{
	my ($db, $version, $what) = @_;
	my $state = $node->safe_psql($db, 'SELECT * FROM hwm.state ORDER BY pipeline');
	for my $call ("SELECT * FROM hwm.run('p')",
		"SELECT hwm.create_pipeline('p2', 'src', 'tgt', '{id}', 'id')")
	{
		my ($rc, $out, $err) = $node->psql($db, "SET ROLE loader; $call");
		like($err,
			qr/ERROR:  hwm's catalog in this database is version \Q$version\E, and the installed hwm library serves version \Q$default_version\E\n(.*\n)?HINT:  Run ALTER EXTENSION hwm UPDATE in this database\./,
			"$what: $call is refused, with the hint to update");
	}
	is($node->safe_psql($db, 'SELECT * FROM hwm.state ORDER BY pipeline'), $state, "$what: ... and changes nothing");
	return;
}

# Lines describing every object of the extension in database $db, sorted.
sub snapshot
{
	my ($db) = @_;
	my $out = $node->safe_psql($db, q{
WITH m AS (
    SELECT d.classid, d.objid
      FROM pg_depend d
     WHERE d.refclassid = 'pg_extension'::regclass
       AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'hwm')
       AND d.deptype = 'e'),
rels AS (
    SELECT c.oid, c.oid::regclass::text AS name, c.relkind, c.relacl, c.reloptions
      FROM m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid)
SELECT replace(line, E'\n', ' ') FROM (
    SELECT 'member: ' || pg_describe_object(m.classid, m.objid, 0) AS line FROM m
    UNION ALL
    SELECT 'comment: ' || pg_describe_object(m.classid, m.objid, 0) || ' = ' || d.description
      FROM m JOIN pg_description d ON d.classoid = m.classid AND d.objoid = m.objid AND d.objsubid = 0
    UNION ALL
    SELECT 'function: ' || pg_get_functiondef(p.oid)
        || ' ACL ' || coalesce(p.proacl::text, 'default') || ' OWNER ' || p.proowner::regrole::text
      FROM m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
     WHERE p.prokind IN ('f', 'p')
    UNION ALL
    SELECT 'acl: ' || pg_describe_object('pg_class'::regclass, r.oid, 0) || ' = ' || coalesce(r.relacl::text, 'default')
         || ' options ' || coalesce(r.reloptions::text, '')
      FROM rels r
    UNION ALL
    SELECT 'acl: ' || pg_describe_object('pg_namespace'::regclass, n.oid, 0) || ' = ' || coalesce(n.nspacl::text, 'default')
      FROM m JOIN pg_namespace n ON m.classid = 'pg_namespace'::regclass AND n.oid = m.objid
    UNION ALL
    SELECT 'column: ' || r.name || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
        || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
        || coalesce(' DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid), '')
        || CASE a.attidentity::text WHEN 'a' THEN ' IDENTITY ALWAYS' WHEN 'd' THEN ' IDENTITY BY DEFAULT' ELSE '' END
        || CASE WHEN a.attgenerated::text <> '' THEN ' GENERATED' ELSE '' END
        || CASE WHEN a.attcollation <> 0 THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END
        || coalesce(' ACL ' || a.attacl::text, '')
        || coalesce(' COMMENT ' || col_description(r.oid, a.attnum), '')
      FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_attrdef ad ON ad.adrelid = r.oid AND ad.adnum = a.attnum
    UNION ALL
    SELECT 'constraint: ' || r.name || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
      FROM rels r JOIN pg_constraint co ON co.conrelid = r.oid
    UNION ALL
    SELECT 'index: ' || pg_get_indexdef(i.indexrelid)
      FROM rels r JOIN pg_index i ON i.indrelid = r.oid
    UNION ALL
    SELECT 'trigger: ' || pg_get_triggerdef(t.oid)
      FROM rels r JOIN pg_trigger t ON t.tgrelid = r.oid
    UNION ALL
    SELECT 'view: ' || r.name || ' ' || pg_get_viewdef(r.oid)
      FROM rels r WHERE r.relkind IN ('v', 'm')
    UNION ALL
    SELECT 'sequence: ' || r.name || ' ' || s.seqtypid::regtype::text || ' ' || s.seqstart || ' ' || s.seqincrement
        || ' ' || s.seqmin || ' ' || s.seqmax || ' ' || s.seqcache || ' ' || s.seqcycle
      FROM rels r JOIN pg_sequence s ON s.seqrelid = r.oid
    UNION ALL
    SELECT 'config: ' || c.cfg::regclass::text || coalesce(' WHERE ' || nullif(e.extcondition[c.n], ''), '')
      FROM pg_extension e, unnest(e.extconfig) WITH ORDINALITY AS c(cfg, n)
     WHERE e.extname = 'hwm'
    UNION ALL
    SELECT 'extension: schema ' || e.extnamespace::regnamespace::text || ' relocatable ' || e.extrelocatable
      FROM pg_extension e WHERE e.extname = 'hwm'
    UNION ALL
    SELECT 'event trigger: ' || t.evtname || ' ' || t.evtevent || ' ' || t.evtfoid::regproc::text
        || ' ' || t.evtenabled::text || ' ' || coalesce(t.evttags::text, '')
      FROM m JOIN pg_event_trigger t ON m.classid = 'pg_event_trigger'::regclass AND t.oid = m.objid
) lines
ORDER BY line COLLATE "C"});
	# one line per object: newlines inside definitions became spaces
	my @lines = split /\n/, $out;
	return \@lines;
}

# The lines only in $a (as "- ...") and only in $b (as "+ ...").
sub snapshot_diff
{
	my ($a, $b) = @_;
	my %in_a = map { $_ => 1 } @$a;
	my %in_b = map { $_ => 1 } @$b;
	return ((map { "- $_" } grep { !$in_b{$_} } @$a), (map { "+ $_" } grep { !$in_a{$_} } @$b));
}
