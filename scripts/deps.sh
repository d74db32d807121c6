#!/usr/bin/env bash
# Installs what hipguard needs to build and test on Debian 12 (run as root or with sudo).
#   scripts/deps.sh           everything: the product, the tests, fuzzing, benchmarks
#   scripts/deps.sh --build   the product and its packages only (scripts/package.sh)
set -euo pipefail
build_pkgs=(
  cmake ninja-build g++ pkg-config
  llvm-16-dev libzstd-dev zlib1g-dev      # static LLVM: Object, BinaryFormat, Support
  libxxhash-dev                            # XXH3 for symbol names (header-only use)
  libarchive-dev                           # the CLI reads .deb, .whl/.zip, .tar.*, .a and images in place
  nettle-dev                               # SHA-256 of image blobs (libarchive's own dependency)
  libspdlog-dev libfmt-dev                 # logging (header-only use)
  dpkg-dev file                            # packages: dpkg-shlibdeps computes the .deb's Depends
)
pkgs=(
  "${build_pkgs[@]}"
  libgtest-dev libbenchmark-dev            # tests, benchmarks
  clang-14 libclang-rt-14-dev              # libFuzzer and sanitizer runtimes
  clang-format-14                          # Style.ClangFormat, scripts/format.sh
  hipcc libamdhip64-dev                    # builds the test HIP programs; real libamdhip64 (ROCm 5.2)
  librocsparse0                            # real ROCm library full of fat binaries (inspect/bench input)
  valgrind time
  python3 python3-jsonschema               # tests: JSON Schema validation of every JSON output
  librocrand1                              # real ROCm library: benchmark input beside rocSPARSE
  umoci skopeo                             # Images.*: container images made offline from the 7.2 root
)
[[ ${1:-} == --build ]] && pkgs=("${build_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  # apt's hundreds of progress lines go to a log, shown only when apt fails.
  log=$(mktemp "${TMPDIR:-/tmp}/hipguard-apt.XXXXXX")
  echo "deps: installing ${missing[*]} (log: $log)"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "deps: apt failed (full log: $log)"
    exit 1
  fi
fi
