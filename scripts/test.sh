#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j2
