// Files as the CLI and hipModuleLoad see them: host executables and shared
// libraries (their .hip_fatbin section), offload bundles, compressed bundles,
// raw .co/.hsaco code objects, directories of those, and (the CLI) archives
// holding them: .deb, .whl/.zip, .tar(.gz/.xz/.zst/.bz2), .a.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hipguard/check.h"

namespace hipguard {

class FileSink;  // below

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
  // A buffer one thread reuses from file to file (the offline check reads
  // thousands of small code objects: one allocation, no page faults per file).
  struct ReadBuffer {
    std::unique_ptr<uint8_t[]> data;
    uint64_t capacity = 0;
  };
  // `map_above`: files larger than this are mapped instead of copied (the CLI
  // maps from kCliMapAbove: only the pages the checks touch are read; the
  // shim keeps kCopyLimit). `reuse`: copy into this buffer, which must outlive
  // the FileData and is not used by another FileData meanwhile.
  // `seen_regular`: the caller has just seen that `path` is a regular file
  // (a directory walk): one stat fewer; the descriptor is still checked.
  static Result<FileData> open(const std::string& path, uint64_t map_above, ReadBuffer* reuse = nullptr,
                               bool seen_regular = false);
  Bytes bytes() const { return bytes_; }
  bool mapped() const { return mapped_; }
  // Mapped files: drops the pages wholly before `end` from this process's
  // memory (they are read again from the page cache if touched again), so a
  // 1.3 GB library checked bundle by bundle never holds more than one bundle.
  void release_before(const uint8_t* end) const;

 private:
  std::shared_ptr<void> owner_;
  Bytes bytes_;
  bool mapped_ = false;
};
inline constexpr uint64_t kCliMapAbove = 1ull << 20;

struct FileReport {
  std::string path;
  std::string library;                 // the kernel library it belongs to (LibrarySummary::name), or 
  std::vector<ImageReport> images;     // one per bundle / code object found
  std::vector<Diagnostic> diagnostics; // file-level: unreadable, no .hip_fatbin; archives: corrupt (HG113), budgets
  bool hip = false;                    // the file carries GPU code at all (an archive: itself is no GPU code)
  // An archive checked without CheckFileOptions::members: its members with GPU
  // code (or a problem), each a file named "archive!member", in archive order.
  std::vector<FileReport> members;
  std::string needed_by;               // a dependency (CheckPathsOptions::dependencies): the program or
                                       // library that loads or opens it; "" for the files given

  bool ok() const;
};

// Archives as check_file reads them, in memory and in place: each member that
// may hold GPU code is handed over as bytes, never extracted to disk; member
// names are labels only, never opened. The CLI's reader (libarchive, with the
// budgets of docs/limits.md) is archive_reader() in src/checks/archive.h; the
// shim passes none, so it never opens an archive nor links libarchive.
class ArchiveReader {
 public:
  // One member that may hold GPU code (an ELF, offload bundle or CCOB), named
  // "archive!member" ("a.tar!lib/libx.a!x.o" inside a nested archive; a .deb's
  // data.tar.* is opened transparently: "pkg.deb!usr/lib/librocsparse.so.1"),
  // with its bytes (valid during the call only); or, when it could not be read
  // within the budget, no bytes and `problem` (HG111, about the member).
  using Member = std::function<void(const std::string& name, Bytes data, const Diagnostic* problem)>;
  struct Result {
    bool archive = false;                 // false: not an archive after all (a compressed file of another kind)
    std::vector<Diagnostic> diagnostics;  // the archive's own: damaged or truncated (HG113), a budget spent (HG111)
  };
  virtual ~ArchiveReader() = default;
  // Whether `data` starts like an archive (ar, tar, zip; gzip, xz, zstd, bzip2).
  virtual bool is_archive(Bytes data) const = 0;
  // Calls `member` for each member in archive order. Never throws by itself
  // (a damaged archive is a diagnostic); what `member` throws propagates.
  virtual Result read(Bytes data, const std::string& path, const Member& member) const = 0;
};

// Checks one file. A host ELF is searched for .hip_fatbin; a file that is not
// HIP at all gets a note (HG107) when `explicit_arg`, and is otherwise skipped.
FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, bool explicit_arg = true,
                      FileData::Access access = FileData::Access::MapLarge);

// The same, with each image handed to `sink` as soon as it is checked instead
// of being kept in the report (a 111-bundle library then never holds more
// than one bundle's parsed code objects); the returned report has no images.
using ImageSink = std::function<void(ImageReport&&)>;
struct CheckFileOptions {
  bool explicit_arg = true;
  const ImageSink* sink = nullptr;                 // null: images are kept in the report
  uint64_t map_above = FileData::kCopyLimit;       // see FileData::open
  FileData::ReadBuffer* reuse = nullptr;
  bool seen_regular = false;                       // see FileData::open
  Depth depth = Depth::Full;                       // of raw code objects (bundles: Full); see check.h
  Machine machine;                                 // the runtime and whether the targets share a process
  // Archives: read with this reader (null: an archive is a file without GPU
  // code). Each member with GPU code or a problem is checked like a file of
  // its kind and goes to `members` as a file of its own (begin_file, images,
  // end_file), or into FileReport::members when null. An archive with no GPU
  // code at all gets HG107 when `explicit_arg`, like any file.
  const ArchiveReader* archives = nullptr;
  FileSink* members = nullptr;
  bool library_file = false;                       // a kernel library's file (LibrarySummary): Depth::Library
};
FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options);

// A path that could not be used: missing, unreadable directory, symlink loop,
// name too long, ... (reported as HG101 by the CLI).
struct PathProblem {
  std::string path, reason;
};

