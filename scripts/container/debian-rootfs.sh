#!/usr/bin/env bash
# Prints the path of a Debian bookworm root filesystem (debootstrap minbase) as a tar, built once
# and cached in CONTAINER_CACHE_DIR (/var/cache/issuer-kit-container): the local bases of the
# container test (base-image.sh, service-images.sh) start from it where no image can be pulled.
set -euo pipefail
cache="${CONTAINER_CACHE_DIR:-/var/cache/issuer-kit-container}"
mkdir -p "$cache"
rootfs_tar="$cache/bookworm-minbase.tar"
if [ ! -s "$rootfs_tar" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase bookworm "$work/root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
  rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
  tar -C "$work/root" -cf "$rootfs_tar.tmp" .
  mv "$rootfs_tar.tmp" "$rootfs_tar"
fi
echo "$rootfs_tar"
