#!/usr/bin/env bash
# Runs tprof's KUnit suites: builds (or reuses) the KUnit kernel, builds
# tprof_kunit.ko against it, loads it in a QEMU guest and parses the KTAP
# output. Prints one "PASS: suite.case" or "FAIL: suite.case" line per test
# case and exits nonzero if any case failed or nothing ran.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

echo "KUNIT: kernel tree (built once per machine, ~5 min; then cached)"
tree=$(ktests/build-kunit-kernel.sh)
echo "KUNIT: $tree"

# Built in a copy so ktests/ can reach kmod/core and uapi by relative path.
work=$ROOT/build/ktests
rm -rf "$work"
mkdir -p "$work"
cp -r ktests kmod uapi "$work/"
make -C "$tree" M="$work/ktests" modules >"$work/build.log" 2>&1 || {
	tail -n 40 "$work/build.log"
	echo "FAIL: build of tprof_kunit.ko"
	exit 1
}

log=$work/ktap.log
set +e
tools/tprof-vm --vmlinuz "$tree/arch/x86/boot/bzImage" --no-module \
	--add "$work/ktests/tprof_kunit.ko" -- sh -c 'insmod tprof_kunit.ko && dmesg' >"$log" 2>&1
vm_rc=$?
set -e

# KTAP: suites at the top level ("ok 1 tprof_abi"), their cases indented by
# four spaces ("    ok 2 - name" on 6.1); parameters nest deeper and are
# summarised by their case's line.
awk '
	{ sub(/\r$/, ""); sub(/^\[ *[0-9]+\.[0-9]+\] /, "") }
	/^    # Subtest: / { suite = $3; next }
	/^    (not )?ok [0-9]+ / {
		line = $0
		ok = (line !~ /^    not ok/)
		sub(/^    (not )?ok [0-9]+ (- )?/, "", line)
		sub(/ #.*/, "", line)
		printf "%s: %s.%s\n", ok ? "PASS" : "FAIL", suite, line
		n++
	}
	END { if (n == 0) print "FAIL: no KUnit results in the guest output" }
' "$log" | tee "$work/results"

if [ "$vm_rc" != 0 ] || grep -q '^FAIL' "$work/results"; then
	echo "KUNIT: guest exit $vm_rc; guest output:"
	grep -v '^\s*$' "$log" | tail -n 60
	exit 1
fi
