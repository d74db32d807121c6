// Kernel databases inside archives and container images (internal): their files kept aside as the
// archives are read (bytes in an unlinked temporary file, names in memory), then each archive's
// databases checked over those files as over the same files installed, with the facts of the
// archive's own code objects, and named after the archive's members.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "databases/kernel_database_internal.h"
#include "hipguard/check_paths.h"
#include "hipguard/kernel_database.h"

namespace hipguard {

class ArchiveDatabases : public kdb::DatabaseFiles {
 public:
  explicit ArchiveDatabases(const std::vector<TargetId>& targets);
  ~ArchiveDatabases() override;
  ArchiveDatabases(const ArchiveDatabases&) = delete;
  ArchiveDatabases& operator=(const ArchiveDatabases&) = delete;

  // What the archive walks hand over: Tensile's .dat files (TensileLibrary*, TensileLiteLibrary*,
  // hipblasltExtOpLibrary.dat; only the names of those named after processors no target has),
  // AITER's .csv files below an hsa/ directory, and links. Thread-safe.
  const ArchiveReader::SideFiles* side_files() const { return &side_; }
  // An archive member's checked image (delivery order): its code objects' facts, and that it exists.
  void observe(const ImageReport& img);
  // One report per database found in an archive read whole (path "ARCHIVE!dir", like its members),
  // as check_kernel_database says them of the files installed; HG119 for an archive whose database
  // files could not be kept.
  std::vector<FileReport> check();

  // The files kept aside, a tree per archive (member prefix): "<tree>/path" for "PREFIX!path".
  bool is_file(const std::string& path) const override;
  bool is_directory(const std::string& path) const override;
  std::vector<Entry> list(const std::string& dir) const override;
  Result<kdb::FileBytes> read(const std::string& path, uint64_t limit) const override;

 private:
  struct File {
    enum class Kept { Bytes, Name, TooBig };  // its bytes, its name only, its size only (over the budget)
    Kept kept = Kept::Name;
    uint64_t offset = 0, size = 0;  // in the temporary file
  };
  struct Tree {
    std::string prefix;         // its members' names start so: "pkg.deb!", "img!tag!"
    std::string root;           // its paths start so (a name no real path has)
    bool has_database = false;  // a database file was handed over
    std::string lost;           // why a database file could not be kept ("": all were)
  };
  ArchiveReader::Want wants(const std::string& member) const;
  void take(const std::string& member, Bytes data, const Diagnostic* problem);
  void link(const std::string& member, const std::string& target, bool hard);
  bool for_another_processor(std::string_view file_name) const;
  // The tree path of `member` (added with its directories), "" when it cannot be placed. Requires mu_.
  std::string add(const std::string& member, Tree** tree = nullptr);
  Result<File> keep_bytes(Bytes data);                // its place in the temporary file; requires mu_
  void resolve_links();                               // requires mu_
  std::vector<FileReport> check_tree(const Tree& t);  // requires mu_

  std::vector<TargetId> targets_;
  ArchiveReader::SideFiles side_;
  std::mutex mu_;
  std::vector<Tree> trees_;
  std::map<std::string, size_t> tree_of_;                        // prefix -> index in trees_
  std::map<std::string, File> files_;                            // by tree path
  std::map<std::string, std::map<std::string, bool>> children_;  // directory -> name -> is a directory
  std::map<std::string, CodeObjectFacts> facts_;                 // by tree path
  std::vector<std::pair<std::string, std::string>> links_;       // tree path -> its target's tree path
  std::set<std::string> incomplete_;                             // archives not read whole
  std::optional<SpillFile> spill_;                               // the bytes kept
  std::string spill_error_;                                      // why there is none
  uint64_t spill_size_ = 0;                                      // bytes reserved in it
  FileData spill_map_;                                           // mapped once the archives are read
};

}  // namespace hipguard
