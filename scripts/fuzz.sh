#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang + ASan + UBSan into
# ${FUZZ_BUILD_DIR:-build-fuzz}, builds seed corpora from real inputs, and runs
# every target for SECONDS_PER_TARGET seconds (default 60), one after another.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Exit status: 0 when no target found anything, 1 when a target crashed (or hit
# an out-of-memory or timeout: those are findings too), 2 on build errors.
# Findings are saved under build-fuzz/crashes/<target>-{crash,oom,timeout,leak}-<sha1>;
# logs under build-fuzz/logs/, the growing working corpora under build-fuzz/corpus/.
# See docs/fuzzing.md.
#
# Environment:
#   FUZZ_CC / FUZZ_CXX      compilers (default clang-14 / clang++-14)
#   FUZZ_BUILD_DIR          build directory (default build-fuzz)
#   FUZZ_BUILD_JOBS         ninja -j (default 2)
#   FUZZ_TIMEOUT            seconds one input may take before it is a finding (default 10)
#   FUZZ_RSS_MB             memory limit in MiB (rss and single malloc, default 2048)
#   FUZZ_KEEP_GOING=1       keep fuzzing after a finding (libFuzzer -fork=1 -ignore_*)
#   FUZZ_EXTRA              extra libFuzzer flags, e.g. "-max_len=65536"
#   HIPGUARD_CORPUS_DIR     real code objects (default ../shared/corpus next to the repo)
#   HIPGUARD_APPS_DIR       hipcc outputs (default: the first build*/tests/apps found)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SECS=${1:-60}
[[ $# -gt 0 ]] && shift
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
ALL_TARGETS=(fuzz_bundle fuzz_ccob fuzz_code_object fuzz_metadata fuzz_elf_image_size fuzz_fatbin_section fuzz_entry_id
             fuzz_target fuzz_check_image fuzz_kfd_properties fuzz_archive fuzz_report_codec)
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=("${ALL_TARGETS[@]}")

# ---- Build ------------------------------------------------------------------
CC=${FUZZ_CC:-clang-14} CXX=${FUZZ_CXX:-clang++-14} \
  cmake -S tests/fuzz -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHIPGUARD_SANITIZE=address -DHIPGUARD_BUILD_TESTS=OFF -DHIPGUARD_FUZZ=ON >"$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log"; echo "fuzz.sh: cmake failed" >&2; exit 2; }
rm -f "$BUILD.configure.log"
ninja -C "$BUILD" -j"${FUZZ_BUILD_JOBS:-2}" fuzz_all || { echo "fuzz.sh: build failed" >&2; exit 2; }

# ---- Seeds from real inputs -------------------------------------------------
SEEDS=$BUILD/seeds
rm -rf "$SEEDS" && mkdir -p "$SEEDS" "$BUILD/extracted"
inputs=()
CORPUS=${HIPGUARD_CORPUS_DIR:-$ROOT/../shared/corpus}
if compgen -G "$CORPUS/aiter/*.co" >/dev/null; then
  inputs+=("$CORPUS"/aiter/*.co)
else
  echo "fuzz.sh: no real code objects at $CORPUS/aiter (skipped; set HIPGUARD_CORPUS_DIR)"
fi
APPS=${HIPGUARD_APPS_DIR:-}
if [[ -z $APPS ]]; then
  for d in build*/tests/apps; do
    [[ -d $d && $d != "$BUILD"/* ]] && compgen -G "$d/*.hipfb" >/dev/null && { APPS=$d; break; }
  done
fi
if [[ -n $APPS && -d $APPS ]]; then
  for f in "$APPS"/*; do
    [[ -f $f ]] || continue
    case $f in
      *.hipfb) inputs+=("$f") ;;
      *)
        # Executables and libraries: their .hip_fatbin section, as objcopy dumps it.
        if readelf -S "$f" 2>/dev/null | grep -q '\.hip_fatbin'; then
          out=$BUILD/extracted/$(basename "$f").hip_fatbin
          objcopy -O binary --only-section=.hip_fatbin "$f" "$out" && inputs+=("$out")
        fi ;;
    esac
  done
else
  echo "fuzz.sh: no hipcc outputs (build*/tests/apps with .hipfb files; set HIPGUARD_APPS_DIR) - skipped"
fi
"$BUILD/fuzz/fuzz_seeds" "$SEEDS" "${inputs[@]}" || { echo "fuzz.sh: seed builder failed" >&2; exit 2; }
# KFD properties files: the test fixtures (amdkfd node_show() format).
mkdir -p "$SEEDS/fuzz_kfd_properties"
for f in tests/fixtures/sysfs/*/class/kfd/kfd/topology/nodes/*/properties; do
  cp "$f" "$SEEDS/fuzz_kfd_properties/$(echo "$f" | tr '/' '_')"
done

# ---- Run --------------------------------------------------------------------
mkdir -p "$BUILD/crashes" "$BUILD/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
extra=()
[[ ${FUZZ_KEEP_GOING:-0} == 1 ]] && extra+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
# shellcheck disable=SC2206
[[ -n ${FUZZ_EXTRA:-} ]] && extra+=(${FUZZ_EXTRA})
failed=()
printf '%-22s %8s %12s %10s  %s\n' target seconds runs exec/s result
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD/corpus/$t" "$SEEDS/$t"
  log=$BUILD/logs/$t.log
  before=$(ls "$BUILD/crashes" | grep -c "^$t-")
  "$BUILD/fuzz/$t" -max_total_time="$SECS" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
    -malloc_limit_mb="${FUZZ_RSS_MB:-2048}" -dict=tests/fuzz/hipguard.dict -print_final_stats=1 \
    -artifact_prefix="$BUILD/crashes/$t-" "${extra[@]}" "$BUILD/corpus/$t" "$SEEDS/$t" >"$log" 2>&1
  rc=$?
  after=$(ls "$BUILD/crashes" | grep -c "^$t-")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [[ -z $runs ]]; then  # fork mode: the last "#N: cov: ... exec/s: E ..." status line
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
    runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
    secs=$(sed -nE 's/.* time: ([0-9]+)s.*/\1/p' <<<"$last")
    [[ -n $runs && -n $secs && $secs -gt 0 ]] && eps=$((runs / secs))
  fi
  if [[ $rc -ne 0 || $after -gt $before ]]; then
    failed+=("$t")
    result="FINDING (exit $rc, $((after - before)) new artifact(s)) - see $log"
  else
    result=ok
  fi
  printf '%-22s %8s %12s %10s  %s\n' "$t" "$SECS" "${runs:-?}" "${eps:-?}" "$result"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in: ${failed[*]}"
  ls -1 "$BUILD/crashes" | sed 's/^/  /'
  # A CI log is all that is left of a run on another machine: the report and the
  # input (base64, when small) make the finding reproducible from the log alone.
  for t in "${failed[@]}"; do
    echo "---- $t: end of $BUILD/logs/$t.log"
    grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED|RELOAD)|^stat::' "$BUILD/logs/$t.log" | tail -60
    for a in "$BUILD/crashes/$t"-*; do
      [[ -f $a && $(stat -c %s "$a") -le 65536 ]] || continue
      echo "---- $(basename "$a") ($(stat -c %s "$a") bytes), base64 (decode: base64 -d > FILE; $BUILD/fuzz/$t FILE):"
      base64 -w 100 "$a"
    done
  done
  exit 1
fi
echo "fuzz.sh: no findings"
