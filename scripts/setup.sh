#!/usr/bin/env bash
# Installs what ragdolld needs to build, run and test on Debian 12, skipping
# what is already there. Run as root (or with sudo available).
#
#   scripts/setup.sh          build + run dependencies (libraries, cmake, node, npm packages)
#   scripts/setup.sh --test   also the test dependencies (cmocka, clang, Chromium,
#                             promtool from the prometheus package to lint /metrics)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (apt-get needs it)" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

# Debian packages, installed only when missing.
pkgs=(build-essential cmake pkg-config libuv1-dev libwslay-dev libcjson-dev libhttp-parser-dev nettle-dev)
if [ "$want_test" = 1 ]; then
  # prometheus: for promtool only. The package also holds the Prometheus
  # server, which a machine running systemd starts on :9090 (`systemctl
  # disable --now prometheus` if that is unwanted).
  pkgs+=(libcmocka-dev clang chromium prometheus)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm: use what is on PATH (these machines ship Node 20 with its
# own npm; Debian's npm package would conflict), else Debian's (Node 18).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages pinned by package-lock.json: three.js for the viewer; ws and
# playwright-core for the tests. Never `npx playwright install` (it downloads
# a browser); the tests drive Debian's /usr/bin/chromium.
if [ "$want_test" = 1 ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm ci --omit=dev --no-audit --no-fund --loglevel=error
fi
