#!/usr/bin/env bash
# As the official redis image does: redis-server started without a configuration file listens on
# every address with protected mode off (the container's network is the boundary).
set -euo pipefail
if [ "${1:-}" = redis-server ] && [[ "${2:-}" != *.conf ]]; then
  shift
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
