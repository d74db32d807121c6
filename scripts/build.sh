#!/usr/bin/env bash
# Configures and builds hipguard into ${BUILD_DIR:-build}. Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
ninja --quiet -C "$BUILD_DIR"  # warnings and errors only
