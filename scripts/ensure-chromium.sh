#!/usr/bin/env bash
# The /docs browser test drives Debian's chromium through playwright-core (no browser download).
# Installs it when missing and apt-get can (root); otherwise says so: the test then skips, or
# fails under REQUIRE_SERVICES=1.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium
else
  echo "ensure-chromium: /usr/bin/chromium is missing; install it with: sudo apt-get install -y chromium" >&2
fi
