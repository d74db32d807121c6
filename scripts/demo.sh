#!/usr/bin/env bash
# The demo: installs what is missing, builds only what the demo runs (the CLI and the shim), and
# runs hipguard on real input made here from Debian's packages, nothing from outside the clone:
#   - ROCm 7.2 (the root scripts/rocm-root.sh --stack 7.2 builds or reuses): rocBLAS 5 and its bench
#     program, a code object and a program built by its hipcc 7.2.4, the program run under the shim
#     with the real HIP 7.2 runtime, and a container image of that program and rocBLAS's kernels;
#   - Debian 12: a program built by hipcc 5.2 under the shim with libamdhip64.so.5, and rocSPARSE.
# Without the 7.2 root (no access to Debian's archive) its part is left out with one line saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
B=${BUILD_DIR:-build}
took() { echo "   ($(($SECONDS - $1)) s)"; }

t=$SECONDS
echo "== demo: installing what is missing (scripts/deps.sh; apt, the first time a few minutes)"
scripts/deps.sh
took "$t"
t=$SECONDS
echo "== demo: the ROCm 7.2 root (scripts/rocm-root.sh --stack 7.2; the first time about 6 minutes, 6 GB)"
root=
if scripts/rocm-root.sh --stack 7.2; then root=$(scripts/rocm-root.sh --stack 7.2 --path); took "$t"; else
  echo "demo: no ROCm 7.2 root here: its part of the demo is left out"
fi
t=$SECONDS
echo "== demo: building the CLI and the shim (scripts/build.sh; the first time several minutes on 2 cores)"
BUILD_TARGETS="hipguard hipguard_shim app_vector_add_multi" scripts/build.sh
took "$t"
BA=$(realpath "$B")  # the build tree's absolute path (BUILD_DIR may be relative or absolute)
HG=$BA/bin/hipguard
SHIM=$BA/lib/libhipguard.so

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Prints the lines of "$2" that match $1, at most $3 of them. No pipe into head:
# under pipefail a reader that stops early kills the writer with SIGPIPE (exit 141).
matching() { grep -E -m "${3:-1000}" -e "$1" <<<"$2" || true; }

