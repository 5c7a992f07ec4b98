# tprof: top-level build.
#
#   make               module (for KVER), library, tprofctl, test programs
#   make deps          install every Debian package the project needs, and the
#                      arm64 guests' sysroot (~/.cache/tprof/arm64)
#   make check         the one test command: unit, KUnit, integration (debug, 6.1,
#                      6.12, arm64 6.1), a 60 s /dev/tprof fuzz in the debug kernel
#   make fuzz          a longer fuzz run (tests/fuzz/run.sh): FUZZ_SECONDS=600,
#                      FUZZ_SEED= (random, printed), FUZZ_KERNEL=debug|6.1|6.12,
#                      FUZZ_THREADS=4; a failure prints the seed that repeats it
#   make demo          boot a Debian 6.1 guest and show what tprof does
#   make bench         benchmarks in a guest (ratios against a same-boot baseline)
#   make module KVER=6.12.117+deb12-amd64   the module for one kernel
#   make install [PREFIX=/usr/local DESTDIR=]  tools, library, headers, pkg-config
#   make dkms-install  register the module with DKMS
#
# Everything is built under build/. Warnings are errors everywhere.

KVER ?= $(shell tools/vm/find-kernel default 2>/dev/null || uname -r)
VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=

CC := gcc
CXX := g++
AR := ar
B := build

# Cross builds (make arm64-tools) add include and library directories.
EXTRA_CPPFLAGS ?=
EXTRA_LDFLAGS ?=
CPPFLAGS := -Iuapi -Ilibtprofctl/include -Ikmod $(EXTRA_CPPFLAGS) -isystem /usr/include/libnl3
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
CXXFLAGS := -std=c++20 -O2 -g -fno-omit-frame-pointer $(WARNINGS) -MMD -MP
CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer $(WARNINGS) -MMD -MP
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all
GTEST_LIBS := -lgtest -lgtest_main -pthread
# elfutils: symbols and source lines for reports (tprofctl dump); libnl:
# PMU program events over generic netlink. libnl's headers are the same on
# every architecture, so cross builds use the host's too.
ELF_LIBS := -ldw -lelf -lnl-genl-3 -lnl-3 $(EXTRA_LDFLAGS)

LIB_SRCS := $(wildcard libtprofctl/src/*.cc)
TPROFCTL_SRCS := $(wildcard tools/tprofctl/*.cc)
CORE_SRCS := $(wildcard kmod/core/*.c)
UNIT_TEST_SRCS := $(wildcard tests/unit/*.cc)
INTEGRATION_TEST_SRCS := $(wildcard tests/integration/*.cc)
BENCH_SRCS := $(wildcard bench/*.cc)
RUNTIME_EXAMPLE_SRCS := $(wildcard tools/runtime-example/*.cc)
KMOD_SRCS := kmod/Kbuild kmod/Makefile $(wildcard kmod/*.[ch] kmod/core/*.[ch]) uapi/linux/tprof.h

obj = $(patsubst %.cc,$(B)/obj/%.o,$(filter %.cc,$(1))) $(patsubst %.c,$(B)/obj/%.o,$(filter %.c,$(1)))
asan_obj = $(patsubst %.cc,$(B)/asan/%.o,$(filter %.cc,$(1))) $(patsubst %.c,$(B)/asan/%.o,$(filter %.c,$(1)))

LIB := $(B)/lib/libtprofctl.a
LIB_ASAN := $(B)/lib/libtprofctl-asan.a
TPROFCTL := $(B)/bin/tprofctl
INTEGRATION_TESTS := $(B)/bin/tprof_integration_tests
FUZZER := $(B)/bin/tprof_fuzz
RUNTIME_EXAMPLE := $(B)/bin/tprof-runtime-example
UNIT_TESTS := $(B)/tests/tprof_unit_tests
MODULE = $(B)/kmod/$(KVER)/kmod/tprof.ko

.PHONY: all module lib tools unit-tests guest-programs vm-inputs arm64-guest-programs arm64-tools arm64-vm-inputs deps deps-arm64 check fuzz demo \
	bench bench-programs install dkms-install clean
.DELETE_ON_ERROR:

all: module lib tools unit-tests guest-programs bench-programs

lib: $(LIB)
tools: $(TPROFCTL)
unit-tests: $(UNIT_TESTS)
guest-programs: $(TPROFCTL) $(INTEGRATION_TESTS) $(RUNTIME_EXAMPLE) $(FUZZER)
# What tools/tprof-vm packs into a guest for kernel $(KVER).
vm-inputs: module guest-programs

# arm64 kernels (KVER=6.1.0-NN-arm64) are cross-built against the headers
# `make deps-arm64` unpacks into $(ARM64_SYSROOT) (tools/vm/arm64-sysroot).
ARM64_SYSROOT ?= $(or $(TPROF_CACHE),$(HOME)/.cache/tprof)/arm64/sysroot
ARM64_CROSS_COMPILE ?= aarch64-linux-gnu-
kmod_cross = $(if $(filter %-arm64,$(1)),KDIR=$(ARM64_SYSROOT)/usr/src/linux-headers-$(1) \
	ARCH=arm64 CROSS_COMPILE=$(ARM64_CROSS_COMPILE))

# The module is built in a copy of kmod/ and uapi/ per kernel release, so
# builds for several kernels do not trample each other's objects.
module: $(MODULE)
$(B)/kmod/%/kmod/tprof.ko: $(KMOD_SRCS)
	rm -rf $(B)/kmod/$*
	mkdir -p $(B)/kmod/$*
	cp -r kmod uapi $(B)/kmod/$*/
	$(MAKE) -C $(B)/kmod/$*/kmod KVER=$* $(call kmod_cross,$*)

$(B)/obj/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@
$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(B)/asan/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(SANITIZE) -c $< -o $@
$(B)/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SANITIZE) -c $< -o $@

