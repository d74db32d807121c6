#!/usr/bin/env bash
# The test command: installs dependencies, builds or reuses the ROCm 6.4 and 7.2 roots
# (scripts/rocm-root.sh; their tests skip with one line where they cannot be built),
# builds, runs the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== test: installing what is missing (scripts/deps.sh)"
scripts/deps.sh
for stack in 6.4 7.2; do
  echo "== test: the ROCm $stack root (scripts/rocm-root.sh --stack $stack)"
  if ! scripts/rocm-root.sh --stack "$stack"; then
    # CI runs on a machine that can build them: there a missing root is a failure, not a skip.
    [[ -z ${CI:-} ]] || exit 1
    echo "test: no ROCm $stack root; its tests will skip"
  fi
done
echo "== test: building (scripts/build.sh)"
scripts/build.sh
echo "== test: running the suite (scripts/ctest.sh)"
scripts/ctest.sh "${BUILD_DIR:-build}"
