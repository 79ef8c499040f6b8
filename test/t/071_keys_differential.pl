# The differential test of issue 37: one key, one definition (DESIGN.md,
# guarantee 10).
#
# For each key type (integers, numeric with and without a typmod in the
# target, text under a deterministic collation and under a nondeterministic
# ICU one, citext, timestamp(6) into timestamp(0), composite keys of two of
# them, and a target whose unique index has a COLLATE of its own) and each
# way of loading (the first load built aside, the plain insert, the MERGE,
# the upsert forced by a trigger or by a type difference, tombstones), a
# seeded generator writes a source history: inserts, updates, key changes
# that are equal under the target's index (text changing case under a
# case-insensitive collation or citext, numeric 1.4 -> 1.2 into
# numeric(10,0), a fraction of a second into timestamp(0)), tombstones (in
# place, with and without a new watermark value, or as a newer row of the
# key), hard deletes, NULL watermark values and NULLs in other columns.
# After every run, CALL hwm.reconcile (batch_size 1 and more, after its dry
# run), hwm.overwrite of a partition range and CALL hwm.backfill, the target
# is compared with an oracle written in plain SQL from what the source holds,
# no hwm involved: a key's state is its newest source row (by the watermark,
# NULL oldest, the tombstone winning a tie), keys are compared as the
# target's unique index compares them, on the source's values cast to the
# target columns' types (typmod included).  What each step guarantees:
#
#   first run    the target holds exactly the live keys whose row has a
#                watermark value (a NULL one is never loaded by a run);
#   run          every live key whose newest row has a watermark value is in
#                the target, exactly as the source has it; every key whose
#                newest row is a tombstone with a new watermark value is not;
#                other keys (hard deletes, NULL watermarks, a marker set
#                without a new watermark value) may still be there;
#   reconcile    after a run: as a run, and no target row is left whose key
#                the source lacks or whose newest row is a tombstone (the
#                marker honoured); the dry run counts exactly those rows, and
#                the reconcile deletes that many;
#   overwrite,   the target's rows in the range are exactly the source's live
#   backfill     rows in the range (NULL watermarks included, no key whose
#                newest row is a tombstone), the rows outside it are as they
#                were, but for rows whose key moved into the range.
#
# Rows are compared by their values' text (the bytes the target stores: 1
# and 1.0 differ, so do 'Ada' and 'ada'), keys apart from the other columns:
# each step is two tests, "rows" (which keys, and their other columns) and
# "key spelling" (the key columns as the source's newest row has them, cast).
#
# HWM_KEYS_SEED=n replays a run (its seed is printed first), HWM_KEYS_CASE=c7
# only one case of it, HWM_KEYS_ROUNDS=n (default 3) makes each case longer.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use HwmTest;

my $seed = $ENV{HWM_KEYS_SEED} // (int(time() * 1000) ^ $$) % 1000000;
my $rounds = $ENV{HWM_KEYS_ROUNDS} // 3;
my $only = $ENV{HWM_KEYS_CASE};
diag("keys differential seed $seed (replay: HWM_KEYS_SEED=$seed), $rounds rounds");

my $node = new_node('keys',
	# the test's pipelines are owned by the bootstrap superuser
	'hwm.allow_superuser_pipelines' => 'on',
	# wal_level replica (the harness's default, minimal, refuses the first
	# load built aside)
	init => { allows_streaming => 1 });
sql($node, 'postgres', 'CREATE EXTENSION hwm');

my $has_icu = eval {
	sql($node, 'postgres',
		q{CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)});
	1;
};
note('no ICU: the cases with a nondeterministic collation are skipped') unless $has_icu;
my $has_citext = sql($node, 'postgres',
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'citext'}) eq '1';
if ($has_citext) { sql($node, 'postgres', 'CREATE EXTENSION citext'); }
else { note('citext is not available on this server: its cases are skipped'); }

# ---------------------------------------------------------------------------
# Key columns.  s: the source column's type, t: the target's (with its
# COLLATE), idx: the unique index's COLLATE when it has its own, cast: the
# source value as the target column stores it, eq: two stored values equal
# as the target's unique index has them, base(i): entity i's key, variant(i):
# a value equal to it under the index (a key change), needs: what the server
# must have.

