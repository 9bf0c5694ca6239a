# Agent Lane — GNU make.
#
#   make                 build build/agent-laned, build/agent-lanectl, libagentlane
#   make check           build and run every test suite (one summary line at the end)
#   make check-lima      the real-Lima tier: Lima 2.2's own limactl on QEMU
#                        guests (tests/lima; tens of minutes under TCG)
#   make -s lima-env     the shell assignments that run agent-laned on real
#                        Lima the way the tier does
#   make poc             on a Mac with Homebrew's Lima: the same real-Lima
#                        checks, and a report to paste into an issue
#   make install PREFIX=/usr/local [DESTDIR=...]
#   make deps            install build and test dependencies (apt or Homebrew)
#
# Variants live in their own build directories so they never mix objects:
#   make BUILD=build/asan SANITIZE=address,undefined CC=clang
#   make fuzz            libFuzzer targets in build/fuzz/ (clang)

# One version: the library header's (AL_VERSION_STRING).
VERSION    := $(shell sed -n 's/^\#define AL_VERSION_STRING "\(.*\)"/\1/p' client/agentlane.h)
PREFIX     ?= /usr/local
BUILD      ?= build
PKG_CONFIG ?= pkg-config
PROTOC_C   ?= protoc-c
UNAME_S    := $(shell uname -s)

# OpenSSL 3: the lane proxy's TLS (libevent's bufferevent_openssl), the lane
# CA, digests. libpsl: the Public Suffix List, which a secret's wildcard
# host must not cover (daemon/hostrule.c). The client links none of it
# (CLIENT_LIBS).
PKGS := libevent libevent_openssl libprotobuf-c sqlite3 libarchive openssl libpsl

# `make V=1` shows the full commands.
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
endif

ifeq ($(UNAME_S),Darwin)
PLATFORM_CFLAGS := -D_DARWIN_C_SOURCE
SHLIB_EXT := dylib
# The install name is set for the real prefix by `make install`.
SHLIB_FLAGS = -dynamiclib -install_name @rpath/libagentlane.$(SHLIB_EXT) \
	-compatibility_version 3 -current_version 3
# libarchive, sqlite and openssl@3 are keg-only in Homebrew.
BREW_PREFIX := $(shell brew --prefix 2>/dev/null)
export PKG_CONFIG_PATH := $(BREW_PREFIX)/opt/libarchive/lib/pkgconfig:$(BREW_PREFIX)/opt/sqlite/lib/pkgconfig:$(BREW_PREFIX)/opt/openssl@3/lib/pkgconfig:$(PKG_CONFIG_PATH)
else
PLATFORM_CFLAGS := -D_GNU_SOURCE
SHLIB_EXT := so
SHLIB_FLAGS = -shared -Wl,-soname,libagentlane.so.2
endif

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

