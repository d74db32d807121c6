// What the dynamic loader reads of an ELF object (glibc elf/get-dynamic-info.h): its dynamic section,
// read from bytes with LLVM's ELFFile (the dependency search, inputs/dependencies.cpp, opens the files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hipguard/bundle.h"

namespace hipguard {

// What the dynamic loader reads of an object: its dynamic section (glibc elf/get-dynamic-info.h).
struct ElfInfo {
  bool elf = false;  // a 64-bit little-endian ELF
  uint16_t machine = 0;
  std::vector<std::string> needed;     // DT_NEEDED, in order (at most kMaxNeeded)
  std::string soname, rpath, runpath;  // rpath is empty when the object has a DT_RUNPATH
  bool has_runpath = false, nodeflib = false;
  bool hip = false;   // a non-empty .hip_fatbin section
  std::string error;  // the dynamic section could not be read (HG121)
};
inline constexpr size_t kMaxNeeded = 4096;  // DT_NEEDED entries read per object (docs/limits.md)

// The object in `bytes`; not an ELF (or not 64-bit little-endian): elf false. Never throws.
ElfInfo read_dynamic_info(Bytes bytes);

}  // namespace hipguard