sub lit { return "'$_[0]'"; }

# a random spelling of a word: each letter upper or lower case
sub recase { return join('', map { rand() < 0.5 ? uc($_) : lc($_) } split(//, $_[0])); }

sub word { return sprintf('k%03d-%s', $_[0], join('', map { ('a' .. 'z')[($_[0] * 7 + $_ * 11) % 26] } 1 .. 3)); }

sub fmt_thousandths
{
	my ($th) = @_;
	return sprintf('%s%d.%03d', $th < 0 ? '-' : '', int(abs($th) / 1000), abs($th) % 1000);
}

my %col = (
	int4_int8 => { s => 'int', t => 'bigint', cast => 'CAST(%s AS bigint)', eq => '%s = %s',
		base => sub { 1000 + 17 * $_[0] }, variant => sub { 1000 + 17 * $_[0] } },
	int => { s => 'int', t => 'int', cast => '%s', eq => '%s = %s',
		base => sub { 5 * $_[0] - 40 }, variant => sub { 5 * $_[0] - 40 } },
	# into numeric(10,0): 1.4 and 1.2 are both 1 (no .5: it rounds away)
	num_10_0 => { s => 'numeric', t => 'numeric(10,0)', cast => 'CAST(%s AS numeric(10,0))',
		eq => '%s = %s',
		base => sub { lit(10 * $_[0] + 3) },
		variant => sub {
			my @f = (0, 100, 200, 300, 400, -100, -300, -400);
			lit(fmt_thousandths((10 * $_[0] + 3) * 1000 + $f[ int(rand(@f)) ]));
		} },
	# into numeric(12,2): 1.071 and 1.074 are both 1.07
	num_12_2 => { s => 'numeric', t => 'numeric(12,2)', cast => 'CAST(%s AS numeric(12,2))',
		eq => '%s = %s',
		base => sub { lit(fmt_thousandths((100 * $_[0] + 7) * 10)) },
		variant => sub {
			my @f = (0, 1, 2, 3, 4, -1, -2, -4);
			lit(fmt_thousandths((100 * $_[0] + 7) * 10 + $f[ int(rand(@f)) ]));
		} },
	# numeric without a typmod: 3, 3.0 and 3.00 are one key, spelled three ways
	num => { s => 'numeric', t => 'numeric', cast => '%s', eq => '%s = %s',
		base => sub { lit(3 * $_[0]) },
		variant => sub { lit(3 * $_[0] . ('', '.0', '.00', '.000')[ int(rand(4)) ]) } },
	text_c => { s => 'text COLLATE "C"', t => 'text COLLATE "C"', cast => '%s',
		eq => '%s COLLATE "C" = %s COLLATE "C"',
		base => sub { lit(word($_[0])) }, variant => sub { lit(word($_[0])) } },
	# a deterministic source column into a case-insensitive target column
	text_to_ci => { s => 'text', t => 'text COLLATE ci', cast => '%s', needs => 'icu',
		eq => '%s COLLATE ci = %s COLLATE ci',
		base => sub { lit(word($_[0])) }, variant => sub { lit(recase(word($_[0]))) } },
	ci => { s => 'text COLLATE ci', t => 'text COLLATE ci', cast => '%s', needs => 'icu',
		eq => '%s COLLATE ci = %s COLLATE ci',
		base => sub { lit(word($_[0])) }, variant => sub { lit(recase(word($_[0]))) } },
	citext => { s => 'citext', t => 'citext', cast => '%s', needs => 'citext',
		eq => '%s = %s',
		base => sub { lit(word($_[0])) }, variant => sub { lit(recase(word($_[0]))) } },
	text_to_citext => { s => 'text', t => 'citext', cast => 'CAST(%s AS citext)', needs => 'citext',
		eq => '%s = %s',
		base => sub { lit(word($_[0])) }, variant => sub { lit(recase(word($_[0]))) } },
	# timestamp(6) into timestamp(0): .4 s later is the same second
	ts_6_0 => { s => 'timestamp(6)', t => 'timestamp(0)', cast => 'CAST(%s AS timestamp(0))',
		eq => '%s = %s',
		base => sub { lit(ts_of($_[0], 0)) },
		variant => sub {
			my @f = (0, 1, 250000, 399999, 400000, 100000);
			lit(ts_of($_[0], $f[ int(rand(@f)) ]));
		} },
	ts => { s => 'timestamp', t => 'timestamp', cast => '%s', eq => '%s = %s',
		base => sub { lit(ts_of($_[0], 123456)) }, variant => sub { lit(ts_of($_[0], 123456)) } },
	# a column of the default collation, its unique index case-insensitive
	text_idx_ci => { s => 'text', t => 'text', idx => 'ci', cast => '%s', needs => 'icu',
		eq => '%s COLLATE ci = %s COLLATE ci',
		base => sub { lit(word($_[0]) . '@x.org') },
		variant => sub { lit(recase(word($_[0])) . '@x.org') } },
);

sub ts_of
{
	my ($i, $micro) = @_;
	my $s = 3600 * $i + 61;
	return sprintf('2026-03-%02d %02d:%02d:%02d.%06d', 1 + int($s / 86400),
		int($s % 86400 / 3600), int($s % 3600 / 60), $s % 60, $micro);
}

# the key types: one or two key columns
my @key_types = (
	[ 'int4->int8', 'int4_int8' ],
	[ 'int', 'int' ],
	[ 'numeric->numeric(10,0)', 'num_10_0' ],
	[ 'numeric->numeric(12,2)', 'num_12_2' ],
	[ 'numeric', 'num' ],
	[ 'text "C"', 'text_c' ],
	[ 'text->text COLLATE ci', 'text_to_ci' ],
	[ 'text COLLATE ci', 'ci' ],
	[ 'citext', 'citext' ],
	[ 'text->citext', 'text_to_citext' ],
	[ 'timestamp(6)->timestamp(0)', 'ts_6_0' ],
	[ 'timestamp', 'ts' ],
	[ 'text, index COLLATE ci', 'text_idx_ci' ],
	[ '(citext, int)', 'citext', 'int' ],
	[ '(text COLLATE ci, numeric->numeric(10,0))', 'ci', 'num_10_0' ],
	[ '(timestamp(6)->timestamp(0), text index COLLATE ci)', 'ts_6_0', 'text_idx_ci' ],
);

# How a case's runs load: fast (the first load built aside, then the plain
# insert or the MERGE), insert (a dropped column refuses the aside: the first
# load is the plain insert), trigger (a trigger on the target: the upsert),
# tomb (a delete marker: the upsert with the tombstones, one statement).
# Every key type is a tomb case and one of the other three, in turn.
my @flavors = qw(fast insert trigger);

my @cases;
my $offset = $seed % 3;
for my $i (0 .. $#key_types)
{
	my ($label, @kinds) = @{ $key_types[$i] };
	for my $flavor ($flavors[ ($i + $offset) % 3 ], 'tomb')
	{
		my $n = scalar(@cases) + 1;
		push @cases, { n => $n, name => "c$n", label => $label, flavor => $flavor,
			cols => [ map { { %{ $col{ $kinds[$_] } }, name => "k" . ($_ + 1) } } 0 .. $#kinds ] };
	}
}

# ---------------------------------------------------------------------------
# Running steps

my %paths;    # which load paths the runs took, over all cases

# run SQL for a case's step; on an error one failed test, and undef
sub step
{
	my ($c, $what, $query) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $query, on_error_stop => 1);
	return ($out, $err) if $ret == 0;
	fail(where($c, $what) . ': failed');
	diag(where($c, $what) . ": $err");
	return;
}

sub where
{
	my ($c, $what) = @_;
	return "HWM_KEYS_SEED=$seed HWM_KEYS_CASE=$c->{name} ($c->{label}, $c->{flavor}) $what";
}

sub keys_of { my ($c) = @_; return map { $_->{name} } @{ $c->{cols} }; }

# x and y's keys equal as the target's unique index has them
sub kmatch
{
	my ($c, $x, $y) = @_;
	return join(' AND ', map { sprintf($_->{eq}, "$x.$_->{name}", "$y.$_->{name}") } @{ $c->{cols} });
}

sub kimg { my ($c, $x) = @_; return 'ROW(' . join(', ', map { "$x.$_" } keys_of($c)) . ')::text'; }
sub vimg { my ($x) = @_; return "ROW($x.part, $x.v, $x.wm)::text"; }

# The oracle and the comparison: one row per difference (kind, row).  mode
# is first, run, reconcile, full or range (then $from, $to: the range; the
# target as it was before is in <case>_before).
sub compare_sql
{
	my ($c, $mode, $from, $to) = @_;
	my $t = $c->{name};
	my $dead = $c->{flavor} eq 'tomb' ? 's.deleted IS TRUE' : 'false';
	my $cast = join(', ', map { sprintf($_->{cast}, "s.$_->{name}") . " AS $_->{name}" } @{ $c->{cols} });
	my %status = (
		first => q{CASE WHEN NOT dead AND wm IS NOT NULL THEN 'live' ELSE 'gone' END},
		run => q{CASE WHEN wm IS NULL OR (dead AND silent) THEN 'any' WHEN dead THEN 'gone' ELSE 'live' END},
		reconcile => q{CASE WHEN dead THEN 'gone' WHEN wm IS NULL THEN 'any' ELSE 'live' END},
		full => q{CASE WHEN dead THEN 'gone' ELSE 'live' END},
		range => qq{CASE WHEN dead OR part NOT BETWEEN $from AND $to THEN 'gone' ELSE 'live' END},
	);
	my $in_range = $mode eq 'range' ? "WHERE part BETWEEN $from AND $to" : '';
	my $extra = $mode eq 'run' ? '' : qq{
UNION ALL
SELECT 'extra (the source has no such key)', m.tk || ' ' || m.tv FROM m WHERE m.neid IS NULL};
	my $outside = '';
	if ($mode eq 'range')
	{
		my $img = 'ROW(' . join(', ', map { "b.$_" } keys_of($c), qw(part v wm)) . ')::text';
		my $timg = 'ROW(' . join(', ', map { "t.$_" } keys_of($c), qw(part v wm)) . ')::text';
		$outside = qq{
UNION ALL
SELECT 'changed outside the range', d.side || ' ' || d.img FROM (
  (SELECT 'before:' AS side, $img AS img FROM ${t}_before b
    WHERE b.part NOT BETWEEN $from AND $to
      AND NOT EXISTS (SELECT FROM ${t}_tgt t WHERE t.part BETWEEN $from AND $to AND @{[ kmatch($c, 't', 'b') ]})
   EXCEPT ALL
   SELECT 'before:', $timg FROM ${t}_tgt t WHERE t.part NOT BETWEEN $from AND $to)
  UNION ALL
  (SELECT 'after:', $timg FROM ${t}_tgt t WHERE t.part NOT BETWEEN $from AND $to
   EXCEPT ALL
   SELECT 'after:', $img FROM ${t}_before b WHERE b.part NOT BETWEEN $from AND $to)) d};
	}
	return qq{
WITH o AS (SELECT s.eid, $cast, s.part, s.v, s.wm, $dead AS dead, s.silent FROM ${t}_src s),
n AS (SELECT DISTINCT ON (eid) o.*, $status{$mode} AS status,
              CASE WHEN dead AND silent THEN 'a tombstone without a new watermark value'
                   WHEN dead THEN 'a tombstone' ELSE 'live' END
              || ', wm ' || coalesce(wm::text, 'NULL') || ', partition ' || part
              || (SELECT CASE WHEN count(*) > 1 THEN ', the newest of ' || count(*) || ' rows: '
                              || string_agg(coalesce(a.wm::text, 'NULL') || CASE WHEN a.dead THEN ' tombstone' ELSE ' live' END,
                                            ', ' ORDER BY a.wm NULLS FIRST)
                              ELSE '' END
                    FROM o a WHERE a.eid = o.eid) AS what
       FROM o ORDER BY eid, wm DESC NULLS LAST, dead DESC),
t AS (SELECT * FROM ${t}_tgt $in_range),
m AS (SELECT n.eid AS neid, n.status, n.what, @{[ kimg($c, 't') ]} AS tk, @{[ vimg('t') ]} AS tv,
             @{[ kimg($c, 'n') ]} AS nk, @{[ vimg('n') ]} AS nv
        FROM t LEFT JOIN n ON @{[ kmatch($c, 't', 'n') ]})
SELECT 'missing', @{[ kimg($c, 'n') ]} || ' ' || @{[ vimg('n') ]} || ' (the source: ' || n.what || ')' FROM n
 WHERE n.status = 'live' AND NOT EXISTS (SELECT FROM t WHERE @{[ kmatch($c, 't', 'n') ]})
UNION ALL
SELECT 'differs', m.tk || ' ' || m.tv || ' (the source: ' || m.nv || ', ' || m.what || ')' FROM m
 WHERE m.status = 'live' AND m.tv <> m.nv
UNION ALL
SELECT 'not deleted', m.tk || ' ' || m.tv || ' (the source: ' || m.what || ')' FROM m WHERE m.status = 'gone'
UNION ALL
SELECT 'key spelling', m.tk || ' (the source: ' || m.nk || ')' FROM m
 WHERE m.status = 'live' AND m.tk <> m.nk
UNION ALL
SELECT 'the generator is wrong: entities ' || a.eid || ' and ' || b.eid || ' share a key', @{[ kimg($c, 'a') ]}
  FROM o a JOIN o b ON a.eid < b.eid AND @{[ kmatch($c, 'a', 'b') ]}
UNION ALL
SELECT 'the generator is wrong: entity ' || a.eid || ' has two keys', @{[ kimg($c, 'a') ]} || ' ' || @{[ kimg($c, 'b') ]}
  FROM o a JOIN o b ON a.eid = b.eid AND NOT (@{[ kmatch($c, 'a', 'b') ]})$extra$outside
ORDER BY 1, 2};
}

# the two tests of a step: rows, and key spelling
sub check
{
	my ($c, $what, $mode, $from, $to) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($out) = step($c, "$what: the comparison", compare_sql($c, $mode, $from, $to));
	return unless defined $out;
	my @diff = grep { $_ ne '' } split /\n/, $out;
	my @rows = grep { !/^key spelling\|/ } @diff;
	my @spelling = grep { /^key spelling\|/ } @diff;
	$c->{failed}++ if @rows || @spelling;
	ok(!@rows, where($c, "$what: the target's rows are the oracle's ($mode)"))
	  or diag(where($c, $what) . ":\n  " . join("\n  ", @rows));
	ok(!@spelling, where($c, "$what: its keys are spelled as the source's newest rows, cast ($mode)"))
	  or diag(where($c, $what) . ":\n  " . join("\n  ", @spelling));
}

# ---------------------------------------------------------------------------
# The generator: a model of the source's entities (one key each, never
# equal to another entity's key under the index), written as SQL.  An
# entity is live (one live row), dead (its newest row is a tombstone) or
# gone (no row).  Watermark values increase with every write that sets one.

sub new_case_state
{
	my ($c) = @_;
	$c->{wm} = 0;
	$c->{rid} = 0;
	$c->{entities} = {};
	$c->{next_eid} = 1;
}

sub next_wm { my ($c) = @_; return ++$c->{wm}; }
sub sqlv { return defined $_[0] ? $_[0] : 'NULL'; }

sub key_values
{
	my ($c, $eid, $fn) = @_;
	return [ map { $_->{$fn}->($eid) } @{ $c->{cols} } ];
}

sub random_v
{
	my $r = rand();
	return 'NULL' if $r < 0.15;
	return lit(('red', 'Red', 'green', 'blue', '')[ int(rand(5)) ] . int(rand(3)));
}

sub insert_row
{
	my ($c, $eid, %o) = @_;
	my $rid = ++$c->{rid};
	my $keys = $o{keys} // key_values($c, $eid, 'variant');
	my $wm = $o{wm_null} ? undef : next_wm($c);
	my $deleted = $o{deleted} ? 'true'
	  : $c->{flavor} eq 'tomb' ? ('NULL', 'false')[ int(rand(2)) ] : 'NULL';
	my $part = $o{part} // 1 + int(rand(3));
	push @{ $c->{entities}{$eid}{rows} }, { rid => $rid, wm => $wm, deleted => $o{deleted} };
	return sprintf("INSERT INTO %s_src (rid, eid, %s, part, v, wm, deleted) VALUES (%d, %d, %s, %d, %s, %s, %s);\n",
		$c->{name}, join(', ', keys_of($c)), $rid, $eid, join(', ', @$keys), $part,
		random_v(), sqlv($wm), $deleted);
}

# a new entity, live; its watermark NULL now and then
sub op_new
{
	my ($c) = @_;
	my $eid = $c->{next_eid}++;
	$c->{entities}{$eid} = { state => 'live', rows => [] };
	return insert_row($c, $eid, wm_null => rand() < 0.15);
}

sub live_row { my ($c, $eid) = @_; return (grep { !$_->{deleted} } @{ $c->{entities}{$eid}{rows} })[-1]; }

# an update of the live row: other columns, perhaps its partition, perhaps
# its key (to a value equal under the index), a new watermark value
sub op_update
{
	my ($c, $eid, $key_change) = @_;
	my $row = live_row($c, $eid);
	$row->{wm} = next_wm($c);
	my @set = ("v = " . random_v(), "wm = $row->{wm}");
	push @set, 'part = ' . (1 + int(rand(3))) if rand() < 0.3;
	if ($key_change)
	{
		my $keys = key_values($c, $eid, 'variant');
		push @set, map { "$_ = $keys->[$_ =~ s/k//r - 1]" } keys_of($c);
	}
	return sprintf("UPDATE %s_src SET %s WHERE rid = %d;\n", $c->{name}, join(', ', @set), $row->{rid});
}

sub op_hard_delete
{
	my ($c, $eid) = @_;
	$c->{entities}{$eid} = { state => 'gone', rows => [] };
	return sprintf("DELETE FROM %s_src WHERE eid = %d;\n", $c->{name}, $eid);
}

# the live row marked deleted, with a new watermark value or (silent) not:
# no run sees the silent one, an overwrite or a reconcile must
sub op_soft_delete
{
	my ($c, $eid) = @_;
	my $row = live_row($c, $eid);
	my $silent = rand() < 0.35;
	$row->{deleted} = 1;
	$c->{entities}{$eid}{state} = 'dead';
	return sprintf("UPDATE %s_src SET deleted = true, silent = true WHERE rid = %d;\n", $c->{name}, $row->{rid})
	  if $silent;
	$row->{wm} = next_wm($c);
	return sprintf("UPDATE %s_src SET deleted = true, wm = %d WHERE rid = %d;\n", $c->{name}, $row->{wm}, $row->{rid});
}

# a tombstone as a newer row of the key (an event log): the live row stays
sub op_tombstone_row
{
	my ($c, $eid) = @_;
	$c->{entities}{$eid}{state} = 'dead';
	return insert_row($c, $eid, deleted => 1);
}

# a dead or gone entity live again: its rows replaced by one live row
sub op_revive
{
	my ($c, $eid) = @_;
	my $sql = sprintf("DELETE FROM %s_src WHERE eid = %d;\n", $c->{name}, $eid);
	$c->{entities}{$eid} = { state => 'live', rows => [] };
	return $sql . insert_row($c, $eid, wm_null => rand() < 0.15);
}

sub entities_in
{
	my ($c, $state) = @_;
	return sort { $a <=> $b } grep { $c->{entities}{$_}{state} eq $state } keys %{ $c->{entities} };
}

sub pick { return @_ ? $_[ int(rand(@_)) ] : undef; }

# one mutation of the source, as SQL
sub mutation
{
	my ($c, $inserts_only) = @_;
	return op_new($c) if $inserts_only;
	my $tomb = $c->{flavor} eq 'tomb';
	my @live = entities_in($c, 'live');
	my @other = (entities_in($c, 'dead'), entities_in($c, 'gone'));
	my $r = rand();
	return op_new($c) if $r < 0.15 || !@live;
	return op_update($c, pick(@live), 0) if $r < 0.35;
	return op_update($c, pick(@live), 1) if $r < 0.6;
	return op_hard_delete($c, pick(@live, @other)) if $r < 0.7;
	if ($tomb && $r < 0.8)
	{
		return op_soft_delete($c, pick(@live));
	}
	if ($tomb && $r < 0.9)
	{
		# an older live row without a watermark value is the interesting one
		my @null = grep { !defined live_row($c, $_)->{wm} } @live;
		return op_tombstone_row($c, @null && rand() < 0.6 ? pick(@null) : pick(@live));
	}
	return @other ? op_revive($c, pick(@other)) : op_new($c);
}

# ---------------------------------------------------------------------------
# The steps of a case

sub setup_case
{
	my ($c) = @_;
	my $t = $c->{name};
	my $src_keys = join('', map { "$_->{name} $_->{s} NOT NULL, " } @{ $c->{cols} });
	my $tgt_keys = join('', map { "$_->{name} $_->{t} NOT NULL, " } @{ $c->{cols} });
	my $idx = join(', ', map { $_->{name} . ($_->{idx} ? " COLLATE $_->{idx}" : '') } @{ $c->{cols} });
	my $sql = qq{
CREATE TABLE ${t}_src (rid int PRIMARY KEY, eid int NOT NULL, $src_keys part int NOT NULL,
                       v text, wm bigint, deleted boolean, silent boolean NOT NULL DEFAULT false);
CREATE TABLE ${t}_tgt (${tgt_keys}part int NOT NULL, v text, wm bigint);
CREATE UNIQUE INDEX ON ${t}_tgt ($idx);
};
	$sql .= "ALTER TABLE ${t}_tgt ADD COLUMN dropped int; ALTER TABLE ${t}_tgt DROP COLUMN dropped;\n"
	  if $c->{flavor} eq 'insert';
	$sql .= qq{
CREATE FUNCTION ${t}_trg() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NEW; END \$\$;
CREATE TRIGGER ${t}_trg BEFORE INSERT OR UPDATE ON ${t}_tgt FOR EACH ROW EXECUTE FUNCTION ${t}_trg();
} if $c->{flavor} eq 'trigger';
	$sql .= sprintf("SELECT hwm.create_pipeline('%s', '%s_src', '%s_tgt', '{%s}', 'wm', partition_column => 'part'%s);\n",
		$t, $t, $t, join(',', keys_of($c)),
		$c->{flavor} eq 'tomb' ? q{, delete_column => 'deleted'} : '');
	return defined step($c, 'setup', $sql);
}

# a run: which path loaded its slice (its DEBUG1), then the check
sub run_step
{
	my ($c, $what, $mode) = @_;
	my ($out, $err) = step($c, $what,
		"SET client_min_messages = debug1;\nSELECT rows_upserted, rows_deleted FROM hwm.run('$c->{name}');");
	return unless defined $out;
	my $path = $err =~ /the slice is loaded by (building it aside|plain insert|merge|upsert)/ ? $1 : 'nothing';
	$path = 'upsert with tombstones' if $path eq 'upsert' && $c->{flavor} eq 'tomb';
	$paths{$path}++;
	check($c, "$what (loaded by $path, upserted|deleted $out)", $mode);
}

# the reconcile: its dry run counts the rows the oracle says it must delete,
# then it deletes them and only them
sub reconcile_step
{
	my ($c, $what, $batch) = @_;
	my $t = $c->{name};
	my ($expected) = step($c, "$what: the rows to delete", qq{
WITH o AS (SELECT s.eid, @{[ join(', ', map { sprintf($_->{cast}, "s.$_->{name}") . " AS $_->{name}" } @{ $c->{cols} }) ]},
                  s.wm, @{[ $c->{flavor} eq 'tomb' ? 's.deleted IS TRUE' : 'false' ]} AS dead FROM ${t}_src s),
n AS (SELECT DISTINCT ON (eid) o.* FROM o ORDER BY eid, wm DESC NULLS LAST, dead DESC)
SELECT count(*) FROM ${t}_tgt t WHERE NOT EXISTS (SELECT FROM n WHERE NOT n.dead AND @{[ kmatch($c, 't', 'n') ]})});
	return unless defined $expected;
	my (undef, $dry) = step($c, "$what: dry run", "CALL hwm.reconcile('$t', dry_run => true);");
	return unless defined $dry;
	my $would = $dry =~ /no target row to delete/ ? 0 : $dry =~ /(\d+) target rows would be deleted/ ? $1 : "?";
	is($would, $expected, where($c, "$what: the dry run would delete the $expected rows the oracle says"))
	  or ($c->{failed}++, diag($dry));
	my ($deleted) = step($c, "$what: batch_size $batch", qq{
CALL hwm.reconcile('$t', batch_size => $batch);
SELECT rows_deleted FROM hwm.backfills WHERE pipeline = '$t' AND kind = 'reconcile' ORDER BY backfill_id DESC LIMIT 1;});
	return unless defined $deleted;
	is($deleted, $expected, where($c, "$what: batch_size $batch deleted the $expected rows the oracle says"))
	  or $c->{failed}++;
	check($c, "$what (batch_size $batch)", 'reconcile');
}

# an overwrite or a backfill of a range of partitions
sub range_step
{
	my ($c, $what, $kind, $from, $to) = @_;
	my $t = $c->{name};
	my $call = $kind eq 'overwrite'
	  ? "SELECT rows_deleted, rows_inserted FROM hwm.overwrite('$t', '$from', '$to');"
	  : "CALL hwm.backfill('$t', '$from', '$to', batch_size => 1);";
	return unless defined step($c, "$what: $kind $from..$to",
		"DROP TABLE IF EXISTS ${t}_before;\nCREATE TABLE ${t}_before AS SELECT * FROM ${t}_tgt;\n$call");
	my $full = $from == 1 && $to == 3;
	check($c, "$what: $kind of partitions $from..$to", $full ? 'full' : 'range', $from, $to);
}

sub run_case
{
	my ($c) = @_;
	srand($seed * 1000 + $c->{n});
	new_case_state($c);
	return unless setup_case($c);

	# the first load: into the empty target
	my $sql = '';
	$sql .= op_new($c) for 1 .. 8 + int(rand(5));
	if ($c->{flavor} eq 'tomb')
	{
		$sql .= mutation($c) for 1 .. 3;
	}
	return unless defined step($c, 'the first source rows', $sql);
	run_step($c, 'the first run', 'first');

	for my $round (1 .. $rounds)
	{
		my $inserts_only = rand() < 0.2;
		$sql = '';
		$sql .= mutation($c, $inserts_only) for 1 .. 3 + int(rand(5));
		return unless defined step($c, "round $round: the source's changes", $sql);
		run_step($c, "round $round: run", 'run');
		my $r = rand();
		my ($from, $to) = sort { $a <=> $b } (1 + int(rand(3)), 1 + int(rand(3)));
		if ($r < 0.35) { reconcile_step($c, "round $round: reconcile", pick(1, 1, 2, 3, 100)); }
		elsif ($r < 0.6) { range_step($c, "round $round", 'overwrite', $from, $to); }
		elsif ($r < 0.8) { range_step($c, "round $round", 'backfill', $from, $to); }
	}

	# the end: every path once more, after one more change each
	$sql = '';
	$sql .= mutation($c) for 1 .. 4;
	return unless defined step($c, "the last changes", $sql);
	run_step($c, 'the last run', 'run');
	reconcile_step($c, 'the last reconcile', 1);
	$sql = '';
	$sql .= mutation($c) for 1 .. 4;
	return unless defined step($c, "changes before the last overwrite", $sql);
	range_step($c, 'the last', 'overwrite', 1, 3);
	$sql = '';
	$sql .= mutation($c) for 1 .. 4;
	return unless defined step($c, "changes before the last backfill", $sql);
	range_step($c, 'the last', 'backfill', 1, 3);
}

my $started = time();
for my $c (@cases)
{
	next if defined $only && $c->{name} ne $only;
	my @needs = grep { defined } map { $_->{needs} } @{ $c->{cols} };
	if (grep { ($_ eq 'icu' && !$has_icu) || ($_ eq 'citext' && !$has_citext) } @needs)
	{
		note("$c->{name} ($c->{label}, $c->{flavor}): skipped, the server lacks " . join(' and ', @needs));
		next;
	}
	run_case($c);
}
note(sprintf('%d cases in %.1f s; the runs loaded by: %s', scalar(@cases), time() - $started,
	join(', ', map { "$_ $paths{$_}" } sort keys %paths)));
my @failed = grep { $_->{failed} } @cases;
diag("seed $seed: the cases that failed: "
	  . join('; ', map { "$_->{name} ($_->{label}, $_->{flavor})" } @failed)) if @failed;

# every path was taken at least once (unless one case was asked for)
if (!defined $only)
{
	ok($paths{$_}, "some run was loaded by $_")
	  for ('building it aside', 'plain insert', 'merge', 'upsert', 'upsert with tombstones');
}

$node->stop;
done_testing();
