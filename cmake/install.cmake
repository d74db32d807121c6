# Install rules and packages (CPack: .deb and .tar.gz; scripts/package.sh).
#
#   bin/hipguard                            the CLI
#   lib/libhipguard.so.MAJOR.MINOR.PATCH    the shim, SONAME libhipguard.so.MAJOR,
#   lib/libhipguard.so.MAJOR, .so           and its links (`hipguard run` preloads .so.MAJOR)
#   share/doc/hipguard/                     README.md, docs/
#   share/man/man1/hipguard.1               the man page
#   share/bash-completion/completions/hipguard
#
# The headers under include/hipguard are the core's internal interface (the
# core's layers are static libraries linked into both programs): nothing to install.
install(TARGETS hipguard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS hipguard_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(FILES packaging/hipguard.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES packaging/hipguard.bash-completion DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME hipguard)

if(NOT PROJECT_IS_TOP_LEVEL)  # e.g. the fuzz build, which includes this project
  return()
endif()

set(CPACK_PACKAGE_NAME hipguard)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "checks why a HIP kernel cannot run on an AMD GPU, before it is launched")
set(CPACK_PACKAGE_DESCRIPTION "hipguard checks HIP fat binaries and AMDGPU code objects against AMD GPU
targets: a missing code object for the GPU, an xnack/sramecc mismatch, more
LDS than the GPU has, broken metadata. It comes as a CLI (hipguard check,
inspect, targets, run) that needs no GPU, and an LD_PRELOAD shim
(libhipguard.so) that checks a HIP program's kernels in process.")
set(CPACK_PACKAGE_CONTACT "hipguard maintainers" CACHE STRING "Maintainer field of the .deb")
set(CPACK_PACKAGE_FILE_NAME "hipguard-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_GENERATOR "DEB;TGZ" CACHE STRING "CPack generators")
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_RESOURCE_FILE_README ${PROJECT_SOURCE_DIR}/README.md)

# .deb: hipguard_VERSION_ARCH.deb, Depends computed by dpkg-shlibdeps from the
# binaries; the debug info split off into hipguard-dbgsym (.ddeb), which also
# strips the binaries of the main package.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "" CACHE STRING "Homepage field of the .deb")
# .tar.gz: hipguard-VERSION-linux-ARCH/{bin,lib,share}, stripped (per generator:
# stripping before the DEB generator would leave the dbgsym package empty).
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/cpack_options.cmake)
include(CPack)
