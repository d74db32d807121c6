#!/usr/bin/env bash
# Formats the C++ sources with .clang-format (clang-format 14, scripts/deps.sh installs it):
#   scripts/format.sh           rewrites every file that differs
#   scripts/format.sh --check   changes nothing; lists the files that differ and fails if any does
# The files: those git tracks under src, include, interpose, tests and bench (every one there
# when the tree is not a git checkout of its own). CLANG_FORMAT names the program to use.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
case ${1:-} in
  "" | --check) ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
cf=${CLANG_FORMAT:-$(command -v clang-format-14 || true)}
[[ -n $cf ]] || { echo "format: clang-format-14 not found (scripts/deps.sh installs it)" >&2; exit 2; }
dirs=(src include interpose tests bench)
if [[ $(git rev-parse --show-toplevel 2>/dev/null) == "$root" ]]; then
  mapfile -d '' files < <(git ls-files -z -- "${dirs[@]}" | grep -zE '\.(cpp|h)$')
else
  mapfile -d '' files < <(find "${dirs[@]}" \( -name '*.cpp' -o -name '*.h' \) -print0 | sort -z)
fi
((${#files[@]})) || { echo "format: no C++ file found below ${dirs[*]}" >&2; exit 2; }
if [[ -z ${1:-} ]]; then
  "$cf" -i -- "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! out=$("$cf" --dry-run -Werror -- "$f" 2>&1); then
    if grep -q 'code should be clang-formatted' <<<"$out"; then
      echo "format: $f differs from .clang-format (scripts/format.sh rewrites it)"
    else
      echo "format: $f: $out"
    fi
    bad=1
  fi
done
exit $bad
