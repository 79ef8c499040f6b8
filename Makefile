# hwm: PGXS build.  `make && make install`, then `make installcheck` runs the
# regression and isolation suites against a temporary instance that the run
# starts itself (it preloads hwm through test/hwm.conf); no server is needed.
# The regression suite and the TAP tests on the scheduler's mock clock also
# need the tests' own module, installed next to hwm (as root, like `make
# install`): `make install-test-module`, below.
# scripts/test.sh is the one command that does all of that from a fresh machine.

EXTENSION = hwm
MODULE_big = hwm
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
DATA = $(sort $(wildcard hwm--*.sql))
PGFILEDESC = "hwm - high-water-mark incremental loads, partition overwrite and backfill"

# One file per feature, in this order (install first: it creates the extension).
REGRESS = install lesson_load lesson_overwrite lesson_backfill load catch_up types changed \
	overwrite_partition backfill swap swap_more bad_input partition_exchange \
	privileges injection planted bad_input_more fuzz schedule dependencies reread command \
	grid owners plans typed_bounds run_owns alter_pipeline reconcile reconcile_schedule load_fast load_aside bulk_fill tombstones plan_cache \
	keys chains freshness intervals intervals_infinite schedule_after schedule_on_commit history
REGRESS_OPTS = --temp-instance=./tmp_check --temp-config=test/hwm.conf
# sql/grid.sql declares its probe from the tests' own module: without it, say so
# before the run rather than in grid's diff
ifneq ($(filter grid,$(REGRESS)),)
REGRESS_PREP = test-module-installed
endif

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

ISOLATION = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --temp-instance=./tmp_check_iso --temp-config=test/hwm.conf \
	--inputdir=test --outputdir=output_iso

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir)/src
SHLIB_LINK += $(filter -lm, $(LIBS))
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

EXTRA_CLEAN = tmp_check tmp_check_iso output_iso results regression.diffs regression.out

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: every object depends on every header
# (a handful of small files; a wrong rebuild costs more than a full one).
$(OBJS): $(wildcard src/*.h)

# The TAP tests' shared code, test/perl/HwmTest.pm.  PG_PROVE_FLAGS, not
# PROVE_FLAGS: scripts/test.sh sets PROVE_FLAGS (-j4 --timer) on the command line.
PG_PROVE_FLAGS += -I $(srcdir)/test/perl

# The tests' own C module, test/modules/hwm_test (see its Makefile): never
# built or installed with hwm, and not by `make installcheck`, which runs as
# a user who cannot install.
# `make clean` cleans it too, so that a build for another PostgreSQL starts
# over there as well.
TEST_MODULE = test/modules/hwm_test
.PHONY: test-module install-test-module clean-test-module test-module-installed
test-module:
	$(MAKE) -C $(TEST_MODULE) PG_CONFIG='$(PG_CONFIG)'
install-test-module:
	$(MAKE) -C $(TEST_MODULE) PG_CONFIG='$(PG_CONFIG)' install
clean-test-module:
	$(MAKE) -C $(TEST_MODULE) PG_CONFIG='$(PG_CONFIG)' clean
clean: clean-test-module
test-module-installed:
	@test -f '$(pkglibdir)/hwm_test$(DLSUFFIX)' || { \
	  echo "sql/grid.sql needs the tests' own module: run 'make install-test-module' (as root, as 'make install')" >&2; \
	  exit 1; }
