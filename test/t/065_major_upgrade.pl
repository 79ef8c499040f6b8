# A major upgrade keeps every pipeline (issue 13): a cluster of an older
# PostgreSQL major version is filled with pipelines (a scheduled one, one
# with lookback and partitions, one stopped half-way through a backfill, a
# swap's staging table, run history), then moved to the version under test,
# once by pg_upgrade and once by pg_dump/pg_restore.  Afterwards every
# pipeline, watermark, schedule and history row is there, the next run loads
# a late row, the scheduler runs on its own, and the unfinished backfill
# resumes where it stopped.
#
# The older versions come from HWM_UPGRADE_FROM ("15:/usr/lib/postgresql/15
# 17:/var/cache/hwm/pg-17-17.11", installation prefixes with hwm installed),
# which scripts/test.sh sets to the versions it tested before this one.  A
# pair whose PostgreSQL versions cannot move a table between them at all
# (Debian's 15.20 stores a column option, pg_attver, on every column, that
# 17.11 and 18.6 predate) is detected with a one-column table and skipped,
# saying so.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Temp qw(tempdir);
use HwmTest;

my @from = grep { length } split /\s+/, ($ENV{HWM_UPGRADE_FROM} // '');
plan skip_all => 'no older PostgreSQL with hwm given (HWM_UPGRADE_FROM, set by scripts/test.sh)'
  unless @from;

my $probe = PostgreSQL::Test::Cluster->new('probe');
my $new_major = $probe->pg_version->major;

my @conf = ('hwm.database' => 'postgres', max_prepared_transactions => 5);

# what must survive, as text to compare before and after
my $facts_sql = q{
SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s', pipeline, source, target, watermark,
                         schedule, schedule_anchor, lookback, owner), E'\n' ORDER BY pipeline)
  FROM hwm.state;
SELECT string_agg(format('%s|%s|%s|%s|%s', run_id, pipeline, kind, status, watermark_after), ',' ORDER BY run_id)
  FROM hwm.runs WHERE run_id <= 7;  -- the history made before the move (the scheduler adds to it after)
SELECT string_agg(format('%s|%s|%s|%s', backfill_id, status, done_through, partitions_done), ',')
  FROM hwm.backfills;
SELECT count(*) FROM staging_t;
SELECT extversion FROM pg_extension WHERE extname = 'hwm';
};

sub fill
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE loader LOGIN;
GRANT CREATE ON SCHEMA public TO loader;
SET ROLE loader;
CREATE TABLE src (id int PRIMARY KEY, day date NOT NULL, updated_at timestamptz NOT NULL, v text);
CREATE INDEX ON src (updated_at);
CREATE INDEX ON src (day);
CREATE TABLE tgt_sched (LIKE src INCLUDING ALL);
CREATE TABLE tgt_look (LIKE src INCLUDING ALL);
CREATE TABLE stop_day (day date);
CREATE FUNCTION stop_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.day IN (SELECT day FROM public.stop_day) THEN
        RAISE EXCEPTION 'stopped at %', NEW.day;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER stop_at BEFORE INSERT OR UPDATE ON tgt_look FOR EACH ROW EXECUTE FUNCTION stop_at();
INSERT INTO src SELECT g, DATE '2026-03-01' + (g % 10), TIMESTAMPTZ '2026-03-01 00:00+00' + g * INTERVAL '1 minute', 'v' || g
  FROM generate_series(1, 200) g;
SELECT hwm.create_pipeline('sched', 'src', 'tgt_sched', '{id}', 'updated_at');
SELECT hwm.create_pipeline('look', 'src', 'tgt_look', '{id}', 'updated_at', 'day', lookback => 2);
SELECT hwm.run('sched');
SELECT hwm.run('look');
SELECT hwm.schedule('sched', '1 hour');
CREATE TABLE staging_t (LIKE tgt_sched INCLUDING ALL);
INSERT INTO staging_t SELECT * FROM src WHERE id <= 50;
UPDATE src SET v = 'changed ' || id;
INSERT INTO stop_day VALUES ('2026-03-05');
});
	# a backfill that stops at 2026-03-05: 03-01 .. 03-04 done and committed
	my ($rc, $out, $err) = $node->psql('postgres',
		q{SET ROLE loader; SET client_min_messages = warning; CALL hwm.backfill('look', '2026-03-01', '2026-03-10')});
	like($err, qr/stopped at 2026-03-05/, 'the backfill stopped half-way in the old cluster');
}

