#!/usr/bin/env bash
# make bench: builds the benchmark programs and runs them in one guest boot
# per kernel, printing ratios against baselines measured in the same boot;
# then the metrics costs again in an instruction-counting (--icount) guest.
#   bench/run.sh [6.1|6.12|arm64|stacks|top|tick|continuous]...   (default: 6.1; arm64: the arm64
#   6.1 guest under --icount only, with Debian's arm64 perf for the PMU
#   programs' perf stat rows; stacks: only the sampling benchmark's
#   whole-stack rows, tprofctl record -g against perf record -g, in the x86
#   6.1 guest under --icount; top: tprofctl top's own share of the CPU
#   beside a CPU-bound program, refresh by refresh, in the same guest; tick:
#   the sampling benchmark's scheduler-tick rows alone, under --icount;
#   continuous: its always-on rows alone, record --continuous in the tick,
#   counted in the module, under --icount)
# The sampling benchmark compares with `perf record` (Debian's linux-perf,
# installed by `make deps`): the perf ELF binary is added to the guest, and
# tools/tprof-vm copies the shared libraries it needs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
make -s bench-programs
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1)

# The real perf program (tools/vm/find-perf).
perf=$(tools/vm/find-perf) || perf=
perf_add=()
perf_arg=
if [ -n "$perf" ]; then
	perf_add=(--add "$perf")
	perf_arg="--perf ./$(basename "$perf")"
else
	echo "bench: no perf binary (install linux-perf: make deps); perf rows skipped" >&2
fi

