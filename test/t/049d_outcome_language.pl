# What the scheduler records is true in any language (issue 37, DESIGN.md
# guarantee 11): a scheduled run's outcome is classified by SQLSTATE and by
# what hwm itself saw, never by the words of a message, which follow
# lc_messages.  The server runs with lc_messages = 'de_DE.UTF-8' (the locale
# is generated here when the system lacks it), and:
#
#  1. a run cut by its pipeline's timeout is recorded as that timeout
#     ("canceling the run: it took longer than its timeout of ..."), not as
#     PostgreSQL's message; on main it was found by looking for the English
#     words "statement timeout", so under a server with translations (NLS)
#     it was recorded as the raw German message;
#  2. a run cancelled by pg_cancel_backend, with a timeout armed, is not
#     taken for that timeout;
#  3. a run that meets its pipeline busy with a run by hand is 'skipped'
#     (55P03), no failure;
#  4. a pipeline whose command raises 57014 with the English words
#     "statement timeout" is recorded with its own error, not as the
#     pipeline's timeout (on main: it was);
#  5. a pipeline whose command raises 55P03 with the very text
#     'pipeline "..." is busy' is a failure, not skipped (on main: skipped,
#     and never counted);
#  6. and the size of the time limit: a timeout longer than a timer holds,
#     stored before hwm.set_timeout refused it ('1000000 years', written into
#     the catalog here), is the longest timer, not 1 ms (on main its
#     microseconds overflowed and the run was cancelled at once).
#
# 4 and 5 fail on main whatever the build; 1 fails on main only where
# PostgreSQL has its message translations (Debian's packages do; a source
# build without --enable-nls, like the cached 17 and 18, keeps English
# messages, and the test says so in its output): there it checks that the
# classification holds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# --- the German locale: the system's, or one generated for this test -------
my $locale = 'de_DE.UTF-8';
my $have = grep { /^de_DE\.utf-?8$/i } split /\n/, `locale -a 2>/dev/null`;
if (!$have)
{
	my $dir = PostgreSQL::Test::Utils::tempdir('locales');
	system('localedef', '-i', 'de_DE', '-f', 'UTF-8', "$dir/$locale") == 0
	  or BAIL_OUT("cannot generate locale $locale with localedef (package locales)");
	# the server looks here first, then where the system keeps its locales
	$ENV{LOCPATH} = "$dir:/usr/lib/locale";
}

my $node = new_node('outcome_language', 'hwm.max_workers' => 2, max_worker_processes => 12,
	lc_messages => $locale);

my ($rc, $out, $err) = $node->psql('postgres', 'SELECT 1/0');
my $translated = $err !~ /division by zero/;
diag($translated
	? "PostgreSQL's messages are translated here: $err"
	: "this PostgreSQL has no message translations (built without NLS): its messages stay English; the test checks the classification all the same");
is(sql($node, 'postgres', 'SHOW lc_messages'), $locale, 'the server runs with lc_messages in German');

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE anna LOGIN;
CREATE SCHEMA a AUTHORIZATION anna;
SET ROLE anna;
CREATE TABLE a.src (id bigint GENERATED ALWAYS AS IDENTITY, v int);
INSERT INTO a.src (v) VALUES (1);
-- waits while the test holds pg_advisory_lock(4711)
CREATE FUNCTION a.gate() RETURNS void LANGUAGE sql AS $$ SELECT pg_catalog.pg_advisory_xact_lock(4711) $$;
CREATE FUNCTION a.raise_as(code text, msg text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg;
END $f$;
SELECT hwm.create_command_pipeline(p, 'a.src', 'id', c)
  FROM (VALUES
    ('to_p', $$SELECT a.gate() WHERE $2 IS NOT NULL$$),
    ('cancel_p', $$SELECT a.gate() WHERE $2 IS NOT NULL$$),
    ('busy_p', $$SELECT a.gate() WHERE $2 IS NOT NULL$$),
    ('fake_to', $$SELECT a.raise_as('57014', 'canceling statement due to statement timeout') WHERE $2 IS NOT NULL$$),
    ('fake_busy', $$SELECT a.raise_as('55P03', 'pipeline "fake_busy" is busy') WHERE $2 IS NOT NULL$$),
    ('long_p', $$SELECT a.gate() WHERE $2 IS NOT NULL$$)) AS t(p, c);
SELECT hwm.set_timeout('to_p', '300 milliseconds');
SELECT hwm.set_timeout(p, '1 hour') FROM unnest('{cancel_p,busy_p,fake_to,fake_busy}'::text[]) AS p;
RESET ROLE;
});

