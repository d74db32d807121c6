// The parts of an ELF object the dynamic loader reads (via LLVM's Object library), and paths
// resolved inside a sysroot: the file-level layer of dependencies.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// `host` read with FileData (mapped above kCliMapAbove); never throws.
ElfInfo read_elf(const std::string& host);

// "/a//b/" -> {"a", "b"}
std::vector<std::string> split_path(const std::string& p);

}  // namespace hipguard
