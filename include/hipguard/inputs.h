// Files as the CLI and hipModuleLoad see them: host executables and shared
// libraries (their .hip_fatbin section), offload bundles, compressed bundles,
// raw .co/.hsaco code objects, and directories of those.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hipguard/check.h"

namespace hipguard {

// A read-only view of a whole regular file: copied with pread up to
// kCopyLimit bytes (a file that shrinks while read is read short, never a
// SIGBUS), memory-mapped above (only the pages the checks touch are read).
// FIFOs, devices, sockets and directories are refused (HG101) without being
// opened for reading.
class FileData {
 public:
  static constexpr uint64_t kCopyLimit = 64ull << 20;
  // CopyAlways: never mapped, whatever the size (the shim: a host process has
  // no SIGBUS handler of ours, so a file truncated while read must not fault).
  enum class Access { MapLarge, CopyAlways };
  static Result<FileData> open(const std::string& path, Access access = Access::MapLarge);
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
FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, bool explicit_arg = true,
                      FileData::Access access = FileData::Access::MapLarge);

// A path that could not be used: missing, unreadable directory, symlink loop,
// name too long, ... (reported as HG101 by the CLI).
struct PathProblem {
  std::string path, reason;
};

// Expands directories recursively (sorted, regular files only, symlinks to
// files followed, symlinked directories not walked); plain files are kept as
// given. Never throws: each path or directory that cannot be read is a problem.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<PathProblem>* problems);

}  // namespace hipguard
