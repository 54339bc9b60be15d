#!/usr/bin/env bash
# Builds local stand-ins for the official postgres and redis images that compose.yaml names, where
# those cannot be pulled: Debian bookworm's own postgresql and redis-server packages on the
# debootstrap root filesystem (debian-rootfs.sh), started the way the official images start them
# (services/). Prints POSTGRES_IMAGE=… and REDIS_IMAGE=… lines for compose.yaml. Cached by the
# content of services/: a second run reuses the images.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
debian="localhost/issuer-kit-test-debian:bookworm"
if ! podman image exists "$debian"; then
  rootfs_tar="$(bash "$here/debian-rootfs.sh")"
  podman import --change 'CMD ["bash"]' "$rootfs_tar" "$debian" >&2
fi
tag="$(cat "$here/services/"* | sha256sum | cut -c1-12)"
for service in postgres redis; do
  image="localhost/issuer-kit-test-$service:$tag"
  if ! podman image exists "$image"; then
    podman build --format docker --network host --layers --build-arg "DEBIAN_IMAGE=$debian" \
      -t "$image" -f "$here/services/$service.Containerfile" "$here/services" >&2
  fi
  echo "$(echo "$service" | tr a-z A-Z)_IMAGE=$image"
done
