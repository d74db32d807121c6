#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
scripts/ctest.sh "${BUILD_DIR:-build}"
