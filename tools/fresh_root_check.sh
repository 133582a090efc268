#!/usr/bin/env bash
# Runs the README's two commands (`make demo`, then `make test`), then the offline pip install check
# (tools/check_pip_install.sh), in a bare Debian 12 root, as a new user on a fresh machine would:
# proof that they install everything they need themselves.
#
#   tools/fresh_root_check.sh [--keep]
#
# A `debootstrap --variant=minbase bookworm` root is made in a scratch folder (its tarball is cached
# between runs in $NPUC_FRESH_ROOT_CACHE, default ~/.cache/npuc; never the installed packages), a
# clean clone of this checkout's HEAD goes to /src/npuc in it and a copy of ../shared to /src/shared,
# and the root gets `make` and nothing else before the two commands run in a chroot. Prints each
# command's wall time; exits non-zero if either fails or if `make test` skipped a test for a missing
# dependency (`make test` turns those skips into failures, see NPUC_STRICT_DEPS in the Makefile).
# Needs root (debootstrap, mount, chroot); installs debootstrap on the host when missing.
# Environment: NPUC_DEBIAN_MIRROR (default http://deb.debian.org/debian), NPUC_FRESH_ROOT_DIR
# (the scratch folder; default a new one under /var/tmp), NPUC_FRESH_ROOT_CACHE.
set -euo pipefail

keep=0
[[ ${1:-} == --keep ]] && keep=1
repo=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$repo/.." && pwd)/shared
mirror=${NPUC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache_dir=${NPUC_FRESH_ROOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/npuc}
say() { echo "fresh-root: $*"; }
die() { echo "fresh-root: error: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, mount and chroot)"
[[ -d $shared/models ]] || die "no shared models folder at $shared/models (the tests need it beside the checkout)"
git -C "$repo" rev-parse HEAD >/dev/null 2>&1 || die "$repo is not a git checkout"
if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap on the host"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

scratch=${NPUC_FRESH_ROOT_DIR:-$(mktemp -d /var/tmp/npuc-fresh-root.XXXXXX)}
root=$scratch/root
mounted=()
teardown() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
  done
  if [[ $keep -eq 0 ]]; then
    # Never delete through a mount that failed to come off.
    if grep -q " $root" /proc/mounts; then
      echo "fresh-root: left $scratch in place: something is still mounted under it" >&2
    else
      rm -rf "$scratch"
    fi
  else
    say "kept $root"
  fi
}
trap teardown EXIT

# 1. The bare root (minbase: no make, no compiler, no python).
mkdir -p "$root" "$cache_dir"
tarball=$cache_dir/bookworm-minbase-$(dpkg --print-architecture).tar.gz
start=$(date +%s)
if [[ -s $tarball ]]; then
  tar -xzf "$tarball" -C "$root"
  say "bare root unpacked from $tarball ($(($(date +%s) - start)) s)"
else
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$scratch/debootstrap.log" 2>&1 ||
    { tail -20 "$scratch/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
  tar -czf "$tarball.part" -C "$root" . && mv "$tarball.part" "$tarball"
  say "bare root made by debootstrap ($(($(date +%s) - start)) s), cached in $tarball"
fi
# The apt sources of a stock Debian 12 image: the release, its updates and security.
security=${mirror%/debian}/debian-security
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF

# 2. The sources: a clean clone of HEAD (committed work only) and a copy of ../shared.
mkdir -p "$root/src"
git clone -q --no-hardlinks "$repo" "$root/src/npuc"
cp -a "$shared" "$root/src/shared"
say "checkout $(git -C "$repo" rev-parse --short HEAD) cloned to /src/npuc, shared/ copied to /src/shared"

# 3. What a chroot needs to behave like a machine: /proc, /sys, /dev, name resolution.
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount -t sysfs sysfs "$root/sys" && mounted+=("$root/sys")
mount --bind /dev "$root/dev" && mounted+=("$root/dev")
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# The host's site trust, as resolv.conf is its name resolution: CA certificates it added locally
# (a TLS-inspecting egress proxy's, say; Debian's ca-certificates merges them when the README's
# commands install it) and NODE_EXTRA_CA_CERTS, through which Node.js and npm use them.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS} /bin/bash -c "$1"
}

# 4. The only thing the bare root is given: make.
in_root "apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null" ||
  die "could not install make in the fresh root"

# 5. The README's two commands, timed.
status=0
declare -A took
# Then the offline pip install check, in the same root: its build of the extension reuses the
# objects `make` compiled (ccache), where on the host it was a third full compile.
for cmd in "make demo" "make test" "tools/check_pip_install.sh"; do
  say "running '$cmd' in /src/npuc"
  start=$(date +%s)
  if in_root "cd /src/npuc && $cmd" 2>&1 | tee "$scratch/${cmd//[ \/]/-}.log"; then
    result=passed
  else
    result=FAILED
    status=1
  fi
  took[$cmd]=$(($(date +%s) - start))
  say "'$cmd' $result in ${took[$cmd]} s"
  [[ $result == passed ]] || break
done

echo
for cmd in "make demo" "make test" "tools/check_pip_install.sh"; do
  [[ -n ${took[$cmd]:-} ]] && echo "fresh-root: $cmd: ${took[$cmd]} s"
done
[[ $status -eq 0 ]] && echo "fresh-root: both README commands and the pip install check passed in a bare Debian 12 root" ||
  echo "fresh-root: FAILED (logs in $scratch; rerun with --keep to keep the root)" >&2
[[ $status -ne 0 ]] && keep=1
exit $status
