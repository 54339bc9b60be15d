#!/usr/bin/env bash
# Builds a local stand-in for the official node:20-bookworm-slim image where that image cannot be
# pulled: Debian bookworm (debootstrap minbase) with this machine's Node 20 and npm laid out as the
# official image lays them out (/usr/local/bin, /usr/local/include/node, /usr/local/lib/node_modules),
# and this machine's CA certificates (npm inside the build must reach the registry through them).
# Prints the image name. Cached by Node version: a second run reuses the image.
set -euo pipefail
node_version="$(node --version)"
image="localhost/issuer-kit-test-base:node-${node_version#v}"
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi
rootfs_tar="$(bash "$(dirname "$0")/debian-rootfs.sh")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root"
tar -C "$work/root" -xf "$rootfs_tar"
node_bin="$(readlink -f "$(command -v node)")"
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
node_prefix="$(dirname "$(dirname "$node_bin")")"
mkdir -p "$work/root/usr/local/bin" "$work/root/usr/local/include" "$work/root/usr/local/lib/node_modules"
cp "$node_bin" "$work/root/usr/local/bin/node"
cp -r "$node_prefix/include/node" "$work/root/usr/local/include/node"
cp -r "$npm_dir" "$work/root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
mkdir -p "$work/root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$work/root/etc/ssl/certs/ca-certificates.crt"
# The official image's dynamic libraries for node come from Debian (libstdc++6 etc. are in minbase).
tar -C "$work/root" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  - "$image" >&2
echo "$image"
