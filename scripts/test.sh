#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
B=${BUILD_DIR:-build}
if ! ctest --test-dir "$B" --output-on-failure -j2; then
  # Repeat what failed, alone and at the end of the log, so the cause is easy to
  # find in a long CI log (and a second run tells a flaky failure from a steady one).
  echo "== the failed tests again, one at a time:"
  ctest --test-dir "$B" --rerun-failed --output-on-failure -j1 || true
  exit 1
fi