# The client (libagentlane, agent-lanectl) does not link libarchive: its
# dependency chain cost every exec ~1.5 ms. client/lib/archload.c dlopens it
# on the first copy, by soname first and then by the path pkg-config gives.
ARCHIVE_LIBDIR := $(shell $(PKG_CONFIG) --variable=libdir libarchive 2>/dev/null)
ifeq ($(UNAME_S),Darwin)
ARCHIVE_SONAME := libarchive.13.dylib
ARCHIVE_PATH   := $(ARCHIVE_LIBDIR)/libarchive.13.dylib
DL_LIBS :=
else
ARCHIVE_SONAME := $(or $(shell readelf -d $(ARCHIVE_LIBDIR)/libarchive.so 2>/dev/null | \
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'),libarchive.so.13)
ARCHIVE_PATH   := $(ARCHIVE_LIBDIR)/$(ARCHIVE_SONAME)
DL_LIBS := -ldl -lpthread
endif
CLIENT_LIBS := $(shell $(PKG_CONFIG) --libs libprotobuf-c 2>/dev/null) $(DL_LIBS) -lm

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wformat=2 \
	-Wstrict-prototypes -Wmissing-prototypes -Wvla -Wno-unused-parameter
# snprintf truncation is how this code bounds strings; gcc's guesses about
# it are noise (clang has no such warning).
ifneq ($(shell $(CC) --version 2>/dev/null | grep -c clang),0)
WARNINGS += -Wno-unknown-warning-option
else
WARNINGS += -Wno-format-truncation
endif
OPTFLAGS ?= -O2 -g
ifneq ($(SANITIZE),)
ifeq ($(SANITIZE),fuzz)
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
else
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
endif

CPPFLAGS += -I$(BUILD)/gen -Iproto -Idaemon -Iclient -DAGENT_LANE_VERSION='"$(VERSION)"' \
	$(PLATFORM_CFLAGS)
CFLAGS   ?=
# Hidden by default: libagentlane exports only what agentlane.h marks AL_API
# (its protobuf-c code would clash with a host program's own copy).
CFLAGS   += -std=c11 $(WARNINGS) $(OPTFLAGS) $(SANFLAGS) -fPIC -fvisibility=hidden \
	$(PKG_CFLAGS)
LDFLAGS  += $(SANFLAGS)
LDLIBS   += $(PKG_LIBS) $(DL_LIBS) -lm

GEN_C := $(BUILD)/gen/agentlane.pb-c.c
GEN_H := $(BUILD)/gen/agentlane.pb-c.h
GEN_HELPER := $(BUILD)/gen/guest_helper.c
GEN_TEMPLATES := $(BUILD)/gen/ctl_templates.c
TEMPLATES := launchd/dev.agent-lane.agent-laned.plist.in \
	launchd/agent-laned.service.in launchd/agent-laned.socket.in

PROTO_SRCS  := $(GEN_C) proto/wire.c proto/units.c proto/text.c \
	       proto/nearest.c
DAEMON_MAIN := daemon/agent-laned.c
DAEMON_SRCS := $(filter-out $(DAEMON_MAIN),$(wildcard daemon/*.c))
LIB_SRCS    := $(wildcard client/lib/*.c)
CTL_SRCS    := $(wildcard client/ctl/*.c)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst $(BUILD)/%,%,$(1)))

PROTO_OBJS  := $(call obj,$(PROTO_SRCS))
DAEMON_OBJS := $(call obj,$(DAEMON_SRCS) $(GEN_HELPER))
LIB_OBJS    := $(call obj,$(LIB_SRCS))
CTL_OBJS    := $(call obj,$(CTL_SRCS) $(GEN_TEMPLATES))
UNIT_BINS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(BUILD)/%,$(FUZZ_SRCS))

LIBAGENTLANE_A  := $(BUILD)/libagentlane.a
LIBAGENTLANE_SO := $(BUILD)/libagentlane.$(SHLIB_EXT)
LIBLANED_A      := $(BUILD)/liblaned.a
LANED           := $(BUILD)/agent-laned
LANECTL         := $(BUILD)/agent-lanectl

.PHONY: all check check-lima check-vm lima-env poc tests fuzz fuzz-targets install uninstall deps setup clean node asan bench
# Objects made through pattern chains are kept, not deleted after linking.
.SECONDARY:
.DEFAULT_GOAL := all

all: $(LANED) $(LANECTL) $(LIBAGENTLANE_A) $(LIBAGENTLANE_SO) $(BUILD)/agentlane.pc

# protoc-c writes next to the relative path of its input; keep the include
# path at proto/ so the generated names are stable.
$(GEN_C) $(GEN_H) &: proto/agentlane.proto
	@mkdir -p $(BUILD)/gen
	$(call say,PROTOC,$<)
	$(Q)$(PROTOC_C) --proto_path=proto --c_out=$(BUILD)/gen proto/agentlane.proto

# The guest helper travels as `perl -e`: embed it without comments or
# indentation to keep the limactl command line short. `use strict` is left
# out of the embedded copy (loading strict.pm in the guest would cost every
# exec time for nothing) and checked here instead, at build time, on the
# stripped program itself: what is checked is what runs.
GEN_HELPER_PL := $(BUILD)/gen/guest-helper.min.pl
$(GEN_HELPER_PL): daemon/guest-helper.pl
	@mkdir -p $(BUILD)/gen
	$(call say,GEN,$@)
	$(Q)sed -e '/^[[:space:]]*#/d' -e '/^use strict;$$/d' -e 's/^[[:space:]]*//' \
	    -e '/^$$/d' $< > $@.tmp
	$(Q)perl -Mstrict -c $@.tmp 2>/dev/null || { perl -Mstrict -c $@.tmp; rm -f $@.tmp; exit 1; }
	$(Q)mv -f $@.tmp $@

$(GEN_HELPER): $(GEN_HELPER_PL)
	$(call say,GEN,$@)
	$(Q){ echo '/* Generated from daemon/guest-helper.pl. */'; \
	  echo 'extern const char guest_helper_source[];'; \
	  echo 'const char guest_helper_source[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@

# The service files agent-lanectl installs, compiled in so that `daemon
# install` needs nothing from the share directory.
$(GEN_TEMPLATES): $(TEMPLATES)
	@mkdir -p $(BUILD)/gen
	$(call say,GEN,$@)
	$(Q){ echo '/* Generated from launchd/. */'; \
	  for f in $(TEMPLATES); do \
	    n=$$(basename $$f .in | tr '.-' '__'); \
	    echo "extern const char tmpl_$$n[];"; \
	    echo "const char tmpl_$$n[] ="; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; \
	    echo ';'; \
	  done; } > $@

# The files that call libarchive do it through the loader's table.
ARCHIVE_USERS := $(call obj,client/lib/tar.c client/ctl/cpstream.c)
$(ARCHIVE_USERS): CPPFLAGS += -include client/lib/archload.h
$(ARCHIVE_USERS): client/lib/archload.h
$(call obj,client/lib/archload.c): CPPFLAGS += \
	-DAL_LIBARCHIVE_SONAME='"$(ARCHIVE_SONAME)"' -DAL_LIBARCHIVE_PATH='"$(ARCHIVE_PATH)"'

# Objects depend on the Makefile too: a flag change (visibility, say) must
# not leave stale objects behind.
$(BUILD)/obj/%.o: %.c $(GEN_H) Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The generated file lives under $(BUILD); it is not ours to lint.
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c $(GEN_H) Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<

$(LIBAGENTLANE_A): $(LIB_OBJS) $(PROTO_OBJS)
	@rm -f $@
	$(call say,AR,$@)
	$(Q)$(AR) rcs $@ $^

$(LIBAGENTLANE_SO): $(LIB_OBJS) $(PROTO_OBJS)
	$(call say,LD,$@)
	$(Q)$(CC) $(SHLIB_FLAGS) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

$(LIBLANED_A): $(DAEMON_OBJS) $(PROTO_OBJS)
	@rm -f $@
	$(call say,AR,$@)
	$(Q)$(AR) rcs $@ $^

$(LANED): $(call obj,$(DAEMON_MAIN)) $(LIBLANED_A)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(LANECTL): $(CTL_OBJS) $(LIBAGENTLANE_A)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -pthread -o $@ $^ $(CLIENT_LIBS)

$(BUILD)/agentlane.pc: client/agentlane.pc.in Makefile
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# Unit tests link the daemon core and the client library; cmocka drives them.
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIBLANED_A) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell $(PKG_CONFIG) --libs cmocka)

$(BUILD)/obj/tests/unit/%.o: CFLAGS += $(shell $(PKG_CONFIG) --cflags cmocka)

# Contexts are the CLI's (client/ctl/ctxstore.c, which calls nothing else
# of it).
$(BUILD)/tests/test_context: $(BUILD)/obj/tests/unit/test_context.o \
	$(call obj,client/ctl/ctxstore.c) $(LIBLANED_A) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell $(PKG_CONFIG) --libs cmocka)

# The create check is lanecheck.c's, pure: its object is linked first, so
# the test runs that module's code.
$(BUILD)/tests/test_createcheck: $(BUILD)/obj/tests/unit/test_createcheck.o \
	$(call obj,daemon/lanecheck.c) $(LIBLANED_A) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell $(PKG_CONFIG) --libs cmocka)

tests: all $(UNIT_BINS) $(BUILD)/tests/al-proxy-harness \
	$(BUILD)/tests/al-netpolicy-print $(BUILD)/tests/agent-laned-test \
	$(BUILD)/tests/agent-lanectl-proto2 $(BUILD)/tests/al-libremote

# agent-lanectl as another release would be, for tests/regress/remote.sh:
# its `system dial-stdio` speaks protocol version 2. Never installed.
PROTO2_SRCS := client/ctl/dialstdio.c
$(BUILD)/obj/proto2/%.o: %.c $(GEN_H) Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -DWIRE_PROTOCOL_VERSION_TEST=2 $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/agent-lanectl-proto2: $(filter-out $(call obj,$(PROTO2_SRCS)),$(CTL_OBJS)) \
	$(patsubst %.c,$(BUILD)/obj/proto2/%.o,$(PROTO2_SRCS)) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -pthread -o $@ $^ $(CLIENT_LIBS)

# libagentlane through ssh (tests/regress/remote.sh): a program of its own.
$(BUILD)/tests/al-libremote: $(call obj,tests/remote/libremote.c) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

# The daemon with its test hooks (tests/proxy/testhooks.h: a resolver
# table for lane proxies from the environment). Never installed.
$(BUILD)/obj/tests/agent-laned-test.o: $(DAEMON_MAIN) $(GEN_H) Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -DLANED_TEST_HOOKS -Itests/proxy $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/agent-laned-test: $(BUILD)/obj/tests/agent-laned-test.o \
	$(BUILD)/obj/tests/proxy/testhooks.o $(LIBLANED_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The lane proxy on its own loop, for tests/regress/proxy.sh.
$(BUILD)/tests/al-proxy-harness: $(BUILD)/obj/tests/proxy/harness.o $(LIBLANED_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# What daemon/netpolicy.c generates, for tests/regress/netpolicy.sh.
$(BUILD)/tests/al-netpolicy-print: $(BUILD)/obj/tests/proxy/netpolicy-print.o $(LIBLANED_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# libFuzzer targets: built by a clang sub-make in build/fuzz.
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang SANITIZE=fuzz OPTFLAGS="-O1 -g" fuzz-targets

fuzz-targets: $(FUZZ_BINS)

# The context file parser is the CLI's (client/ctl/ctxstore.c, which calls
# nothing else of the CLI).
$(BUILD)/fuzz_context: $(BUILD)/obj/tests/fuzz/fuzz_context.o \
	$(call obj,client/ctl/ctxstore.c) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

$(BUILD)/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(LIBLANED_A) $(LIBAGENTLANE_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang SANITIZE=address,undefined OPTFLAGS="-O1 -g" tests

node:
	@cd client/sandcastle && npm run --silent build

# One driver runs every suite and prints "N passed, N failed" last.
check: tests asan fuzz node
	@tests/check.sh

# Real Lima (tests/lima/README.md): installs Lima 2.2 and builds the guest
# image on first use.
check-lima: tests
	@tests/check.sh lima-full

# The old name of the real-VM tier.
check-vm: check-lima

lima-env:
	@tests/lima/env.sh

# The runbook of docs/POC.md, on a Mac with Homebrew's Lima.
poc: tests
	@tests/lima/poc.sh

# The newcomer's first command: dependencies, the Node package, everything.
setup: deps
	cd client/sandcastle && npm ci --no-audit --no-fund
	$(MAKE) tests
	$(MAKE) asan fuzz node

deps:
	tests/install-deps.sh

# Figures against baselines measured in the same run; never pass/fail.
BENCH_BINS := $(BUILD)/bench/echod $(BUILD)/bench/rpcload

$(BUILD)/bench/echod: $(call obj,bench/echod.c)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^

$(BUILD)/bench/rpcload: $(call obj,bench/rpcload.c) $(PROTO_OBJS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -pthread -o $@ $^ $(CLIENT_LIBS)

bench: all $(BENCH_BINS) $(BUILD)/tests/al-proxy-harness
	BENCH_BIN=$(BUILD)/bench bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/agent-lane
	install -m 0755 $(LANED) $(LANECTL) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(LIBAGENTLANE_A) $(DESTDIR)$(PREFIX)/lib/
ifeq ($(UNAME_S),Darwin)
	install -m 0755 $(LIBAGENTLANE_SO) $(DESTDIR)$(PREFIX)/lib/
else
	install -m 0755 $(LIBAGENTLANE_SO) $(DESTDIR)$(PREFIX)/lib/libagentlane.so.2
	ln -sf libagentlane.so.2 $(DESTDIR)$(PREFIX)/lib/libagentlane.so
endif
	install -m 0644 client/agentlane.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
		client/agentlane.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/agentlane.pc
	install -m 0644 docs/agent-lanectl.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	# Completion scripts, made by the binary from its own option tables.
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(LANECTL) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/agent-lanectl
	$(LANECTL) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_agent-lanectl
	$(LANECTL) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/agent-lanectl.fish
	install -m 0644 docs/agent-laned.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 $(TEMPLATES) docs/agent-laned.conf.example \
		$(DESTDIR)$(PREFIX)/share/agent-lane/
ifeq ($(UNAME_S),Darwin)
	install_name_tool -id $(PREFIX)/lib/libagentlane.$(SHLIB_EXT) \
		$(DESTDIR)$(PREFIX)/lib/libagentlane.$(SHLIB_EXT)
endif

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/agent-laned $(DESTDIR)$(PREFIX)/bin/agent-lanectl \
		$(DESTDIR)$(PREFIX)/lib/libagentlane.a \
		$(DESTDIR)$(PREFIX)/lib/libagentlane.$(SHLIB_EXT) \
		$(DESTDIR)$(PREFIX)/lib/libagentlane.so.2 $(DESTDIR)$(PREFIX)/lib/libagentlane.so.1 $(DESTDIR)$(PREFIX)/lib/libagentlane.so.0 \
		$(DESTDIR)$(PREFIX)/include/agentlane.h \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig/agentlane.pc \
		$(DESTDIR)$(PREFIX)/share/man/man1/agent-lanectl.1 \
		$(DESTDIR)$(PREFIX)/share/man/man8/agent-laned.8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/agent-lanectl \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_agent-lanectl \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/agent-lanectl.fish
	rm -rf $(DESTDIR)$(PREFIX)/share/agent-lane

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
