# retryd — plain Makefile. `make` builds build/retryd, build/retryctl and the
# client library (build/libretryd-client.a, .so); `make check` runs every
# test; `make check SANITIZE=1` does the same under ASan+UBSan in build/san.
# `make install PREFIX=...` / `make uninstall` (DESTDIR is honoured);
# `make interop` drives retryd with pi's own RpcClient (needs npm).
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
endif

PKGS      := libuv jansson libpcre2-8 libcurl
# Evaluated lazily, once, after scripts/deps.sh has had its chance to install them.
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS)))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKGS)))$(PKG_LIBS)
CHECK_CFLAGS = $(eval CHECK_CFLAGS := $(shell pkg-config --cflags check))$(CHECK_CFLAGS)
CHECK_LIBS   = $(eval CHECK_LIBS := $(shell pkg-config --libs check))$(CHECK_LIBS)
# The client library needs only these (none of the daemon's own).
CLIENT_PKGS := libuv jansson
CLIENT_PKG_CFLAGS = $(eval CLIENT_PKG_CFLAGS := $(shell pkg-config --cflags $(CLIENT_PKGS)))$(CLIENT_PKG_CFLAGS)
CLIENT_PKG_LIBS   = $(eval CLIENT_PKG_LIBS := $(shell pkg-config --libs $(CLIENT_PKGS)))$(CLIENT_PKG_LIBS)

WARN    := -Wall -Wextra -Wpedantic -Wstrict-prototypes -Wmissing-prototypes -Wshadow
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) \
             -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)
# Library objects: position-independent, only the RETRYD_API symbols exported.
CLIENT_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) \
                -Iinclude -Isrc/client $(CLIENT_PKG_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP
CTL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(SANFLAGS) \
             -Iinclude -Isrc/retryctl $(CLIENT_PKG_CFLAGS) -MMD -MP

SRCS     := $(wildcard src/*.c)
LIB_SRCS := $(filter-out src/main.c,$(SRCS))
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRCS := $(wildcard tests/unit/check_*.c)
UNIT_OBJS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%.o)
CLIENT_SRCS := $(wildcard src/client/*.c)
CLIENT_OBJS := $(CLIENT_SRCS:src/client/%.c=$(BUILD)/client/%.o)
CTL_SRCS := $(wildcard src/retryctl/*.c)
CTL_OBJS := $(CTL_SRCS:src/retryctl/%.c=$(BUILD)/retryctl.d/%.o)
CTL_PURE_OBJS := $(filter-out $(BUILD)/retryctl.d/main.o,$(CTL_OBJS))

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

.PHONY: all deps check unit e2e demo bench conformance interop install uninstall clean FORCE
all: $(BIN) $(CTL) $(CLIENT_A) $(CLIENT_SO) $(CLIENT_PC)

deps:
	@scripts/deps.sh

$(BUILD)/obj/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BIN): $(LIB_OBJS) $(BUILD)/obj/main.o
	$(CC) $(LDFLAGS_ALL) $^ $(PKG_LIBS) -o $@

$(BUILD)/client/%.o: src/client/%.c | deps
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
	$(CC) $(LDFLAGS_ALL) $^ $(CLIENT_PKG_LIBS) -o $@

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
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Itests/unit -Isrc/client -Isrc/retryctl -c $< -o $@

$(BUILD)/unit/runner.o: $(BUILD)/unit/runner.c
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(UNIT_BIN): $(UNIT_OBJS) $(BUILD)/unit/runner.o $(LIB_OBJS) $(CLIENT_OBJS) $(CTL_PURE_OBJS)
	$(CC) $(LDFLAGS_ALL) $^ $(CHECK_LIBS) $(PKG_LIBS) -o $@

unit: $(UNIT_BIN)
	$(UNIT_BIN)

e2e: $(BIN) $(CTL) $(PROBE) $(CLIENT_A) $(CLIENT_SO)
	RETRYD=$(abspath $(BIN)) python3 tests/e2e/run.py

check: deps
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory e2e

demo: deps
	@$(MAKE) --no-print-directory $(BIN)
	@RETRYD=$(abspath $(BIN)) scripts/demo.sh

# Not part of make check: these install pi from npm into build/pi (when the
# registry is reachable) and measure or compare against it.
bench: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) python3 scripts/bench.py

conformance: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) python3 scripts/conformance.py

# pi's RpcClient against retryd; says so and succeeds when npm is unreachable.
interop: deps
	@$(MAKE) --no-print-directory $(BIN)
	RETRYD=$(abspath $(BIN)) scripts/interop.sh

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

# Removes what install put there, and the directories of our own when empty.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/retryd $(DESTDIR)$(BINDIR)/retryctl
	rm -f $(DESTDIR)$(LIBDIR)/libretryd-client.a $(DESTDIR)$(LIBDIR)/libretryd-client.so \
	    $(DESTDIR)$(LIBDIR)/$(CLIENT_SONAME) $(DESTDIR)$(LIBDIR)/$(notdir $(CLIENT_SO_REAL))
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/retryd-client.pc
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/retryd/,$(notdir $(HEADERS)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MANPAGES)))
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/retryd/schemas/,$(notdir $(SCHEMAS)))
	rmdir $(DESTDIR)$(INCLUDEDIR)/retryd $(DESTDIR)$(DATADIR)/retryd/schemas \
	    $(DESTDIR)$(DATADIR)/retryd 2>/dev/null || true

FORCE:

clean:
	rm -rf build

-include $(LIB_OBJS:.o=.d) $(BUILD)/obj/main.d $(UNIT_OBJS:.o=.d) $(CLIENT_OBJS:.o=.d) \
         $(CTL_OBJS:.o=.d) $(BUILD)/e2e/client_probe.d
