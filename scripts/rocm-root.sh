#!/usr/bin/env bash
# Builds, or reuses, the Debian sid root with real ROCm 6.4 / 7.x that the tests run against
# (HIP 6.4 runtime, hipcc 7.0.2, comgr 3, rocBLAS, hipBLASLt, rocSPARSE, rocSOLVER, ggml/llama.cpp).
#   scripts/rocm-root.sh            build or reuse it; prints its path last
#   scripts/rocm-root.sh --path     only print where it is (or would be)
# Where: $HIPGUARD_ROCM_ROOT, default /var/cache/hipguard/rocm-sid (outside any clone, so a
# rerun and CI reuse it). Idempotent: a root whose stamp lists the same packages is reused as is;
# one that lacks packages gets them installed. Needs root, mmdebstrap and the Debian archive apt
# already uses. Exit 3 (one line on stderr) when it cannot be built here; tests that need it skip.
# Size and time: README, "The ROCm root".
set -euo pipefail
root=${HIPGUARD_ROCM_ROOT:-/var/cache/hipguard/rocm-sid}
if [[ ${1:-} == --path ]]; then
  echo "$root"
  exit 0
fi

# What the suite uses. Order does not matter; the stamp keeps the sorted list.
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
want=$(printf '%s\n' "${packages[@]}" | sort -u)
stamp=$root/.hipguard-root

cannot() { echo "rocm-root: cannot build the ROCm root here: $*" >&2; exit 3; }

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
echo "rocm-root: building $root from Debian sid (5 to 10 minutes, 10 GB; log: $tmp.log)"
# shellcheck disable=SC2086
if ! mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
     --include="$(IFS=,; echo "${packages[*]}")" sid "$tmp" $mirror >"$tmp.log" 2>&1; then
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
