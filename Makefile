# tierflow: one Makefile, pkg-config for every library.
#
# Layout convention (so that new modules need no Makefile edits):
#   common/*.c                  -> $(O)/<variant>/libtfcommon.a
#   probes/*.c, policy/*.c,
#   sim/*.c, controller/*.c     -> one archive per folder, except files named
#                                  *_main.c, which are program entry points:
#   probes/probe_main.c         -> tierflow-probe
#   sim/sim_main.c              -> tierflow-sim
#   policy/topo_main.c          -> tierflow-topo
#   controller/tierflowd_main.c -> tierflowd
#   tests/unit/test_*.c         -> one cmocka binary each, linked with all archives
#   tests/tools/*.c             -> one helper program each (generators, fixtures)
#   tests/fuzz/fuzz_*.c         -> libFuzzer targets (clang), `make fuzz`
#
# Each program links only its own layers (LIBS_<program> below), so a call
# from the probe into the controller, say, fails the link
# (tests/static/test_links.sh); the include side of the same rule is
# tests/static/test_layers.sh (docs/HACKING.md, Layout).
#
# Variants: $(O)/opt (make), $(O)/san (ASan+UBSan, make test).
# O may be overridden so that parallel builds do not share object files.

O        ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR   ?= $(PREFIX)/bin
SHAREDIR ?= $(PREFIX)/share/tierflow
MANDIR   ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR  ?= $(PREFIX)/lib/systemd/system
CC       ?= cc
NPROC    := $(shell nproc 2>/dev/null || echo 2)
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo 0.1.0)

# pkg-config is read on first use, never while the Makefile is parsed: the
# targets that install packages (all, test, bench, demo, fuzz) run
# scripts/deps.sh first and build in a sub-make, whose first compile reads it once
# (memoised), so a fresh machine's first `make` finds the headers deps.sh
# just installed. A pkg-config that fails stops the build, naming the
# packages, instead of compiling without their flags.
PKGS       := libpcap libnl-3.0 libnl-route-3.0 libmicrohttpd jansson libcurl
PKG_CONFIG ?= pkg-config
pkg_read    = $(shell $(PKG_CONFIG) $(1) $(PKGS) 2>/dev/null || echo FAILED)
pkg_checked = $(if $(filter FAILED,$(1)),$(error $(PKG_CONFIG) $(2) $(PKGS) failed: run scripts/deps.sh build (as root) first),$(1))
PKG_CFLAGS  = $(eval PKG_CFLAGS := $(call pkg_checked,$(call pkg_read,--cflags),--cflags))$(PKG_CFLAGS)
PKG_LIBS    = $(eval PKG_LIBS := $(call pkg_checked,$(call pkg_read,--libs),--libs) -lm -lpthread)$(PKG_LIBS)

WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-missing-field-initializers
BASE_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE $(WARN) -I. $(PKG_CFLAGS) -MMD -MP
# make does not track flags: the version (which changes with every commit,
# and with --dirty every edit) is in one object, common/version.c, the only
# one compiled with TF_VERSION, rebuilt when $(O)/version.stamp says it
# changed (written only then, at parse time).
# stamp FILE,VALUE: writes VALUE to FILE when it holds another.
stamp = $(shell mkdir -p $(O) && [ "$$(cat $(1) 2>/dev/null)" = '$(2)' ] || echo '$(2)' > $(1))
VERSION_STAMP := $(O)/version.stamp
$(call stamp,$(VERSION_STAMP),$(VERSION))
OPT_CFLAGS  = -O2 -g $(BASE_CFLAGS)
SAN_FLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_CFLAGS  = -O1 -g $(SAN_FLAGS) $(BASE_CFLAGS)

