#!/usr/bin/env bash
# Runs tprof_fuzz (tests/fuzz/, main in tprof_fuzz.cc) in a guest: a root
# half, then an unprivileged half, in one boot. `make check` runs it
# briefly in the debug kernel; `make fuzz` runs it longer.
#
#   tests/fuzz/run.sh [--kernel debug|arm64-debug|6.1|6.12|trixie|sid|arm64-6.1|arm64-6.12|arm64-trixie|arm64-sid] [--seconds S] [--seed N] [--threads T]
#
#   --kernel   debug (default): the KUnit kernel of ktests/ (KASAN, UBSAN,
#              lockdep, kmemleak, debug objects, hung-task and lockup
#              detectors), with tools/tprof-vm --kmemleak; arm64-debug: its
#              arm64 build (ktests/build-kunit-kernel.sh --arch arm64); or a
#              Debian kernel; arm64-6.1, arm64-6.12, arm64-trixie, arm64-sid are Debian's arm64
#              kernels (tools/tprof-vm --arch arm64, as make check's arm64
#              stages: breakpoints at user addresses are uprobes there)
#   --seconds  total fuzzing time, split between the halves (default 60)
#   --seed     default: random; printed first, with the command that repeats it
#   --threads  worker threads per half (default 4)
#
# Fails (nonzero) on any invariant violation the fuzzer reports, on any kernel
# report in the guest's log (WARNING, BUG, KASAN, UBSAN, lockdep, hung task,
# soft lockup, RCU stall, kmemleak leak) and if the guest does not finish.
# Set TPROF_VM_NO_BUILD=1 when everything is built already.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

kernel=debug
seconds=60
seed=
threads=4
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=${2:?}; shift 2 ;;
	--seconds) seconds=${2:?}; shift 2 ;;
	--seed) seed=${2:?}; shift 2 ;;
	--threads) threads=${2:?}; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) echo "tests/fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$seed" ] || seed=$(($(date +%s%N) % 1000000000))
half=$(((seconds + 1) / 2))

echo "fuzz: seed $seed, kernel $kernel, ${half}s root + ${half}s unprivileged, $threads threads"
echo "fuzz: repeat with: make fuzz FUZZ_SEED=$seed FUZZ_SECONDS=$seconds FUZZ_KERNEL=$kernel FUZZ_THREADS=$threads"

vm=(tools/tprof-vm --tcg-single --timeout $((seconds * 4 + 900)))
if [ "$kernel" = debug ]; then
	tree=$(ktests/build-kunit-kernel.sh)
	kv=kunit-$(basename "$tree")
	if [ "${TPROF_VM_NO_BUILD:-0}" != 1 ]; then
		make -s module KVER="$kv" KDIR="$tree" >&2
		make -s guest-programs >&2
	fi
	vm+=(--kmemleak --vmlinuz "$tree/arch/x86/boot/bzImage" --module "build/kmod/$kv/kmod/tprof.ko")
	export TPROF_VM_NO_BUILD=1
elif [ "$kernel" = arm64-debug ]; then
	tree=$(ktests/build-kunit-kernel.sh --arch arm64)
	kv=kunit-$(basename "$tree")  # ends in -arm64: the Makefile cross-builds
	if [ "${TPROF_VM_NO_BUILD:-0}" != 1 ]; then
		make -s module KVER="$kv" KDIR="$tree" >&2
		make -s arm64-guest-programs arm64-tools >&2  # the programs, as make check builds them
	fi
	vm+=(--arch arm64 --kmemleak --vmlinuz "$tree/arch/arm64/boot/Image" --module "build/kmod/$kv/kmod/tprof.ko")
	export TPROF_VM_NO_BUILD=1
elif [ "${kernel#arm64-}" != "$kernel" ]; then
	# The flags of make check's arm64 guests.
	vm+=(--arch arm64 --kernel "${kernel#arm64-}")
else
	vm+=(--kernel "$kernel")
fi

# Both halves run whatever the first one found; the guest's exit status is
# nonzero if either failed.
"${vm[@]}" -- sh -c "
	tprof_fuzz --seed $seed --seconds $half --threads $threads; a=\$?
	tprof_fuzz --seed $seed --seconds $half --threads $threads --unprivileged; b=\$?
	[ \$a = 0 ] && [ \$b = 0 ]"
