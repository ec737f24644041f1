# revenant: deterministic simulation and fault-injection harness.
# GNU make. `make` builds ./revenant; `make test` runs every test and the
# scenario library; see README.md and docs/ for the rest.

CC       ?= cc
BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
OPT      ?= -O2 -g
SAN      ?=
PKGS     := sqlite3 libcjson cmocka libfiu lua5.4
DEBS     := libsqlite3-dev libcjson-dev libcmocka-dev libfiu-dev liblua5.4-dev pkg-config

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs sqlite3 libcjson libfiu lua5.4 2>/dev/null)
TEST_LIBS  := $(shell pkg-config --libs cmocka 2>/dev/null)

# -fno-plt: a call into a shared library (Lua's C API, SQLite, libc) goes
# through its GOT entry at once, not a PLT stub (docs/bench.md, issue #13).
CFLAGS  += -std=c11 -D_GNU_SOURCE -DFIU_ENABLE -Wall -Wextra -Werror \
           -Wshadow -Wstrict-prototypes -fno-plt $(OPT) $(SAN) $(PKG_CFLAGS) -I.
LDFLAGS += $(SAN)
LDLIBS  += $(PKG_LIBS) -lm

# The floors (docs/architecture.md): each folder only includes the ones below.
LIB_DIRS := sim runtime faults checks scenarios reports
LIB_SRC  := $(sort $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_SRC  := $(sort $(wildcard cli/*.c))
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
LIB      := $(BUILD)/librevenant.a
# ./revenant for the default build; another BUILD gets its own binary inside
# it (make CC=clang BUILD=build-clang test builds and tests build-clang/revenant).
BIN      := $(if $(filter build,$(BUILD)),revenant,$(BUILD)/revenant)

.PHONY: all deps test demo bench asan coverage install clean valgrind
# Keep the objects of test and bench binaries (no "rm" after the summary line).
.SECONDARY:
.DEFAULT_GOAL := all

# deps: install the Debian packages when root, otherwise name the command.
deps:
	@missing=""; \
	for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || missing="$$missing $$p"; done; \
	command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  echo "revenant: missing:$$missing"; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "revenant: installing $(DEBS) with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBS) libxml2-utils) >&2 || exit 1; \
	  else \
	    echo "revenant: run: sudo apt-get install $(DEBS)"; exit 1; \
	  fi; \
	fi

ifeq ($(PKG_LIBS),)
# Libraries not found at parse time: install them, then run the goal again
# in a fresh make that sees their pkg-config flags.
all test demo bench asan coverage install valgrind: deps
	@pkg-config --exists $(PKGS) || { echo "revenant: pkg-config still cannot find $(PKGS)"; exit 1; }
	@$(MAKE) --no-print-directory $@
else

all: $(BIN)

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The HTML report's CSS and JavaScript, embedded as C strings (checked in).
reports/rpt_html_assets.h: reports/html/report.css reports/html/report.js reports/html/embed.sh
	sh reports/html/embed.sh > $@.tmp && mv $@.tmp $@

$(BUILD)/reports/rpt_html.o: reports/rpt_html_assets.h

# The Makefile too: a change of CFLAGS here rebuilds every object.
$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) $(TEST_LIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

test: all $(TEST_BIN)
	@BUILD=$(BUILD) REVENANT="$${REVENANT:-./$(BIN)}" sh tests/run_tests.sh $(TEST_BIN)

demo: all
	./$(BIN) run scenarios/examples

bench: all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do ./$$b || exit 1; done

asan:
	$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g" \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  BIN=build-asan/revenant REVENANT=build-asan/revenant test

# coverage: `make test` built with gcov in build-cov (counters reset first),
# then test_inject's sweep over the whole library (every allocation and
# SQLite call site failed in turn), then gcovr's summary over runtime/ as
# `name: value %` (docs/bench.md).
# gcovr comes from Debian like the other dependencies.
coverage:
	@command -v gcovr >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "revenant: installing gcovr with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcovr) >&2 || exit 1; \
	  else echo "revenant: run: sudo apt-get install gcovr"; exit 1; fi; }
	@mkdir -p build-cov && find build-cov -name '*.gcda' -delete
	$(MAKE) --no-print-directory BUILD=build-cov OPT="-O0 -g --coverage -DREVENANT_COVERAGE" LDFLAGS=--coverage \
	  BIN=build-cov/revenant REVENANT=build-cov/revenant test
	@echo "test_inject: the failure-injection sweep over the whole library (REVENANT_INJECT_ALL=1)"
	@REVENANT_INJECT_ALL=1 build-cov/tests/test_inject > build-cov/inject-all.log 2>&1 || \
	  { tail -20 build-cov/inject-all.log; echo "revenant: the library injection sweep failed"; exit 1; }
	@gcovr -r . --object-directory build-cov --filter 'runtime/' --exclude-unreachable-branches \
	  --print-summary -o build-cov/coverage.txt > build-cov/summary.txt
	@sed -n 's/^lines: *\([0-9.]*\)%.*/runtime_line_coverage: \1 %/p; s/^branches: *\([0-9.]*\)%.*/runtime_branch_coverage: \1 %/p' build-cov/summary.txt
	@echo "per file: build-cov/coverage.txt"

valgrind: all $(TEST_BIN)
	@for t in $(TEST_BIN); do \
	  valgrind -q --error-exitcode=99 --leak-check=full $$t >/dev/null 2>$(BUILD)/vg.log || { cat $(BUILD)/vg.log; echo "valgrind: $$t failed"; exit 1; }; \
	done; echo "valgrind: all test binaries clean"

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/revenant/scenarios
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/revenant
	cp -R scenarios/examples scenarios/incidents scenarios/regression $(DESTDIR)$(PREFIX)/share/revenant/scenarios/

endif

clean:
	rm -rf build build-asan build-cov $(BIN)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(BENCH_BIN:=.d)
