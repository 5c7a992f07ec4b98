#!/usr/bin/env bash
# make deps: installs every Debian package tprof needs to build, test and
# demo, and does nothing when they are all present. Needs root (or sudo).
#
# That includes what the arm64 guests need (tools/tprof-vm --arch arm64,
# which make check runs): the emulator and cross-compilers on the host,
# then tools/vm/arm64-sysroot fetches the arm64 6.1 and 6.12 kernels, their
# headers, busybox, libdw/libelf, libnl, protobuf, zlib and GoogleTest into
# ~/.cache/tprof/arm64, and Debian's arm64 perf with its libraries (the
# arm64 sid guest compares call graphs with it)
# (about 960 MB, once; the host's dpkg architectures are not changed).
# Then Debian's newer kernel lines, trixie's 6.12 and sid's newest, for
# amd64 and arm64: tools/vm/debian-kernel makes a chroot per suite with the
# compiler its kernel was built with, its headers and images, in
# ~/.cache/tprof/debian (about 1.5 GB, a few minutes, once; needs root).
# `make deps-arm64` (tools/deps.sh --arm64) is the same, kept for old habits.
set -euo pipefail

case "${1:-}" in
--arm64 | "") ;;
*) echo "deps: unknown option $1 (usage: tools/deps.sh [--arm64])" >&2; exit 2 ;;
esac

packages=(
	# Build: compilers, Kbuild's needs, and the module's target kernels
	# (images to boot in QEMU, headers to build against).
	build-essential pkg-config bc bison flex kmod libelf-dev libssl-dev xz-utils
	# make check's compile cache (~/.cache/tprof/ccache).
	ccache
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	# PREEMPT_RT 6.1 (tools/tprof-vm --kernel 6.1-rt; never picked for 6.1).
	linux-image-rt-amd64 linux-headers-rt-amd64
	# KUnit: a kernel of our own is built from these sources.
	linux-source-6.1
	# The QEMU bench: the emulator, the guest's userland, initramfs packing.
	qemu-system-x86 busybox-static cpio
	# Userspace libraries and tests.
	libgtest-dev libnl-genl-3-dev libboost-dev libdw-dev
	# tprofctl's option parser (CLI11) and JSON (nlohmann-json), both
	# header-only, so the arm64 cross builds use the host's headers too;
	# help2man writes the man pages from tprofctl's generated --help.
	libcli11-dev nlohmann-json3-dev help2man
	# pprof export (tprofctl dump --format pprof): protobuf (library and
	# protoc, for pprof's profile.proto) and zlib; Google's pprof itself,
	# built offline from Debian's Go source, reads it back in the tests.
	libprotobuf-dev protobuf-compiler zlib1g-dev golang-go golang-github-google-pprof-dev
	# tprofctl annotate disassembles with capstone (x86 and arm64 alike).
	libcapstone-dev
	# debuginfod (DEBUGINFOD_URLS): libdw dlopens libdebuginfod.so.1, which
	# Debian's libdw1 does not depend on; the unit tests fetch from a local
	# server. MiniDebugInfo needs liblzma, which libdw1 links.
	libdebuginfod1
	# Headless Chromium renders the SVG flame graph (tprofctl dump --format
	# svg) in make check (tests/flamegraph_browser.sh); one font package,
	# which chromium only recommends, so that its text has glyphs.
	chromium fonts-liberation
	# Tools the scripts use; dkms for `make dkms-install`; perf, the
	# sampling benchmark's reference (bench/run.sh adds it to the guest).
	python3 dkms linux-perf
	# The arm64 guests: emulator and cross-compilers (the rest: the sysroot).
	qemu-system-arm gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
	# Debian's newer kernel lines are built for in chroots of their suites.
	debootstrap
	# make deb (dpkg-buildpackage with debhelper's DKMS addon) and lintian,
	# which checks the packages in make check.
	dpkg-dev debhelper dh-dkms lintian
)

# After the host packages: the arm64 sysroot and the newer lines' chroots
# (cached; print what they do).
guest_kernels() {
	"$(dirname "${BASH_SOURCE[0]}")/vm/arm64-sysroot" --kernel 6.1 --userspace --perf
	"$(dirname "${BASH_SOURCE[0]}")/vm/arm64-sysroot" --kernel 6.12
	local suite arch
	for suite in trixie sid; do
		for arch in amd64 arm64; do
			"$(dirname "${BASH_SOURCE[0]}")/vm/debian-kernel" --arch "$arch" "$suite" --print-release >/dev/null
		done
	done
}

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages installed"
	guest_kernels
	exit 0
fi

sudo=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "deps: run as root to install: ${missing[*]}" >&2; exit 1; }
	sudo=sudo
fi
echo "deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
guest_kernels