if [[ -n $root ]]; then
  # Inputs the root's hipcc 7.2.4 builds, in the build tree (the root sees it at the same path).
  D=$BA/demo
  mkdir -p "$D"
  in72() { scripts/in-rocm-root.sh --stack 7.2 --bind "$PWD" --bind "$BA" "$@"; }
  # hipcc in the root; its output only when it fails (clang warns of an unused --hip-link otherwise).
  hipcc72() {
    local out
    if ! out=$(in72 -- hipcc -O2 "$@" 2>&1); then printf '%s\n' "$out"; echo "demo: hipcc failed"; exit 1; fi
  }
  t=$SECONDS
  echo "== demo: hipcc 7.2.4 builds a code object for MI355X and a program for gfx90a and gfx950"
  hipcc72 --offload-arch=gfx950 --cuda-device-only --no-gpu-bundle-output -o "$D/lds_mi355x.co" tests/rocm/apps/lds_mi355x.hip
  hipcc72 --offload-arch=gfx90a --offload-arch=gfx950 -o "$D/saxpy" tests/rocm/apps/saxpy.hip
  took "$t"

  bench=$root/usr/libexec/rocm/librocblas5-bench/rocblas-bench
  step "Will ROCm 7.2's rocBLAS run on MI300X, MI355X and a Radeon RX 7900 (gfx1100)? Its bench program, with what it loads"
  echo "\$ hipguard check --target mi300x --target mi355x --target gfx1100 --sysroot ROOT ROOT${bench#"$root"}"
  out=$("$HG" check --target mi300x --target mi355x --target gfx1100 --sysroot "$root" "$bench" || true)
  printf '%s\n' "${out//"$root"/ROOT}" | cut -c1-240

  step "A kernel tuned for MI355X (96 KiB of LDS), loaded by hand on an MI300X"
  echo "\$ hipguard check --target mi300x --target mi355x lds_mi355x.co"
  out=$("$HG" check --target mi300x --target mi355x "$D/lds_mi355x.co" || true)
  matching '^(error|warning)|can run' "${out//"$D/"/}" | cut -c1-400

  step "A program built for gfx90a and gfx950, run on an MI300X with the real HIP 7.2 runtime (warn mode)"
  echo "\$ HIPGUARD_TARGET=mi300x LD_PRELOAD=libhipguard.so ./saxpy"
  in72 --env HIPGUARD_TARGET=mi300x --env LD_PRELOAD="$SHIM" -- "$D/saxpy" 2>&1 || true

  step "The same in strict mode: stopped before main"
  echo "\$ hipguard run --target mi300x --strict -- ./saxpy"
  status=0
  in72 -- "$HG" run --target mi300x --strict -- "$D/saxpy" 2>&1 || status=$?
  echo "exit status: $status"

  # An OCI image made here with umoci: saxpy and rocBLAS's Kernels.so files for gfx90a, gfx942 and
  # gfx1100 in a first layer; a second layer deletes the gfx942 ones (whiteouts), as a Dockerfile's RUN rm.
  step "A container image: saxpy and rocBLAS's kernels, a later layer deleting the gfx942 ones. Which GPUs does it run on?"
  img=$D/image bundle=$D/bundle
  rm -rf "$img" "$bundle"
  rootless=$([[ $EUID == 0 ]] || echo --rootless)
  umoci init --layout "$img" && umoci new --image "$img:app"
  umoci unpack $rootless --image "$img:app" "$bundle" >/dev/null
  lib=$bundle/rootfs/usr/lib/x86_64-linux-gnu/rocblas/5/library
  mkdir -p "$lib" "$bundle/rootfs/usr/bin"
  cp "$D/saxpy" "$bundle/rootfs/usr/bin/"
  cp "$root"/usr/lib/x86_64-linux-gnu/rocblas/5/library/Kernels.so-000-gfx{90a,942,1100}*.hsaco "$lib/"
  umoci repack --image "$img:app" "$bundle" && rm -rf "$bundle"
  umoci unpack $rootless --image "$img:app" "$bundle" >/dev/null
  rm "$lib"/*gfx942*
  umoci repack --image "$img:app" "$bundle" && rm -rf "$bundle"
  echo "\$ hipguard check image/       # an OCI layout (skopeo copy docker://... oci:image); no --target: which GPUs"
  out=$("$HG" check "$img" || true)
  matching '^which GPUs|^  (RESULT|runs|does not run) ' "${out//"$D/"/}" | cut -c1-220
  echo "\$ hipguard check --target mi300x image/"
  out=$("$HG" check --target mi300x "$img" || true)
  matching '^(error|warning)|can run' "${out//"$D/"/}" | cut -c1-300
fi

APP=$BA/tests/apps/vector_add_multi
step "Debian 12's hipcc 5.2: a program built for gfx90a:xnack-, gfx940, gfx1030, run on an MI300X (libamdhip64.so.5, warn mode)"
echo "\$ HIPGUARD_TARGET=mi300x LD_PRELOAD=libhipguard.so $APP"
HIPGUARD_TARGET=mi300x LD_PRELOAD=$SHIM "$APP" || true

if [[ -e /usr/lib/x86_64-linux-gnu/librocsparse.so.0 ]]; then
  step "Debian 12's rocSPARSE (111 fat binaries) against gfx90a:xnack- and gfx942"
  echo "\$ hipguard check --target gfx90a:xnack- --target gfx942 /usr/lib/x86_64-linux-gnu/librocsparse.so.0"
  out=$("$HG" check --target gfx90a:xnack- --target gfx942 /usr/lib/x86_64-linux-gnu/librocsparse.so.0 || true)
  matching 'can run on|^error|^checked|^target|librocsparse' "$out" | cut -c1-240
fi
printf '\n== demo: done in %d s\n' "$((SECONDS - start))"
