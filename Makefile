# xrl - one non-recursive Makefile. `make V=1` echoes the commands.
# Outputs go under build/. `make help` lists the targets.

PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    ?= build
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CLANG    ?= clang
CC       ?= cc
BPFTOOL  ?= bpftool
MULTIARCH := $(shell $(CC) -dumpmachine)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS   ?= -O2 -g
XCFLAGS  := $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
            -Iinclude -I$(BUILD) -Iuser/lib -Iuser -MMD -MP
LDLIBS   := -lxdp -lbpf -lelf -lz -lyaml -ljansson
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
              -Ivmlinux/$(ARCH) -Iinclude -MMD -MP

.DELETE_ON_ERROR:
.PHONY: all help test test-unit test-bpf test-e2e demo bench bench-flood clean install uninstall deb deps \
        fuzz fuzz-build asan-build san-targets tsan-build docs-img

# user/lib: libxrl, the loader library (no server dependencies)
LIB_SRCS   := $(wildcard user/lib/*.c)
LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/%.o)
# user/http: the identity tier (libmicrohttpd, hiredis, jansson)
HTTP_DIRS  := user/http/server user/http/limiter user/http/redis user/http/fleet
HTTP_SRCS  := $(foreach d,$(HTTP_DIRS),$(wildcard $(d)/*.c))
XRLD_SRCS  := $(wildcard user/xrld/*.c)
CTL_SRCS   := $(wildcard user/ctl/*.c)
HTTP_OBJS  := $(HTTP_SRCS:%.c=$(BUILD)/%.o)
HTTP_LIBS  := -lmicrohttpd -lhiredis -ljansson -lcrypto -lpthread
TOOL       := $(BUILD)/xrl-load
XRLD       := $(BUILD)/xrld
XRLCTL     := $(BUILD)/xrlctl
GEN        := $(BUILD)/xrl-synflood
XGEN       := $(BUILD)/xrl-gen
UNIT_TESTS := $(BUILD)/tests/test_gcra $(BUILD)/tests/test_policy $(BUILD)/tests/test_config \
              $(BUILD)/tests/test_limiter $(BUILD)/tests/test_verify $(BUILD)/tests/test_ctl \
              $(BUILD)/tests/test_http $(BUILD)/tests/test_log $(BUILD)/tests/test_redis_slots \
              $(BUILD)/tests/test_syncookie $(BUILD)/tests/test_procstat $(BUILD)/tests/test_peaks
BPF_TESTS  := $(BUILD)/tests/test_bpf $(BUILD)/tests/test_cookie $(BUILD)/tests/xdp_fuzz
BENCH      := $(BUILD)/bench/xdp_cost $(BUILD)/bench/bucket_count $(BUILD)/bench/pen_cost

all: $(BUILD)/xrl.bpf.o $(BUILD)/xrl.skel.h $(BUILD)/libxrl.a $(TOOL) $(XRLD) $(XRLCTL) $(GEN) $(XGEN) \
     $(UNIT_TESTS) $(BPF_TESTS) $(BENCH)

help:
	@echo 'make            build everything into $(BUILD)/'
	@echo 'make test       unit, BPF_PROG_TEST_RUN, end-to-end, fuzz (FUZZ_SECS=20) and ASan tests (root)'
	@echo 'make test-unit  userspace unit tests only (no root)'
	@echo 'make fuzz       every libFuzzer harness for FUZZ_SECS (default 600) seconds'
	@echo 'make fuzz-build the harnesses (clang), into $(BUILD)/fuzz/'
	@echo 'make asan-build xrld and the unit tests with ASan+UBSan, into $(BUILD)/asan/'
	@echo 'make demo       SYN flood against a lab of network namespaces (root)'
	@echo 'make bench      scripts/bench/xdp-cost.sh (root)'
	@echo 'make bench-flood  xrl vs nftables vs iptables on a flood lab, and spoofed sources (root, ~13 min)'
	@echo 'make install    PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)'
	@echo 'make uninstall  what install put (an edited /etc/xrl/policy.yaml stays)'
	@echo 'make deb        $(BUILD)/xrl_VERSION_ARCH.deb (shadow-only policy; starts nothing)'
	@echo 'make docs-img   docs/img/*.svg from their .dot (graphviz; not part of make)'
	@echo 'make V=1        echo the commands'

$(BUILD)/xrl.bpf.o: bpf/xrl.bpf.c | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The version xrld, xrlctl and xrl-load print, and the Debian package's:
# scripts/version.sh (VERSION, and the commits since it changed; it says
# how). Rewritten only when it changes, so a build that changes nothing
# relinks nothing.
# XRL_COMMIT (xrl_build_info's commit label) is the commit's hash, or
# "unknown" outside git.
XRL_VERSION_STR := $(shell scripts/version.sh)
ifeq ($(XRL_VERSION_STR),)
$(error scripts/version.sh printed no version (see its message above))
endif
XRL_GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
$(BUILD)/xrl_version.h: FORCE | $(BUILD)
	$(Q)v='#define XRL_VERSION "$(XRL_VERSION_STR)"'; \
	v="$$v$$(printf '\n#define XRL_COMMIT "%s"' '$(XRL_GIT_COMMIT)')"; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
.PHONY: FORCE
FORCE:

# The limiter's Redis scripts (gcra.lua, and gcra_node.lua for a cluster
# node's call), embedded as bytes (xxd -i) with a NUL after them: the C
# sees exactly the file, whose SHA1 is what EVALSHA names.
$(BUILD)/%.lua.h: user/http/redis/%.lua | $(BUILD)
	$(call msg,GEN,$@)
	$(Q){ echo '/* generated from $< by the Makefile */'; \
	      echo 'const char xrl_lua_$*[] = {'; xxd -i < $<; echo ', 0x00 };'; \
	      echo "const size_t xrl_lua_$*_len = sizeof(xrl_lua_$*) - 1;"; } > $@

$(BUILD)/user/http/redis/script.o $(BUILD)/fuzz/obj/user/http/redis/script.o \
$(BUILD)/tsan/test_limiter: $(BUILD)/gcra.lua.h
$(BUILD)/user/http/redis/cluster.o $(BUILD)/fuzz/obj/user/http/redis/cluster.o \
$(BUILD)/tsan/test_limiter: $(BUILD)/gcra_node.lua.h

$(BUILD)/xrl.skel.h: $(BUILD)/xrl.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name xrl > $@

$(BUILD)/bench/%.bpf.o: scripts/bench/%.bpf.c | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.c $(BUILD)/xrl.skel.h $(BUILD)/xrl_version.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XCFLAGS) -c $< -o $@

