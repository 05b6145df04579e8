#!/usr/bin/env bash
# Sets up everything, builds ragdolld (Release) and runs it with the built-in
# demo world on http://localhost:8080/ (extra arguments go to ragdolld, e.g.
# --host 0.0.0.0 or --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Tests need more packages (scripts/setup.sh --test); the server does not.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRD_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
echo "ragdolld: open http://localhost:${RAGDOLLD_PORT:-8080}/ in a browser (Ctrl-C stops it)"
exec build/server/app/ragdolld --port "${RAGDOLLD_PORT:-8080}" "$@"
