#!/usr/bin/env bash
# Whole-process figures P1-P8, R1-R3 (real ROCm 6.4 libraries), R4 (real ROCm 7.2 libraries), R5 (a container image
# of ROCm 7.2's rocBLAS), R6 (the cache of checked files, --cache) and the micro-benchmarks (docs/performance.md).
# Figures, not tests: the script always exits 0 unless something fails to run.
#   scripts/bench.sh            (Release build in build-bench, inputs in a temp dir)
#   BENCH_BASELINE=old/bin/hipguard scripts/bench.sh   (before/after rows of P1, P5, P6 in one run)
#   BENCH_BASELINE_SHIM=old/lib/libhipguard.so          (and of P2, P2s, P3b and R2; R1 takes BENCH_BASELINE)
#   BENCH_ROWS="P3 P7" scripts/bench.sh                  (only these rows)
#   BENCH_ROWS="R1 R2 R3" BENCH_BUILD_DIR=build BENCH_NO_BUILD=1 scripts/bench.sh   (real ROCm 6.4 rows, an existing build)
#   BENCH_ROWS="R2 R4" ...                              (dlopen under the shim: ROCm 6.4 and 7.2 libraries)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${BENCH_BUILD_DIR:-build-bench}
# BENCH_NO_BUILD=1: use $B as it is (built with -DHIPGUARD_BUILD_BENCH=ON), e.g. BENCH_BUILD_DIR=build
[[ -n ${BENCH_NO_BUILD:-} ]] || BUILD_DIR=$B scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DHIPGUARD_BUILD_BENCH=ON -DHIPGUARD_BUILD_TESTS=ON >/dev/null
HG=$ROOT/$B/bin/hipguard
SHIM=$ROOT/$B/lib/libhipguard.so
SIMRT=$ROOT/$B/simrt
ROCSPARSE=/usr/lib/x86_64-linux-gnu/librocsparse.so.0
ROCRAND=/usr/lib/x86_64-linux-gnu/librocrand.so.1
# BENCH_BASELINE=path/to/an/older/hipguard: its P1/P5/P6 rows too ("-" rows), measured in the same run.
BASELINE=${BENCH_BASELINE:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
declare -a rows=()
declare -A V=()  # figures by name, for the before/after ratios
want() { [[ -z ${BENCH_ROWS:-} || " $BENCH_ROWS " == *" $1 "* ]]; }
row() { rows+=("$(printf '%-4s %-66s %-22s %s' "$1" "$2" "$3" "$4")"); }

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
# Median CPU time (user + system) in ms of N runs: what a loaded machine does not distort.
median_cpu_ms() {
  local n=$1; shift
  for ((i = 0; i < n; i++)); do
    { /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null || true; } | tail -1 | awk '{printf "%.0f\n", ($1 + $2) * 1000}'
  done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"

# ---- P1: hipguard check vs llvm-readelf-16 --notes over thousands of code objects
# (every code object of rocSPARSE and rocRAND, extracted here, and the corpus x25)
if want P1; then
mkdir -p "$WORK/cos"
for lib in $ROCSPARSE $ROCRAND; do
  [[ -e $lib ]] || continue
  mkdir -p "$WORK/x" && "$B/bin/extract_code_objects" "$lib" "$WORK/x" >/dev/null
  for f in "$WORK"/x/*.co; do mv "$f" "$WORK/cos/$(basename "$lib" | cut -d. -f1)-$(basename "$f")"; done
done
if [[ -d ../shared/corpus/aiter ]]; then
  for i in $(seq 1 25); do for f in ../shared/corpus/aiter/*.co; do cp "$f" "$WORK/cos/c$i-$(basename "$f")"; done; done
fi
nfiles=$(ls "$WORK/cos" | wc -l)
files=("$WORK"/cos/*)
t_re=$(median_ms 3 llvm-readelf-16 --notes "${files[@]}")
c_re=$(median_cpu_ms 3 llvm-readelf-16 --notes "${files[@]}")
m_re=$(peak_kib llvm-readelf-16 --notes "${files[@]}")
# Instructions per file (callgrind, one thread: the count does not depend on
# threads or load) and system calls per file (strace -f).
instr_per_file() {
  command -v valgrind >/dev/null || { echo "-"; return; }
  local out=$WORK/cg.p1.$RANDOM
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" check --target gfx942 "$WORK/cos" >/dev/null 2>&1 || true
  grep -E '^(summary|totals):' "$out" | head -1 | awk -v n="$nfiles" '{printf "%.0f", $2 / n}'
}
syscalls_per_file() {
  command -v strace >/dev/null || { echo "-"; return; }
  strace -f -c -o "$WORK/st" "$1" check --target gfx942 "$WORK/cos" >/dev/null 2>&1 || true
  awk -v n="$nfiles" '$NF == "total" {printf "%.1f", $(NF-2) / n}' "$WORK/st"
}
p1() {  # p1 LABEL HIPGUARD: one row
  local t c m ratio cratio met ipf spf
  t=$(median_ms 5 "$2" check --target gfx942 "$WORK/cos")
  c=$(median_cpu_ms 5 "$2" check --target gfx942 "$WORK/cos")
  cratio=$(awk -v a="$c_re" -v b="$c" 'BEGIN {printf "%.1f", a / b}')
  m=$(peak_kib "$2" check --target gfx942 "$WORK/cos")
  ratio=$(awk -v a="$t_re" -v b="$t" 'BEGIN {printf "%.1f", a / b}')
  ipf=$(instr_per_file "$2")
  spf=$(syscalls_per_file "$2")
  V[P1$1.t]=$t V[P1$1.c]=$c V[P1$1.i]=$ipf V[P1$1.s]=$spf
  met=$(awk -v r="$ratio" -v m="$m" -v i="$ipf" 'BEGIN {print (r >= 15 && m <= 65536 && i <= 100000) ? "met" : "NOT met"}')
  row "P1$1" "check over $nfiles code objects: ${t} ms vs readelf ${t_re} ms" "${ratio}x, ${m} KiB" \
    "CPU ${c} vs ${c_re} ms: ${cratio}x; ${ipf} instr/file, ${spf} syscalls/file; target >=15x, <=100k instr/file: $met (readelf ${m_re} KiB)"
}
[[ -n $BASELINE ]] && p1 "-" "$BASELINE"
p1 "" "$HG"
# The parallel speed-up of the offline check: one file at a time vs one per hardware thread
t1=$(median_ms 5 "$HG" check --jobs 1 --target gfx942 "$WORK/cos")
tn=$(median_ms 5 "$HG" check --target gfx942 "$WORK/cos")
row P1j "check --jobs 1 vs --jobs $(nproc) (one per hardware thread): ${t1} ms vs ${tn} ms" \
  "$(awk -v a="$t1" -v b="$tn" 'BEGIN {printf "%.2f", a / b}')x" "speed-up on this machine (quiet when near $(nproc)x)"
fi

# ---- P5/P6: peak memory and time on rocSPARSE (111 fat binaries, 1.3 GB)
if want P5 && [[ -e $ROCSPARSE ]]; then
  p5() {  # p5 LABEL HIPGUARD
    local t m met
    t=$(median_ms 3 "$2" inspect --json "$ROCSPARSE")
    m=$(peak_kib "$2" inspect --json "$ROCSPARSE")
    V[P5$1.t]=$t V[P5$1.m]=$m
    met=$(awk -v t="$t" -v m="$m" 'BEGIN {print (t <= 1000 && m < 204800) ? "met" : "NOT met"}')
    row "P5$1" "inspect --json librocsparse.so.0: ${t} ms" "${m} KiB" "target <200 MiB, <=1 s: $met"
  }
  p6() {
    local t3=(--target gfx90a --target gfx942 --target gfx1030) m mj met
    m=$(peak_kib "$2" check "${t3[@]}" "$ROCSPARSE")
    mj=$(peak_kib "$2" check --json "${t3[@]}" "$ROCSPARSE")
    V[P6$1.m]=$m V[P6$1.mj]=$mj
    met=$(awk -v m="$m" 'BEGIN {print (m < 102400) ? "met" : "NOT met"}')
    row "P6$1" "check gfx90a+gfx942+gfx1030 librocsparse.so.0 (table; --json)" "${m} KiB; ${mj} KiB" "target <100 MiB: $met"
  }
  [[ -n $BASELINE ]] && p5 "-" "$BASELINE"
  p5 "" "$HG"
  [[ -n $BASELINE ]] && p6 "-" "$BASELINE"
  p6 "" "$HG"
fi

# ---- P2: dlopen of librocsparse with the real runtime, with and without the shim
if want P2 && [[ -e $ROCSPARSE ]]; then
  base=$(median_ms 11 "$B/bin/dlopen_only" "$ROCSPARSE")
  for t in gfx90a:xnack- gfx942; do
    with=$(median_ms 11 env HIPGUARD_TARGET=$t LD_PRELOAD="$SHIM" "$B/bin/dlopen_only" "$ROCSPARSE")
    r=$(awk -v a="$with" -v b="$base" 'BEGIN {printf "%.3f", a / b}')
    met=$(awk -v r="$r" 'BEGIN {print (r <= 1.10) ? "met" : "NOT met"}')
    row P2 "dlopen librocsparse.so.0, target $t: ${with} ms vs ${base} ms" "${r}x" "target <=1.10x: $met"
  done
fi

# ---- P2/P2s by instruction count (callgrind), and strict start-up's wall time and
# peak RSS; with BENCH_BASELINE_SHIM the same rows of that shim ("-"), in this run
if want P2 && [[ -e $ROCSPARSE ]] && command -v valgrind >/dev/null; then
  dl_instr() {  # instructions of dlopen_only librocsparse, with the settings given
    local out=$WORK/cg.$RANDOM
    env "$@" valgrind --tool=callgrind --callgrind-out-file="$out" "$B/bin/dlopen_only" "$ROCSPARSE" >/dev/null 2>&1
    grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
  }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
  i0=$(dl_instr)
  w0=$(median_ms 11 "$B/bin/dlopen_only" "$ROCSPARSE")
  m0=$(peak_kib "$B/bin/dlopen_only" "$ROCSPARSE")
  for shim in "$SHIM" ${BENCH_BASELINE_SHIM:-}; do
    tag=$([[ $shim == "$SHIM" ]] && echo "" || echo "-")
    for t in gfx90a:xnack- gfx942; do
      i=$(dl_instr HIPGUARD_TARGET=$t LD_PRELOAD="$shim")
      r=$(ratio "$i" "$i0")
      row "P2$tag" "warn, $t: instructions $i vs $i0 (callgrind)" "${r}x" \
        "target <=1.10x: $(awk -v r="$r" 'BEGIN {print (r <= 1.10) ? "met" : "NOT met"}')"
    done
    strict=(HIPGUARD_MODE=strict HIPGUARD_TARGET=gfx90a:xnack- LD_PRELOAD="$shim")
    i=$(dl_instr "${strict[@]}")
    r=$(ratio "$i" "$i0")
    row "P2s$tag" "strict, gfx90a:xnack-: instructions $i vs $i0 (callgrind)" "${r}x" \
      "target <=3x: $(awk -v r="$r" 'BEGIN {print (r <= 3) ? "met" : "NOT met"}')"
    w=$(median_ms 11 env "${strict[@]}" "$B/bin/dlopen_only" "$ROCSPARSE")
    r=$(ratio "$w" "$w0")
    row "P2s$tag" "strict, gfx90a:xnack-: wall ${w} ms vs ${w0} ms (median of 11)" "${r}x" \
      "target <=2x: $(awk -v r="$r" 'BEGIN {print (r <= 2) ? "met" : "NOT met"}')"
    m=$(peak_kib env "${strict[@]}" "$B/bin/dlopen_only" "$ROCSPARSE")
    d=$(awk -v a="$m" -v b="$m0" 'BEGIN {printf "%.1f", (a - b) / 1024}')
    row "P2s$tag" "strict, gfx90a:xnack-: peak RSS ${m} KiB vs ${m0} KiB" "+${d} MiB" \
      "target <=+16 MiB: $(awk -v d="$d" 'BEGIN {print (d <= 16) ? "met" : "NOT met"}')"
  done
fi

# ---- P3: instructions per hipLaunchKernel (no findings). P3/P3b on the simulated
# runtime; P3n on the do-nothing runtime (bench/null_runtime.cpp), where the
# runtime's own cost per launch is a few instructions, so the shim's stands alone.
# P3b/P3n with a library loaded: fat binaries registered and never launched from
# (the launch decision is per kernel: their pending checks must not slow this one)
NULLRT=$ROOT/$B/bench/nullrt
if want P3 && [[ -x $B/bench/launch_loop ]] && command -v valgrind >/dev/null; then
  instr() {  # total instructions of: launch_loop N LIB, with optional preload, on runtime RT
    local n=$1 pre=$2 lib=$3 rt=${4:-$SIMRT} out=$WORK/cg.$RANDOM
    env LD_LIBRARY_PATH="$rt" HIPGUARD_SIM_GPUS=gfx90a:sramecc-:xnack- HIPGUARD_TARGET=gfx90a:sramecc-:xnack- \
      ${pre:+LD_PRELOAD=$pre} valgrind --tool=callgrind --callgrind-out-file="$out" "$B/bench/launch_loop" "$n" "$lib" >/dev/null 2>&1
    grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
  }
  per_launch() {  # instructions the shim adds per launch: (I(N) - I(M)) with - without, / (N - M)
    local shim=$1 lib=$2 rt=${3:-$SIMRT} N=20000 M=2000
    local a b c d
    a=$(instr $N "" "$lib" "$rt"); b=$(instr $M "" "$lib" "$rt"); c=$(instr $N "$shim" "$lib" "$rt"); d=$(instr $M "$shim" "$lib" "$rt")
    awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v n=$N -v m=$M 'BEGIN {printf "%.1f", ((c - d) - (a - b)) / (n - m)}'
  }
  per=$(per_launch "$SHIM" -)
  met=$(awk -v p="$per" 'BEGIN {print (p <= 30) ? "met" : "NOT met"}')
  row P3 "instructions added per hipLaunchKernel (callgrind, simrt)" "$per" "target <=30: $met"
  if [[ -e $B/bench/libidle_lib.so ]]; then
    per=$(per_launch "$SHIM" "$B/bench/libidle_lib.so")
    met=$(awk -v p="$per" 'BEGIN {print (p <= 30) ? "met" : "NOT met"}')
    row P3b "the same, another fat binary registered, never launched from" "$per" "target <=30: $met"
    V[P3b.i]=$per
    if [[ -n ${BENCH_BASELINE_SHIM:-} ]]; then V[P3b-.i]=$(per_launch "$BENCH_BASELINE_SHIM" "$B/bench/libidle_lib.so"); fi
  fi
  if [[ -e $NULLRT/libamdhip64.so.5 ]]; then
    for lib in - "$B/bench/libidle_lib.so" $ROCSPARSE; do
      [[ $lib == - || -e $lib ]] || continue
      own=$(awk -v a="$(instr 20000 "" "$lib" "$NULLRT")" -v b="$(instr 2000 "" "$lib" "$NULLRT")" 'BEGIN {printf "%.1f", (a - b) / 18000}')
      per=$(per_launch "$SHIM" "$lib" "$NULLRT")
      met=$(awk -v p="$per" 'BEGIN {print (p <= 30) ? "met" : "NOT met"}')
      row P3n "the same on the do-nothing runtime, $([[ $lib == - ]] && echo "no library" || echo "$(basename "$lib") loaded")" \
        "$per" "loop + runtime alone: $own per launch; target <=30: $met"
    done
  fi
fi

# ---- P7: launch loop on 1 and 4 threads, a library loaded, on the do-nothing
# runtime (the shim's cost is not hidden behind a runtime's): wall time of the
# launch loops alone (launch_loop prints it; start-up and registration are P2's),
# 200 000 launches per thread, with vs without the shim, best of 5
if want P7 && [[ -x $B/bench/launch_loop && -e $NULLRT/libamdhip64.so.5 ]]; then
  loop_ms() {  # best loop time of 5 runs
    for ((i = 0; i < 5; i++)); do "$@" 2>/dev/null | sed -n 's/.*loop \([0-9.]*\) ms.*/\1/p'; done | sort -n | head -1
  }
  for lib in "$B/bench/libidle_lib.so" $ROCSPARSE; do
    [[ -e $lib ]] || continue
    for t in 1 4; do
      run() { env LD_LIBRARY_PATH="$NULLRT" HIPGUARD_TARGET=gfx90a:sramecc-:xnack- "$@" "$B/bench/launch_loop" 200000 "$lib" $t; }
      w0=$(loop_ms run); w1=$(loop_ms run LD_PRELOAD="$SHIM")
      r=$(awk -v a="$w1" -v b="$w0" 'BEGIN {printf "%.2f", a / b}')
      met=$(awk -v r="$r" 'BEGIN {print (r <= 1.05) ? "met" : "NOT met"}')
      row P7 "launch loop, $t thread(s), $(basename "$lib") loaded: ${w1} ms vs ${w0} ms" "${r}x" "target <=1.05x: $met"
    done
  done
fi

# ---- P8: what 20 000 module load -> hipModuleGetFunction -> launch -> unload
# cycles keep (bench/module_cycles.hip, simrt): VmRSS after the last cycle minus
# after the first, with the shim (and a report) vs without.
if want P8 && [[ -x $B/bench/module_cycles && -e $B/bench/cycle_kernel.co ]]; then
  kept_kib() {  # VmRSS growth over the cycles, KiB; empty when a call failed
    { env LD_LIBRARY_PATH="$SIMRT" HIPGUARD_SIM_GPUS=gfx90a:sramecc-:xnack- HIPGUARD_TARGET=gfx90a:sramecc-:xnack- "$@" \
        "$B/bench/module_cycles" "$B/bench/cycle_kernel.co" 20000 2>/dev/null || true; } |
      sed -n 's/^20000 cycles, 0 failed calls, VmRSS \([0-9]*\) KiB after the first, \([0-9]*\) KiB after the last.*/\2 \1/p' |
      awk '{print $1 - $2}'
  }
  k0=$(kept_kib); k1=$(kept_kib LD_PRELOAD="$SHIM" HIPGUARD_REPORT="$WORK/p8-report.json")
  if [[ -n $k0 && -n $k1 ]]; then
    d=$(printf '%+d' $((k1 - k0)))
    met=$(awk -v d="$d" 'BEGIN {print (d <= 512) ? "met" : "NOT met"}')
    row P8 "20 000 module load/launch/unload cycles keep: $k1 KiB vs $k0 KiB" "$d KiB" "target <=+512 KiB: $met"
  else
    row P8 "20 000 module load/launch/unload cycles" "-" "a load, lookup, launch or unload failed"
  fi
fi

# ---- P4: start-up cost of preloading the shim into /bin/true
if want P4; then
t0=$(median_ms 101 /bin/true)
t1=$(median_ms 101 env LD_PRELOAD="$SHIM" /bin/true)
t0e=$(median_ms 101 env /bin/true)
added=$(awk -v a="$t1" -v b="$t0e" 'BEGIN {printf "%.3f", a - b}')
out=$(LD_PRELOAD="$SHIM" /bin/true 2>&1)
met=$(awk -v a="$added" 'BEGIN {print (a <= 1.0) ? "met" : "NOT met"}')
row P4 "LD_PRELOAD=libhipguard.so /bin/true: ${t1} ms vs ${t0e} ms" "+${added} ms" "target <=1 ms: $met; output: '${out}'"
fi

# ---- the helpers of R2 and R4
RLIB=usr/lib/x86_64-linux-gnu
# R2 (R4 below: ROCm 7.2): dlopen of each library with the real HIP runtime of a root, without the
# shim, warn, strict: wall of the host process (timed inside the root; the variants alternate,
# BENCH_R2_RUNS rounds, median: the ratio holds on a machine whose speed drifts), and the
# host's VmHWM, RssFile, RssAnon after the dlopen (bench/dlopen_rss.c; memory is not load-sensitive)
binds=(--bind "$ROOT/$B")
[[ -n ${BENCH_BASELINE_SHIM:-} ]] && binds+=(--bind "$(dirname "$(realpath "$BENCH_BASELINE_SHIM")")")
STACK=6.4
inroot() { scripts/in-rocm-root.sh --stack "$STACK" "${binds[@]}" "$@"; }
# r2_runs LIB NAME=K=V,K=V ...: a line per variant, "NAME wall_us dlopen_ms VmHWM RssAnon RssFile" (KiB)
r2_runs() {
  local lib=$1; shift
  inroot -- /bin/bash -c '
    bin=$1 lib=$2 n=$3; shift 3
    declare -A t; for v in "$@"; do t[${v%%=*}]=""; done
    for ((i = 0; i < n; i++)); do for v in "$@"; do
      IFS=, read -ra e <<< "${v#*=}"
      s=$(date +%s%N); env "${e[@]}" "$bin" "$lib" > /tmp/hipguard-r2.$$ 2>/dev/null
      t[${v%%=*}]+="$(( ($(date +%s%N) - s) / 1000 )) "
      [[ $i == 0 ]] && head -1 /tmp/hipguard-r2.$$ | sed "s/[a-zA-Z_]*=//g" > "/tmp/hipguard-r2.$$.${v%%=*}"
    done; done
    for v in "$@"; do name=${v%%=*}
      echo "$name $(echo ${t[$name]} | tr " " "\n" | sort -n | awk "{a[NR]=\$1} END {print a[int((NR+1)/2)]}") $(cat "/tmp/hipguard-r2.$$.$name")"
      rm -f "/tmp/hipguard-r2.$$.$name"
    done; rm -f /tmp/hipguard-r2.$$' _ "$ROOT/$B/bin/dlopen_rss" "/$RLIB/$lib" "${BENCH_R2_RUNS:-21}" "$@"
}
# dlopen_rows ROW ROOT TARGET WARN_MAX STRICT_MAX MIB_MAX LIB...: a row per library and mode
dlopen_rows() {
  local rowname=$1 root=$2 target=$3 warn_max=$4 strict_max=$5 mib_max=$6 lib; shift 6
  for lib in "$@"; do
    [[ -e $root/$RLIB/$lib ]] || { echo "$rowname: no $lib in $root"; continue; }
    cat "$root/$RLIB/$lib" >/dev/null  # in the page cache
    variants=(none=HIPGUARD_R2=none)
    for mode in warn strict; do
      [[ -n ${BENCH_BASELINE_SHIM:-} ]] &&
        variants+=("$mode-=LD_PRELOAD=$BENCH_BASELINE_SHIM,HIPGUARD_TARGET=$target,HIPGUARD_MODE=$mode")
      variants+=("$mode=LD_PRELOAD=$SHIM,HIPGUARD_TARGET=$target,HIPGUARD_MODE=$mode")
    done
    declare -A res=()
    while read -r name rest; do res[$name]=$rest; done < <(r2_runs "$lib" "${variants[@]}")
    read -r w0 d0 h0 a0 f0 <<< "${res[none]}"
    for v in "${variants[@]:1}"; do
      name=${v%%=*} mode=${name%-} tag=$([[ $name == *- ]] && echo "-" || echo "")
      read -r w d h a f <<< "${res[$name]}"
      r=$(awk -v a="$w" -v b="$w0" 'BEGIN {printf "%.2f", a / b}')
      dh=$(awk -v a="$h" -v b="$h0" 'BEGIN {printf "%.1f", (a - b) / 1024}')
      df=$(awk -v a="$f" -v b="$f0" 'BEGIN {printf "%.1f", (a - b) / 1024}')
      da=$(awk -v a="$a" -v b="$a0" 'BEGIN {printf "%.1f", (a - b) / 1024}')
      max=$([[ $mode == warn ]] && echo "$warn_max" || echo "$strict_max")
      met=$(awk -v r="$r" -v d="$dh" -v x="$max" -v m="$mib_max" 'BEGIN {print (r <= x && d <= m) ? "met" : "NOT met"}')
      row "$rowname$tag" "dlopen $(basename "$lib"), $mode: $((w / 1000)) ms vs $((w0 / 1000)) ms (dlopen ${d} vs ${d0} ms; median of ${BENCH_R2_RUNS:-21} alternating)" \
        "${r}x, +${dh} MiB" "dVmHWM +${dh}, dRssFile +${df}, dRssAnon +${da} MiB (VmHWM none ${h0} KiB); target <=${max}x, <=+${mib_max} MiB: $met"
    done
  done
}

# ---- R1-R3: real ROCm 6.4 libraries, in the ROCm root (scripts/rocm-root.sh; rows skipped without it)
RROOT=$(scripts/rocm-root.sh --path)
STACK=6.4
if { want R1 || want R2 || want R3; } && [[ ! -f $RROOT/.hipguard-root ]]; then
  echo "R1-R3 skipped: no ROCm root at $RROOT (scripts/rocm-root.sh builds it)"
elif want R1 || want R2 || want R3; then
  # R1: check of rocBLAS 6.4's Tensile directory (970 code objects, 2.9 GB) vs cat of the
  # same files, page cache warm (median of 3 of each)
  TL=$RROOT/$RLIB/rocblas/4.4.1/library
  if want R1 && [[ -d $TL ]]; then
    tfiles=("$TL"/*)
    ncos=$(ls "$TL" | grep -cE '\.(co|hsaco)$')
    cat "${tfiles[@]}" >/dev/null  # warm
    tc=$(median_ms 3 cat "${tfiles[@]}")
    for tgt in "" "--target gfx90a"; do for hg in $BASELINE "$HG"; do
      tag=$([[ $hg == "$HG" ]] && echo "" || echo "-")
      t=$(median_ms 3 "$hg" check $tgt "$TL")
      c=$(median_cpu_ms 3 "$hg" check $tgt "$TL")
      m=$(peak_kib "$hg" check $tgt "$TL")
      r=$(awk -v a="$t" -v b="$tc" 'BEGIN {printf "%.2f", a / b}')
      met=$(awk -v r="$r" -v m="$m" 'BEGIN {print (r <= 1.5 && m <= 65536) ? "met" : "NOT met"}')
      row "R1$tag" "check ${tgt:-(no target)} rocBLAS library/ (${#tfiles[@]} files, $ncos code objects): ${t} ms vs cat ${tc} ms" "${r}x, ${m} KiB" \
        "CPU ${c} ms; target <=1.5x, <=64 MiB: $met"
    done; done
  fi
  if want R2 && [[ -x $B/bin/dlopen_rss ]]; then
    dlopen_rows R2 "$RROOT" gfx90a 1.25 1.25 16 librocblas.so.4 librocsparse.so.1 librocsolver.so.0 \
      ggml/backends0/libggml-hip.so
  fi
  # R3: llama-cli --list-devices (no GPU here: the runtime finds none) with and without the shim
  if want R3 && [[ -x $RROOT/usr/bin/llama-cli ]]; then
    r3() { inroot "$@" -- /bin/bash -c 't=(); for i in 1 2 3; do s=$(date +%s%N); llama-cli --list-devices >/dev/null 2>&1; t+=($(( ($(date +%s%N) - s) / 1000 ))); done; printf "%s\n" "${t[@]}" | sort -n | sed -n 2p'; }
    l0=$(r3)
    for mode in warn strict; do
      l=$(r3 --env LD_PRELOAD="$SHIM" --env HIPGUARD_TARGET=gfx90a --env HIPGUARD_MODE=$mode)
      row R3 "llama-cli --list-devices, $mode: $((l / 1000)) ms vs $((l0 / 1000)) ms (median of 3)" \
        "$(awk -v a="$l" -v b="$l0" 'BEGIN {printf "%.2f", a / b}')x" "start-up with vs without the shim"
    done
  fi
fi

# ---- R4: the same dlopen rows with the real HIP 7.2 runtime in the ROCm 7.2 root (scripts/rocm-root.sh
# --stack 7.2), for MI300X: rocBLAS 5 (65 fat binaries, 14 processors each), hipBLASLt, MIOpen, RCCL
R72ROOT=$(scripts/rocm-root.sh --stack 7.2 --path)
if want R4 && [[ ! -f $R72ROOT/.hipguard-root ]]; then
  echo "R4 skipped: no ROCm 7.2 root at $R72ROOT (scripts/rocm-root.sh --stack 7.2 builds it)"
elif want R4 && [[ -x $B/bin/dlopen_rss ]]; then
  STACK=7.2
  dlopen_rows R4 "$R72ROOT" mi300x 1.10 1.20 8 librocblas.so.5 libhipblaslt.so.1 libMIOpen.so.1 librccl.so.1
fi
# R4 too: `hipguard check` of RCCL, one 1.19 GB zstd bundle (128 MiB window; gfx942's 196 MB entry ends
# 1.0 GB in), for MI300X and for which GPUs: peak RSS against the 256 MiB memory goal
if want R4 && [[ -f $R72ROOT/.hipguard-root ]]; then
  RCCL=$R72ROOT/usr/lib/x86_64-linux-gnu/librccl.so.1.0
  for args in "--target mi300x" ""; do
    t=$(median_ms 3 "$HG" check $args "$RCCL")
    m=$(peak_kib "$HG" check $args "$RCCL")
    row R4 "check librccl.so.1.0 ${args:-(which GPUs)}: ${t} ms" "${m} KiB" \
      "<=256 MiB: $([[ $m =~ ^[0-9]+$ ]] && ((m <= 262144)) && echo met || echo NOT met)"
  done
fi

# ---- R5: a container image of ROCm 7.2's rocBLAS 5 (librocblas.so.5 and its Tensile directory, 0.9 GB
# in one gzip layer, made with umoci) checked for MI300X vs decompressing its layer to /dev/null; the
# same image as an uncompressed docker-archive (skopeo) vs checking its files unpacked (median of 3,
# page cache warm); and which GPUs it runs on (no --target)
if want R5 && [[ -f $R72ROOT/.hipguard-root ]] && command -v umoci >/dev/null && command -v skopeo >/dev/null; then
  IMG=$(mktemp -d)
  umoci init --layout "$IMG/oci" && umoci new --image "$IMG/oci:rb"
  umoci unpack $([[ $EUID == 0 ]] || echo --rootless) --image "$IMG/oci:rb" "$IMG/b" >/dev/null
  mkdir -p "$IMG/b/rootfs/usr/lib/x86_64-linux-gnu"
  cp -a "$R72ROOT"/usr/lib/x86_64-linux-gnu/librocblas.so* "$R72ROOT/usr/lib/x86_64-linux-gnu/rocblas" \
    "$IMG/b/rootfs/usr/lib/x86_64-linux-gnu/"
  umoci repack --image "$IMG/oci:rb" "$IMG/b"
  skopeo copy -q "oci:$IMG/oci:rb" "docker-archive:$IMG/rb.tar:hg/rb:1"
  layer=$(ls -S "$IMG"/oci/blobs/sha256/* | head -1)
  cat "$layer" "$IMG/rb.tar" >/dev/null  # warm
  tz=$(median_ms 3 sh -c "zcat '$layer' >/dev/null")
  tdir=$(median_ms 3 "$HG" check --no-deps --target mi300x "$IMG/b/rootfs")
  for input in oci rb.tar; do
    t=$(median_ms 3 "$HG" check --target mi300x "$IMG/$input")
    m=$(peak_kib "$HG" check --target mi300x "$IMG/$input")
    if [[ $input == oci ]]; then
      base=$tz what="OCI layout, gzip layer: ${t} ms vs zcat ${tz} ms"
    else
      base=$tdir what="docker-archive, plain: ${t} ms vs its files unpacked ${tdir} ms"
    fi
    r=$(awk -v a="$t" -v b="$base" 'BEGIN {printf "%.2f", a / b}')
    met=$(awk -v r="$r" -v m="$m" 'BEGIN {print (r <= 1.3 && m <= 262144) ? "met" : "NOT met"}')
    row R5 "check rocBLAS 5 image, $what" "${r}x, ${m} KiB" "target <=1.3x, <=256 MiB: $met"
  done
  # Which GPUs (no --target): the structural check and one check per row of the product table
  tw=$(median_ms 1 "$HG" check "$IMG/oci")
  row R5 "which GPUs, rocBLAS 5 image (OCI, gzip): ${tw} ms" "$(awk -v a="$tw" -v b="$tz" 'BEGIN {printf "%.1f", a / b}')x zcat" "-"
  rm -rf "$IMG"
elif want R5; then
  echo "R5 skipped: needs the ROCm 7.2 root, umoci and skopeo (scripts/deps.sh, scripts/rocm-root.sh --stack 7.2)"
fi

# ---- R6: the cache of checked files (--cache DIR) on ROCm 7.2's rocBLAS 5 Tensile directory (1,900 files):
# the first check with an empty cache and a re-check (every file kept) against a check without it, for
# MI300X and for which GPUs (median of 3, page cache warm; the first check starts from an empty DIR each run)
if want R6 && [[ -f $R72ROOT/.hipguard-root ]]; then
  LIB=$R72ROOT/usr/lib/x86_64-linux-gnu/rocblas/5/library
  for args in "--target mi300x" ""; do
    t0=$(median_ms 3 "$HG" check $args "$LIB")
    t1=$(median_ms 3 sh -c "rm -rf '$WORK/cache' && '$HG' check $args --cache '$WORK/cache' '$LIB'")
    t2=$(median_ms 3 "$HG" check $args --cache "$WORK/cache" "$LIB")
    kib=$(du -sk "$WORK/cache" | cut -f1)
    rm -rf "$WORK/cache"
    row R6 "rocBLAS 5 library ${args:-(which GPUs)}: ${t0} ms; cache: first, again" \
      "$(awk -v a="$t1" -v b="$t2" -v c="$t0" 'BEGIN {printf "%.2fx, %.2fx", a / c, b / c}')" "${kib} KiB kept"
  done
elif want R6; then
  echo "R6 skipped: needs the ROCm 7.2 root (scripts/rocm-root.sh --stack 7.2)"
fi

echo
printf '%s\n' "${rows[@]}"
if [[ -n $BASELINE ]]; then
  # before / after, each figure measured in this run
  echo
  printf '%-44s %14s %14s %8s\n' "ratio (before / after)" before after ratio
  r() {
    local b=${2/./-.}
    [[ -n ${V[$b]:-} && -n ${V[$2]:-} && ${V[$2]} != - ]] || return 0
    printf '%-44s %14s %14s %7sx\n' "$1" "${V[$b]}" "${V[$2]}" "$(awk -v a="${V[$b]}" -v b="${V[$2]}" 'BEGIN {printf "%.1f", a / b}')"
  }
  r "P1 check wall (ms)" P1.t; r "P1 check CPU, user + system (ms)" P1.c; r "P1 instructions per file" P1.i; r "P1 system calls per file" P1.s
  r "P5 inspect --json rocSPARSE wall (ms)" P5.t; r "P5 inspect --json rocSPARSE peak RSS (KiB)" P5.m
  r "P6 check 3 targets rocSPARSE peak RSS (KiB)" P6.m; r "P6 check --json 3 targets peak RSS (KiB)" P6.mj
  r "P3b instructions per launch, idle library" P3b.i
fi
echo
want micro && [[ -x $B/bin/hipguard_bench ]] && "$B/bin/hipguard_bench" --benchmark_min_time=0.2 2>/dev/null
exit 0
