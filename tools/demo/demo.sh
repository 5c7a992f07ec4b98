#!/bin/sh
# What tprof shows today, run inside a tprof-vm guest by `make demo`.
# Each later feature adds a section here (the guest has tprofctl on PATH and
# the module loaded; files passed with --add are in the working directory).

section() { printf '\n==== %s ====\n' "$*"; }

section "tprofctl status: the module just after boot"
tprofctl status

section "a small load: 50 fork+exec of /bin/true, and a shell pipeline"
i=0
while [ "$i" -lt 50 ]; do
	/bin/true
	i=$((i + 1))
done
seq 1 2000 | sort -rn | head -n 1 >/dev/null

section "tprofctl status: forks, execs, exits and context switches went up"
tprofctl status

section "tprofctl status --json (for scripts)"
tprofctl status --json
