// Checking files (check_file) and paths (check_paths): host executables and shared libraries (their
// .hip_fatbin section), offload bundles, compressed bundles, raw .co/.hsaco code objects, directories
// of those, kernel libraries, and archive members holding them (inputs.h reads them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/inputs.h"

namespace hipguard {

class FileSink;  // below

struct FileReport {
  std::string path;
  std::string library;                  // the kernel library it belongs to (LibrarySummary::name), or
  std::vector<ImageReport> images;      // one per bundle / code object found
  std::vector<Diagnostic> diagnostics;  // file-level: unreadable, no .hip_fatbin; archives: corrupt (HG113), budgets
  bool hip = false;                     // the file carries GPU code at all (an archive: itself is no GPU code)
  // An archive checked without CheckFileOptions::members: its members with GPU
  // code (or a problem), each a file named "archive!member", in archive order.
  std::vector<FileReport> members;
  std::string needed_by;  // a dependency (CheckPathsOptions::dependencies): the program or
                          // library that loads or opens it; "" for the files given

  bool ok() const;
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
  const ImageSink* sink = nullptr;            // null: images are kept in the report
  uint64_t map_above = FileData::kCopyLimit;  // see FileData::open
  FileData::ReadBuffer* reuse = nullptr;
  bool seen_regular = false;  // see FileData::open
  Depth depth = Depth::Full;  // of raw code objects (bundles: Full); see check.h
  Machine machine;            // the runtime and whether the targets share a process
  // Archives: read with this reader (null: an archive is a file without GPU
  // code). Each member with GPU code or a problem is checked like a file of
  // its kind and goes to `members` as a file of its own (begin_file, images,
  // end_file), or into FileReport::members when null. An archive with no GPU
  // code at all gets HG107 when `explicit_arg`, like any file.
  const ArchiveReader* archives = nullptr;
  FileSink* members = nullptr;
  const ArchiveReader::SideFiles* side_files = nullptr;  // an archive's members without GPU code wanted too
  bool library_file = false;                             // a kernel library's file (LibrarySummary): Depth::Library
};
FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options);

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
  std::string name;                    // directory, relative to nothing: as found below the argument
  size_t files = 0;                    // code object files of the library
  std::vector<std::string> built_for;  // the target IDs (or bundle entries' targets) its files are for, sorted
  std::vector<PerTarget> targets;      // one per requested target, same order
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

// check_paths' kernel-database step (CheckPathsOptions::kernel_databases): shown each checked image
// (whose parsed code objects the database check reuses) and handed the database files inside
// archives and images, then asked for its reports after the files.
class DatabaseStep {
 public:
  virtual ~DatabaseStep() = default;
  virtual void observe(const ImageReport& img) = 0;
  // What the archives' walks hand over besides members with GPU code (null: nothing); its
  // functions are called from the checking threads.
  virtual const ArchiveReader::SideFiles* archive_files() { return nullptr; }
  virtual void finish(const std::function<void(FileReport&&)>& deliver) = 0;
};
// Makes the step for one check_paths call (the CLI's: kernel_database_step, kernel_database.h), or null
// when there is nothing to check below `paths`.
using DatabaseSteps = std::function<std::unique_ptr<DatabaseStep>(const std::vector<std::string>& paths,
                                                                  const std::vector<TargetId>& targets)>;

// Checked files kept from an earlier check (the CLI's --cache: cache/file_cache.h), asked by check_paths
// for each file: `check` runs check_file, handing the file's images and its archive members to `events`
// (begin_file, image, end_file for each member; the file's own images with no begin_file) and returning
// the file's own report. The cache returns what `check` would (from what it kept, when it holds the
// result for this file's content, path, targets and options), or runs it and keeps what it gives.
// Called from the checking threads: thread-safe.
class FileCache {
 public:
  virtual ~FileCache() = default;
  virtual FileReport check(const std::string& path, const std::vector<TargetId>& targets,
                           const CheckFileOptions& options, FileSink& events,
                           const std::function<FileReport(FileSink& events)>& check) = 0;
};

struct CheckPathsOptions {
  std::vector<TargetId> targets;
  unsigned jobs = 0;                     // worker threads; 0: one per hardware thread
  bool empty_directory_is_error = true;  // HG110 for a directory without GPU code (check; not inspect)
  Depth depth = Depth::Full;             // CheckFileOptions::depth
  Machine machine;                       // CheckFileOptions::machine
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
  DatabaseSteps kernel_databases;            // the kernel databases below directory arguments (check); empty: none
  const ArchiveReader* archives = nullptr;   // CheckFileOptions::archives: the CLI's archive_reader()
  FileCache* cache = nullptr;                // null: every file is checked
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
// kernel_databases, its step sees every image and delivers its reports after
// the files (kernel_database.h: one per database, path: its directory).
CheckPathsResult check_paths(const std::vector<std::string>& paths, const CheckPathsOptions& options, FileSink& sink);

}  // namespace hipguard
