#!/usr/bin/env bash
# Builds, or reuses, a Debian root with a real ROCm stack that the tests run against. Two stacks:
#   6.4  Debian sid: HIP 6.4 runtime (libamdhip64.so.6), hipcc 7.0.2/clang 21, comgr 3, rocBLAS 4,
#        hipBLASLt, rocSPARSE, rocSOLVER, MAGMA, ggml/llama.cpp
#   7.2  Debian sid with experimental preferred: HIP 7.2.4 runtime (libamdhip64.so.7), hipcc 7.2.4/
#        clang 22, comgr 7.2.4, rocBLAS 5 (gfx942 Tensile code), hipBLASLt, rocSPARSE, rocSOLVER,
#        MIOpen, RCCL, rocBLAS's test and bench programs
#   scripts/rocm-root.sh [--stack 6.4|7.2]          build or reuse it; prints its path last
#   scripts/rocm-root.sh [--stack 6.4|7.2] --path   only print where it is (or would be)
# Where: $HIPGUARD_ROCM_ROOT (6.4, default /var/cache/hipguard/rocm-sid) and $HIPGUARD_ROCM72_ROOT
# (7.2, default /var/cache/hipguard/rocm-7.2), outside any clone, so a rerun and CI reuse them.
# Idempotent: a root whose stamp lists the same packages is reused as is; one that lacks packages
# gets them installed. Needs root, mmdebstrap and the Debian archive apt already uses. Exit 3 (one
# line on stderr) when it cannot be built here; tests that need it skip. Size and time: docs/ci.md.
set -euo pipefail
stack=6.4
only_path=
while (($#)); do
  case $1 in
    --stack) stack=$2; shift 2 ;;
    --path) only_path=1; shift ;;
    *) echo "rocm-root: usage: rocm-root.sh [--stack 6.4|7.2] [--path]" >&2; exit 2 ;;
  esac
done

# What the suite uses, per stack. Order does not matter; the stamp keeps the sorted list.
case $stack in
  6.4)
    root=${HIPGUARD_ROCM_ROOT:-/var/cache/hipguard/rocm-sid}
    suites=(sid)
    aptopts=()
    packages=(
      hipcc libamdhip64-dev libamd-comgr-dev rocminfo         # hipcc 7, HIP 6.4 runtime, comgr 3, ROCR
      librocblas4 libhipblaslt1                               # Tensile libraries (.co/.hsaco/.dat)
      librocsparse1 librocsolver0 librocfft0 libhipblas2      # fat binaries; rocFFT's has no kernels; hipBLAS none
      libmagma2-rocm                                          # MAGMA 2.9 (436 fat binaries)
      libhipfft0-tests                                        # hipfft-test: ships gfx942 code, loads rocFFT's kernel-free fat binary
      libggml0-backend-hip llama.cpp-tools                    # a real application (llama-cli) and its HIP backend
      libarchive13t64                                         # hipguard itself (built on Debian 12) run inside the root
    )
    # Real .deb files the archive tests read in place (Rocm.Archives), kept as files inside the root
    # (/var/cache/hipguard-debs there): small packages, one with GPU code, one kernel-free, one without any.
    debs=(libhipfft0-tests librocfft0 libhipblas2)
    ;;
  7.2)
    root=${HIPGUARD_ROCM72_ROOT:-/var/cache/hipguard/rocm-7.2}
    suites=(sid experimental)
    # experimental's packages (7.2.4) wherever it has one, sid's otherwise.
    aptopts=(--aptopt='APT::Default-Release "experimental"')
    packages=(
      hipcc libamdhip64-dev libamd-comgr-dev rocminfo         # hipcc 7.2.4/clang 22, HIP 7.2 runtime, comgr 7.2.4, ROCR
      librocblas5 libhipblaslt1                               # Tensile libraries: rocBLAS 5 with gfx942, hipBLASLt without
      librocsparse1 librocsolver0                             # fat binaries
      libmiopen1 librccl1                                     # what ML frameworks load (bench R4)
      librocblas5-tests librocblas5-bench                     # real programs that link rocBLAS 5
      libarchive13t64 python3 file                            # hipguard itself (built on Debian 12) run inside the root
    )
    debs=()
    ;;
  *) echo "rocm-root: unknown stack '$stack' (6.4 or 7.2)" >&2; exit 2 ;;
