#!/usr/bin/env bash
# Build (once per machine) a small KUnit-enabled debug kernel (KASAN, lockdep,
# kmemleak: ktests/kunit.config) from Debian's linux-source-6.1 and cache it
# outside the repository. x86_64 by default; --arch arm64 cross-builds one for
# qemu-system-aarch64 -M virt (aarch64-linux-gnu-gcc).
#
#   tree=$(ktests/build-kunit-kernel.sh)      # builds on first use, then a cache hit
#   qemu-system-x86_64 ... -kernel "$tree/arch/x86/boot/bzImage" ...
#   make -C "$tree" M="$PWD/kmod" modules     # out-of-tree modules against it
#   tree=$(ktests/build-kunit-kernel.sh --arch arm64)   # arch/arm64/boot/Image
#
#   ktests/build-kunit-kernel.sh [--arch A] --print-key  # print the cache dir, build nothing
#
# Cache dir: ${TPROF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tprof}/kunit-kernel-<key>
# (x86_64) or kunit-kernel-<key>-arm64, key = first 16 hex digits of
# sha256(ktests/kunit.config + ktests/kunit-<arch>.config + installed
# linux-source-6.1 version + this script), so editing any of them or upgrading
# the package rebuilds.
#
# Recipe: unpack the tarball in a temp dir inside the cache, `make tinyconfig`, merge
# the two fragments, `make olddefconfig`, check every option of the fragments survived,
# `make bzImage|Image modules` (modules writes Module.symvers, which out-of-tree modules
# need), then rename the tree into place atomically. A flock serialises concurrent runs.
#
# stdout: exactly one line, the absolute path of the kernel tree. Progress: stderr.
# Needs: linux-source-6.1 gcc make flex bison bc libelf-dev libssl-dev (and xz, flock);
# for arm64 gcc-aarch64-linux-gnu.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
self=$here/$(basename "${BASH_SOURCE[0]}")
pkg=linux-source-6.1
tarball=/usr/src/linux-source-6.1.tar.xz

log() { printf 'build-kunit-kernel: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

print_key=0
arch=x86_64
while (( $# )); do
    case $1 in
        --print-key) print_key=1; shift ;;
        --arch) arch=${2:-}; shift 2 || die "--arch needs x86_64 or arm64" ;;
        -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
        *) die "unknown argument '$1' (usage: $0 [--arch x86_64|arm64] [--print-key])" ;;
    esac
done
case $arch in
    x86_64) image=arch/x86/boot/bzImage image_target=bzImage cross= suffix= ;;
    arm64 | aarch64)
        arch=arm64 image=arch/arm64/boot/Image image_target=Image
        cross=aarch64-linux-gnu- suffix=-arm64 ;;
    *) die "--arch $arch: x86_64 or arm64" ;;
esac
fragments=("$here/kunit.config" "$here/kunit-$arch.config")
for fragment in "${fragments[@]}"; do
    [[ -r $fragment ]] || die "config fragment $fragment not found"
done
status=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$pkg" 2>/dev/null) ||
    die "package $pkg is not installed (apt-get install $pkg)"
