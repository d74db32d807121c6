#!/usr/bin/env bash
# Runs the suite of one build directory: scripts/ctest.sh BUILD_DIR [ctest args...]
# Prints one line per failed test (with its output) and the summary, not the
# hundreds of "Passed" lines, so a failure stays near the top of a long CI log;
# the full log is BUILD_DIR/Testing/Temporary/LastTest.log. What failed runs
# again alone at the end, which also tells a flaky failure from a steady one.
# Skips: a test may skip only as tests/declared_skips.txt allows (its name matches an entry whose
# condition holds); any other skip fails the run. Last line: "N passed, N failed, N skipped".
set -uo pipefail
dir=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp "${TMPDIR:-/tmp}/hipguard-ctest.XXXXXX")
trap 'rm -f "$log"' EXIT
ctest --test-dir "$dir" --output-on-failure -j2 "$@" | tee "$log" |
  sed -u -E '/^ +Start +[0-9]+: /d; /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: .* Passed +[0-9.]+ sec$/d'
rc=${PIPESTATUS[0]}
if ((rc != 0)); then
  echo "== $dir: the failed tests again, one at a time:"
  ctest --test-dir "$dir" --rerun-failed --output-on-failure -j1 "$@"
fi

# ---- skips against the declared list
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$dir/CMakeCache.txt" | head -n 1; }
holds() {
  case $1 in
    corpus-absent) [[ ! -d "$(cache_value HIPGUARD_CORPUS_DIR)/aiter" ]] ;;
    rocm-6.4-absent) [[ ! -f "$(cache_value HIPGUARD_ROCM_ROOT)/.hipguard-root" ]] ;;
    rocm-7.2-absent) [[ ! -f "$(cache_value HIPGUARD_ROCM72_ROOT)/.hipguard-root" ]] ;;
    not-root) (($(id -u) != 0)) ;;
    *) return 1 ;;
  esac
}
patterns=() conditions=() reasons=()
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  patterns+=("${line%% | *}")
  rest=${line#* | }
  conditions+=("${rest%% | *}")
  reasons+=("${rest#* | }")
done <"$root/tests/declared_skips.txt"

mapfile -t skipped < <(sed -n -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped .*/\1/p' "$log")
undeclared=0
declare -A by_reason=()
for name in "${skipped[@]}"; do
  why=
  for i in "${!patterns[@]}"; do
    [[ $name =~ ^(${patterns[$i]})$ ]] || continue
    if holds "${conditions[$i]}"; then why="${conditions[$i]}: ${reasons[$i]}"; else
      why="!declared for '${conditions[$i]}', which does not hold here"
    fi
    break
  done
  if [[ -z $why ]]; then
    echo "undeclared skip: $name (not in tests/declared_skips.txt)"
    undeclared=$((undeclared + 1))
  elif [[ $why == !* ]]; then
    echo "undeclared skip: $name (${why#!})"
    undeclared=$((undeclared + 1))
  else
    by_reason[$why]=$((${by_reason[$why]:-0} + 1))
  fi
done
for why in "${!by_reason[@]}"; do echo "declared skips: ${by_reason[$why]} (${why})"; done

total=$(sed -n -E 's/.* tests failed out of ([0-9]+).*/\1/p' "$log" | tail -n 1)
failed=$(sed -n -E 's/.*tests passed, ([0-9]+) tests? failed out of.*/\1/p' "$log" | tail -n 1)
total=${total:-0} failed=${failed:-0}
echo "$((total - failed - ${#skipped[@]})) passed, $failed failed, ${#skipped[@]} skipped ($undeclared undeclared)"
((rc == 0 && undeclared == 0)) || exit $((rc != 0 ? rc : 1))