for k in "${kernels[@]}"; do
	if [ "$k" = arm64 ]; then
		# The arm64 6.1 guest under --icount (guest ns = instructions):
		# the same per-call and per-switch costs and sampling overhead,
		# and the PMU programs against `perf stat` on hardware counters
		# (the emulated PMUv3). Debian's arm64 perf comes from
		# tools/vm/arm64-sysroot --perf (fetched on first use, into its own
		# directory: it links libpython3.11, libperl, libslang, libunwind,
		# libbabeltrace and more); --lib-dir lets tprof-vm copy those.
		# The sampling rows stay without perf (perf's own -F throttling
		# rules are the x86 rows' subject).
		ka=$(tools/vm/arm64-sysroot --userspace --print-release)
		perf_arm64=$(tools/vm/arm64-sysroot --print-perf)
		perf_root=$(dirname "$(dirname "$(dirname "$perf_arm64")")")
		make -s arm64-vm-inputs KVER="$ka"
		echo "== Debian arm64 $ka kernel, QEMU TCG --icount (guest ns = instructions), -smp 1 =="
		TPROF_VM_NO_BUILD=1 tools/tprof-vm --arch arm64 --smp 1 --icount --mem 2048 --timeout 3600 \
			--lib-dir "$perf_root/lib/aarch64-linux-gnu" --lib-dir "$perf_root/usr/lib/aarch64-linux-gnu" \
			--add build/arm64/bench/tprof_metrics_bench \
			--add build/arm64/bench/tprof_sampling_bench \
			--add build/arm64/bench/tprof_pmu_bench --add "$perf_arm64" -- \
			sh -c "TPROF_BENCH_PAIRS=3 ./tprof_metrics_bench read-self ping-pong && ./tprof_sampling_bench --reps 3 --seconds 1 && ./tprof_pmu_bench --perf ./$(basename "$perf_arm64")"
		continue
	fi
	if [ "$k" = top ]; then
		# One CPU under --icount, so a share of the samples is a share of
		# the instructions executed: top's own line under each refresh
		# (it symbolizes each new function once, so the first refreshes
		# cost most), at -d 1 for 12 refreshes.
		k1=$(tools/vm/find-kernel --image 6.1)
		make -s vm-inputs KVER="$k1"
		echo "== Debian 6.1 kernel, QEMU TCG --icount (guest ns = instructions), -smp 1: top's own share =="
		TPROF_VM_NO_BUILD=1 tools/tprof-vm --kernel 6.1 --smp 1 --icount --mem 2048 --timeout 900 -- \
			sh -c 'tprof-wl-shares --ms 3600000 >/dev/null & p=$!; tprofctl top --batch -d 1 -n 12 --by process --rows 1 | grep -E "^tprofctl top:|\[tprofctl top\]"; kill $p'
		continue
	fi
	if [ "$k" = tick ]; then
		k1=$(tools/vm/find-kernel --image 6.1)
		make -s vm-inputs KVER="$k1"
		echo "== Debian 6.1 kernel, QEMU TCG --icount (guest ns = instructions), -smp 1: the tick =="
		TPROF_VM_NO_BUILD=1 tools/tprof-vm --kernel 6.1 --smp 1 --icount --mem 2048 --timeout 1800 \
			--add build/bench/tprof_sampling_bench "${perf_add[@]}" -- \
			sh -c "./tprof_sampling_bench --tick-only --reps 2 --seconds 2 $perf_arg"
		continue
	fi
	if [ "$k" = continuous ]; then
		k1=$(tools/vm/find-kernel --image 6.1)
		make -s vm-inputs KVER="$k1"
		echo "== Debian 6.1 kernel, QEMU TCG --icount (guest ns = instructions), -smp 1: always on =="
		TPROF_VM_NO_BUILD=1 tools/tprof-vm --kernel 6.1 --smp 1 --icount --mem 2048 --timeout 1800 \
			--add build/bench/tprof_sampling_bench -- \
			sh -c "./tprof_sampling_bench --continuous-only --reps 3 --seconds 6"
		continue
	fi
	if [ "$k" = stacks ]; then
		k1=$(tools/vm/find-kernel --image 6.1)
		make -s vm-inputs KVER="$k1"
		echo "== Debian 6.1 kernel, QEMU TCG --icount (guest ns = instructions), -smp 1: stacks =="
		TPROF_VM_NO_BUILD=1 tools/tprof-vm --kernel 6.1 --smp 1 --icount --mem 2048 --timeout 1800 \
			--add build/bench/tprof_sampling_bench "${perf_add[@]}" -- \
			sh -c "./tprof_sampling_bench --stacks-only --reps 3 --seconds 1 $perf_arg"
		continue
	fi
	echo "== Debian $k kernel, $(nproc) host cores, QEMU TCG, -smp 2 =="
	echo "(host load average before boot: $(cut -d' ' -f1-3 /proc/loadavg); other work on the host skews TCG timings)"
	tools/tprof-vm --kernel "$k" --mem 2048 --timeout 2400 \
		--add build/bench/tprof_hooks_bench --add build/bench/tprof_metrics_bench \
		--add build/bench/tprof_sampling_bench "${perf_add[@]}" -- \
		sh -c "./tprof_hooks_bench && ./tprof_metrics_bench && ./tprof_sampling_bench $perf_arg"
	# The same per-call and per-switch costs in instructions: under --icount
	# guest time advances 1 ns per executed instruction, so these ratios are
	# exact and repeatable (one CPU: icount cannot boot a second one here).
	# The guest's clock also delivers the configured sampling rates exactly
	# there (up to 100 kHz), which wall-clock TCG does not.
	echo "== Debian $k kernel, QEMU TCG --icount (guest ns = instructions), -smp 1 =="
	tools/tprof-vm --kernel "$k" --smp 1 --icount --mem 2048 --timeout 1200 \
		--add build/bench/tprof_metrics_bench \
		--add build/bench/tprof_sampling_bench --add build/bench/tprof_pmu_bench "${perf_add[@]}" -- \
		sh -c "TPROF_BENCH_PAIRS=3 ./tprof_metrics_bench read-self ping-pong && ./tprof_sampling_bench --reps 3 --seconds 1 $perf_arg && ./tprof_pmu_bench $perf_arg"
done
