// The parts of an ELF file the dynamic loader reads (format/dynamic_elf.h), and paths resolved
// inside a sysroot: the file-level layer of dependencies.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/dynamic_elf.h"

namespace hipguard {

// `host` read with FileData (mapped above kCliMapAbove); never throws.
ElfInfo read_elf(const std::string& host);

// "/a//b/" -> {"a", "b"}
std::vector<std::string> split_path(const std::string& p);

// What a path's component is, as resolve_inside asks: missing, a symbolic link to `target` (as stored),
// a directory, or anything else.
struct PathStep {
  enum class Kind { Missing, Symlink, Directory, Other } kind = Kind::Missing;
  std::string target;
};
// `path` resolved inside a root as in a chroot: ".." stops at the root, an absolute link target starts
// again at it, at most 40 links (Linux's MAXSYMLINKS). `step` says what the resolved components plus
// one more are. The resolved components, or nullopt when one is missing, a link loops or a
// non-directory has components below it. The rule of both a sysroot on disk and an image's files.
std::optional<std::vector<std::string>> resolve_inside(
    const std::string& path, const std::function<PathStep(const std::vector<std::string>& components)>& step);

}  // namespace hipguard
