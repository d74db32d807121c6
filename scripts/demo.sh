#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs hipguard on real input:
# the AITER code objects in ../shared/corpus, a hipcc-built program under the
# shim, and Debian's rocSPARSE.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
B=${BUILD_DIR:-build}
HG=$B/bin/hipguard
SHIM=$PWD/$B/lib/libhipguard.so
APP=$B/tests/apps/vector_add_multi

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [[ -d ../shared/corpus/aiter ]]; then
  step "Will AITER's code objects run on MI300X (gfx942) and MI355X (gfx950)?"
  echo "\$ hipguard check --target gfx942 --target mi355x ../shared/corpus/aiter"
  out=$("$HG" check --target gfx942 --target mi355x ../shared/corpus/aiter || true)
  grep -E 'can run on' <<<"$out"
  echo "gfx950 kernels whose LDS does not fit gfx942:"
  grep -E 'HG301 \[gfx942[^]]*\] .*/gfx950_' <<<"$out" | head -5
  echo "(full table and every diagnostic: run the command yourself)"
else
  echo "../shared/corpus not found: skipping the AITER part of the demo"
fi

step "A HIP program built for gfx90a:xnack-, gfx940, gfx1030, run for an MI300X (warn mode)"
echo "\$ HIPGUARD_TARGET=mi300x LD_PRELOAD=libhipguard.so $APP"
HIPGUARD_TARGET=mi300x LD_PRELOAD=$SHIM "$APP" || true

step "The same in strict mode: stopped before main"
echo "\$ hipguard run --target mi300x --strict -- $APP"
set +e
"$HG" run --target mi300x --strict -- "$APP"
echo "exit status: $?"
set -e

if [[ -e /usr/lib/x86_64-linux-gnu/librocsparse.so.0 ]]; then
  step "Debian's rocSPARSE (111 fat binaries) against gfx90a:xnack- and gfx942"
  echo "\$ hipguard check --target gfx90a:xnack- --target gfx942 /usr/lib/x86_64-linux-gnu/librocsparse.so.0"
  "$HG" check --target gfx90a:xnack- --target gfx942 /usr/lib/x86_64-linux-gnu/librocsparse.so.0 |
    grep -E 'can run on|^error|^checked' | cut -c1-240 || true
fi