// Expands directories recursively (sorted, regular files only, symlinks to
// files followed, symlinked directories not walked); plain files are kept as
// given. Never throws: each path or directory that cannot be read is a problem.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<PathProblem>* problems);

// A path that could not be used, as a report of its own (HG101), so the check
// fails instead of skipping it.
FileReport path_problem_report(const PathProblem& p);
// A directory argument below which no GPU code was found (HG110), so a
// mistyped CI path does not pass the gate by checking nothing.
FileReport empty_directory_report(const std::string& path);

// A kernel library: the code object files (raw code objects, offload bundles,
// compressed bundles) found below a directory argument, grouped by the
// directory that holds them; a directory component named after a processor
// ("hsa/gfx942/", AITER) is one library with its siblings ("hsa/<processor>/").
// The library's loader, not the HIP runtime, picks the file: rocBLAS's and
// hipBLASLt's Tensile open the files named for the GPU's processor, AITER its
// hsa/<processor>/ directory. So for each target, the files it can load are
// checked in full and the files built for other processors or configurations
// (TargetVerdict::other_target) are counted, not errors; a library without any
// file for a target is one error (HG214) naming the processors it has.
// Host programs and shared libraries (.hip_fatbin) are not library files: the
// runtime registers all of their fat binaries.
struct LibrarySummary {
  struct PerTarget {
    TargetId target;
    size_t code_objects = 0;  // files the target can load (selected), checked in full
    size_t kernels = 0;       // kernels of those files
    size_t other = 0;         // files for other processors or configurations
    size_t failing = 0;       // loadable files with an error for the target
  };
  std::string name;                     // directory, relative to nothing: as found below the argument
  size_t files = 0;                     // code object files of the library
  std::vector<std::string> built_for;   // the target IDs (or bundle entries' targets) its files are for, sorted
  std::vector<PerTarget> targets;       // one per requested target, same order
};

// Receives the files of check_paths in input order, from the calling thread:
// begin_file, then each image as it is checked, then end_file with the file's
// own diagnostics (its `images` are empty: they went to image()).
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual void begin_file(const std::string& path) = 0;
  virtual void image(ImageReport&& img) = 0;
  virtual void end_file(FileReport&& file) = 0;
  // After every file: each kernel library met, in order of its first file.
  virtual void library(LibrarySummary&& /*library*/) {}
};

// A sink that rebuilds whole FileReports (for the text outputs): each image
// goes to `on_image` as it arrives, each file to `on_file` when complete, and
// is kept in `reports` when `keep`. Without `keep_parsed`, images lose their
// parsed code objects and bundle entries after on_image (verdicts and
// diagnostics stay), so memory stays flat over thousands of files.
class CollectSink : public FileSink {
 public:
  explicit CollectSink(bool keep_parsed, std::function<void(FileReport&)> on_file = {}, bool keep = true,
                       std::function<void(const ImageReport&)> on_image = {})
      : keep_parsed_(keep_parsed), keep_(keep), on_file_(std::move(on_file)), on_image_(std::move(on_image)) {}
  void begin_file(const std::string& path) override;
  void image(ImageReport&& img) override;
  void end_file(FileReport&& file) override;
  void library(LibrarySummary&& library) override { libraries.push_back(std::move(library)); }
  std::vector<FileReport> reports;
  std::vector<LibrarySummary> libraries;

 private:
  bool keep_parsed_, keep_;
  std::function<void(FileReport&)> on_file_;
  std::function<void(const ImageReport&)> on_image_;
  FileReport current_;
};

struct CheckPathsOptions {
  std::vector<TargetId> targets;
  unsigned jobs = 0;                      // worker threads; 0: one per hardware thread
  bool empty_directory_is_error = true;   // HG110 for a directory without GPU code (check; not inspect)
  Depth depth = Depth::Full;              // CheckFileOptions::depth
  Machine machine;                        // CheckFileOptions::machine
  // Called from the delivering thread after each file (`done` of `total`
  // files, the file's path): the CLI's progress line.
  std::function<void(size_t done, size_t total, const std::string& path)> progress;
  // Each file named on the command line is followed by what it loads (dependencies.h: its DT_NEEDED
  // libraries found as the dynamic loader finds them, and the kernel files they open), resolved
  // inside `sysroot` ("" = /). A named file without GPU code of its own is then no HG107 when its
  // dependencies have some; a dependency without GPU code is skipped silently.
  bool dependencies = false;
  std::string sysroot;
  std::vector<TargetId> dependency_targets;  // whose Tensile files are listed (empty: `targets`)
  bool kernel_databases = false;          // also check the kernel databases below directory arguments (check)
  const ArchiveReader* archives = nullptr;  // CheckFileOptions::archives: the CLI's archive_reader()
};
struct CheckPathsResult {
  bool ok = true;           // every file and image ok (FileReport::ok)
  bool unreadable = false;  // some path could not be read (HG101), or an archive is damaged (HG113)
  bool gpu_code = false;    // some file or archive member held GPU code
};

// `hipguard check` / `inspect` over paths: unusable paths first (HG101), then
// every file (directories expanded, files named on the command line that hold
// no GPU code get HG107, other files without GPU code are skipped; an archive's
// members with GPU code are files of their own, "archive!member"), then HG110
// for each directory argument without GPU code. Files are checked by `jobs`
// threads, a bounded number ahead of the one being delivered; what `sink`
// receives, and in which order, does not depend on `jobs`. With
// kernel_databases, each kernel database below a directory argument
// (kernel_database.h) is checked after the files, reusing their parsed code
// objects, and delivered as one report (path: the database directory).
CheckPathsResult check_paths(const std::vector<std::string>& paths, const CheckPathsOptions& options, FileSink& sink);

}  // namespace hipguard