esac
if [[ -n $only_path ]]; then
  echo "$root"
  exit 0
fi
want=$(printf '%s\n' "${packages[@]}" | sort -u)
stamp=$root/.hipguard-root

cannot() { echo "rocm-root: cannot build the ROCm $stack root here: $*" >&2; exit 3; }

# Runs apt inside the root (its sid index is past its Valid-Until date).
in_root() {
  unshare --mount --propagation private -- bash -c '
    r=$1; shift
    for d in proc dev sys; do mount --rbind /$d "$r/$d"; done
    exec chroot "$r" "$@"' _ "$root" "$@"
}

# Downloads the missing ones of $debs: the version installed in the root, else (gone from the
# archive) the current one. Files already there are reused. A failure is one line, not fatal.
fetch_debs() {
  local dir=$root/var/cache/hipguard-debs missing=() p v
  for p in "${debs[@]}"; do compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || { echo "rocm-root: cannot download ${missing[*]}: needs root" >&2; return 0; }
  mkdir -p "$dir"
  for p in "${missing[@]}"; do
    v=$(in_root dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
    in_root sh -c 'cd /var/cache/hipguard-debs && apt-get download -qq "$1"' _ "$p${v:+=$v}" >/dev/null 2>&1 ||
      { in_root apt-get -qq -o Acquire::Check-Valid-Until=false update >/dev/null 2>&1 &&
        in_root sh -c 'cd /var/cache/hipguard-debs && apt-get download -qq "$1"' _ "$p" >/dev/null 2>&1; } ||
      echo "rocm-root: cannot download $p (the archive tests that read it skip)" >&2
  done
}

if [[ -f $stamp ]] && [[ $(cat "$stamp") == "$want" ]]; then
  fetch_debs
  echo "$root"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || cannot "needs root (mmdebstrap, chroot)"

# The Debian archive this machine's apt already uses (deb822 or one-line sources), not the
# security or updates suites; mmdebstrap's own default when none is found.
mirror=$( { grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}';
            grep -hsE '^deb ' /etc/apt/sources.list | awk '{print ($2 ~ /^\[/ ? $3 : $2)}'; } |
          grep -v -e security -e updates | head -n 1 || true)
mirror=${mirror:-http://deb.debian.org/debian}

if [[ -f $stamp ]]; then
  echo "rocm-root: adding packages to $root"
  missing=$(comm -13 "$stamp" <(echo "$want") | tr '\n' ' ')
  in_root apt-get -qq -o Acquire::Check-Valid-Until=false update
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
  echo "$want" >"$stamp"
  fetch_debs
  echo "$root"
  exit 0
fi

command -v mmdebstrap >/dev/null || {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null 2>&1 || cannot "mmdebstrap is not installable"
}
start=$SECONDS
tmp=$root.partial
rm -rf --one-file-system "$tmp"
mkdir -p "$(dirname "$root")"
sources=()
for s in "${suites[@]}"; do sources+=("deb $mirror $s main"); done
echo "rocm-root: building the ROCm $stack root $root (5 to 10 minutes; log: $tmp.log)"
if ! mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' "${aptopts[@]}" \
     --include="$(IFS=,; echo "${packages[*]}")" sid "$tmp" "${sources[@]}" >"$tmp.log" 2>&1; then
  tail -n 20 "$tmp.log" >&2
  rm -rf --one-file-system "$tmp"
  cannot "mmdebstrap failed (log: $tmp.log)"
fi
echo "$want" >"$tmp/.hipguard-root"
rm -rf --one-file-system "$root"
mv "$tmp" "$root"
echo "rocm-root: built in $((SECONDS - start)) s, $(du -sh --one-file-system "$root" | cut -f1)"
fetch_debs
echo "$root"
