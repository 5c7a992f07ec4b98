#!/usr/bin/env bash
# The Debian packages, installed as an administrator would (make check runs
# this): in a Debian 12 root (a chroot made by debootstrap, cached in
# $TPROF_CACHE/debian/bookworm-admin, default ~/.cache/tprof) with dkms,
# the headers of the 6.1 kernel and the 6.12 kernel's image installed (no
# initramfs: nothing boots this root):
#   - lintian finds no error in the packages (make deb builds them);
#   - `apt install ./*.deb` has DKMS build tprof.ko for the installed kernel;
#   - installing the 6.12 kernel's headers afterwards builds it for that one
#     too (DKMS's kernel hook), as for every kernel installed later;
#   - tprofctl runs from its package, the udev rule and headers are there,
#     and the continuous profiling service, disabled, whose command parses;
#   - `apt remove --purge` leaves no file of them behind, and no module.
# The two modules DKMS built are left in OUT (tests/check.sh boots each in
# its kernel's guest and runs the smoke suite against it):
#   tests/packages_test.sh OUT K61 K612
# Prints PASS:/FAIL: lines; needs root (chroot, mounts).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
out=${1:?usage: packages_test.sh OUT K61 K612}
k61=${2:?}
k612=${3:?}
cache=${TPROF_CACHE:-$HOME/.cache/tprof}/debian/bookworm-admin
root=$cache/root
mirror=${TPROF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache" "$out"
rm -f "$out"/*.ko

check() {
	local name=$1
	shift
	if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; fi
}
# Runs a command in the root, with /proc (objtool reads it) in a private
# mount namespace.
in_root() {
	unshare --mount --propagation private sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
		"$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"
}
# A conffile this script wrote (update-initramfs.conf) stays as it is:
# without --force-confold dpkg asks, reads EOF, and leaves initramfs-tools
# (and the kernel image that needs it) unconfigured on a fresh root.
apt_root() {
	in_root apt-get -q -y -o APT::Sandbox::User=root -o Dpkg::Options::=--force-confdef \
		-o Dpkg::Options::=--force-confold "$@"
}

# --- the packages ----------------------------------------------------------------
make -s deb >"$cache/deb.log" 2>&1
rc=$?
check "make deb builds the packages" test "$rc" = 0
[ "$rc" = 0 ] || { tail -n 30 "$cache/deb.log"; exit 1; }
debs=()
for p in tprof-dkms tprofctl libtprofctl0 libtprofctl-dev; do
	f=$(ls build/deb/${p}_*.deb 2>/dev/null | head -n 1)
	check "make deb: $p" test -n "$f"
	[ -n "$f" ] && debs+=("$f")
done
lintian --fail-on error --suppress-tags-from-file /dev/null "${debs[@]}" >"$cache/lintian.log" 2>&1
rc=$?
grep -E '^E:' "$cache/lintian.log" | head -n 20
check "lintian: no error in the packages" test "$rc" = 0

# --- the administrator's machine ---------------------------------------------------
# Made once: Debian 12 with dkms and the 6.1 kernel's headers; each run
# leaves it so (it purges what it installed).
if [ ! -e "$root/.tprof-ready" ]; then
	rm -rf "$root"
	debootstrap --variant=minbase --include=dkms,kmod,ca-certificates bookworm "$root" "$mirror" \
		>"$cache/debootstrap.log" 2>&1 || { echo "FAIL: debootstrap bookworm (see $cache/debootstrap.log)"; exit 1; }
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99tprof"
	mkdir -p "$root/etc/initramfs-tools"
	echo update_initramfs=no >"$root/etc/initramfs-tools/update-initramfs.conf"
	echo "deb $mirror bookworm-updates main" >>"$root/etc/apt/sources.list"
	echo "deb http://deb.debian.org/debian-security bookworm-security main" >>"$root/etc/apt/sources.list"
	touch "$root/.tprof-ready"
fi
apt_root update >"$cache/apt.log" 2>&1
# A previous run that stopped half-way: back to the starting state.
apt_root remove --purge tprof-dkms tprofctl libtprofctl0 libtprofctl-dev "linux-headers-$k612" >>"$cache/apt.log" 2>&1 || true
apt_root install --no-install-recommends "linux-headers-$k61" "linux-image-$k612" >>"$cache/apt.log" 2>&1
check "the root has the headers of $k61 and the image of $k612" \
	test -e "$root/usr/src/linux-headers-$k61/Makefile" -a -e "$root/boot/vmlinuz-$k612"

# --- install --------------------------------------------------------------------------
rm -rf "$root/tmp/debs"
mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"
in_debs=()
for f in "${debs[@]}"; do in_debs+=("/tmp/debs/${f##*/}"); done
apt_root install --no-install-recommends "${in_debs[@]}" >"$cache/install.log" 2>&1
rc=$?
check "apt install ./*.deb exits 0" test "$rc" = 0
[ "$rc" = 0 ] || tail -n 30 "$cache/install.log"
ko61=$(find "$root/lib/modules/$k61/updates" -name 'tprof.ko*' 2>/dev/null | head -n 1)
check "DKMS built tprof.ko for $k61 at install" test -n "$ko61"
apt_root install --no-install-recommends "linux-headers-$k612" >"$cache/headers.log" 2>&1
ko612=$(find "$root/lib/modules/$k612/updates" -name 'tprof.ko*' 2>/dev/null | head -n 1)
check "DKMS built tprof.ko for $k612 when its headers came" test -n "$ko612"
[ -n "$ko612" ] || tail -n 20 "$cache/headers.log"
for ko in "$ko61" "$ko612"; do
	[ -n "$ko" ] || continue
	rel=${ko#"$root/lib/modules/"}
	rel=${rel%%/*}
	case "$ko" in
	*.xz) xz -dc "$ko" >"$out/tprof-$rel.ko" ;;
	*.zst) zstd -qdc "$ko" >"$out/tprof-$rel.ko" ;;
	*) cp "$ko" "$out/tprof-$rel.ko" ;;
	esac
done
check "dkms status: installed for both kernels" \
	test "$(in_root dkms status tprof | grep -c ': installed')" = 2
check "tprofctl runs from its package" in_root /usr/bin/tprofctl --version
check "the udev rule for /dev/tprof is installed" in_root sh -c 'ls /lib/udev/rules.d/60-tprof.rules || ls /usr/lib/udev/rules.d/60-tprof.rules'
check "the library's pkg-config file is installed" in_root sh -c \
	'test -e /usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/pkgconfig/tprofctl.pc'
check "man tprofctl-record is installed" test -e "$root/usr/share/man/man1/tprofctl-record.1.gz"
# The continuous profiling service: installed, not enabled; its command
# line is one tprofctl takes (it gets as far as opening /dev/tprof, which
# this root lacks, instead of a usage error, status 2).
unit=$(ls "$root"/lib/systemd/system/tprof-continuous.service "$root"/usr/lib/systemd/system/tprof-continuous.service 2>/dev/null | head -n 1)
check "the tprof-continuous service is installed" test -n "$unit"
check "the tprof-continuous service is not enabled" \
	test -z "$(find "$root/etc/systemd/system" -name tprof-continuous.service 2>/dev/null)"
if [ -n "$unit" ]; then
	exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
	mkdir -p "$root/var/lib/tprof/profiles"
	# shellcheck disable=SC2086  # the unit's words
	service_out=$(in_root $exec_start 2>&1)
	service_rc=$?
	check "the service's command line parses (exits $service_rc without /dev/tprof)" \
		sh -c '[ "$1" != 0 ] && [ "$1" != 2 ] && printf %s "$2" | grep -q /dev/tprof' _ "$service_rc" "$service_out"
	[ "$service_rc" = 1 ] || echo "  the service's command said: $service_out"
	rm -rf "$root/var/lib/tprof"
fi

# --- remove --purge ---------------------------------------------------------------------
apt_root remove --purge tprof-dkms tprofctl libtprofctl0 libtprofctl-dev >"$cache/remove.log" 2>&1
check "apt remove --purge exits 0" test "$?" = 0
left=$(in_root sh -c 'dpkg -l | grep -E "^.i +(tprof|libtprofctl)" ;
	ls -d /usr/src/tprof-* /var/lib/dkms/tprof /usr/bin/tprofctl /usr/include/tprof \
		/lib/udev/rules.d/60-tprof.rules /usr/lib/udev/rules.d/60-tprof.rules \
		/lib/systemd/system/tprof-continuous.service /usr/lib/systemd/system/tprof-continuous.service 2>/dev/null;
	find /lib/modules -name "tprof.ko*"' 2>/dev/null)
check "nothing of tprof is left after the purge" test -z "$left"
[ -z "$left" ] || echo "  left: $left"
apt_root remove --purge "linux-headers-$k612" >>"$cache/remove.log" 2>&1
rm -rf "$root/tmp/debs"
