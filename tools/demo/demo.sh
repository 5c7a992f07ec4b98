#!/bin/sh
# What tprof shows today, run inside a tprof-vm guest by `make demo` (the
# guest has tprofctl and the workloads of tests/workloads on PATH, the
# module loaded, 2 CPUs; /tmp is writable).
#
# A short status, then profiles of the bundled workloads, each built to have
# a known answer, so the viewer can check the profiler against it:
#   tprof-wl-shares  60/30/10 % of its CPU in wl_alpha/wl_beta/wl_gamma
#                    (and tprofctl annotate of wl_alpha: its hot loop)
#   tprof-wl-split   40 % main executable, 30 % shared library, 30 % kernel
#   tprof-wl-spawn   short-lived children, each 40 ms in wl_child_work
#   tprof-wl-jit     code in an anonymous mapping, named by /tmp/perf-PID.map
# Under QEMU TCG a busy host can skew the splits by a few points.

section() { printf '\n==== %s ====\n' "$*"; }
say() { printf '>> %s\n' "$*"; }
# Shows a command and runs it; the demo fails if it does.
run() {
	printf '$ %s\n' "$*"
	"$@" || { echo "demo: '$*' failed" >&2; exit 1; }
}
# The pid of the busiest process named $2 in profile $1.
pid_of() { tprofctl dump -i "$1" --by process | awk -v n="$2" '$2 == n { print $1; exit }'; }
# The N (default 5) heaviest folded stacks ("process;caller;function count").
top_folded() {
	printf '$ tprofctl dump -i %s --format folded --pid %s | (heaviest %s)\n' "$1" "$2" "${3:-5}"
	tprofctl dump -i "$1" --format folded --pid "$2" |
		awk '{ print $NF "\t" $0 }' | sort -rn | cut -f2- | head -n "${3:-5}"
}

# Hands a file to `make demo` on the host through the console: base64
# between marker lines, which tools/demo/extract-files takes out of the
# output and writes under build/demo.
export_file() {
	echo "==== tprof-demo-file $1 begin ===="
	base64 "$1"
	echo "==== tprof-demo-file $1 end ===="
}

workdir=$(pwd)  # where tprof-vm put the files it added (shares.c, for annotate)
cd /tmp || exit 1

section "the module"
say "tprof.ko is loaded; the status shows its version and what the scheduler hooks counted since."
run tprofctl status

section "1. per function: tprof-wl-shares (60/30/10)"
say "record -a runs the command under system-wide sampling (1 kHz per CPU), then reports"
say "(without -a, record samples only the command and the processes it creates, as perf does)."
say "Expect: tprof-wl-shares has about half of all samples (the other CPU idles: [idle/wait]);"
say "its USER column (main executable) is nearly all of it."
run tprofctl record -a --callers -o shares.data --by process --top 10 -- tprof-wl-shares --ms 1500
pid=$(pid_of shares.data tprof-wl-shares)
say "Its functions: PROC = % of the process. Expect wl_alpha ~60, wl_beta ~30, wl_gamma ~10"
say "(a few points less each: startup and the kernel side of its clock reads), with source lines."
run tprofctl dump -i shares.data --by symbol --pid "$pid" --top 10
say "--callers records each sample's whole stack: folded stacks (for flamegraph.pl) show main calling them."
top_folded shares.data "$pid" 4
say "The same stacks as an interactive flame graph (hover, click to zoom, search): make demo copies"
say "it out of the guest to build/demo/shares.svg (open it in a browser)."
run tprofctl dump -i shares.data --format svg --pid "$pid" -o shares.svg
export_file shares.svg
say "Inside the hottest function: wl_alpha's source lines and instructions with their samples"
say "(the source is not in the guest, so lines show numbers only). Expect the inner loop's line"
say "with most samples and its instructions marked: '>' the hottest, '*' those with 10% or more."
run tprofctl annotate -i shares.data --pid "$pid" --source-dir "$workdir" wl_alpha

section "2. kernel / executable / library: tprof-wl-split (40/30/30)"
say "Expect the process row at KERNEL ~30 %, USER ~40 %, SHARED ~30 % of its TOTAL"
say "(SHARED also has the dynamic loader and libc starting up)."
run tprofctl record --callers -o split.data --by process --top 10 -- tprof-wl-split --ms 1000
pid=$(pid_of split.data tprof-wl-split)
say "wl_main_spin is in the main executable, wl_lib_spin in libtprofwl.so, and the kernel time is"
say "reading /dev/zero (clear_user*, read_zero) on behalf of wl_kernel_spin."
run tprofctl dump -i split.data --by symbol --pid "$pid" --top 10
say "Kernel frames end in _[k]: the kernel side of wl_kernel_spin's reads of /dev/zero."
top_folded split.data "$pid" 5

section "3. short-lived processes, the whole machine: tprofctl start / stop / dump"
say "start leaves a recorder running in the background; stop makes it write the profile."
run tprofctl start --callers -o machine.data
run tprof-wl-spawn --children 5 --ms-each 40
run tprofctl stop
say "Expect five tprof-wl-child rows (each lived ~50 ms, named although gone by the report),"
say "tprof-wl-spawn itself with little CPU (fork/exec in the kernel), and the rest [idle/wait]."
say "The tprofctl rows are the recorder and \`tprofctl stop\` (loading its libraries is slow in TCG)."
run tprofctl dump -i machine.data --by process --top 10
pid=$(pid_of machine.data tprof-wl-child)
say "One child's functions: wl_child_work on top; the rest is the dynamic loader starting it."
run tprofctl dump -i machine.data --by symbol --pid "$pid" --top 5

section "4. JIT code: tprof-wl-jit"
say "Its hot loop runs from an anonymous executable mapping; /tmp/perf-PID.map names it."
say "Expect jit_hot_loop in SPACE jit with most of the process (OTHER column in the process table)."
run tprofctl record --callers -o jit.data --by process --top 5 -- tprof-wl-jit --ms 500
pid=$(pid_of jit.data tprof-wl-jit)
run tprofctl dump -i jit.data --by symbol --pid "$pid" --top 5
say "jit_hot_loop keeps no frame pointer, so the caller read from the frame chain is main's caller (libc)."
top_folded jit.data "$pid" 3

section "the module after the demo"
say "The hook counters went up: the forks, execs and exits of everything above."
tprofctl status | sed -n '1,2p;6,20p'
