#!/usr/bin/env bash
# Installs what ragdolld needs to build, run and test on Debian 12, skipping
# what is already there. Run as root (or with sudo available).
#
#   scripts/setup.sh          build + run dependencies (libraries, cmake, node, npm packages)
#   scripts/setup.sh --test   also the test dependencies (cmocka, clang, Chromium,
#                             promtool from the prometheus package to lint /metrics,
#                             podman to build the image)
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
pkgs=(build-essential cmake pkg-config libuv1-dev libwslay-dev libcjson-dev libhttp-parser-dev nettle-dev zlib1g-dev libcurl4-openssl-dev)
if [ "$want_test" = 1 ]; then
  # prometheus: for promtool only. The package also holds the Prometheus
  # server, which a machine running systemd starts on :9090 (`systemctl
  # disable --now prometheus` if that is unwanted).
  # podman, buildah, debootstrap: tests/image/check.sh builds the
  # Dockerfile; curl: it asks the server inside over HTTP.
  pkgs+=(libcmocka-dev clang chromium prometheus podman buildah debootstrap curl)
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

# npm packages pinned by package-lock.json: three.js for the viewer; ws,
# playwright-core and typescript (dev) for the tests and benchmarks. Never `npx playwright
# install` (it downloads a browser); the tests drive Debian's
# /usr/bin/chromium.
#
# `npm ci` empties node_modules before it installs, so it runs only when
# something needed is missing or at another version than the lock file's,
# and a plain setup (scripts/run.sh) never takes away the dev packages that
# `--test` installed: it installs them too when any is there already.
locked_present() { # locked_present all|prod: every such package at its locked version?
  node -e '
    const fs = require("fs");
    const all = process.argv[1] === "all";
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [path, meta] of Object.entries(lock.packages ?? {})) {
      if (!path.startsWith("node_modules/") || (meta.dev && !all) || meta.optional) continue;
      let version = null;
      try { version = JSON.parse(fs.readFileSync(path + "/package.json", "utf8")).version; } catch {}
      if (version !== meta.version) process.exit(1);
    }' "$1"
}
any_dev_present() {
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    const dev = Object.entries(lock.packages ?? {}).filter(([p, m]) => p.startsWith("node_modules/") && m.dev);
    process.exit(dev.some(([p]) => fs.existsSync(p + "/package.json")) ? 0 : 1);'
}
npm_flags=(--no-audit --no-fund --loglevel=error)
if [ "$want_test" = 1 ]; then
  locked_present all || npm ci "${npm_flags[@]}"
elif ! locked_present prod; then
  if any_dev_present; then
    npm ci "${npm_flags[@]}"
  else
    npm ci --omit=dev "${npm_flags[@]}"
  fi
fi