# after the move: the same facts, then the pipelines go on
sub check_after
{
	my ($node, $how, $before) = @_;
	is($node->safe_psql('postgres', $facts_sql), $before,
		"$how: every pipeline, watermark, schedule, history row, backfill and the staging table are there");

	# the next run loads a late row (its day is among the two newest)
	$node->safe_psql('postgres', q{
SET ROLE loader;
INSERT INTO src VALUES (1000, '2026-03-10', '2026-03-01 00:00+00', 'late');
SELECT hwm.run('look');});
	is($node->safe_psql('postgres', q{SELECT v FROM tgt_look WHERE id = 1000}), 'late',
		"$how: the next run's lookback loads a late row");

	# the unfinished backfill resumes after 2026-03-04 and finishes
	my ($rc, $out, $err) = $node->psql('postgres', q{
SET ROLE loader; DELETE FROM stop_day;
CALL hwm.backfill('look', '2026-03-01', '2026-03-10')});
	like($err, qr/resuming backfill 1 of pipeline "look" .* after partition 2026-03-04/,
		"$how: the backfill resumes where it stopped");
	is($node->safe_psql('postgres', q{
SELECT status, partitions_done FROM hwm.backfills WHERE backfill_id = 1;
SELECT count(*) FROM (SELECT * FROM src EXCEPT SELECT * FROM tgt_look) d}),
		"succeeded|10\n0", "$how: ... and overwrote every partition of the range");

	# the scheduler runs the scheduled pipeline on its own
	$node->safe_psql('postgres', q{
SET ROLE loader;
INSERT INTO src VALUES (1001, '2026-03-10', now(), 'for the scheduler');
SELECT hwm.schedule('sched', '1 second');});
	ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM tgt_sched WHERE id = 1001}),
		"$how: the scheduler runs the pipeline on its own");
}

for my $item (@from)
{
	my ($old_major, $prefix) = split /:/, $item, 2;
	next unless $old_major < $new_major;

	# can these two versions move a table at all?  The column options that
	# the old one stores on a plain column must mean something to the new
	# one, since pg_upgrade and pg_dump carry them over.
	my $o = new_node("probe_old_$old_major", shared_preload_libraries => '', install_path => $prefix);
	my $options = $o->safe_psql('postgres', q{
CREATE TABLE one (a int);
SELECT coalesce(array_to_string(attoptions, ', '), '') FROM pg_attribute
 WHERE attrelid = 'one'::regclass AND attname = 'a'});
	$o->stop;
	my $incompatible = '';
	if ($options ne '')
	{
		my $p = new_node("probe_new_$old_major", shared_preload_libraries => '');
		my ($rc, $out, $err) = $p->psql('postgres',
			"CREATE TABLE one (a int); ALTER TABLE one ALTER COLUMN a SET ($options)");
		$p->stop;
		$incompatible = $err if $rc != 0;
	}
	if ($incompatible ne '')
	{
		note "PostgreSQL $old_major at $prefix stores the column options ($options) on every column; $new_major says: $incompatible";
		SKIP:
		{
			skip "$old_major -> $new_major: no table moves between these two releases (column options $options), with or without hwm", 1;
		}
		next;
	}

	# pg_upgrade
	# no scheduled run while the facts are taken and the dump is made
	my $old = new_node("old_$old_major", install_path => $prefix, @conf, 'hwm.enabled' => 'off');
	fill($old);
	my $before = $old->safe_psql('postgres', $facts_sql);
	my $dumpfile = PostgreSQL::Test::Utils::tempdir() . '/hwm.dump';
	$old->command_ok([ $old->config_data('--bindir') . '/pg_dump', '-Fc', '-f', $dumpfile,
		'-d', $old->connstr('postgres') ], "pg_dump of the $old_major cluster");
	$old->stop;

	# 18 turns data checksums on by default, which an older cluster lacks
	my $new = new_node("new_$old_major", start => 0, @conf,
		init => { extra => ($new_major >= 18 ? ['--no-data-checksums'] : []) });
	my $cwd = tempdir(CLEANUP => 1);
	chdir $cwd;
	command_ok([ 'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
		'-s', $new->host, '-p', $old->port, '-P', $new->port ],
		"pg_upgrade $old_major -> $new_major");
	$new->start;
	check_after($new, "pg_upgrade $old_major -> $new_major", $before);
	$new->stop;

	# pg_dump / pg_restore into a fresh cluster of the new version
	my $restored = new_node("restored_$old_major", @conf);
	$restored->safe_psql('postgres', 'CREATE ROLE loader LOGIN');
	$restored->command_ok([ 'pg_restore', '--exit-on-error', '-d', $restored->connstr('postgres'), $dumpfile ],
		"pg_restore of the $old_major dump into $new_major");
	check_after($restored, "pg_dump $old_major / pg_restore $new_major", $before);
	$restored->stop;
}

done_testing();
