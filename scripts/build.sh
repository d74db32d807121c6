#!/usr/bin/env bash
# Configures and builds hipguard into ${BUILD_DIR:-build}. Extra args go to cmake; $BUILD_TARGETS
# (ninja targets, e.g. "hipguard hipguard_shim") builds only those, everything by default.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
# On a terminal ninja's one status line shows it is alive; in logs, warnings and errors only.
read -r -a targets <<<"${BUILD_TARGETS:-}"
if [[ -t 1 ]]; then ninja -C "$BUILD_DIR" "${targets[@]}"; else ninja --quiet -C "$BUILD_DIR" "${targets[@]}"; fi
