#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and builds the rdc
# example against it with nothing but pkg-config: what a user of the
# installed library does (clients/c/README.md).
#   install_rdc.sh BUILD_DIR SOURCE_DIR C_COMPILER [SANITIZE]
set -euo pipefail
build=$1 src=$2 cc=$3 sanitize=${4:-}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists rdc
test -f "$prefix/include/rdc.h"
test -f "$prefix/include/rdp.h"
test -x "$prefix/bin/ragdollctl"
test -x "$prefix/bin/ragdoll-load"
extra=()
if [ -n "$sanitize" ]; then
  extra=("-fsanitize=$sanitize")
fi
# shellcheck disable=SC2046
"$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror "${extra[@]}" \
  -o "$prefix/game" "$src/clients/c/examples/game.c" $(pkg-config --cflags --libs rdc)
test -x "$prefix/game"
# The README shows the example whole: it must be the file that builds.
awk '/^```c$/ { getline; if ($0 ~ /^\/\/ game\.c/) { show = 1 } } show && /^```$/ { exit } show { print }' \
  "$src/clients/c/README.md" | diff -u "$src/clients/c/examples/game.c" - \
  || { echo "clients/c/README.md's example differs from examples/game.c" >&2; exit 1; }
"$prefix/bin/ragdollctl" --version
echo "rdc installs, and the example builds from pkg-config alone"

# The installed server finds its viewer, skeletons and world templates under
# the prefix without flags, from any directory (issue 12: it used to point
# into the build tree).
test -f "$prefix/share/ragdolld/web/index.html"
test -f "$prefix/share/ragdolld/templates/arena.json"
out=$(mktemp)
(cd / && exec "$prefix/bin/ragdolld" --port 0 --world-template arena --log-level warn >"$out") &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$prefix" "$out"' EXIT
port=
for _ in $(seq 100); do
  port=$(sed -n 's/^listening on [^ ]*:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] && break
  sleep 0.1
done
test -n "$port" || { echo "the installed ragdolld did not start" >&2; exit 1; }
# GET / is the viewer (bash's /dev/tcp: no HTTP client needed).
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
page=$(cat <&3)
exec 3<&-
grep -q '^HTTP/1.1 200' <<<"$page" || { echo "GET / did not answer 200: ${page:0:200}" >&2; exit 1; }
grep -q '<html' <<<"$page" || { echo "GET / is not the viewer" >&2; exit 1; }
# Its world is the template's (the skeletons loaded: it has characters).
"$prefix/bin/ragdollctl" --url "ws://127.0.0.1:$port/ws" list | grep -E '^1 +arena ' \
  || { echo "no world made from the installed arena template" >&2; exit 1; }
kill -TERM "$server"
wait "$server"
echo "the installed ragdolld serves its viewer and makes worlds from its templates without flags"
