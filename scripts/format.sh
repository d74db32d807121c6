#!/usr/bin/env bash
# Formats the C++ sources with .clang-format (clang-format 14, scripts/deps.sh installs it):
#   scripts/format.sh           rewrites every file that differs
#   scripts/format.sh --check   changes nothing; lists the files that differ and fails if any does
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || true)
[[ -n $cf ]] || { echo "format: clang-format-14 not found (scripts/deps.sh installs it)" >&2; exit 2; }
dirs=(src include interpose tests bench)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- "${dirs[@]}" | grep -E '\.(cpp|h)$')
else
  mapfile -t files < <(find "${dirs[@]}" -name '*.cpp' -o -name '*.h' | sort)
fi
if [[ ${1:-} != --check ]]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "format: $f differs from .clang-format (scripts/format.sh rewrites it)"
    bad=1
  fi
done
exit $bad
