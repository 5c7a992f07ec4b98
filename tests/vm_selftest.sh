#!/usr/bin/env bash
# Self-tests of the VM bench: the things `make check` relies on to be honest.
# Prints PASS:/FAIL: lines; tests/check.sh counts them.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
export TPROF_VM_NO_BUILD=1
# One host thread per guest (--tcg-single), as make check's guests: these
# run beside the KUnit guest, and multi-threaded TCG guests beside other
# work took several times as long.
VM=(tools/tprof-vm --tcg-single)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {
	local name=$1
	shift
	if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; fi
}

# --- the kernel log scanner ------------------------------------------------
printf '[    0.1] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable\n[    0.2] tprof: loaded\n' >"$tmp/clean.log"
printf '[    0.3] kmemleak: Kernel memory leak detector initialized (mem pool available: 15011)\n@@TPROF_VM_KMEMLEAK=ok@@\n' >>"$tmp/clean.log"
check "scan-kernel-log passes a clean log" tools/vm/scan-kernel-log "$tmp/clean.log"
for report in 'WARNING: CPU: 1 PID: 9 at kmod/hooks.c:10 x+0x1' 'BUG: sleeping function called from invalid context' \
	'Oops: 0002 [#1] PREEMPT SMP' 'WARNING: possible circular locking dependency detected' \
	'BUG: KASAN: use-after-free in tprof_ioctl' 'UBSAN: shift-out-of-bounds in kmod/dev.c:3' \
	'INFO: task kworker/0:1:12 blocked for more than 120 seconds.' \
	'watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [tprof_fuzz:97]' \
	'rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:' \
	'rcu: INFO: rcu_sched self-detected stall on CPU' \
	'ODEBUG: free active (active state 0) object: ffff888004a3c000 object type: timer_list' \
	'unreferenced object 0xffff888004a3c000 (size 64):' \
	'kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)' \
	'@@TPROF_VM_KMEMLEAK=error: modules still loaded: tprof @@'; do
	printf '[    0.1] ok\n[    1.5] %s\n' "$report" >"$tmp/bad.log"
	check "scan-kernel-log flags '${report%% in *}'" bash -c "! tools/vm/scan-kernel-log '$tmp/bad.log' >/dev/null"
done

# --- tprof-vm ----------------------------------------------------------------
"${VM[@]}" -- false >"$tmp/out" 2>&1
rc=$?
check "tprof-vm -- false exits nonzero" test "$rc" != 0

echo "hello from the host" >"$tmp/added.txt"
out=$("${VM[@]}" --add "$tmp/added.txt" -- sh -c 'cat added.txt; su user -c "echo ids \$(id -u) \$(id -g)"; exit 7' 2>&1)
rc=$?
check "tprof-vm passes CMD's exit status through (7, got $rc)" test "$rc" = 7
check "tprof-vm --add puts files in the guest's working directory" grep -q 'hello from the host' <<<"$out"
check "su user -c CMD runs CMD as uid and gid 1000 in the guest (as the README says)" grep -q '^ids 1000 1000' <<<"$out"

"${VM[@]}" --kernel 6.12 -- tprofctl status --json >"$tmp/status.json" 2>"$tmp/status.err"
rc=$?
check "tprof-vm --kernel 6.12 -- tprofctl status --json exits 0" test "$rc" = 0
check "status --json on 6.12 is valid JSON with context switches" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kernel_release"].startswith("6.12."), d["kernel_release"]
assert d["total"]["context_switches"] > 0, d["total"]
assert len(d["cpus"]) == d["ncpus"] >= 2
' "$tmp/status.json"

# --stall-timeout: a guest whose console is silent that long ends (124,
# saying so); one that prints as it goes may take longer than the limit.
"${VM[@]}" --stall-timeout 12 -- sh -c 'echo started; sleep 600' >"$tmp/stall.out" 2>&1
rc=$?
check "tprof-vm --stall-timeout ends a silent guest (exit 124, got $rc)" test "$rc" = 124
check "... and says it stalled" grep -q 'stalled: no console output for 12s' "$tmp/stall.out"
"${VM[@]}" --stall-timeout 12 -- sh -c 'for i in 1 2 3 4; do echo $i; sleep 5; done' >"$tmp/progress.out" 2>&1
rc=$?
check "tprof-vm --stall-timeout lets a guest that prints run past it (exit 0, got $rc)" test "$rc" = 0
"${VM[@]}" -- sh -c 'echo "WARNING: CPU: 0 PID: 1 at selftest.c:1 injected+0x0" >/dev/kmsg' >"$tmp/warn.out" 2>&1
rc=$?
check "a WARNING in the guest kernel log fails the run (exit 3, got $rc)" test "$rc" = 3

# The suites that open the device first (18 s): with the whole suite this
# stage took ~500 s, its other guests ~150 (the userspace tests pass
# without the device, others wait for what never comes).
"${VM[@]}" --no-module -- tprof_integration_tests --gtest_color=no \
	--gtest_filter='GetInfo.*:IoctlErrors.*' >"$tmp/nomod.out" 2>&1
rc=$?
check "integration tests fail (not skip) without /dev/tprof (exit $rc)" test "$rc" != 0
check "... and say the device is missing" grep -q 'cannot open /dev/tprof' "$tmp/nomod.out"

# --kmemleak where there is no kmemleak (Debian's kernel): the check cannot
# run, and that fails the run instead of passing unchecked.
"${VM[@]}" --kmemleak -- true >"$tmp/nokmemleak.out" 2>&1
rc=$?
check "tprof-vm --kmemleak fails on a kernel without kmemleak (exit 3, got $rc)" test "$rc" = 3
check "... and says why" grep -q 'kmemleak is missing' "$tmp/nokmemleak.out"

printf 'not a module' >"$tmp/bogus.ko"
"${VM[@]}" --module "$tmp/bogus.ko" -- true >"$tmp/bogus.out" 2>&1
rc=$?
check "a module that does not load fails the run (exit 98, got $rc)" test "$rc" = 98
exit 0
