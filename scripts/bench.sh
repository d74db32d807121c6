#!/usr/bin/env bash
# Whole-process figures P1-P4 and the micro-benchmarks (docs/performance.md).
# Figures, not tests: the script always exits 0 unless something fails to run.
#   scripts/bench.sh            (Release build in build-bench, inputs in a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${BENCH_BUILD_DIR:-build-bench}
BUILD_DIR=$B scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DHIPGUARD_BUILD_BENCH=ON -DHIPGUARD_BUILD_TESTS=ON >/dev/null
HG=$ROOT/$B/bin/hipguard
SHIM=$ROOT/$B/lib/libhipguard.so
SIMRT=$ROOT/$B/simrt
ROCSPARSE=/usr/lib/x86_64-linux-gnu/librocsparse.so.0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
declare -a rows=()
row() { rows+=("$(printf '%-4s %-58s %-22s %s' "$1" "$2" "$3" "$4")"); }

# Median wall time in ms of N runs of a command.
median_ms() {
  local n=$1; shift
  local t=()
  for ((i = 0; i < n; i++)); do
    local s=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    t+=($(( ($(date +%s%N) - s) / 1000 )))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]/1000}'
}
peak_kib() { { /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null || true; } | tail -1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"

# ---- P1: hipguard check vs llvm-readelf-16 --notes over thousands of code objects
mkdir -p "$WORK/cos"
if [[ -e $ROCSPARSE ]]; then "$B/bin/extract_code_objects" "$ROCSPARSE" "$WORK/cos" >/dev/null; fi
if [[ -d ../shared/corpus/aiter ]]; then
  for i in $(seq 1 25); do for f in ../shared/corpus/aiter/*.co; do cp "$f" "$WORK/cos/c$i-$(basename "$f")"; done; done
fi
nfiles=$(ls "$WORK/cos" | wc -l)
files=("$WORK"/cos/*)
t_hg=$(median_ms 5 "$HG" check --target gfx942 "$WORK/cos")
t_re=$(median_ms 5 llvm-readelf-16 --notes "${files[@]}")
m_hg=$(peak_kib "$HG" check --target gfx942 "$WORK/cos")
m_re=$(peak_kib llvm-readelf-16 --notes "${files[@]}")
ratio=$(awk -v a="$t_re" -v b="$t_hg" 'BEGIN {printf "%.1f", a / b}')
met=$(awk -v r="$ratio" -v m="$m_hg" 'BEGIN {print (r >= 10 && m <= 65536) ? "met" : "NOT met"}')
row P1 "check over $nfiles code objects: ${t_hg} ms vs readelf ${t_re} ms" "${ratio}x, ${m_hg} KiB" "target >=10x, <=64 MiB: $met (readelf ${m_re} KiB)"

# ---- P2: dlopen of librocsparse with the real runtime, with and without the shim
if [[ -e $ROCSPARSE ]]; then
  base=$(median_ms 11 "$B/bin/dlopen_only" "$ROCSPARSE")
  for t in gfx90a:xnack- gfx942; do
    with=$(median_ms 11 env HIPGUARD_TARGET=$t LD_PRELOAD="$SHIM" "$B/bin/dlopen_only" "$ROCSPARSE")
    r=$(awk -v a="$with" -v b="$base" 'BEGIN {printf "%.3f", a / b}')
    met=$(awk -v r="$r" 'BEGIN {print (r <= 1.10) ? "met" : "NOT met"}')
    row P2 "dlopen librocsparse.so.0, target $t: ${with} ms vs ${base} ms" "${r}x" "target <=1.10x: $met"
  done
fi

# ---- P3: instructions per hipLaunchKernel (no findings) on the simulated runtime
if [[ -x $B/bench/launch_loop ]] && command -v valgrind >/dev/null; then
  instr() {  # total instructions of: launch_loop N, with optional preload
    local n=$1 pre=$2 out=$WORK/cg.$RANDOM
    env LD_LIBRARY_PATH="$SIMRT" HIPGUARD_SIM_GPUS=gfx90a:sramecc-:xnack- HIPGUARD_TARGET=gfx90a:sramecc-:xnack- \
      ${pre:+LD_PRELOAD=$pre} valgrind --tool=callgrind --callgrind-out-file="$out" "$B/bench/launch_loop" "$n" >/dev/null 2>&1
    grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
  }
  N=20000; M=2000
  a=$(instr $N ""); b=$(instr $M ""); c=$(instr $N "$SHIM"); d=$(instr $M "$SHIM")
  per=$(awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v n=$N -v m=$M 'BEGIN {printf "%.1f", ((c - d) - (a - b)) / (n - m)}')
  met=$(awk -v p="$per" 'BEGIN {print (p <= 30) ? "met" : "NOT met"}')
  row P3 "instructions added per hipLaunchKernel (callgrind, simrt)" "$per" "target <=30: $met"
fi

# ---- P4: start-up cost of preloading the shim into /bin/true
t0=$(median_ms 101 /bin/true)
t1=$(median_ms 101 env LD_PRELOAD="$SHIM" /bin/true)
t0e=$(median_ms 101 env /bin/true)
added=$(awk -v a="$t1" -v b="$t0e" 'BEGIN {printf "%.3f", a - b}')
out=$(LD_PRELOAD="$SHIM" /bin/true 2>&1)
met=$(awk -v a="$added" 'BEGIN {print (a <= 1.0) ? "met" : "NOT met"}')
row P4 "LD_PRELOAD=libhipguard.so /bin/true: ${t1} ms vs ${t0e} ms" "+${added} ms" "target <=1 ms: $met; output: '${out}'"

echo
printf '%s\n' "${rows[@]}"
echo
[[ -x $B/bin/hipguard_bench ]] && "$B/bin/hipguard_bench" --benchmark_min_time=0.2 2>/dev/null
exit 0
