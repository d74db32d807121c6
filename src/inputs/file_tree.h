// The files the dependency search (dependencies.cpp) reads, by their paths inside one root: this
// machine's under a sysroot (dynamic_elf.cpp), or a container image's as its layers leave them (image.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/dynamic_elf.h"
#include "hipguard/dependencies.h"

namespace hipguard {

inline constexpr size_t kMaxTreeTextBytes = 1u << 20;  // of one ld.so.conf (real: < 1 KiB)

class FileTree {
 public:
  struct Found {
    std::string label;                       // how findings name it: its path on this machine, or "IMAGE!usr/lib/x"
    std::string at;                          // its path inside the root with every symlink followed ("/usr/lib/x")
    std::pair<uint64_t, uint64_t> identity;  // one file reached by two names has one identity
    bool directory = false;                  // else a regular file
  };
  virtual ~FileTree() = default;
  // `at` ("/usr/lib/x") with every symlink followed inside the root, as in a chroot (".." stops at the
  // root, an absolute target restarts there, at most 40 links as Linux); nullopt when a component is
  // missing, a loop, or it is neither a regular file nor a directory.
  virtual std::optional<Found> find(const std::string& at) const = 0;
  // The names in the directory `at` (symlinks followed), sorted, those starting with '.' left out.
  virtual std::vector<std::string> list(const std::string& at) const = 0;
  // What the dynamic loader reads of the regular file `file`.
  virtual ElfInfo elf(const Found& file) const = 0;
  // The text of the regular file `file` (ld.so.conf and its includes), its first kMaxTreeTextBytes;
  // "" when it cannot be read.
  virtual std::string text(const Found& file) const = 0;
  // How findings name `at`, a path inside the root that may not exist ("searched: ...").
  virtual std::string name_of(const std::string& at) const = 0;
};

// This machine's files under `sysroot` ("" or "/": this machine's own root).
class HostTree : public FileTree {
 public:
  explicit HostTree(const std::string& sysroot);
  std::optional<Found> find(const std::string& at) const override;
  std::vector<std::string> list(const std::string& at) const override;
  ElfInfo elf(const Found& file) const override;
  std::string text(const Found& file) const override;
  std::string name_of(const std::string& at) const override { return root_ + at; }
  const std::string& root() const { return root_; }  // absolute, no trailing '/'; "" for this machine's

 private:
  std::string root_;
};

// Whether a Tensile directory's file named `name` is one of the code objects the search lists as its
// library's kernel files (.co, .hsaco: ELF code objects and offload bundles, compressed or not).
bool is_kernel_file_name(const std::string& name);

// The dependencies of the program at `at` inside `tree`, found as find_dependencies finds a file's
// (dependencies.h); none when `at` is not a regular file of the tree.
Dependencies find_dependencies_in(const FileTree& tree, const std::string& at, const DependencyOptions& options);

}  // namespace hipguard
