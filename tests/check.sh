#!/usr/bin/env bash
# make check: the one test command.
#   1. dependencies (make deps) and a warnings-as-errors build of everything,
#      the module for the three x86 Debian kernels
#   2. host unit tests (GoogleTest, under ASan/UBSan), the SVG flame
#      graph rendered by headless Chromium (tests/flamegraph_browser.sh),
#      and make install/uninstall into a DESTDIR (tests/install_test.sh)
#   3. self-tests of the VM bench (tools/tprof-vm, tools/vm/scan-kernel-log)
#   4. KUnit suites (ktests/) in a KUnit-enabled 6.1 kernel, under QEMU,
#      beside step 3 (one guest each); the arm64 cross builds run in the
#      background from step 5 to step 6
#   5. the Debian packages (make deb, lintian), installed with DKMS in a
#      Debian 12 root with two kernels, then purged (tests/packages_test.sh)
#   6. the guests, in two lanes that run side by side (one host thread
#      each): integration tests (GoogleTest) inside the KUnit kernel (the
#      debug kernel: KASAN, UBSAN, lockdep, kmemleak) and its arm64 build
#      (the tests of kernel paths); every Debian kernel line on amd64 and
#      arm64 (qemu-system-aarch64, emulated PMU: hardware counters count
#      there; the known-count tests run again under --icount): the whole
#      suite in 6.1 (with the module DKMS built) and sid's newest, nearly
#      all of it in 6.1 PREEMPT_RT and sid's arm64 kernel, the smoke suite
#      in the 6.12 lines, a load smoke suite in arm64 6.1 and bookworm's
#      arm64 6.12 (the selections and why: below); the /dev/tprof fuzzer (tests/fuzz/) in the debug
#      kernel, root and unprivileged halves of CHECK_FUZZ_SECONDS/2 each
#      (default 60 in all), kmemleak after, and in Debian sid's arm64
#      kernel (CHECK_ARM64_FUZZ_SECONDS, default 50: uprobes for
#      breakpoints at user addresses), with one random seed printed
#      (CHECK_FUZZ_SEED=N repeats it), and in the arm64 debug kernel
#      (CHECK_ARM64_FUZZ_SECONDS too)
# Ends with "N passed, M failed" and exits nonzero on any failure. A stage
# that cannot run (build failure, guest that does not boot) counts as failed.
#
# The developers' fast tiers:
#   tests/check.sh --host (make check-host): steps 1 and 2, no guest
#   KERNELS="6.1 arm64-6.12" tests/check.sh (make check KERNELS=...): steps
#   1-3 and only these kernels' guests, of debug (with KUnit and the
#   fuzzer), 6.1, 6.12 (these two with the packages' stage), 6.1-rt,
#   trixie, sid, arm64-6.1 (with --icount), arm64-6.12, arm64-trixie,
#   arm64-sid (with its fuzzer), arm64-debug (with its fuzzer)
set -uo pipefail

