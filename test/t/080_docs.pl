# The README's examples are tests: every ```sql block of README.md (then
# doc/backfill_swap.md, doc/ecosystem.md) runs, in
# the order of the document, on a fresh database ("analytics") of a
# throwaway cluster with hwm preloaded, one TAP check per block, named after
# the heading it is under.  A block runs from what the document shows before
# it, nothing else: a table, schema or role an example needs must be created
# in the README itself.
#
# How a block is marked: an HTML comment on the line just before its fence
# (GitHub shows nothing of it), with one or more of, comma-separated:
#
#   <!-- docs: signature -->     not run: a signature, not a statement
#   <!-- docs: skip -->          not run: needs what a test cannot have (a
#                                remote server); a block with dbt's Jinja
#                                ({{ or {%) is never run, unmarked
#   <!-- docs: error 42501 -->   must fail, with that SQLSTATE
#   <!-- docs: as alice -->      connect as role alice for this block and
#                                every later one (until the next "as");
#                                "as superuser" goes back to the bootstrap
#                                superuser, which runs the blocks before any
#                                "as"
#
# Each block is one psql session (-f -, so CALLs run outside a transaction
# block) with ON_ERROR_STOP; an error block stops at its first error.
#
# doc/postgres_exporter.yaml, postgres_exporter's query file for hwm.metrics
# (doc/prometheus.md), is parsed and its query run in the same database
# after the documents' blocks; its columns must be the metrics it lists.
# doc/prometheus.md's ```yaml blocks must parse.
use strict;
use warnings;
use CPAN::Meta::YAML;
use File::Path qw(make_path remove_tree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# README.md first; doc/*.md continue in the same database (they say so),
# each starting as the superuser.  dbt/hwm/README.md is not here yet.
my @files = ('README.md', 'doc/backfill_swap.md', 'doc/ecosystem.md');

# the export example's directory: the README tells the reader to create
# /tmp/hwm-exports; the test runs it in a directory of its own, so that the
# suites of two versions running side by side do not empty each other's
my $readme_exports = '/tmp/hwm-exports';
my $exports = "${PostgreSQL::Test::Utils::tmp_check}/hwm-exports";

# blocks(file): the ```sql blocks of a Markdown file, in order, each
# { line, heading, sql, marks }
sub blocks
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	my @lines = <$fh>;
	close $fh;
	my (@blocks, $heading, $fence, $block);
	for my $i (0 .. $#lines)
	{
		my $line = $lines[$i];
		if (defined $fence)
		{
			if ($line =~ /^```\s*$/)
			{
				push @blocks, $block if $block;
				undef $fence;
				undef $block;
			}
			elsif ($block)
			{
				$block->{sql} .= $line;
			}
			next;
		}
		if ($line =~ /^```(\S*)/)
		{
			$fence = $1;
			next unless $fence eq 'sql';
			my $mark = $i > 0 ? $lines[$i - 1] : '';
			my @marks;
			if ($mark =~ /^<!--\s*docs:\s*(.*?)\s*-->\s*$/)
			{
				@marks = split /\s*,\s*/, $1;
			}
			$block = { line => $i + 1, heading => $heading // '(top)', sql => '', marks => \@marks };
			next;
		}
		$heading = $1 if $line =~ /^#+\s+(.*?)\s*$/;
	}
	die "$file: a fence is not closed" if defined $fence;
	return @blocks;
}

make_path($exports);
chmod(0777, $exports);

my $node = new_node('docs', 'hwm.max_workers' => 2, max_worker_processes => 16);
my $superuser = sql($node, 'postgres', 'SELECT current_user');
sql($node, 'postgres', 'CREATE DATABASE analytics');

my %seen;
for my $file (@files)
{
my $role = $superuser;
for my $b (blocks($file))
{
	my ($run, $error) = (1, undef);
	for my $mark (@{ $b->{marks} })
	{
		if ($mark eq 'signature' || $mark eq 'skip') { $run = 0; }
		elsif ($mark =~ /^error\s+([0-9A-Z]{5})$/) { $error = $1; }
		elsif ($mark =~ /^as\s+(\S+)$/) { $role = $1 eq 'superuser' ? $superuser : $1; }
		else { die "$file line $b->{line}: unknown mark \"$mark\""; }
	}
	my $name = "$file line $b->{line}, \"$b->{heading}\"";
	# dbt's Jinja is not SQL psql can run
	$run = 0 if $b->{sql} =~ /\{\{|\{%/;
	next unless $run;

	my ($out, $err) = ('', '');
	(my $sql = $b->{sql}) =~ s/\Q$readme_exports\E/$exports/g;
	my $rc = $node->psql('analytics', "\\set VERBOSITY verbose\n\\pset footer off\n" . $sql,
		stdout => \$out, stderr => \$err, extra_params => [ '-U', $role, '-P', 'format=aligned', '-P', 'tuples_only=off' ]);
	if (defined $error)
	{
		ok($rc != 0 && $err =~ /ERROR:  \Q$error\E:/, "$name fails with $error, as $role")
		  or diag("exit code $rc\n$err");
		note($err);
	}
	else
	{
		ok($rc == 0, "$name runs, as $role") or diag($err);
	}
	# what the block printed (its first 12 lines), for whoever writes its
	# output into the document
	my @out = split /\n/, $out;
	note(join("\n", @out[0 .. ($#out < 11 ? $#out : 11)])) if @out;

	# Getting started ends with a pipeline its reader watches run: it must
	# have run, scheduled, as its owner
	if ($b->{heading} eq 'Getting started' && $b->{sql} =~ /hwm\.schedule\(/ && !$seen{schedule}++)
	{
		wait_for($node, 'analytics',
			"SELECT last_status = 'succeeded' AND (SELECT count(*) FROM target) = (SELECT count(*) FROM source) FROM hwm.status WHERE pipeline = 'orders'",
			undef, 'the pipeline Getting started schedules runs on its own');
	}
}
}

# The exporter's query file: it parses, each query runs on the database the
# examples filled (as the superuser, who sees every pipeline), and returns
# exactly the columns its metrics name, in order, each with a usage the
# exporter knows and a description.
{
	my $yaml = CPAN::Meta::YAML->read_string(slurp('doc/postgres_exporter.yaml'))
	  or die 'doc/postgres_exporter.yaml: ' . CPAN::Meta::YAML->errstr;
	my @queries = sort keys %{ $yaml->[0] };
	ok(@queries > 0, 'doc/postgres_exporter.yaml has queries');
	for my $key (@queries)
	{
		my $q = $yaml->[0]{$key};
		my @metrics = map { my ($name) = keys %$_; [ $name, $_->{$name} ] } @{ $q->{metrics} // [] };
		my @bad = grep { ($_->[1]{usage} // '') !~ /^(LABEL|GAUGE|COUNTER)$/ || !($_->[1]{description} // '') } @metrics;
		is(join(' ', map { $_->[0] } @bad), '', "doc/postgres_exporter.yaml, $key: every metric has a usage and a description");
		my ($rc, $out, $err) = $node->psql('analytics', "$q->{query}\n\\gdesc", extra_params => [ '-A', '-t' ]);
		ok($rc == 0 && $err eq '', "doc/postgres_exporter.yaml, $key: its query runs") or diag($err);
		is(join(' ', map { (split /\|/)[0] } split /\n/, $out), join(' ', map { $_->[0] } @metrics),
			"doc/postgres_exporter.yaml, $key: the query's columns are its metrics");
		my ($rows) = $node->safe_psql('analytics', "SELECT count(*) FROM ($q->{query}) AS q");
		ok($rows > 0, "doc/postgres_exporter.yaml, $key: its query returns the pipelines ($rows)");
	}
}

# The reference cannot drift from the installed extension.
sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}
my $readme = slurp('README.md');
my $ecosystem = slurp('doc/ecosystem.md');
my ($reference) = $readme =~ /^## Reference\n(.*?)^## /ms;
my ($errors) = $readme =~ /^## Errors\n(.*?)^## /ms;
my ($eco_ref) = $ecosystem =~ /^## Reference\n(.*?)^## /ms;

# doc/prometheus.md's alerting rules (and the excerpt of the query file)
# are YAML
{
	my @yaml = slurp('doc/prometheus.md') =~ /^```yaml\n(.*?)^```$/msg;
	ok(@yaml > 0, 'doc/prometheus.md has YAML blocks');
	for my $i (0 .. $#yaml)
	{
		ok(CPAN::Meta::YAML->read_string($yaml[$i]), "doc/prometheus.md's YAML block " . ($i + 1) . ' parses')
		  or diag(CPAN::Meta::YAML->errstr);
	}
}

# every function and procedure of schema hwm: named in README's Reference,
# and in doc/ecosystem.md with its arguments' names in order
for my $row (split /\n/, sql($node, 'analytics', q{
	SELECT p.proname || '|' || pg_catalog.array_to_string(
	         (SELECT pg_catalog.array_agg(a.n ORDER BY a.i)
	            FROM unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a(n, m, i)
	           WHERE a.m IS NULL OR a.m IN ('i', 'v')), ',', '')
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'hwm'::pg_catalog.regnamespace ORDER BY 1}))
{
	my ($name, $args) = split /\|/, $row, -1;
	like($reference, qr/`hwm\.\Q$name\E[(`]/, "README's Reference names hwm.$name")
	  unless $name eq 'on_sql_drop' || $name eq 'changed';
	my ($sig) = $eco_ref =~ /`(?:CALL )?hwm\.\Q$name\E\(([^`]*)\)`/;
	ok(defined $sig, "doc/ecosystem.md gives the signature of hwm.$name") or next;
	my @documented = map { /^\s*(?:VARIADIC\s+)?(\S+)/ ? $1 : () } split /,/, $sig;
	@documented = () if $sig =~ /^\s*(VARIADIC\s+)?"any"\s*$/;
	is(join(',', @documented), $args, "doc/ecosystem.md: hwm.$name takes ($args)");
}

# every table and view of schema hwm
for my $rel (split /\n/, sql($node, 'analytics',
	"SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 'hwm'::pg_catalog.regnamespace AND relkind IN ('r', 'v') ORDER BY 1"))
{
	like($eco_ref, qr/\| `hwm\.\Q$rel\E` \|/, "doc/ecosystem.md lists hwm.$rel");
}

# every column of those tables and views, in doc/ecosystem.md's Columns
my ($eco_cols) = $eco_ref =~ /^### Columns\n(.*?)^### /ms;
for my $col (split /\n/, sql($node, 'analytics', q{
	SELECT c.relname || '.' || a.attname FROM pg_catalog.pg_class c
	  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	 WHERE c.relnamespace = 'hwm'::pg_catalog.regnamespace AND c.relkind IN ('r', 'v') ORDER BY 1}))
{
	my ($rel, $att) = split /\./, $col;
	# the paragraph or table that follows `hwm.<rel>` names the column
	my ($part) = $eco_cols =~ /^`hwm\.\Q$rel\E`(.*?)(?=^`hwm\.|\z)/ms;
	like($part // '', qr/`\Q$att\E`/, "doc/ecosystem.md's Columns: hwm.$col");
}

# every hwm.* setting of a server that preloads hwm
for my $guc (split /\n/, sql($node, 'analytics', "SELECT name FROM pg_catalog.pg_settings WHERE name LIKE 'hwm.%' ORDER BY 1"))
{
	like($eco_ref, qr/\| `\Q$guc\E` \|/, "doc/ecosystem.md's Settings list $guc");
	like($reference, qr/`\Q$guc\E`/, "README's Reference names $guc");
}

# every heading of README is unique, and every link to one lands (GitHub's
# anchors: lowercase, punctuation dropped, spaces to dashes)
{
	my (%anchor, $fence);
	for (split /\n/, $readme)
	{
		$fence = !$fence if /^```/;
		next if $fence || !/^#+\s+(.*?)\s*$/;
		my $a = lc $1;
		$a =~ s/[^\w\- ]//g;
		$a =~ s/ /-/g;
		$anchor{$a}++;
	}
	my @dup = grep { $anchor{$_} > 1 } sort keys %anchor;
	is("@dup", '', "README's headings are unique");
	my @lost = grep { !$anchor{$_} } $readme =~ /\]\(#([^)]+)\)/g;
	is("@lost", '', "README's links to its headings land");
}

# every SQLSTATE the C code raises by name is in README's Errors
my $include = $node->config_data('--includedir-server');
my %sqlstate;
for (split /\n/, slurp("$include/utils/errcodes.h"))
{
	next unless /#define (ERRCODE_\w+)\s+MAKE_SQLSTATE\((.*)\)/;
	my ($name, $chars) = ($1, $2);
	$sqlstate{$name} = join '', $chars =~ /'(.)'/g;
}
my %raised;
for my $c (glob 'src/*.c')
{
	$raised{$_} = 1 for slurp($c) =~ /errcode\((ERRCODE_\w+)\)/g;
}
for my $code (sort keys %raised)
{
	my $state = $sqlstate{$code} // die "$code is not in errcodes.h";
	like($errors, qr/`\Q$state\E`/, "README's Errors lists $state ($code)");
}

done_testing();
