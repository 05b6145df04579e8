#!/usr/bin/env bash
# Sets up everything and runs the whole test suite twice:
#   1. gcc, Release, -Werror                    (build/)
#   2. clang, AddressSanitizer + UndefinedBehaviorSanitizer, -Werror (build-asan/)
# Each run: cmocka unit tests, integration tests against a real server, and
# the browser test in headless Chromium. Then:
#   3. clang, ThreadSanitizer (build-tsan/): the tests labelled tsan, the
#      ones that run servers whose worlds step on worker threads and assert
#      no rates (the server runs about ten times slower under it);
#   4. clang, libFuzzer + ASan + UBSan, the fuzz targets only (build-fuzz/):
#      every committed seed once, then each target for 20 s from its seeds.
#   5. the container image (tests/image/check.sh): the Dockerfile built with
#      podman, then its HEALTHCHECK, ragdollctl and the installed server's
#      viewer and templates checked inside. It runs beside 3 and 4, which
#      assert no rates (about 3 minutes, much of it downloads); its log is
#      test-artifacts/image-check.log.
# Test artifacts (screenshots, inputs that crashed a fuzzer) go to
# test-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
jobs=$(nproc)
export RD_ARTIFACTS="$PWD/test-artifacts"
mkdir -p "$RD_ARTIFACTS"

echo "== gcc Release =="
# Options are explicit: scripts/run.sh configures build/ without tests, and
# CMake would otherwise keep that cached choice.
CC=gcc cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRD_BUILD_TESTS=ON -DRD_BUILD_BENCH=ON \
  -DRD_BUILD_WEB=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs"

# The sanitizer build uses -O1: at -O0 ASan makes a demo tick ~15 ms, close
# to the 16.7 ms budget, and the timing checks would measure the build, not
# the server. -O1 keeps every check and runs ~20x faster.
echo "== clang Debug + ASan + UBSan =="
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
  -DRD_SANITIZE=address,undefined -DRD_BUILD_TESTS=ON -DRD_BUILD_BENCH=ON -DRD_BUILD_WEB=ON >/dev/null
cmake --build build-asan -j"$jobs"
# Leaks are checked in the unit tests, which run the server (app, net, sim),
# the protocol and the client library in their own processes. The
# integration and browser tests start dozens of short-lived ragdolld,
# ragdollctl and ragdoll-load processes; on these machines LeakSanitizer's
# stop-the-world (ptrace) at exit has been seen to hang one of them
# spinning, so there it is off. ASan and UBSan still abort on any error.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" -L unit
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" -LE unit

# ThreadSanitizer: the worker pool and everything that crosses threads
# (test_sched: worlds stepping on 0-4 workers, destroyed and shut down with
# steps in flight; test_app; a real ragdolld under rdc and /metrics). -O2,
# as TSan's documentation advises: at -O1 a demo tick takes 9 ms here, at
# -O2 6 ms (0.3 ms in the gcc build). Only the targets those tests need.
echo "== container image (podman), beside the next two stages =="
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" tests/image/check.sh >"$RD_ARTIFACTS/image-check.log" 2>&1 &
image_pid=$!
trap 'kill "$image_pid" 2>/dev/null || true' EXIT

echo "== clang ThreadSanitizer =="
CC=clang cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O2" \
  -DRD_SANITIZE=thread -DRD_BUILD_TESTS=ON -DRD_BUILD_BENCH=OFF -DRD_BUILD_WEB=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target ragdolld web test_app test_sched test_persist test_rdc_server
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure --no-tests=error -j"$jobs" -L tsan

echo "== clang libFuzzer (smoke) =="
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRD_FUZZ=ON \
  -DRD_BUILD_TESTS=OFF -DRD_BUILD_BENCH=OFF -DRD_BUILD_WEB=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz
ctest --test-dir build-fuzz --output-on-failure --no-tests=error -L fuzz
tests/fuzz/smoke.sh build-fuzz 20

echo "== container image (podman): waiting for it =="
if ! wait "$image_pid"; then
  tail -n 60 "$RD_ARTIFACTS/image-check.log" >&2
  echo "the container image check failed (whole log: $RD_ARTIFACTS/image-check.log)" >&2
  exit 1
fi
trap - EXIT
grep '^image check:' "$RD_ARTIFACTS/image-check.log"
echo "all tests passed (gcc Release, clang ASan+UBSan, clang TSan, clang libFuzzer, the container image)"
