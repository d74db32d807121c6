// Shared by the Tensile and AITER database checks (internal): file facts, findings with a cap, code object choice.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hipguard/check_paths.h"
#include "hipguard/kernel_database.h"

namespace hipguard::kdb {

// A solution as kept between reading and checking: its kernel's hash, its place in the file, its kind.
struct CompactSolution {
  uint64_t kernel_hash;  // kernel_name_hash
  uint32_t index;        // in the file's "solutions"
  bool source_kernel;
};

// A Tensile placeholder database as read (exists, and its solutions or why it cannot be read).
struct ParsedDat {
  bool exists = false;
  std::string error;
  std::vector<CompactSolution> solutions;
};

// A file's bytes as DatabaseFiles hands them out: a file of the disk (mapped or copied), or a view of
// bytes the DatabaseFiles keeps.
struct FileBytes {
  FileData file;
  Bytes bytes;
};
std::string_view text_of(const FileBytes& f);

// Where a database's files are read: the disk (disk_files()), or an archive's members kept aside
// (ArchiveDatabases). Paths are "/"-separated, as the database checks build them.
class DatabaseFiles {
 public:
  struct Entry {
    std::string name;
    bool directory = false;  // a directory, walked (a symlink to one is not)
    bool file = false;       // a regular file (a symlink to one too)
  };
  virtual ~DatabaseFiles() = default;
  virtual bool is_file(const std::string& path) const = 0;            // a regular file (symlinks followed)
  virtual bool is_directory(const std::string& path) const = 0;       // a directory (symlinks followed)
  virtual std::vector<Entry> list(const std::string& dir) const = 0;  // sorted by name; none when unreadable
  // The whole file, of at most `limit` bytes: HG101 when it cannot be read, HG111 when it is larger.
  virtual Result<FileBytes> read(const std::string& path, uint64_t limit) const = 0;
};
const DatabaseFiles& disk_files();

// Code object facts by path: handed in by the caller's lookup, else read once here from `files`.
class FactsCache {
 public:
  // `lookup` and `files` must outlive the cache.
  explicit FactsCache(const FactsLookup& lookup, const DatabaseFiles& files = disk_files())
      : lookup_(lookup), files_(files) {}
  const DatabaseFiles& files() const { return files_; }
  const CodeObjectFacts& get(const std::string& path);
  size_t opened() const { return opened_.size(); }
  void mark_opened(const std::string& path) { opened_[path] = true; }  // counted per target
  void reset_opened() { opened_.clear(); }
  // The entry for a .dat file, and whether it is new (to be filled by the caller).
  std::pair<ParsedDat*, bool> dat(const std::string& path) {
    auto [it, fresh] = dats_.try_emplace(path);
    return {&it->second, fresh};
  }

 private:
  const FactsLookup& lookup_;
  const DatabaseFiles& files_;
  std::map<std::string, CodeObjectFacts> own_;
  std::map<std::string, bool> opened_;
  std::map<std::string, ParsedDat> dats_;  // node-based: pointers stay valid
};

// The findings of one database for one target: at most kMaxDatabaseFindings
// are kept, the rest counted.
class Findings {
 public:
  Findings(DatabaseReport& r, DatabaseTargetSummary& s, std::string target)
      : r_(r), s_(s), target_(std::move(target)) {}
  void add(Code code, const std::string& file, const std::string& kernel, std::string message, std::string fix,
           std::optional<Severity> severity = std::nullopt);  // severity: else the code's
  void summary();  // HG707: what was cross-checked, and how many findings were not listed
  DatabaseTargetSummary& counts() { return s_; }

 private:
  DatabaseReport& r_;
  DatabaseTargetSummary& s_;
  std::string target_;
  size_t dropped_ = 0;
};

// Does `dir` (and below it, when `recursive`) hold a file named *<processor>*co (rocBLAS's own glob)?
bool has_code_for(const DatabaseFiles& files, const std::string& dir, const std::string& processor, bool recursive);
// HG701's severity: an error, but a note where the directory holds no code object for the processor at all,
// which the library check already says once (HG214: one cause, one line).
Severity missing_database_severity(const DatabaseFiles& files, const std::string& dir, const std::string& processor,
                                   bool recursive);

// The database directories at or below `dir` in `files` (find_kernel_databases).
std::vector<DatabaseDir> find_kernel_databases(const DatabaseFiles& files, const std::string& dir);

// Can the runtime load a code object with these facts on `t` (hipModuleLoadData,
// __hipRegisterFatBinary of a raw code object)? The entry it would pick (native before generic),
// else why not, as the callers' HG704 (kDatabaseCodeObjectMismatch) says it. Never null.
Result<const CodeObjectFacts::Entry*> loadable_on(const CodeObjectFacts& f, const TargetId& t);
bool has_kernel(const CodeObjectFacts::Entry& f, const std::string& name);
// "gfx90a" for a target left open, else the target ID.
std::string target_label(const TargetId& t);

// check_kernel_database with a cache that may already hold the .dat files (prefetch_kernel_database).
DatabaseReport check_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets, FactsCache& cache);
// Reads the Tensile placeholder databases the targets need into `cache` (nothing reported).
void prefetch_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets, FactsCache& cache);

// Tensile: one target's check of a rocBLAS or hipBLASLt library directory (tensile_database.cpp).
void check_tensile_target(const DatabaseDir& db, const TargetId& t, FactsCache& cache, Findings& f);
// Tensile: the placeholder databases "<base>/<prefix>.dat", each read once per cache (by several threads).
std::vector<const ParsedDat*> read_placeholders(const std::string& base, const std::vector<std::string>& prefixes,
                                                FactsCache& cache);
// AITER: one target's check of an hsa/ directory (aiter_database.cpp).
void check_aiter_target(const std::string& hsa, const TargetId& t, FactsCache& cache, Findings& f);
// AITER: the processors an hsa/ directory ships (its gfx* subdirectories with a .csv below).
std::vector<std::string> aiter_processors(const DatabaseFiles& files, const std::string& hsa);

}  // namespace hipguard::kdb