host_tier=0
[ "${1:-}" = --host ] && host_tier=1
KERNELS=${KERNELS:-debug 6.1 6.12 6.1-rt trixie sid arm64-6.1 arm64-6.12 arm64-trixie arm64-sid arm64-debug}
# want KERNEL: is this kernel's guest part of the run?
want() { [[ " $KERNELS " == *" $1 "* ]]; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
LOG_DIR=$ROOT/build/check
# The compile cache (Makefile: CCACHE) lives beside the cached kernels, out
# of the clone: a run recompiles what changed since the last one. ccache
# hashes each compile's directory too (debug info names it), so a clone at
# another path compiles afresh.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/tprof/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
mkdir -p "$LOG_DIR"

passed=0
failed=0
failures=()

pass() { passed=$((passed + ${2:-1})); echo "PASS: $1"; }
fail() { failed=$((failed + ${2:-1})); failures+=("$1"); echo "FAIL: $1"; }
stage_start=$SECONDS
stage_name=
# Prints how long the previous stage took, then the new stage's title.
stage() {
	[ -z "$stage_name" ] || echo "($stage_name: $((SECONDS - stage_start)) s)"
	stage_name=$*
	stage_start=$SECONDS
	echo
	echo "=== $* ==="
}

# Adds a GoogleTest run's counts from its output (log file $2) under name $1.
# A run that printed no summary (crashed, never started) counts as a failure.
count_gtest() {
	local name=$1 log=$2 rc=$3 np nf
	np=$(tr -d '\r' <"$log" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	nf=$(tr -d '\r' <"$log" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	[ -n "$np" ] && passed=$((passed + np))
	if [ -n "$nf" ] && [ "$nf" -gt 0 ]; then
		failed=$((failed + nf))
		while read -r t; do failures+=("$name: $t"); done < <(tr -d '\r' <"$log" | sed -n 's/^\[  FAILED  \] \([A-Za-z][^ ]*\).*/\1/p' | sort -u)
	fi
	if [ -z "$np" ] && [ -z "$nf" ]; then
		# A hung or crashed guest: name the test it was in and show how
		# it ended, since CI keeps only this report.
		local last
		last=$(tr -d '\r' <"$log" | sed -n 's/^\[ RUN      \] \([^ ]*\).*/\1/p' | tail -n 1)
		echo "--- the last 40 lines of $log:"
		tr -d '\r' <"$log" | tail -n 40
		echo "---"
		fail "$name: no test summary (exit $rc) in ${last:-no test}, see $log"
	elif [ "$rc" != 0 ] && { [ -z "$nf" ] || [ "$nf" = 0 ]; }; then
		fail "$name: exited $rc after its tests (kernel report or crash?), see $log"
	else
		echo "$name: ${np:-0} passed, ${nf:-0} failed"
	fi
}

# run_script NAME TITLE CMD...: runs a script that prints PASS:/FAIL: lines
# into $LOG_DIR/NAME.log and counts them; a nonzero exit without a FAIL
# line still counts as one failure.
run_script() {
	local name=$1 title=$2
	shift 2
	"$@" >"$LOG_DIR/$name.log" 2>&1
	count_script "$name" "$title" $?
}
# count_script NAME TITLE RC: counts what run_script NAME (or a run in the
# background into $LOG_DIR/NAME.log that exited RC) printed.
count_script() {
	local name=$1 title=$2 rc=$3 np nf
	grep -E '^(PASS|FAIL)' "$LOG_DIR/$name.log"
	np=$(grep -c '^PASS' "$LOG_DIR/$name.log")
	nf=$(grep -c '^FAIL' "$LOG_DIR/$name.log")
	passed=$((passed + np))
	if [ "$nf" -gt 0 ] || [ "$rc" != 0 ]; then
		fail "$title ($nf failed, exit $rc), see $LOG_DIR/$name.log" "$((nf > 0 ? nf : 1))"
	fi
}

stage "dependencies"
if make -s deps; then pass "make deps"; else fail "make deps"; fi

stage "build (warnings are errors)"
K61=$(tools/vm/find-kernel --image 6.1)
K612=$(tools/vm/find-kernel --image 6.12)
K61RT=$(tools/vm/find-kernel --image 6.1-rt)
echo "kernels: $K61, $K612, $K61RT"
build_ok=1
if make -j"$(nproc)" all KVER="$K61" >"$LOG_DIR/build.log" 2>&1 &&
	make -j"$(nproc)" module KVER="$K612" >>"$LOG_DIR/build.log" 2>&1 &&
	make -j"$(nproc)" module KVER="$K61RT" >>"$LOG_DIR/build.log" 2>&1; then
	pass "build: module for $K61, $K612 and $K61RT, library, tprofctl, tests"
else
	tail -n 40 "$LOG_DIR/build.log"
	fail "build (see $LOG_DIR/build.log)"
	build_ok=0
fi

if [ "$build_ok" = 1 ]; then
	stage "unit tests (host, ASan/UBSan)"
	build/tests/tprof_unit_tests --gtest_color=no >"$LOG_DIR/unit.log" 2>&1
	rc=$?
	grep -E '^\[  FAILED  \]|Failure|ERROR' "$LOG_DIR/unit.log" | head -n 40
	count_gtest "unit" "$LOG_DIR/unit.log" "$rc"

	stage "flame graph in a browser (headless Chromium)"
	run_script flamegraph_browser "flame graph in a browser" tests/flamegraph_browser.sh

	stage "make install / uninstall (pkg-config user, man pages, completion)"
	run_script install "make install" tests/install_test.sh

fi
if [ "$build_ok" = 1 ] && [ "$host_tier" = 0 ]; then
	# The VM bench's self-tests and KUnit: one guest each, side by side.
	if want debug; then
		stage "VM bench self-tests and KUnit (ktests/, KUnit-enabled 6.1 kernel), side by side"
		tests/vm_selftest.sh >"$LOG_DIR/vm_selftest.log" 2>&1 &
		selftest_pid=$!
		ktests/run.sh >"$LOG_DIR/kunit.log" 2>&1
		rc=$?
		grep -E '^(KUNIT|PASS|FAIL)' "$LOG_DIR/kunit.log" | head -n 60
		np=$(grep -c '^PASS' "$LOG_DIR/kunit.log")
		nf=$(grep -c '^FAIL' "$LOG_DIR/kunit.log")
		passed=$((passed + np))
		failed=$((failed + nf))
		if [ "$nf" -gt 0 ]; then
			while read -r t; do failures+=("kunit: $t"); done < <(sed -n 's/^FAIL: //p' "$LOG_DIR/kunit.log")
		fi
		if [ "$rc" != 0 ] && [ "$nf" = 0 ]; then
			tail -n 30 "$LOG_DIR/kunit.log"
			fail "kunit: run failed (exit $rc), see $LOG_DIR/kunit.log"
		fi
		wait "$selftest_pid"
		count_script vm_selftest "VM bench self-tests" $?
	else
		stage "VM bench self-tests"
		run_script vm_selftest "VM bench self-tests" tests/vm_selftest.sh
	fi

	# The arm64 programs (the library, tprofctl and the tests, cross-built)
	# build in the background from here to the guests' builds: the
	# packages' stage (DKMS builds, apt) mostly keeps one core busy. Not
	# beside the VM bench's self-tests: their multi-threaded TCG guests
	# took 480 s instead of 80 beside a build.
	arm64_pid=
	if want arm64-6.1 || want arm64-6.12 || want arm64-trixie || want arm64-sid || want arm64-debug; then
		nice make -s -j"$(nproc)" arm64-guest-programs arm64-tools >"$LOG_DIR/arm64-build.log" 2>&1 &
		arm64_pid=$!
	fi

	# The Debian packages, installed with DKMS in a Debian 12 root (two
	# kernels), then purged; the two modules DKMS built are the ones the 6.1
	# and 6.12 guests below load (a failure here falls back to the tree's).
	rm -rf "$ROOT/build/packages"
	if want 6.1 || want 6.12; then
		stage "Debian packages (make deb, lintian, apt install with DKMS, apt remove --purge)"
		run_script packages "Debian packages" tests/packages_test.sh "$ROOT/build/packages" "$K61" "$K612"
	fi
	# Debian's perf program, for tprof's call graph against perf's in the
	# 6.1 guest (tests/integration/stacks_vs_perf_test.cc).
	perf_prog=$(tools/vm/find-perf) || perf_prog=
	# Debian's arm64 perf (make deps: tools/vm/arm64-sysroot --perf) and
	# where its libraries are, for the arm64 sid guest.
	perf_arm64=
	if p=$(tools/vm/arm64-sysroot --print-perf 2>>"$LOG_DIR/arm64-build.log"); then
		r=$(dirname "$(dirname "$(dirname "$p")")")
		perf_arm64="--lib-dir $r/lib/aarch64-linux-gnu --lib-dir $r/usr/lib/aarch64-linux-gnu --add $p"
	fi
	# dkms_module KVER: the module DKMS built for KVER, as tprof-vm flags.
	dkms_module() {
		local ko=$ROOT/build/packages/tprof-$1.ko
		[ -e "$ko" ] && echo "--module $ko"
	}

	# ---- Guest suites, in two lanes ----
	# Every guest below emulates all its vCPUs on one host thread
	# (--tcg-single), so two lanes of guests keep both cores of a 2-core
	# machine busy without sharing one: a guest sees the same CPU it would
	# alone, and the suites take about half the time they did in a row
	# (CI's budget). Everything they need is built first; the lanes then run
	# and the results are reported in a fixed order.
	# Why --tcg-single: the suite loads and unloads the module many times,
	# and each load flips the scheduler tracepoints' static keys
	# (text_poke_bp). Under multi-threaded TCG a vCPU has twice been seen
	# executing the breakpoint after the patch completed (Oops: int3 in
	# __schedule, 6.12) and once a guest wedged during module reloads.
	stage "builds for the guests (the debug kernels and their modules, arm64 cross builds)"
	debug_ok=0 arm64_61_ok=0 arm64_612_ok=0 arm64_debug_ok=0
	# The background build of the arm64 programs ends first (a failure
	# shows again, with its errors, in the arm64 builds below).
	[ -z "$arm64_pid" ] || wait "$arm64_pid"
	if ! want debug; then
		:
	elif tree=$(ktests/build-kunit-kernel.sh 2>>"$LOG_DIR/kunit.log") &&
		kv=kunit-$(basename "$tree") &&
		make -s -j"$(nproc)" module KVER="$kv" KDIR="$tree" >"$LOG_DIR/debug-module.log" 2>&1; then
		debug_ok=1
	else
		tail -n 20 "$LOG_DIR/debug-module.log"
		fail "integration debug and fuzz: cannot build tprof.ko for the KUnit kernel"
	fi
	# arm64: the module, the tests and the workloads are cross-built.
	KA61=$(tools/vm/arm64-sysroot --userspace --print-release 2>>"$LOG_DIR/arm64-build.log")
	if ! want arm64-6.1; then
		:
	elif [ -n "$KA61" ] && make -s -j"$(nproc)" arm64-vm-inputs KVER="$KA61" >>"$LOG_DIR/arm64-build.log" 2>&1; then
		arm64_61_ok=1
	else
		tail -n 30 "$LOG_DIR/arm64-build.log"
		fail "integration arm64 6.1: cannot build for ${KA61:-the arm64 kernel (none in the sysroot: make deps)} (see $LOG_DIR/arm64-build.log)"
	fi
	KA612=$(tools/vm/arm64-sysroot --kernel 6.12 --print-release 2>>"$LOG_DIR/arm64-build.log")
	if ! want arm64-6.12; then
		:
	elif [ -n "$KA612" ] && make -s -j"$(nproc)" arm64-vm-inputs KVER="$KA612" >>"$LOG_DIR/arm64-build.log" 2>&1; then
		arm64_612_ok=1
	else
		tail -n 30 "$LOG_DIR/arm64-build.log"
		fail "integration arm64 6.12 and its fuzz: cannot build for ${KA612:-the arm64 6.12 kernel (none in the sysroot: make deps)} (see $LOG_DIR/arm64-build.log)"
	fi
	# Debian's newer lines (trixie's 6.12, sid's newest), each built in its
	# suite's chroot with the gcc its kernel was built with (tools/vm/debian-kernel:
	# the chroots and images are cached in ~/.cache/tprof/debian).
	newer_ok=
	for k in trixie sid arm64-trixie arm64-sid; do
		want "$k" || continue
		suite=${k#arm64-} darch=amd64
		[ "$k" = "$suite" ] || darch=arm64
		if rel=$(tools/vm/debian-kernel --arch "$darch" "$suite" --print-release 2>>"$LOG_DIR/newer-build.log") &&
			make -s -j"$(nproc)" module KVER="$rel" >>"$LOG_DIR/newer-build.log" 2>&1; then
			newer_ok+=" $k"
			echo "$k: $rel"
		else
			tail -n 30 "$LOG_DIR/newer-build.log"
			fail "integration $k: cannot build tprof.ko for ${rel:-the $darch kernel of $suite} (see $LOG_DIR/newer-build.log)"
		fi
	done
	# sid's arm64 guest runs the arm64 programs.
	if [[ " $newer_ok " == *" arm64-"* ]] && [ "$arm64_61_ok$arm64_612_ok" = 00 ]; then
		make -s -j"$(nproc)" arm64-guest-programs arm64-tools >>"$LOG_DIR/arm64-build.log" 2>&1 ||
			fail "integration arm64 trixie/sid: cannot build the arm64 programs (see $LOG_DIR/arm64-build.log)"
	fi
	newer() { [[ " $newer_ok " == *" $1 "* ]]; }

	# The arm64 debug kernel: the same configuration, cross-built (cached
	# like the x86 one); its guest runs the arm64 programs built above.
	if ! want arm64-debug; then
		:
	elif atree=$(ktests/build-kunit-kernel.sh --arch arm64 2>>"$LOG_DIR/arm64-build.log") &&
		akv=kunit-$(basename "$atree") &&
		make -s -j"$(nproc)" module KVER="$akv" KDIR="$atree" >>"$LOG_DIR/arm64-build.log" 2>&1 &&
		make -s -j"$(nproc)" arm64-guest-programs arm64-tools >>"$LOG_DIR/arm64-build.log" 2>&1; then
		arm64_debug_ok=1
	else
		tail -n 30 "$LOG_DIR/arm64-build.log"
		fail "integration arm64 debug and its fuzz: cannot build the arm64 debug kernel or its module (see $LOG_DIR/arm64-build.log)"
	fi

	# Each kernel's tests and the reasons for each exclusion.
	. "$ROOT/tests/integration/suites.sh"
	fuzz_seed=${CHECK_FUZZ_SEED:-$(($(date +%s%N) % 1000000000))}
	afs=${CHECK_ARM64_FUZZ_SECONDS:-50}

	# job NAME CMD...: runs CMD into $LOG_DIR/NAME.log and leaves its exit
	# status and seconds in $LOG_DIR/NAME.result for the report.
	job() {
		local name=$1 t0=$SECONDS
		shift
		rm -f "$LOG_DIR/$name.result"
		"$@" >"$LOG_DIR/$name.log" 2>&1
		echo "$? $((SECONDS - t0))" >"$LOG_DIR/$name.result"
	}
	# A suite may take as long as it needs while it makes progress (each
	# test prints its RUN and OK lines): a guest ends when its console has
	# been silent for 10 minutes (a hung test; the longest test takes ~3 min
	# in the debug kernel, twice that on a loaded host), and the whole run
	# only as a backstop after 90 minutes.
	vm() { TPROF_VM_NO_BUILD=1 tools/tprof-vm --tcg-single --timeout 5400 --stall-timeout 600 "$@"; }
	fuzz() { TPROF_VM_NO_BUILD=1 tests/fuzz/run.sh "$@"; }
	GT=(tprof_integration_tests --gtest_color=no)
	lane_a() {
		if [ "$debug_ok" = 1 ]; then
			job integration-debug vm --kmemleak \
				--vmlinuz "$tree/arch/x86/boot/bzImage" --module "build/kmod/$kv/kmod/tprof.ko" -- \
				"${GT[@]}" --gtest_filter="$DEBUG_TESTS:-$DEBUG_EXCLUDED"
			job fuzz fuzz --kernel debug --seconds "${CHECK_FUZZ_SECONDS:-60}" --seed "$fuzz_seed"
		fi
		if [ "$arm64_debug_ok" = 1 ]; then
			job integration-arm64-debug vm --arch arm64 --kmemleak \
				--vmlinuz "$atree/arch/arm64/boot/Image" --module "build/kmod/$akv/kmod/tprof.ko" -- \
				"${GT[@]}" --gtest_filter="$KERNEL_PATH_TESTS:-$HW_TESTS:$ARM64_DEBUG_EXCLUDED"
		fi
		newer sid && job integration-sid vm --kernel sid -- "${GT[@]}" --gtest_filter="-$ONCE_TESTS:$PERF_TESTS"
		# The fuzzer in Debian's newest arm64 kernel, where execution
		# breakpoints at user addresses are uprobes or debug registers with
		# steppers (never both at one address: EBUSY). Same seed.
		if newer arm64-sid; then
			job fuzz-arm64 fuzz --kernel arm64-sid --seconds "$afs" --seed "$fuzz_seed"
		fi
		newer trixie && job integration-trixie vm --kernel trixie -- "${GT[@]}" --gtest_filter="$SMOKE_TESTS"
	}
	lane_b() {
		local k shift
		# shellcheck disable=SC2046  # dkms_module's words are flags
		want 6.1 && job integration-6.1 vm --kernel 6.1 $(dkms_module "$K61") \
			${perf_prog:+--add "$perf_prog"} -- "${GT[@]}"
		want 6.1-rt && job integration-6.1-rt vm --kernel 6.1-rt -- "${GT[@]}" --gtest_filter="-$CLI_ONLY_TESTS:$PERF_TESTS"
		# shellcheck disable=SC2046
		want 6.12 && job integration-6.12 vm --kernel 6.12 $(dkms_module "$K612") -- \
			"${GT[@]}" --gtest_filter="$SMOKE_TESTS"
		# The guests above have constant_tsc (tools/tprof-vm's CPU model);
		# one whose CPU model lacks it checks that the self page then offers
		# no TSC.
		want 6.1 && TPROF_VM_CPU=qemu64 job integration-no-constant-tsc vm --kernel 6.1 -- \
			"${GT[@]}" --gtest_filter='SelfPageTest.Tsc*'
		# And one booted with highres=off, whose tick is no hrtimer: tick
		# sampling is refused there and record falls back to the perf clock.
		want 6.1 && TPROF_VM_APPEND=highres=off job integration-no-highres vm --kernel 6.1 -- \
			"${GT[@]}" --gtest_filter='TickSampling.NeedsHighResolutionTimers'
		if [ "$arm64_61_ok" = 1 ]; then
			job integration-arm64-6.1 vm --arch arm64 -- \
				"${GT[@]}" --gtest_filter="$LOAD_SMOKE_TESTS:-$HW_TESTS"
			job integration-arm64-6.1-icount vm --arch arm64 --icount -- \
				"${GT[@]}" --gtest_filter="$HW_TESTS"
			for shift in 1 2; do
				job "integration-arm64-6.1-icount$shift" vm --arch arm64 --icount=$shift -- \
					"${GT[@]}" --gtest_filter='PmuHardwareTest.Cpi*'
			done
		fi
		if [ "$arm64_612_ok" = 1 ]; then
			job integration-arm64-6.12 vm --arch arm64 --kernel 6.12 -- \
				"${GT[@]}" --gtest_filter="$LOAD_SMOKE_TESTS:-$HW_TESTS"
		fi
		# shellcheck disable=SC2086  # $perf_arm64 is flags or nothing
		newer arm64-sid && job integration-arm64-sid vm --arch arm64 --kernel sid $perf_arm64 -- \
			"${GT[@]}" --gtest_filter="-$HW_TESTS:ThreadMetricsTest.TooSmallBufferLosesNothing:$CLI_ONLY_TESTS:$ARM64_SID_EXCLUDED"
		newer arm64-trixie && job integration-arm64-trixie vm --arch arm64 --kernel trixie -- \
			"${GT[@]}" --gtest_filter="$SMOKE_TESTS:-$HW_TESTS:ThreadMetricsTest.TooSmallBufferLosesNothing"
		if [ "$arm64_debug_ok" = 1 ]; then
			job fuzz-arm64-debug fuzz --kernel arm64-debug --seconds "$afs" --seed "$fuzz_seed"
		fi
	}
	# Balanced by what each took in a clean-clone run on 2 cores (seconds,
	# 32bf3fb's run, less what the CLI-only tests and the Ctrl-C race's 20
	# rounds no longer take):
	# A = debug 641 + its fuzz 243 + arm64 debug 682 + sid 526 + arm64 sid
	#     fuzz 74 + trixie smoke 131 = ~2300;
	# B = 6.1 ~480 + 6.1-rt ~320 + 6.12 smoke 131 + no-tsc 14 + arm64 6.1
	#     load smoke 110 + --icount 62 + arm64 6.12 load smoke 113 + arm64
	#     sid ~540 + arm64 trixie smoke 225 + arm64 debug fuzz 297 = ~2290.
	rm -f "$LOG_DIR"/*.result
	stage "guest suites, two lanes: debug kernels, sid, fuzzers, trixie | 6.1, 6.1-rt, 6.12, arm64 6.1, 6.12, sid, trixie"
	lane_a &
	lane_a_pid=$!
	lane_b
	wait "$lane_a_pid"
	echo "(both lanes: $((SECONDS - stage_start)) s)"
	stage_name=

	# report_suite NAME TITLE: what failed in a GoogleTest guest run (and
	# the known-count lines), its counts and seconds.
	report_suite() {
		local name=$1 log=$LOG_DIR/integration-$1.log rc secs
		echo
		echo "=== $2 ==="
		[ -f "$LOG_DIR/integration-$name.result" ] || return 0  # not built: counted above
		read -r rc secs <"$LOG_DIR/integration-$name.result"
		# A failure's next lines carry its values ("Which is: 20"): CI shows them.
		awk '/: Failure/ { n = 4; print; next }
			n > 0 { n--; print; next }
			/^\[  FAILED  \]|^tprof-vm:|^kernel log:|^  (instructions|cycles):|known loop/' "$log" | head -n 80
		count_gtest "integration $name" "$log" "$rc"
		echo "($2: $secs s)"
	}
	# report_fuzz NAME TITLE REPEAT: the fuzzer's verdict; REPEAT is the
	# make command that repeats the run.
	report_fuzz() {
		local name=$1 log=$LOG_DIR/$1.log rc secs
		echo
		echo "=== $2 ==="
		[ -f "$LOG_DIR/$name.result" ] || return 0
		read -r rc secs <"$LOG_DIR/$name.result"
		# tprof-vm's own report of a guest that ended badly (its console:
		# and qemu: lines) is the only trace CI keeps of it.
		grep -E '^fuzz:|^tprof_fuzz.*(seed|PASS|FAIL|paranoid)|^VIOLATION|^tprof-vm:|^kernel log:|^console: |^qemu: ' "$log" | head -n 120
		if [ "$rc" = 0 ]; then
			pass "$2: seed $fuzz_seed, no violation, clean kernel log"
		else
			# The summary line is what survives a truncated CI print: it
			# carries the first cause the log names.
			local why
			why=$(grep -m1 -E '^VIOLATION|^kernel log:|^tprof-vm:|FAIL' "$log" | cut -c1-200)
			fail "$2: seed $fuzz_seed (exit $rc; repeat: $3)${why:+: $why}, see $log"
		fi
		echo "($2: $secs s)"
	}
	report_suite debug "integration tests in the KUnit debug kernel (KASAN, UBSAN, lockdep, kmemleak)"
	report_suite 6.1 "integration tests in Debian's 6.1 kernel (the module DKMS built from tprof-dkms)"
	report_suite 6.1-rt "integration tests in Debian's 6.1 PREEMPT_RT kernel"
	report_suite 6.12 "smoke suite in Debian 12's 6.12 kernel (the module DKMS built from tprof-dkms)"
	report_suite trixie "smoke suite in Debian 13's (trixie's) 6.12 kernel"
	report_suite sid "integration tests in Debian sid's newest kernel"
	report_suite no-constant-tsc "self page on a CPU without constant_tsc (6.1)"
	report_suite no-highres "tick sampling where timers are not high resolution (6.1, highres=off)"
	report_suite arm64-6.1 "load smoke suite in Debian's arm64 6.1 kernel (emulated PMU)"
	report_suite arm64-6.1-icount "hardware counts of known loops in the arm64 6.1 kernel (--icount)"
	for shift in 1 2; do
		report_suite "arm64-6.1-icount$shift" "PMU program CPI rules in the arm64 6.1 kernel (--icount=$shift: CPI $((1 << shift)))"
	done
	report_suite arm64-6.12 "load smoke suite in Debian 12's arm64 6.12 kernel (emulated PMU)"
	report_suite arm64-trixie "smoke suite in Debian 13's arm64 6.12 kernel (emulated PMU)"
	report_suite arm64-sid "integration tests in Debian sid's newest arm64 kernel (emulated PMU)"
	report_suite arm64-debug "integration tests of kernel paths in the arm64 debug kernel (KASAN, UBSAN, lockdep, kmemleak)"
	report_fuzz fuzz "fuzz /dev/tprof in the debug kernel (kmemleak after)" \
		"make fuzz FUZZ_SEED=$fuzz_seed FUZZ_SECONDS=${CHECK_FUZZ_SECONDS:-60}"
	report_fuzz fuzz-arm64 "fuzz /dev/tprof in Debian sid's arm64 kernel" \
		"make fuzz FUZZ_KERNEL=arm64-sid FUZZ_SEED=$fuzz_seed FUZZ_SECONDS=$afs"
	report_fuzz fuzz-arm64-debug "fuzz /dev/tprof in the arm64 debug kernel (kmemleak after)" \
		"make fuzz FUZZ_KERNEL=arm64-debug FUZZ_SEED=$fuzz_seed FUZZ_SECONDS=$afs"
fi
[ -z "$stage_name" ] || echo "($stage_name: $((SECONDS - stage_start)) s)"

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
