// Kernel databases inside archives and container images (internal): their files kept aside as the
// archives are read (bytes in an unlinked temporary file, names in memory), then each archive's
// databases checked over those files as over the same files installed, with the facts of the
// archive's own code objects, and named after the archive's members.
#pragma once

#include <map>
#include <mutex>
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
  // hipblasltExtOpLibrary.dat; only the names of those for a processor no target has) and AITER's
  // .csv files below an hsa/ directory. Thread-safe.
  const ArchiveReader::SideFiles* side_files() const { return &side_; }
  // An archive member's checked image (delivery order): its code objects' facts, and that it exists.
  void observe(const ImageReport& img);
  // One report per database found in an archive (path "ARCHIVE!dir", like its members), as
  // check_kernel_database says them of the files installed.
  std::vector<FileReport> check();

  // The files kept aside, as a tree per archive: "ARCHIVE/path" for the member "ARCHIVE!path".
  bool is_file(const std::string& path) const override;
  bool is_directory(const std::string& path) const override;
  std::vector<Entry> list(const std::string& dir) const override;
  Result<kdb::FileBytes> read(const std::string& path, uint64_t limit) const override;

 private:
  struct File {
    uint64_t offset = 0, size = 0;  // in the temporary file
  };
  ArchiveReader::Want wants(const std::string& member) const;
  void take(const std::string& member, Bytes data, const Diagnostic* problem);
  bool for_another_processor(std::string_view file_name) const;
  // The tree path of `member` (its tree's root in *root), "" when it cannot be placed. Requires mu_.
  std::string add(const std::string& member, std::string* root = nullptr);
  bool map_spill();

  std::vector<TargetId> targets_;
  ArchiveReader::SideFiles side_;
  std::mutex mu_;
  std::map<std::string, File> files_;                            // by tree path
  std::map<std::string, std::map<std::string, bool>> children_;  // directory -> name -> is a directory
  std::vector<std::string> roots_;                               // trees that hold a database file
  std::map<std::string, CodeObjectFacts> facts_;                 // by tree path
  int spill_fd_ = -1;                                            // the unlinked temporary file holding the bytes taken
  uint64_t spill_size_ = 0;                                      // bytes reserved in it
  const uint8_t* spill_map_ = nullptr;
};

}  // namespace hipguard
