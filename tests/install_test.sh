#!/usr/bin/env bash
# make install / make uninstall, checked on the host: every file lands in
# DESTDIR, a program built with nothing but `pkg-config --cflags --libs
# tprofctl` links and runs against libtprofctl.so.0 (and with --static
# against libtprofctl.a), the man pages render, the bash completion
# completes, and uninstall leaves no file behind.
# Prints PASS:/FAIL: lines; tests/check.sh counts them. Needs the build
# (make all); builds what install needs if it is missing.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
D=$tmp/destdir
P=/usr
CXX=${CXX:-g++}

check() {
	local name=$1
	shift
	if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; fi
}
# Every path given exists (a symlink: resolves) under $D$P; names the missing.
all_exist() {
	local f missing=0
	for f in "$@"; do
		[ -e "$D$P/$f" ] || { echo "  missing: $P/$f"; missing=1; }
	done
	return "$missing"
}

V=$(make -s print-version)  # debian/changelog's
make -s install DESTDIR="$D" PREFIX="$P" >"$tmp/install.log" 2>&1
rc=$?
check "make install DESTDIR=... PREFIX=$P exits 0" test "$rc" = 0
[ "$rc" = 0 ] || { tail -n 20 "$tmp/install.log"; exit 1; }

# --- what is installed -------------------------------------------------------
headers=()
for h in libtprofctl/include/tprof/*/*.h; do headers+=("include/${h#libtprofctl/include/}"); done
check "bin/tprofctl installed, executable" test -x "$D$P/bin/tprofctl"
check "lib: libtprofctl.a, libtprofctl.so.$V, .so.0 and .so links" \
	all_exist lib/libtprofctl.a lib/libtprofctl.so.$V lib/libtprofctl.so.0 lib/libtprofctl.so
check "lib: libtprofctl.so -> libtprofctl.so.0 -> libtprofctl.so.$V" \
	test "$(readlink "$D$P/lib/libtprofctl.so")" = libtprofctl.so.0 -a \
	"$(readlink "$D$P/lib/libtprofctl.so.0")" = libtprofctl.so.$V
check "libtprofctl.so.$V's soname is libtprofctl.so.0" \
	grep -q 'Library soname: \[libtprofctl.so.0\]' <(readelf -d "$D$P/lib/libtprofctl.so.$V")
# The version script: the tprof namespace out, the protobuf code generated
# for pprof (perftools::profiles) in.
nm -DC --defined-only "$D$P/lib/libtprofctl.so.$V" >"$tmp/exports" 2>&1
check "libtprofctl.so exports tprof:: (ReadProfile) but not protobuf's generated perftools::" \
	bash -c "grep -q 'tprof::ReadProfile' '$tmp/exports' && ! grep -q perftools '$tmp/exports'"
check "headers: include/tprof/*/*.h (${#headers[@]}) and include/tprof/uapi/linux/tprof{,_unwind}.h" \
	all_exist "${headers[@]}" include/tprof/uapi/linux/tprof.h include/tprof/uapi/linux/tprof_unwind.h
check "no header under include/linux" test ! -e "$D$P/include/linux"
check "lib/pkgconfig/tprofctl.pc installed" all_exist lib/pkgconfig/tprofctl.pc
# One page per command and subcommand tprofctl's help lists (a new one
# without a page in the Makefile's TPROFCTL_COMMANDS fails here).
commands=$(tools/man/tprofctl-commands "$D$P/bin/tprofctl")
pages=(share/man/man1/tprofctl.1)
for c in $commands; do
	pages+=("share/man/man1/tprofctl-$c.1")
	for s in $(tools/man/tprofctl-commands "$D$P/bin/tprofctl" "$c"); do pages+=("share/man/man1/tprofctl-$c-$s.1"); done
done
man_pages_complete() { [ -n "$commands" ] && all_exist "${pages[@]}"; }
check "man pages: tprofctl.1 and one per command (${commands//$'\n'/ })" man_pages_complete
check "bash completion: share/bash-completion/completions/tprofctl" \
	all_exist share/bash-completion/completions/tprofctl

# --- a program built with pkg-config only --------------------------------------
# The staged tree stands in for the system: pkg-config prefixes its paths
# with DESTDIR (PKG_CONFIG_SYSROOT_DIR); the dependencies' .pc files are
# the system's.
export PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$D$P/lib/pkgconfig
user=tests/install/pkgconfig_user.cc
want='samples 7, process pkgdemo; gzip magic 1f8b; bad file EBADMSG'

# shellcheck disable=SC2046 # pkg-config's words are meant to split
"$CXX" -o "$tmp/user-shared" "$user" $(pkg-config --cflags --libs tprofctl) >"$tmp/shared.log" 2>&1
rc=$?
check "a program built with \`pkg-config --cflags --libs tprofctl\` only compiles and links" test "$rc" = 0
[ "$rc" = 0 ] || head -n 20 "$tmp/shared.log"
check "it needs libtprofctl.so.0 (readelf)" \
	grep -q 'Shared library: \[libtprofctl.so.0\]' <(readelf -d "$tmp/user-shared" 2>&1)
check "ldd resolves libtprofctl.so.0 into DESTDIR" \
	grep -q "libtprofctl.so.0 => $D$P/lib/libtprofctl.so.0" \
	<(LD_LIBRARY_PATH=$D$P/lib ldd "$tmp/user-shared" 2>&1)
out=$(LD_LIBRARY_PATH=$D$P/lib "$tmp/user-shared" 2>&1)
check "it runs against the shared library: '$out'" test "$out" = "$want"

# libtprofctl.a beside the .so: -Bstatic makes the linker take the .a, and
# every library `pkg-config --static` names must then resolve it (static
# archives of the dependencies too: nothing comes in through a .so's
# DT_NEEDED).
# shellcheck disable=SC2046
"$CXX" -o "$tmp/user-static" "$user" -Wl,-Bstatic $(pkg-config --static --cflags --libs tprofctl) \
	-Wl,-Bdynamic >"$tmp/static.log" 2>&1
rc=$?
check "the same with \`pkg-config --static\` links against libtprofctl.a" test "$rc" = 0
[ "$rc" = 0 ] || head -n 20 "$tmp/static.log"
check "the static build needs no libtprofctl.so" \
	bash -c "readelf -d '$tmp/user-static' | grep -q NEEDED && ! readelf -d '$tmp/user-static' | grep -q libtprofctl"
out=$("$tmp/user-static" 2>&1)
check "it runs: '$out'" test "$out" = "$want"

# Everything tprofctl uses is exported: its objects link against the .so.
objs=(build/obj/tools/tprofctl/*.o)
# shellcheck disable=SC2046
"$CXX" -o "$tmp/tprofctl-shared" "${objs[@]}" $(pkg-config --libs tprofctl) -pthread >"$tmp/tprofctl.log" 2>&1
rc=$?
check "tprofctl's objects link against libtprofctl.so (every symbol it uses is exported)" test "$rc" = 0
[ "$rc" = 0 ] || head -n 20 "$tmp/tprofctl.log"
check "that tprofctl runs: --help lists the commands" \
	bash -c "LD_LIBRARY_PATH='$D$P/lib' '$tmp/tprofctl-shared' --help 2>&1 | grep -q record"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

# --- man pages ----------------------------------------------------------------
for page in "${pages[@]}"; do
	f=$D$P/$page
	name=${page##*/}
	name=${name%.1}
	MANWIDTH=80 man -l "$f" >"$tmp/man.out" 2>"$tmp/man.err"
	rc=$?
	check "man -l renders $name(1): NAME '$name - ...', SYNOPSIS, no warnings" bash -c "
		[ $rc = 0 ] && [ ! -s '$tmp/man.err' ] && grep -q '^NAME' '$tmp/man.out' &&
		grep -qE '^ +$name +- +[a-zA-Z]' '$tmp/man.out' && grep -q '^SYNOPSIS' '$tmp/man.out'"
	[ -s "$tmp/man.err" ] && head -n 5 "$tmp/man.err"
done
# The hardest syntax has its page: pmu watch's counters, rules and examples.
MANWIDTH=80 man -l "$D$P/share/man/man1/tprofctl-pmu-watch.1" >"$tmp/man.out" 2>&1
check "tprofctl-pmu-watch(1) shows --counter, the counter and rule syntax and an example" bash -c "
	grep -q -- '--counter' '$tmp/man.out' && grep -q '^COUNTERS' '$tmp/man.out' &&
	grep -q '^RULES' '$tmp/man.out' && grep -q '^EXAMPLES' '$tmp/man.out' &&
	grep -qE 'tprofctl pmu watch --counter f=page-faults@fault_hot' '$tmp/man.out'"
MANWIDTH=80 man -l "$D$P/share/man/man1/tprofctl-pmu.1" >"$tmp/man.out" 2>&1
check "tprofctl-pmu(1) names tprofctl-pmu-watch(1)" grep -q 'tprofctl-pmu-watch(1)' "$tmp/man.out"

# --- bash completion ----------------------------------------------------------
# The completion function called as bash calls it, with the installed
# tprofctl first in PATH; prints COMPREPLY, one a line.
complete_words() {
	PATH=$D$P/bin:$PATH bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_tprofctl; printf "%s\n" "${COMPREPLY[@]}"' _ "$D$P/share/bash-completion/completions/tprofctl" "$@"
}
out=$(complete_words tprofctl re 2>&1)
check "completion: 'tprofctl re<TAB>' gives record (${out//$'\n'/ })" test "$out" = record
out=$(complete_words tprofctl dump --fo 2>&1)
check "completion: 'tprofctl dump --fo<TAB>' gives --format (${out//$'\n'/ })" test "$out" = --format
out=$(complete_words tprofctl dump --format s 2>&1)
check "completion: 'tprofctl dump --format s<TAB>' gives svg and speedscope (${out//$'\n'/ })" \
	test "$(sort <<<"$out" | tr '\n' ' ')" = "speedscope svg "
touch "$tmp/profile-a.data" "$tmp/profile-b.data"
out=$(complete_words tprofctl dump -i "$tmp/profile-" 2>&1)
check "completion: 'tprofctl dump -i FILE<TAB>' completes file names" \
	test "$(sort <<<"$out" | tr '\n' ' ')" = "$tmp/profile-a.data $tmp/profile-b.data "

# --- uninstall ----------------------------------------------------------------
make -s uninstall DESTDIR="$D" PREFIX="$P" >"$tmp/uninstall.log" 2>&1
rc=$?
check "make uninstall exits 0" test "$rc" = 0
left=$(find "$D" ! -type d)
check "make uninstall leaves no files${left:+: ${left//$'\n'/ }}" test -z "$left"
check "make uninstall removes include/tprof" test ! -e "$D$P/include/tprof"
