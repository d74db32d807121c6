// The parts of an ELF file the dynamic loader reads (format/dynamic_elf.h), and paths resolved
// inside a sysroot: the file-level layer of dependencies.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/dynamic_elf.h"

namespace hipguard {

// `host` read with FileData (mapped above kCliMapAbove); never throws.
ElfInfo read_elf(const std::string& host);

// "/a//b/" -> {"a", "b"}
std::vector<std::string> split_path(const std::string& p);

}  // namespace hipguard