$(LIB): $(call obj,$(LIB_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_ASAN): $(call asan_obj,$(LIB_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(TPROFCTL): $(call obj,$(TPROFCTL_SRCS)) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(ELF_LIBS) -pthread

# An example "language runtime" embedding tprof::RuntimeProfiler.
$(RUNTIME_EXAMPLE): $(call obj,$(RUNTIME_EXAMPLE_SRCS)) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(ELF_LIBS) -pthread

# Host unit tests: library and kernel core logic under ASan/UBSan.
$(UNIT_TESTS): $(call asan_obj,$(UNIT_TEST_SRCS) $(CORE_SRCS)) $(LIB_ASAN)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(SANITIZE) -o $@ $^ $(GTEST_LIBS) $(ELF_LIBS)

# Integration tests run inside the guest against the real module.
$(INTEGRATION_TESTS): $(call obj,$(INTEGRATION_TEST_SRCS)) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(GTEST_LIBS) $(ELF_LIBS)

# The /dev/tprof fuzzer (tests/fuzz/): a guest program too, on /dev/tprof
# directly (uapi header only).
$(FUZZER): $(B)/obj/tests/fuzz/tprof_fuzz.o
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $^ -pthread

# Benchmarks run in the guest too (bench/run.sh adds them with --add).
BENCH_PROGRAMS := $(patsubst bench/%.cc,$(B)/bench/tprof_%,$(BENCH_SRCS))
bench-programs: $(BENCH_PROGRAMS)
$(B)/bench/tprof_%: $(B)/obj/bench/%.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(ELF_LIBS) -pthread

# Workloads the sampling tests and the demo profile (tests/workloads/): CPU
# burners with known splits by function, executable/library/kernel, process
# and JIT code. They run in the guest, so they are guest programs too. Built
# without inlining or sibling calls so every named function keeps its samples.
WL_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -fno-inline \
	-fno-optimize-sibling-calls $(WARNINGS)
WL_LIB := $(B)/bin/libtprofwl.so
WORKLOADS := $(B)/bin/tprof-wl-shares $(B)/bin/tprof-wl-split $(B)/bin/tprof-wl-spawn \
	$(B)/bin/tprof-wl-child $(B)/bin/tprof-wl-jit $(B)/bin/tprof-wl-faults $(WL_LIB)
guest-programs: $(WORKLOADS)
$(B)/bin/tprof-wl-%: tests/workloads/%.c tests/workloads/wl.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
# libtprofwl.so is found next to the program ($ORIGIN), on the host in
# build/bin and in the guest in /usr/bin.
$(B)/bin/tprof-wl-split: tests/workloads/split.c tests/workloads/wl.h $(WL_LIB)
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $< -L$(B)/bin -ltprofwl -Wl,-rpath,'$$ORIGIN'
$(WL_LIB): tests/workloads/libtprofwl.c tests/workloads/wl.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fPIC -shared -Wl,-soname,libtprofwl.so -o $@ $<
# (end of workloads)

# arm64 guests (tools/tprof-vm --arch arm64): small static C programs that
# need only the uapi header, cross-built (the C++ tools are not yet).
ARM64_CC ?= $(ARM64_CROSS_COMPILE)gcc
ARM64_PROGRAMS := $(B)/arm64/bin/tprof-perf-count $(B)/arm64/bin/tprof-info
ARM64_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer $(WARNINGS)
arm64-guest-programs: $(ARM64_PROGRAMS)
$(B)/arm64/bin/tprof-%: tests/arm64/%.c uapi/linux/tprof.h
	@mkdir -p $(@D)
	$(ARM64_CC) -static $(ARM64_CFLAGS) -Iuapi -o $@ $<

# tprofctl, the runtime example and the fuzzer for arm64 guests, built in
# $(B)/arm64 (their programs land in $(B)/arm64/bin, which tprof-vm --arch
# arm64 packs) with the cross-compilers, libdw/libelf from the arm64 sysroot
# (make deps-arm64) and the host's Boost headers (header-only), linked
# dynamically: tprof-vm copies the libraries. The integration tests, the
# workloads and the benchmarks (build/arm64/bench, bench/run.sh arm64) too.
# What tools/tprof-vm --arch arm64 packs into a guest for kernel $(KVER).
arm64-vm-inputs: module arm64-guest-programs arm64-tools
ARM64_LIBDIRS := $(ARM64_SYSROOT)/usr/lib/aarch64-linux-gnu $(ARM64_SYSROOT)/lib/aarch64-linux-gnu
arm64-tools:
	@mkdir -p $(B)/arm64/boost-include
	ln -sfn /usr/include/boost $(B)/arm64/boost-include/boost
	$(MAKE) B=$(B)/arm64 CC=$(ARM64_CC) CXX=$(ARM64_CROSS_COMPILE)g++ AR=$(ARM64_CROSS_COMPILE)ar \
		EXTRA_CPPFLAGS="-isystem $(ARM64_SYSROOT)/usr/include -isystem $(B)/arm64/boost-include" \
		EXTRA_LDFLAGS="$(foreach d,$(ARM64_LIBDIRS),-L$(d) -Wl,-rpath-link,$(d))" \
		$(B)/arm64/bin/tprofctl $(B)/arm64/bin/tprof-runtime-example $(B)/arm64/bin/tprof_fuzz \
		$(B)/arm64/bin/tprof_integration_tests \
		$(patsubst $(B)/bin/%,$(B)/arm64/bin/%,$(WORKLOADS)) \
		$(patsubst $(B)/bench/%,$(B)/arm64/bench/%,$(BENCH_PROGRAMS))

-include $(shell find $(B)/obj $(B)/asan -name '*.d' 2>/dev/null)

deps:
	tools/deps.sh

# The same (make deps includes the arm64 guests' needs since they are in
# make check); kept for old habits.
deps-arm64:
	tools/deps.sh --arm64

check:
	tests/check.sh

FUZZ_SECONDS ?= 600
FUZZ_SEED ?=
FUZZ_KERNEL ?= debug
FUZZ_THREADS ?= 4
fuzz: deps
	$(MAKE) guest-programs
	tests/fuzz/run.sh --kernel $(FUZZ_KERNEL) --seconds $(FUZZ_SECONDS) --threads $(FUZZ_THREADS) \
		$(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

demo: deps
	$(MAKE) vm-inputs KVER=$$(tools/vm/find-kernel --image 6.1)
	TPROF_VM_NO_BUILD=1 tools/tprof-vm --kernel 6.1 --add tools/demo/demo.sh -- sh demo.sh

bench: deps
	bench/run.sh

install: $(LIB) $(TPROFCTL)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/tprof $(DESTDIR)$(PREFIX)/include/linux
	install -m 755 $(TPROFCTL) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 libtprofctl/include/tprof/*.h $(DESTDIR)$(PREFIX)/include/tprof/
	install -m 644 uapi/linux/tprof.h $(DESTDIR)$(PREFIX)/include/linux/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' libtprofctl/tprofctl.pc.in \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/tprofctl.pc

# DKMS builds from a copy of the sources in /usr/src/tprof-$(VERSION).
dkms-install:
	rm -rf $(DESTDIR)/usr/src/tprof-$(VERSION)
	install -d $(DESTDIR)/usr/src/tprof-$(VERSION)
	cp -r dkms.conf kmod uapi $(DESTDIR)/usr/src/tprof-$(VERSION)/
	dkms add -m tprof -v $(VERSION) || true
	dkms build -m tprof -v $(VERSION) -k $(KVER)
	dkms install -m tprof -v $(VERSION) -k $(KVER)

clean:
	rm -rf $(B)
