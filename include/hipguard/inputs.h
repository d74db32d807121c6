// Files as the CLI and hipModuleLoad see them: host executables and shared
// libraries (their .hip_fatbin section), offload bundles, compressed bundles,
// raw .co/.hsaco code objects, and directories of those.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hipguard/check.h"

namespace hipguard {

// A read-only view of a whole file (memory-mapped where possible, so only the
// pages the checks touch are read).
class FileData {
 public:
  static Result<FileData> open(const std::string& path);
  Bytes bytes() const { return bytes_; }

 private:
  std::shared_ptr<void> owner_;
  Bytes bytes_;
};

struct FileReport {
  std::string path;
  std::vector<ImageReport> images;     // one per bundle / code object found
  std::vector<Diagnostic> diagnostics; // file-level: unreadable, no .hip_fatbin
  bool hip = false;                    // the file carries GPU code at all

  bool ok() const;
};

// Checks one file. A host ELF is searched for .hip_fatbin; a file that is not
// HIP at all gets a note (HG107) when `explicit_arg`, and is otherwise skipped.
FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, bool explicit_arg = true);

// Expands directories recursively (sorted, regular files only, symlinks to
// files followed); plain files are kept as given.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<std::string>* missing);

}  // namespace hipguard