# outcome(pipeline): its scheduled run's status, SQLSTATE and error
sub outcome
{
	my ($p) = @_;
	return sql($node, 'postgres',
		"SELECT status || ' ' || coalesce(error_sqlstate, '-') || ' ' || coalesce(error, '-') FROM hwm.runs WHERE pipeline = '$p' ORDER BY run_id DESC LIMIT 1");
}

sub schedule
{
	my ($p) = @_;
	sql($node, 'postgres', "SET ROLE anna; SELECT hwm.schedule('$p', '1 hour');");
}

sub finished
{
	my ($p, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	wait_for($node, 'postgres',
		"SELECT count(*) = 1 FROM hwm.runs WHERE pipeline = '$p' AND status <> 'running'", undef, $what);
}

my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4711)');

# --- 1. the pipeline's timeout ----------------------------------------------
schedule('to_p');
finished('to_p', 'the run held at the gate past its timeout ends');
is(outcome('to_p'),
	"failed 57014 canceling the run: it took longer than its timeout of 300 ms (the pipeline's timeout, set with hwm.set_timeout)",
	'it is recorded as the pipeline\'s timeout, in hwm\'s words, whatever the server\'s language');

# --- 2. a cancel that is not the timeout -------------------------------------
schedule('cancel_p');
wait_for($node, 'postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'hwm: cancel_p' AND wait_event = 'advisory'},
	undef, 'a run with a timeout of an hour waits at the gate');
sql($node, 'postgres', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'hwm: cancel_p'});
finished('cancel_p', 'the cancelled run ends');
like(outcome('cancel_p'), qr/^failed 57014 /, 'a cancel is a failure with 57014');
unlike(outcome('cancel_p'), qr/took longer than its timeout/, '... not taken for the pipeline\'s timeout');

# --- 3. a busy pipeline -------------------------------------------------------
my $hand = $node->background_psql('postgres');
$hand->query_until(qr/started/, q{SET ROLE anna;
\echo started
SELECT rows_upserted FROM hwm.run('busy_p');
});
wait_for($node, 'postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'client backend' AND wait_event = 'advisory'},
	undef, 'a run by hand holds busy_p, waiting at the gate');
schedule('busy_p');
finished('busy_p', 'the scheduled run of the busy pipeline ends');
like(outcome('busy_p'), qr/^skipped 55P03 /, 'it is skipped (55P03), whatever the language');
is(sql($node, 'postgres', q{SELECT consecutive_failures FROM hwm.state WHERE pipeline = 'busy_p'}), '0',
	'... and not counted as a failure');
$gate->query_safe('SELECT pg_advisory_unlock(4711)');
$gate->quit;
$hand->quit;

# --- 4. and 5. the English words are not the signal -------------------------
schedule('fake_to');
finished('fake_to', 'the run whose command raises 57014 ends');
is(outcome('fake_to'), 'failed 57014 canceling statement due to statement timeout',
	'a 57014 of the command\'s own is recorded as itself, not as the pipeline\'s timeout');
schedule('fake_busy');
finished('fake_busy', 'the run whose command raises 55P03 ends');
is(outcome('fake_busy'), 'failed 55P03 pipeline "fake_busy" is busy',
	'a 55P03 of the command\'s own, even in the words of a busy pipeline, is a failure, not skipped');
is(sql($node, 'postgres', q{SELECT consecutive_failures FROM hwm.state WHERE pipeline = 'fake_busy'}), '1',
	'... counted as one');

# --- 6. a timeout stored past what a timer holds ------------------------------
sql($node, 'postgres', q{UPDATE hwm.state SET timeout = '1000000 years' WHERE pipeline = 'long_p'});
$gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4711)');
schedule('long_p');
wait_for($node, 'postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'hwm: long_p' AND wait_event = 'advisory'},
	undef, 'a run whose stored timeout is a million years waits at the gate');
$gate->query_safe('SELECT pg_advisory_unlock(4711)');
$gate->quit;
finished('long_p', 'and ends once the gate opens');
is(outcome('long_p'), 'succeeded - -', 'it succeeded: its limit was not 1 ms');

$node->stop;
done_testing();
