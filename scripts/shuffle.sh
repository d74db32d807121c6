#!/usr/bin/env bash
# Each GoogleTest binary of a build, run whole under --gtest_shuffle --gtest_repeat=2: no test may
# depend on the order of the others or on running once per process (CI, after the suite).
#   scripts/shuffle.sh [BUILD_DIR]    (default: build)
# Two rounds, not three: the second already runs every test after others in one process, and CI's
# 90 minutes are short (stop 58's CI took 5,321 s; three rounds took 550 s of it).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
status=0
ran=0
for bin in "$dir"/bin/*_tests; do  # every GoogleTest binary the build made (tests/CMakeLists.txt, tests/*/CMakeLists.txt)
  [[ -x $bin ]] || continue
  t=$(basename "$bin")
  start=$SECONDS
  ran=$((ran + 1))
  log=$(mktemp "${TMPDIR:-/tmp}/hipguard-shuffle.XXXXXX")
  seed=$((RANDOM % 99999 + 1))  # the first round's; each repeat takes the next
  if "$bin" --gtest_shuffle --gtest_repeat=2 --gtest_random_seed="$seed" --gtest_brief=1 >"$log" 2>&1; then
    echo "shuffle: $t passed 2 shuffled rounds in $((SECONDS - start)) s (--gtest_random_seed=$seed)"
  else
    echo "shuffle: $t FAILED (rerun: $bin --gtest_shuffle --gtest_repeat=2 --gtest_random_seed=$seed):"
    grep -E '^\[  FAILED  \]|Failure$' "$log" | sort -u | head -20
    status=1
  fi
  rm -f "$log"
done
((ran > 0)) || { echo "shuffle: no test binary in $dir/bin (build it first)"; exit 1; }
exit "$status"