srcs_of   = $(filter-out $(wildcard $(1)/*_main.c),$(wildcard $(1)/*.c))
COMMON_SRC := $(call srcs_of,common)
PROBE_SRC  := $(call srcs_of,probes)
POLICY_SRC := $(call srcs_of,policy)
SIM_SRC    := $(call srcs_of,sim)
CTL_SRC    := $(call srcs_of,controller)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
TOOL_SRC   := $(wildcard tests/tools/*.c)
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)

# Programs: name -> entry point. Only those whose entry point exists are built.
PROGS_ALL := tierflow-probe:probes/probe_main.c tierflow-sim:sim/sim_main.c \
             tierflow-topo:policy/topo_main.c tierflowd:controller/tierflowd_main.c
PROGS     := $(foreach p,$(PROGS_ALL),$(if $(wildcard $(word 2,$(subst :, ,$(p)))),$(word 1,$(subst :, ,$(p)))))
prog_src   = $(word 2,$(subst :, ,$(filter $(1):%,$(PROGS_ALL))))

# Each program's archives, higher layers first so that static archives
# resolve downwards. Unit tests, tools and fuzz targets link every layer.
LIBS_tierflow-probe := libtfprobe.a libtfcommon.a
LIBS_tierflow-sim   := libtfsim.a libtfpolicy.a libtfcommon.a
LIBS_tierflow-topo  := libtfpolicy.a libtfcommon.a
LIBS_tierflowd      := libtfctl.a libtfpolicy.a libtfcommon.a
LIBS_ORDER          := libtfctl.a libtfsim.a libtfpolicy.a libtfprobe.a libtfcommon.a
$(foreach p,$(PROGS),$(if $(LIBS_$(p)),,$(error Makefile: no LIBS_$(p): name the archives $(p) links)))

.SECONDARY:
.PHONY: all programs test bench fuzz demo install clean deps san unit-bins tools
all:
	@scripts/deps.sh build
	@$(MAKE) --no-print-directory programs
programs: $(addprefix $(O)/bin/,$(PROGS))

# ---- object rules, one per variant -------------------------------------
define variant
$(O)/$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) -c $$< -o $$@

$(O)/$(1)/libtfcommon.a: $$(COMMON_SRC:%.c=$(O)/$(1)/obj/%.o)
	@mkdir -p $$(dir $$@); rm -f $$@; ar rcs $$@ $$^
$(O)/$(1)/libtfprobe.a: $$(PROBE_SRC:%.c=$(O)/$(1)/obj/%.o)
	@mkdir -p $$(dir $$@); rm -f $$@; ar rcs $$@ $$^
$(O)/$(1)/libtfpolicy.a: $$(POLICY_SRC:%.c=$(O)/$(1)/obj/%.o)
	@mkdir -p $$(dir $$@); rm -f $$@; ar rcs $$@ $$^
$(O)/$(1)/libtfsim.a: $$(SIM_SRC:%.c=$(O)/$(1)/obj/%.o)
	@mkdir -p $$(dir $$@); rm -f $$@; ar rcs $$@ $$^
$(O)/$(1)/libtfctl.a: $$(CTL_SRC:%.c=$(O)/$(1)/obj/%.o)
	@mkdir -p $$(dir $$@); rm -f $$@; ar rcs $$@ $$^

$(1)_LIBS := $$(addprefix $(O)/$(1)/,$$(LIBS_ORDER))
endef
VERSION_OBJS := $(O)/opt/obj/common/version.o $(O)/san/obj/common/version.o $(O)/fuzz/obj/common/version.o
$(VERSION_OBJS): $(VERSION_STAMP)
$(VERSION_OBJS): BASE_CFLAGS += -DTF_VERSION='"$(VERSION)"'
# The same for the share folder the daemon looks in (openapi.json, web/):
# only tierflowd's entry point names it, so `make install PREFIX=...` after
# a plain `make` rebuilds that one object (not every object, and not none,
# which would install a daemon looking under the old prefix).
SHAREDIR_STAMP := $(O)/sharedir.stamp
$(call stamp,$(SHAREDIR_STAMP),$(SHAREDIR))
SHAREDIR_OBJS := $(O)/opt/obj/controller/tierflowd_main.o $(O)/san/obj/controller/tierflowd_main.o
$(SHAREDIR_OBJS): $(SHAREDIR_STAMP)
$(SHAREDIR_OBJS): BASE_CFLAGS += -DTF_SHAREDIR='"$(SHAREDIR)"'
$(eval $(call variant,opt,$$(OPT_CFLAGS)))
$(eval $(call variant,san,$$(SAN_CFLAGS)))

# Optimised programs land in $(O)/bin, sanitizer ones in $(O)/san/bin, each
# linked with its own LIBS_<program> only.
prog_libs = $(addprefix $(O)/$(1)/,$(LIBS_$(2)))
.SECONDEXPANSION:
$(O)/bin/%: $(O)/opt/obj/$$(basename $$(call prog_src,$$*)).o $$(call prog_libs,opt,$$*)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $< $(call prog_libs,opt,$*) $(PKG_LIBS) -o $@
$(O)/san/bin/%: $(O)/san/obj/$$(basename $$(call prog_src,$$*)).o $$(call prog_libs,san,$$*)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $< $(call prog_libs,san,$*) $(PKG_LIBS) -o $@

$(O)/san/tests/%: $(O)/san/obj/tests/unit/%.o $(san_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $< $(san_LIBS) $(PKG_LIBS) -lcmocka -o $@
$(O)/tools/%: $(O)/opt/obj/tests/tools/%.o $(opt_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $< $(opt_LIBS) $(PKG_LIBS) -o $@

SAN_PROGS  := $(addprefix $(O)/san/bin/,$(PROGS))
UNIT_BINS  := $(patsubst tests/unit/%.c,$(O)/san/tests/%,$(UNIT_SRC))
TOOL_BINS  := $(patsubst tests/tools/%.c,$(O)/tools/%,$(TOOL_SRC))

san: $(SAN_PROGS) $(UNIT_BINS)
tools: $(TOOL_BINS)
# What a program's link line names after its object (tests/static/test_links.sh).
print-libs-%:
	@echo $(call prog_libs,opt,$*) $(PKG_LIBS)

# make test: install what is missing, build everything with sanitizers, run
# every suite; tests/run.sh prints the one summary line and sets the exit code.
test:
	@scripts/deps.sh build test browser
	@$(MAKE) -j$(NPROC) --no-print-directory san tools $(addprefix $(O)/bin/,$(PROGS))
	@O=$(O) tests/run.sh

# programs, not all: all runs a make of its own, which beside tools in this
# one archived libtfctl.a twice at once (a tierflowd link with undefined
# references).
bench:
	@scripts/deps.sh build test bench
	@$(MAKE) -j$(NPROC) --no-print-directory programs tools
	@O=$(O) tests/bench/run.sh

demo:
	@scripts/deps.sh build demo
	@$(MAKE) -j$(NPROC) --no-print-directory all
	@O=$(O) tests/lab/demo.sh

# ---- fuzzing (clang + libFuzzer) ----------------------------------------
# clang, unlike gcc, flags a v*printf wrapper without a format attribute
# (controller/httpd.c); gcc's -Wformat=2 still checks those in the other builds.
FUZZ_CFLAGS = -O1 -g -fsanitize=fuzzer-no-link,address,undefined $(BASE_CFLAGS)
# Every library source: fuzz_ingest reaches policy/ and controller/. Objects
# named on the link line are all linked in, so every target carries them all.
FUZZ_LIB_SRC := $(COMMON_SRC) $(PROBE_SRC) $(POLICY_SRC) $(SIM_SRC) $(CTL_SRC)
$(O)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -c $< -o $@
$(O)/fuzz/%: $(O)/fuzz/obj/tests/fuzz/%.o $(FUZZ_LIB_SRC:%.c=$(O)/fuzz/obj/%.o)
	clang -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(O)/fuzz/%,$(FUZZ_SRC))
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/deps.sh build fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BINS) tools
	@O=$(O) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_BINS)

# ---- install ------------------------------------------------------------
# The systemd units and the default configuration name the installed paths;
# the configuration is the operator's: installed once, never overwritten.
SUBST_PATHS = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHAREDIR)/web $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(addprefix $(O)/bin/,$(PROGS)) $(DESTDIR)$(BINDIR)/
	if [ -d web ] && [ -n "$$(ls web)" ]; then cp -R web/. $(DESTDIR)$(SHAREDIR)/web/; fi
	install -m 0644 controller/openapi.json $(DESTDIR)$(SHAREDIR)/openapi.json
	for m in docs/man/*.8; do [ -f "$$m" ] && install -m 0644 "$$m" $(DESTDIR)$(MANDIR)/man8/ || true; done
	for m in docs/man/*.1; do [ -f "$$m" ] && install -m 0644 "$$m" $(DESTDIR)$(MANDIR)/man1/ || true; done
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/tierflow
	for u in contrib/systemd/*.service; do \
	  $(SUBST_PATHS) "$$u" > $(DESTDIR)$(UNITDIR)/$$(basename "$$u") && chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename "$$u") || exit 1; \
	done
	[ -e $(DESTDIR)$(SYSCONFDIR)/tierflow/tierflowd.json ] || \
	  { $(SUBST_PATHS) contrib/tierflowd.json > $(DESTDIR)$(SYSCONFDIR)/tierflow/tierflowd.json && \
	    chmod 0644 $(DESTDIR)$(SYSCONFDIR)/tierflow/tierflowd.json; }

clean:
	rm -rf $(O)

-include $(shell find $(O) -name '*.d' 2>/dev/null)