$(BUILD)/libxrl.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(TOOL): $(BUILD)/user/tools/xrl_load.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/libxrlhttp.a: $(HTTP_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(XRLD): $(XRLD_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/libxrlhttp.a $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS) $(HTTP_LIBS)

$(XRLCTL): $(CTL_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS) -lcrypto

$(BUILD)/tests/test_config: $(BUILD)/tests/unit/test_config.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

$(BUILD)/tests/test_verify: $(BUILD)/tests/unit/test_verify.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

$(BUILD)/tests/test_log: $(BUILD)/tests/unit/test_log.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

$(BUILD)/tests/test_procstat: $(BUILD)/tests/unit/test_procstat.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

$(BUILD)/tests/test_peaks: $(BUILD)/tests/unit/test_peaks.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

$(BUILD)/tests/test_ctl: $(BUILD)/tests/unit/test_ctl.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

$(BUILD)/tests/test_http: $(BUILD)/tests/unit/test_http.o $(BUILD)/libxrlhttp.a $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS) $(HTTP_LIBS)

$(BUILD)/tests/test_redis_slots: $(BUILD)/tests/unit/test_redis_slots.o $(BUILD)/user/http/redis/slots.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka -lhiredis

LIMITER_TEST_SRCS := tests/unit/test_limiter.c tests/unit/test_limiter_memory.c \
                     tests/unit/test_limiter_redis.c tests/unit/limiter_test.c \
                     tests/unit/test_limiter_lease.c
$(BUILD)/tests/test_limiter: $(LIMITER_TEST_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/libxrlhttp.a $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS) $(HTTP_LIBS)

$(BUILD)/gen.bpf.o: tests/tools/gen.bpf.c | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/gen.skel.h: $(BUILD)/gen.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name gen > $@

$(BUILD)/tests/tools/gen.o: $(BUILD)/gen.skel.h

$(XGEN): $(BUILD)/tests/tools/gen.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lbpf -lelf -lz -lpthread

$(GEN): $(BUILD)/tests/tools/synflood.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lpthread

$(BUILD)/tests/test_gcra: $(BUILD)/tests/unit/test_gcra.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka

$(BUILD)/tests/test_syncookie: $(BUILD)/tests/unit/test_syncookie.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka

$(BUILD)/tests/test_policy: $(BUILD)/tests/unit/test_policy.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ -lcmocka $(LDLIBS)

