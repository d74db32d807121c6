#!/usr/bin/env bash
# Sanitizer runs of the test suite: ASan+UBSan (build-asan) and TSan
# (build-tsan), each selected with the one CMake option HIPGUARD_SANITIZE.
#   scripts/sanitize.sh [address|thread]...   (default: both)
# Exit status: non-zero when a build fails or a sanitizer reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
((${#kinds[@]})) || kinds=(address thread)
# The uninstrumented shim (the README's test build) for the two tests whose host
# cannot preload a sanitizer runtime (tests/integration: uninstrumented_shim).
echo "== the uninstrumented build (build/)"
BUILD_DIR=build scripts/build.sh
for kind in "${kinds[@]}"; do
  case $kind in
    address) dir=build-asan ;;
    thread) dir=build-tsan ;;
    *) echo "unknown sanitizer '$kind' (address or thread)"; exit 2 ;;
  esac
  echo "== $kind sanitizer build in $dir"
  # -O1 -g1: what the sanitizers' own documentation asks for (-O1 or more, line
  # tables for the reports' file:line). GCC's -O2 -g with UBSan took 3x as long to
  # build (197 s against 62 s for one of src/runtime's files), and the build is
  # most of a CI run.
  BUILD_DIR=$dir scripts/build.sh -DHIPGUARD_SANITIZE="$kind" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DHIPGUARD_PLAIN_SHIM="$PWD/build/lib/libhipguard.so"
  # TSan finds data races, and tests/robustness feeds damaged inputs to the parsers on one thread
  # (ASan covers them): under TSan they took over 600 s of a CI run and could find nothing.
  only=()
  [[ $kind == thread ]] && only=(-LE robustness)
  # halt_on_error: the first report fails the test that triggered it.
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp" \
    scripts/ctest.sh "$dir" "${only[@]}"
done
