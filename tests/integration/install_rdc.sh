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
