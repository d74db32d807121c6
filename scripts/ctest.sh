#!/usr/bin/env bash
# Runs the suite of one build directory: scripts/ctest.sh BUILD_DIR [ctest args...]
# Prints one line per failed test (with its output) and the summary, not the
# hundreds of "Passed" lines, so a failure stays near the top of a long CI log;
# the full log is BUILD_DIR/Testing/Temporary/LastTest.log. What failed runs
# again alone at the end, which also tells a flaky failure from a steady one.
set -uo pipefail
dir=$1
shift
ctest --test-dir "$dir" --output-on-failure -j2 "$@" |
  sed -u -E '/^ +Start +[0-9]+: /d; /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: .* Passed +[0-9.]+ sec$/d'
rc=${PIPESTATUS[0]}
if ((rc != 0)); then
  echo "== $dir: the failed tests again, one at a time:"
  ctest --test-dir "$dir" --rerun-failed --output-on-failure -j1 "$@"
fi
exit "$rc"
