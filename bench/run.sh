#!/usr/bin/env bash
# make bench: builds the benchmark programs and runs them in one guest boot
# per kernel, printing ratios against baselines measured in the same boot.
#   bench/run.sh [6.1|6.12]...   (default: 6.1)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
make -s bench-programs
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1)
for k in "${kernels[@]}"; do
	echo "== Debian $k kernel, $(nproc) host cores, QEMU TCG, -smp 2 =="
	tools/tprof-vm --kernel "$k" --mem 2048 \
		--add build/bench/tprof_hooks_bench --add build/bench/tprof_metrics_bench -- \
		sh -c './tprof_hooks_bench && ./tprof_metrics_bench'
done
