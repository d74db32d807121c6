#!/usr/bin/env bash
# CI smoke test for a machine with an AMD GPU (MI300X / MI355X ...): build the
# test programs for the GPU found, run them under the shim in strict mode and
# expect success; run a known-incompatible case and expect the diagnostic.
#
# On a GPU machine it uses ROCm (rocminfo / KFD, hipcc, libamdhip64). Without
# a GPU, or with HIPGUARD_SMOKE_SIM=1, it runs the same steps against the
# simulated runtime built by the tests (build/simrt), pretending the GPU is
# HIPGUARD_SMOKE_GPU (default gfx90a:sramecc-:xnack-, a target Debian's hipcc
# can build for). Exit 0 when every step behaves as expected. See docs/ci.md.
#
# Steps 6 and 7 are the two CI jobs of docs/ci.md: the offline check of the
# build outputs as a JUnit report, and the program run under `hipguard run
# --strict` with a report per process; the reports land in
# ${HIPGUARD_SMOKE_REPORTS:-a temporary directory}.
# HIPGUARD_BIN=/usr/bin/hipguard uses an installed hipguard (and its shim).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD_DIR:-$ROOT/build}
HG=${HIPGUARD_BIN:-$B/bin/hipguard}
SHIM=$B/lib/libhipguard.so
[[ -n ${HIPGUARD_BIN:-} ]] && SHIM=$(cd "$(dirname "$HG")/../lib" && pwd)/libhipguard.so.0
# Sanitizer builds of hipguard: their runtime must be preloaded before the shim.
if [[ -n ${HIPGUARD_SMOKE_PRELOAD:-} ]]; then
  SHIM="$HIPGUARD_SMOKE_PRELOAD:$SHIM"
  export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail=0
pass() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fail=1; }

[[ -x $HG && -f ${SHIM##*:} ]] || { echo "build hipguard first (scripts/build.sh)"; exit 2; }
HIPCC=${HIPCC:-$(command -v hipcc || true)}
[[ -n $HIPCC ]] || { echo "hipcc not found"; exit 2; }
# hipcc's temporary directories in $WORK: Debian's (clang-15) leaves two empty ones per build.
hipcc() { TMPDIR="$WORK" "$HIPCC" "$@"; }

# 1. Which GPU? The shim reads the KFD topology itself; here we need the target
#    to build for. rocminfo names it when ROCm is installed.
sim=${HIPGUARD_SMOKE_SIM:-0}
gpu=""
if [[ $sim != 1 ]] && command -v rocminfo >/dev/null 2>&1; then
  gpu=$(rocminfo 2>/dev/null | grep -oE 'amdgcn-amd-amdhsa--gfx[0-9a-f]+(:[a-z]+[+-])*' | head -1 | sed 's/amdgcn-amd-amdhsa--//') || true
fi
declare -a run_env=()
if [[ -z $gpu ]]; then
  sim=1
  gpu=${HIPGUARD_SMOKE_GPU:-gfx90a:sramecc-:xnack-}
  [[ -f $B/simrt/libamdhip64.so.5 ]] || { echo "no GPU and no simulated runtime in $B/simrt"; exit 2; }
  run_env=(LD_LIBRARY_PATH="$B/simrt" HIPGUARD_SIM_GPUS="$gpu" HIPGUARD_TARGET="$gpu")
  echo "# no AMD GPU: using the simulated runtime as $gpu"
else
  echo "# GPU: $gpu"
fi
proc=${gpu%%:*}

# 2. Build the test program for that GPU.
hipcc --offload-arch="$proc" -O2 -o "$WORK/vector_add" "$ROOT/tests/apps/vector_add.hip" >/dev/null
other=gfx1030
[[ $proc == gfx1030 ]] && other=gfx90a
hipcc --offload-arch="$other" -O2 -o "$WORK/vector_add_other" "$ROOT/tests/apps/vector_add.hip" >/dev/null

# 3. The right build, strict mode: runs, launches, hipguard silent.
out=$(env "${run_env[@]}" HIPGUARD_MODE=strict LD_PRELOAD="$SHIM" "$WORK/vector_add" 2>"$WORK/err") && st=0 || st=$?
if [[ $st == 0 && $out == *"hipLaunchKernel: 0 "* && ! -s $WORK/err ]]; then
  pass "vector_add built for $proc runs under the shim in strict mode"
else
  bad "vector_add for $proc: status $st, output: $out, stderr: $(cat "$WORK/err")"
fi

# 4. A build for another GPU, strict mode: stopped before main with the diagnostic.
env "${run_env[@]}" HIPGUARD_MODE=strict LD_PRELOAD="$SHIM" "$WORK/vector_add_other" >"$WORK/out2" 2>"$WORK/err2" && st=0 || st=$?
if [[ $st == 86 ]] && grep -q "error HG201" "$WORK/err2" && grep -q -- "--offload-arch=$proc" "$WORK/err2" && ! grep -q "main reached" "$WORK/out2"; then
  pass "vector_add built for $other is stopped before main on $proc (HG201, exit 86)"
else
  bad "vector_add for $other: status $st, stderr: $(cat "$WORK/err2")"
fi

# 5. The CLI agrees offline.
if "$HG" check --target "$gpu" "$WORK/vector_add" >/dev/null && ! "$HG" check --target "$gpu" "$WORK/vector_add_other" >/dev/null; then
  pass "hipguard check agrees: $proc build passes, $other build fails"
else
  bad "hipguard check disagrees with the run"
fi

# 6. The offline CI job: check the build outputs, a JUnit report for the CI's test view.
REPORTS=${HIPGUARD_SMOKE_REPORTS:-$WORK/reports}
mkdir -p "$REPORTS"
"$HG" check --target "$gpu" --junit "$WORK/vector_add" >"$REPORTS/hipguard-check.xml" && st=0 || st=$?
if [[ $st == 0 ]] && grep -q '<testsuites' "$REPORTS/hipguard-check.xml" && ! grep -q '<failure' "$REPORTS/hipguard-check.xml"; then
  pass "offline job: hipguard check --junit passes the $proc build ($REPORTS/hipguard-check.xml)"
else
  bad "offline job: status $st, report: $(head -c 600 "$REPORTS/hipguard-check.xml")"
fi

# 7. The GPU-runner job: the program under hipguard run --strict, one report per process.
out=$(env "${run_env[@]}" "$HG" run --strict --report "$REPORTS/run-%p.json" -- "$WORK/vector_add" 2>"$WORK/err7") && st=0 || st=$?
reports=("$REPORTS"/run-*.json)
if [[ $st == 0 && $out == *"hipLaunchKernel: 0 "* && -f ${reports[0]} ]] && grep -q '"mode": *"strict"' "${reports[0]}"; then
  pass "GPU job: hipguard run --strict runs the $proc build and writes ${reports[0]}"
else
  bad "GPU job: status $st, output: $out, stderr: $(cat "$WORK/err7"), reports: ${reports[*]}"
fi

[[ $sim == 1 ]] && echo "# ran against the simulated runtime (no GPU here)"
exit $fail
