#!/usr/bin/env bash
# Fuzzes every libFuzzer target of tests/fuzz for SECONDS, starting from its
# committed seed corpus (tests/fuzz/corpus/<target>/, copied to a scratch
# directory so that a run never grows the committed one), one target after
# the other. Fails if any target crashes, leaks, times out or fails a check;
# the inputs that did are kept in $RD_ARTIFACTS/fuzz/ (default BUILD_DIR/
# fuzz-artifacts/).
#
#   tests/fuzz/smoke.sh BUILD_DIR SECONDS
#
# BUILD_DIR is configured with CC=clang -DRD_FUZZ=ON and built with
# `cmake --build BUILD_DIR --target fuzz`.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
secs=$2
keep="${RD_ARTIFACTS:-$build/fuzz-artifacts}/fuzz"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failed=0
for dir in "$here"/corpus/*/; do
  target=$(basename "$dir")
  exe="$build/tests/fuzz/$target"
  if [ ! -x "$exe" ]; then
    echo "$target: not built ($exe)" >&2
    failed=1
    continue
  fi
  work="$scratch/$target"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$dir"* "$work/corpus/"
  # -timeout: one input may take this long (the machine may be busy);
  # -rss_limit_mb: libFuzzer's default, spelled out.
  if "$exe" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
    echo "$target: ${secs} s, ${runs:-?} inputs (${rate:-?}/s), no crash"
  else
    failed=1
    mkdir -p "$keep"
    cp "$work/artifacts/"* "$keep/" 2>/dev/null || true
    cp "$work/log" "$keep/$target.log"
    echo "$target: FAILED; its log and inputs are in $keep/" >&2
    grep -v -e '^#[0-9]' -e '^INFO:' "$work/log" | tail -n 40 >&2
  fi
done
exit "$failed"
