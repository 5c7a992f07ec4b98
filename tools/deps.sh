#!/usr/bin/env bash
# make deps: installs every Debian package tprof needs to build, test and
# demo, and does nothing when they are all present. Needs root (or sudo).
set -euo pipefail

packages=(
	# Build: compilers, Kbuild's needs, and the module's target kernels
	# (images to boot in QEMU, headers to build against).
	build-essential pkg-config bc bison flex kmod libelf-dev libssl-dev xz-utils
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	# KUnit: a kernel of our own is built from these sources.
	linux-source-6.1
	# The QEMU bench: the emulator, the guest's userland, initramfs packing.
	qemu-system-x86 busybox-static cpio
	# Userspace libraries and tests.
	libgtest-dev libnl-genl-3-dev libboost-dev libdw-dev
	# Tools the scripts use; dkms for `make dkms-install`; perf, the
	# sampling benchmark's reference (bench/run.sh adds it to the guest).
	python3 dkms linux-perf
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages installed"
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
