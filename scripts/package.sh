#!/usr/bin/env bash
# Builds the release packages into ${PACKAGE_BUILD_DIR:-build-package}:
#   hipguard_VERSION_ARCH.deb           Depends computed from the binaries (dpkg-shlibdeps), stripped
#   hipguard-dbgsym_VERSION_ARCH.ddeb   the debug info split off the binaries
#   hipguard-VERSION-linux-ARCH.tar.gz  bin/ lib/ share/, stripped; works from any directory
# A RelWithDebInfo build without the tests (no hipcc, no GoogleTest needed).
# Installs the build dependencies it lacks with apt (root or sudo), like scripts/build.sh's callers.
#   scripts/package.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --build
B=${PACKAGE_BUILD_DIR:-build-package}
BUILD_DIR=$B scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHIPGUARD_BUILD_TESTS=OFF "$@"
log=$B/cpack.log
if ! (cd "$B" && cpack -G "DEB;TGZ") >"$log" 2>&1; then
  cat "$log"
  echo "package.sh: cpack failed" >&2
  exit 1
fi
ls -1 "$B"/*.deb "$B"/*.ddeb "$B"/*.tar.gz 2>/dev/null