[[ $status == installed\ * ]] || die "package $pkg is not installed (dpkg status: '$status')"
pkg_version=${status#installed }

key=$({ cat "${fragments[@]}"; printf '%s\n' "$pkg_version"; cat "$self"; } | sha256sum | cut -c1-16)$suffix
cache_root=${TPROF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tprof}
[[ $cache_root == /* ]] || cache_root=$PWD/$cache_root
dest=$cache_root/kunit-kernel-$key

if (( print_key )); then
    printf '%s\n' "$dest"
    exit 0
fi

# Fast path: already built.
if [[ -e $dest/.complete ]]; then
    printf '%s\n' "$dest"
    exit 0
fi

[[ $(uname -m) == x86_64 ]] || die "only x86_64 hosts are supported (this is $(uname -m))"
[[ -r $tarball ]] || die "$tarball missing (reinstall $pkg)"
for tool in make gcc "${cross}gcc" flex bison bc xz flock; do
    command -v "$tool" >/dev/null || die "'$tool' not found (apt-get install make gcc flex bison bc xz-utils util-linux)"
done

mkdir -p "$cache_root"
cache_root=$(cd "$cache_root" && pwd -P)
dest=$cache_root/kunit-kernel-$key
lock=$cache_root/kunit-kernel-$key.lock
buildlog=$cache_root/kunit-kernel-$key.log

exec 9>"$lock"
if ! flock -n 9; then
    log "another build of $dest is running; waiting for it"
    flock 9
fi
if [[ -e $dest/.complete ]]; then     # the other run finished it
    printf '%s\n' "$dest"
    exit 0
fi

# We hold the lock: anything left for this key is debris of an interrupted run.
rm -rf "$dest" "$cache_root/.kunit-kernel-$key.tmp."*

work=$(mktemp -d "$cache_root/.kunit-kernel-$key.tmp.XXXXXX")
cleanup() { [[ -z ${work:-} || ! -d $work ]] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A parent make (e.g. `make check`) must not leak its command-line variables or
# output dir into the kernel build.
kmake() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u KBUILD_OUTPUT \
        -u KBUILD_EXTMOD -u M -u O -u CROSS_COMPILE -u LLVM \
        make -C "$work" ARCH="$arch" ${cross:+CROSS_COMPILE=$cross} "$@"
}

# Every assignment in the fragments must be in the final .config; every
# "# CONFIG_X is not set" must not be set. Kconfig drops unmet options silently.
verify_config() {
    local cfg=$1 line opt want got bad=()
    while IFS= read -r line; do
        if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
            opt=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]}
            grep -qxF -- "$opt=$want" "$cfg" && continue
            got=$(grep -E -- "^$opt=|^# $opt is not set" "$cfg" || true)
            bad+=("$opt=$want (got: ${got:-absent from .config})")
        elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set ]]; then
            opt=${BASH_REMATCH[1]}
            got=$(grep -E -- "^$opt=" "$cfg" || true)
            [[ -z $got ]] || bad+=("$opt must be unset (got: $got)")
        fi
    done < <(cat "${fragments[@]}")
    if (( ${#bad[@]} )); then
        cp "$cfg" "$cache_root/kunit-kernel-$key.failed.config"
        log "error: options of ${fragments[*]} did not survive 'make olddefconfig'"
        log "       (unmet dependencies? resulting config: $cache_root/kunit-kernel-$key.failed.config):"
        printf 'build-kunit-kernel:   %s\n' "${bad[@]}" >&2
        return 1
    fi
}

start=$SECONDS
: >"$buildlog"
log "building the $arch KUnit kernel ($pkg $pkg_version) into $dest"
log "log: $buildlog (takes ~10 min on 2 cores)"

step() {
    local what=$1; shift
    log "$what"
    printf '\n=== %s\n' "$what" >>"$buildlog"
    if ! "$@" >>"$buildlog" 2>&1; then
        log "error: '$what' failed; last lines of $buildlog:"
        tail -n 40 "$buildlog" >&2
        exit 1
    fi
}

step "unpacking $tarball" tar -xf "$tarball" -C "$work" --strip-components=1
step "make tinyconfig" kmake tinyconfig
step "merging ${fragments[*]##*/}" \
    env -C "$work" ARCH="$arch" scripts/kconfig/merge_config.sh -m .config "${fragments[@]}"
step "make olddefconfig" kmake olddefconfig
verify_config "$work/.config"
cat "${fragments[@]}" >"$work/.kunit.config.fragment"
step "make -j$(nproc) $image_target modules" kmake -j"$(nproc)" "$image_target" modules

[[ -s $work/$image && -s $work/Module.symvers ]] ||
    die "build finished but $image or Module.symvers is missing (see $buildlog)"

# The tree stays complete (vmlinux for symbolising splats, objtool, scripts,
# generated headers); only the in-tree object files are dropped: external module
# builds never use them.
find "$work" -name '*.o' -type f ! -path "$work/scripts/*" ! -path "$work/tools/*" -delete

touch "$work/.complete"
mv -T "$work" "$dest"
work=
rm -f "$cache_root/kunit-kernel-$key.failed.config"
log "done in $((SECONDS - start)) s: $dest"
for old in "$cache_root"/kunit-kernel-*/; do
    old=${old%/}
    [[ $old == "$dest" ]] && continue
    # The other architecture's tree is not an older build of this one.
    if { [[ $arch == arm64 ]] && [[ $old == *-arm64 ]]; } ||
        { [[ $arch != arm64 ]] && [[ $old != *-arm64 ]]; }; then
        log "note: older build $old can be deleted (with its .lock/.log)"
    fi
done
printf '%s\n' "$dest"
