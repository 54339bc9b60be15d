#!/usr/bin/env bash
# npm run test:container: builds the image from a clean checkout of HEAD and proves it
# (test/container/container.test.ts), then starts that checkout's compose.yaml with podman-compose
# (test/container/compose.test.ts). Needs root, podman and runc (and debootstrap for the local
# base images; podman-compose for the compose test). Prints one "skipped" line and exits 0 when it
# cannot run containers here, unless REQUIRE_CONTAINERS=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"

skip() {
  if [ "${REQUIRE_CONTAINERS:-}" = 1 ]; then echo "test:container: cannot run containers: $1" >&2; exit 1; fi
  echo "test:container: skipped ($1)"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "not root: podman runs the containers as root here"
for tool in podman runc git; do command -v "$tool" >/dev/null || skip "$tool is not installed"; done

# podman's settings for this run only: runc (crun fails on this kind of host's cgroups) and no
# default ulimits (the host's may not be raisable inside a container).
conf="$(mktemp)"
trap 'rm -f "$conf"' EXIT
printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' >"$conf"
export CONTAINERS_CONF="$conf"
podman info >/dev/null 2>&1 || skip "podman cannot start here"

# The base: NODE_IMAGE when given, else a local stand-in for node:20-bookworm-slim (cached).
if [ -z "${NODE_IMAGE:-}" ]; then
  command -v debootstrap >/dev/null || skip "debootstrap is not installed (or set NODE_IMAGE)"
  NODE_IMAGE="$(bash scripts/container/base-image.sh)" || skip "cannot build the local base image (see above)"
fi
# Whether containers run here at all (privileges, cgroups, runtime): past this, a failure is a failure.
if ! probe="$(podman run --rm --network host "$NODE_IMAGE" node -e 0 2>&1)"; then
  skip "cannot run a container: $(printf '%s' "$probe" | tail -n 1)"
fi

# A clean checkout of HEAD: what a user builds, nothing of this working tree's keys or data.
src="$(mktemp -d)"
trap 'rm -f "$conf"; rm -rf "$src"' EXIT
git archive --format=tar HEAD | tar -C "$src" -x
image="localhost/issuer-kit:test"
started=$SECONDS
podman build --format docker --network host --layers --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$image" -f "$src/Containerfile" "$src"
size="$(podman image inspect --format '{{.Size}}' "$image")"
echo "test:container: image $image built from $(git rev-parse --short HEAD) on $NODE_IMAGE: $((size / 1000000)) MB in $((SECONDS - started)) s"

# compose.yaml's PostgreSQL and Redis: POSTGRES_IMAGE and REDIS_IMAGE when given, else local
# stand-ins built from Debian's packages (cached), as the official images cannot be pulled here.
if command -v podman-compose >/dev/null; then
  if [ -z "${POSTGRES_IMAGE:-}" ] || [ -z "${REDIS_IMAGE:-}" ]; then
    started=$SECONDS
    images="$(bash scripts/container/service-images.sh)"
    while IFS='=' read -r name value; do export "$name=$value"; done <<<"$images"
    echo "test:container: compose services $POSTGRES_IMAGE, $REDIS_IMAGE ready in $((SECONDS - started)) s"
  fi
  export COMPOSE_DIR="$src"
  version="$(podman-compose version 2>/dev/null | sed -n 's/^podman-composer\? version:\? *//p' | head -n 1)"
  echo "test:container: compose.yaml with podman-compose $version"
elif [ "${REQUIRE_CONTAINERS:-}" = 1 ]; then
  echo "test:container: podman-compose is not installed" >&2
  exit 1
else
  echo "test:container: compose.yaml skipped (podman-compose is not installed)"
fi

CONTAINER_IMAGE="$image" npx vitest run --config "$root/vitest.container.config.ts"