BPF_CASES := $(patsubst tests/bpf/%.c,$(BUILD)/tests/bpf/%.o,$(wildcard tests/bpf/cases_*.c))
$(BUILD)/tests/test_bpf: $(BUILD)/tests/bpf/test_bpf.o $(BPF_CASES) $(BUILD)/tests/bpf/pktbuild.o \
			 $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/test_cookie: $(BUILD)/tests/bpf/test_cookie.o $(BUILD)/tests/bpf/pktbuild.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS)

# the differential packet fuzzer (BPF_PROG_TEST_RUN; not a libFuzzer harness)
$(BUILD)/tests/xdp_fuzz: $(BUILD)/tests/fuzz/xdp_fuzz.o $(BUILD)/tests/bpf/pktbuild.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bench/bucket_count: $(BUILD)/scripts/bench/bucket_count.o $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bench/pen_cost: $(BUILD)/scripts/bench/pen_cost.o $(BUILD)/libxrlhttp.a $(BUILD)/libxrl.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XCFLAGS) $^ -o $@ $(LDLIBS) $(HTTP_LIBS)

$(BUILD)/bench/xdp_cost: $(BUILD)/scripts/bench/xdp_cost.o $(BUILD)/libxrl.a $(BUILD)/bench/floor.bpf.o \
		    $(BUILD)/bench/ref.bpf.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(XCFLAGS) $(filter-out %.bpf.o,$(filter %.o %.a,$^)) -o $@ $(LDLIBS)

$(BUILD):
	$(Q)mkdir -p $@

# ---- fuzzing and sanitizers -------------------------------------------------
# Every tests/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput and becomes
# $(BUILD)/fuzz/fuzz_NAME, linked with the user/ library sources compiled
# with the same flags into $(BUILD)/fuzz/obj/ (never the normal objects).
# FUZZ_NOT_LIBFUZZER lists fuzz_*.c files that are programs of their own
# (the packet fuzzer drives the XDP program, not libFuzzer) with their own rule.
FUZZ_CC     ?= clang
FUZZ_CFLAGS ?= -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1
FUZZ_NOT_LIBFUZZER ?= tests/fuzz/fuzz_xdp.c
FUZZ_XCFLAGS := $(FUZZ_CFLAGS) -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
                -Iinclude -I$(BUILD) -Iuser/lib -Iuser -MMD -MP
FUZZ_SRCS   := $(filter-out $(FUZZ_NOT_LIBFUZZER),$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS   := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_LIB    := $(BUILD)/fuzz/libxrl-fuzz.a

$(BUILD)/fuzz/obj/%.o: %.c $(BUILD)/xrl.skel.h
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_XCFLAGS) -c $< -o $@

$(FUZZ_LIB): $(LIB_SRCS:%.c=$(BUILD)/fuzz/obj/%.o) $(HTTP_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# kept, not deleted as an intermediate: a rebuild then relinks only
.SECONDARY: $(FUZZ_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)

$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB)
	$(call msg,LINK,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_XCFLAGS) $^ -o $@ $(LDLIBS) $(HTTP_LIBS)

fuzz-build: $(FUZZ_BINS)

# FUZZ_SECS per harness; tests/fuzz/run.sh says what else it reads
fuzz: fuzz-build
	$(Q)FUZZ_SECS=$${FUZZ_SECS:-600} BUILD=$(BUILD) tests/fuzz/run.sh

# The same sources with ASan+UBSan, by a second make into $(BUILD)/asan/;
# tests/run.sh's asan group runs the unit tests and HTTP e2e tests with them.
# gcc's value ranges are wider under the sanitizers' instrumentation, so
# -Wformat-truncation warns about snprintf calls whose bounds are checked.
SAN_CFLAGS ?= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=undefined -Wno-format-truncation

asan-build:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CFLAGS='$(SAN_CFLAGS)' san-targets

# ThreadSanitizer: the limiter's threaded unit cases, and an xrld whose
# reload and metrics threads race in test_http_reload_race
tsan-build: $(BUILD)/tsan/test_limiter
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan-xrld CC=$(CLANG) \
		CFLAGS='-O1 -g -fsanitize=thread -fno-omit-frame-pointer' $(BUILD)/tsan-xrld/xrld

san-targets: $(XRLD) $(UNIT_TESTS)

deps:
	$(Q)scripts/install-deps.sh

test: deps all fuzz-build asan-build tsan-build
	$(Q)BUILD=$(BUILD) tests/run.sh

