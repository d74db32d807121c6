#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs hipguard on real input:
# the AITER code objects in ../shared/corpus, a hipcc-built program under the
# shim, and Debian's rocSPARSE.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== demo: installing what is missing (scripts/deps.sh; apt, the first time a few minutes)"
scripts/deps.sh
echo "== demo: building (scripts/build.sh; the first time about 10 minutes on 2 cores)"
scripts/build.sh
B=${BUILD_DIR:-build}
HG=$B/bin/hipguard
SHIM=$PWD/$B/lib/libhipguard.so
APP=$B/tests/apps/vector_add_multi

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Prints the lines of "$2" that match $1, at most $3 of them. No pipe into head:
# under pipefail a reader that stops early kills the writer with SIGPIPE (exit 141).
matching() { grep -E -m "${3:-1000}" -e "$1" <<<"$2" || true; }

if [[ -d ../shared/corpus/aiter ]]; then
  step "Will AITER's kernel library run on MI300X (gfx942), MI355X (gfx950) and a Radeon RX 7900 (gfx1100)?"
  echo "\$ hipguard check --target gfx942 --target mi355x --target gfx1100 ../shared/corpus/aiter"
  out=$("$HG" check --target gfx942 --target mi355x --target gfx1100 ../shared/corpus/aiter || true)
  printf '%s\n' "$out"
  big=$(ls ../shared/corpus/aiter/gfx950_fmoe_silu_fmoe_fp16_pertokenFp8_g1u1_silu_1tg_32x512.co 2>/dev/null || true)
  if [[ -n $big ]]; then
    step "One gfx950 code object loaded by hand on an MI300X: its LDS does not fit"
    echo "\$ hipguard check --target gfx942 $big"
    out=$("$HG" check --target gfx942 "$big" || true)
    matching '^error' "$out" 5 | cut -c1-400
  fi
else
  echo "../shared/corpus not found: skipping the AITER part of the demo"
fi

step "A HIP program built for gfx90a:xnack-, gfx940, gfx1030, run for an MI300X (warn mode)"
echo "\$ HIPGUARD_TARGET=mi300x LD_PRELOAD=libhipguard.so $APP"
HIPGUARD_TARGET=mi300x LD_PRELOAD=$SHIM "$APP" || true

step "The same in strict mode: stopped before main"
echo "\$ hipguard run --target mi300x --strict -- $APP"
status=0
"$HG" run --target mi300x --strict -- "$APP" || status=$?
echo "exit status: $status"

if [[ -e /usr/lib/x86_64-linux-gnu/librocsparse.so.0 ]]; then
  step "Debian's rocSPARSE (111 fat binaries) against gfx90a:xnack- and gfx942"
  echo "\$ hipguard check --target gfx90a:xnack- --target gfx942 /usr/lib/x86_64-linux-gnu/librocsparse.so.0"
  out=$("$HG" check --target gfx90a:xnack- --target gfx942 /usr/lib/x86_64-linux-gnu/librocsparse.so.0 || true)
  matching 'can run on|^error|^checked|^target|librocsparse' "$out" | cut -c1-240
fi
