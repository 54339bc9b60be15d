#!/usr/bin/env bash
# The PKCS#11 key backend's tests use Debian's SoftHSM2 as the token (docs/security.md "Keys in a
# hardware security module"). Installs it when missing and apt-get can (root); otherwise says so:
# those tests then skip, or fail under REQUIRE_SERVICES=1.
set -euo pipefail
if [ -e /usr/lib/softhsm/libsofthsm2.so ] && command -v softhsm2-util >/dev/null; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends softhsm2 >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends softhsm2; }
else
  echo "ensure-softhsm: SoftHSM2 (/usr/lib/softhsm/libsofthsm2.so) is missing; install it with: sudo apt-get install -y softhsm2" >&2
fi