test-unit: $(UNIT_TESTS)
	$(Q)for t in $(UNIT_TESTS); do $$t || exit 1; done
	$(Q)tests/check_policy_man.sh

demo: deps all
	$(Q)scripts/demo.sh

bench: all
	$(Q)scripts/bench/xdp-cost.sh

bench-flood: deps all
	$(Q)scripts/bench/flood.sh

SYSTEMDUNITDIR ?= /lib/systemd/system

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/xrl \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)/etc/xrl
	install -m 0755 $(TOOL) $(XRLD) $(XRLCTL) $(DESTDIR)$(PREFIX)/sbin/
	install -m 0644 $(BUILD)/xrl.bpf.o $(DESTDIR)$(PREFIX)/lib/xrl/
	install -m 0644 docs/man/xrld.8 docs/man/xrlctl.8 docs/man/xrl-load.8 \
		$(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 docs/man/xrl-policy.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 0644 scripts/completion/xrlctl.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/xrlctl
	sed 's|/usr/local/sbin/|$(PREFIX)/sbin/|' scripts/systemd/xrld.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/xrld.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/xrld.service
	[ -e $(DESTDIR)/etc/xrl/policy.yaml ] || \
		install -m 0644 docs/examples/shadow-template.yaml $(DESTDIR)/etc/xrl/policy.yaml

# The mirror of install. The policy goes only if it is still the template:
# an edited policy is the operator's, and is kept (and said so).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/xrl-load $(DESTDIR)$(PREFIX)/sbin/xrld \
		$(DESTDIR)$(PREFIX)/sbin/xrlctl $(DESTDIR)$(PREFIX)/lib/xrl/xrl.bpf.o \
		$(DESTDIR)$(PREFIX)/share/man/man8/xrld.8 $(DESTDIR)$(PREFIX)/share/man/man8/xrlctl.8 \
		$(DESTDIR)$(PREFIX)/share/man/man8/xrl-load.8 \
		$(DESTDIR)$(PREFIX)/share/man/man5/xrl-policy.5 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/xrlctl \
		$(DESTDIR)$(SYSTEMDUNITDIR)/xrld.service
	-rmdir $(DESTDIR)$(PREFIX)/lib/xrl 2>/dev/null
	@if [ -e $(DESTDIR)/etc/xrl/policy.yaml ]; then \
		if cmp -s docs/examples/shadow-template.yaml $(DESTDIR)/etc/xrl/policy.yaml; then \
			rm -f $(DESTDIR)/etc/xrl/policy.yaml; rmdir $(DESTDIR)/etc/xrl 2>/dev/null || true; \
		else echo "uninstall: kept $(DESTDIR)/etc/xrl/policy.yaml (edited: yours)"; fi; \
	fi

# A Debian package of what install puts (PREFIX=/usr), with a shadow-only
# policy as its conffile; installing it starts nothing (scripts/deb/).
deb: all
	$(Q)scripts/deb/build.sh $(BUILD)

# The docs' diagrams, drawn from their .dot sources; not in `all`, so a
# build needs no graphviz. tests/lint/docs_img.sh keeps them in step.
docs-img:
	$(Q)scripts/docs-img.sh

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- test-tsan: the limiter's threaded tests under ThreadSanitizer ----------
# Its own objects under build/tsan/ (every source the test links, built with
# -fsanitize=thread), so nothing else is rebuilt. Runs the threaded cases
# (test names with "concurrent", and the two Redis instances sharing a key).
TSAN_DIR    := $(BUILD)/tsan
TSAN_CFLAGS := -O1 -g -fsanitize=thread -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror \
               -Wno-unused-parameter -Iinclude -I$(BUILD) -Iuser/lib -Iuser
TSAN_SRCS   := $(LIMITER_TEST_SRCS) $(HTTP_SRCS) $(LIB_SRCS)
.PHONY: test-tsan
$(TSAN_DIR)/test_limiter: $(TSAN_SRCS) $(wildcard user/*/*.h user/http/*/*.h include/*.h tests/unit/*.h) $(BUILD)/xrl.skel.h
	$(call msg,TSAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(TSAN_CFLAGS) $(TSAN_SRCS) -o $@ -lcmocka $(LDLIBS) $(HTTP_LIBS)
test-tsan: $(TSAN_DIR)/test_limiter
	$(Q)TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1' \
		XRL_TEST_FILTER='*concurrent*' $<
	$(Q)TSAN_OPTIONS='halt_on_error=1' XRL_TEST_FILTER='*two_instances*' $<
