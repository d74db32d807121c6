// check_paths' kernel-database step (internal): remembers the code objects checked below a database, then checks it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "databases/archive_databases.h"
#include "databases/kernel_database_internal.h"
#include "hipguard/check_paths.h"
#include "hipguard/kernel_database.h"

namespace hipguard {

class DatabaseHook : public DatabaseStep {
 public:
  // Finds the databases below the directory arguments among `paths`.
  // Starts reading their .dat files in a thread of its own. Those inside archives and images are
  // found as the archives are read (ArchiveDatabases).
  DatabaseHook(const std::vector<std::string>& paths, const std::vector<TargetId>& targets);
  ~DatabaseHook() override;
  DatabaseHook(const DatabaseHook&) = delete;
  DatabaseHook& operator=(const DatabaseHook&) = delete;
  // A checked image: a raw code object below a database, or an archive's member, keeps its facts
  // (no second parse).
  void observe(const ImageReport& img) override;
  const ArchiveReader::SideFiles* archive_files() override { return archives_.side_files(); }
  // Checks every database and hands each report to `deliver`.
  void finish(const std::function<void(FileReport&&)>& deliver) override;

 private:
  std::vector<DatabaseDir> dbs_;
  std::vector<TargetId> targets_;
  std::map<std::string, CodeObjectFacts> seen_;
  FactsLookup lookup_;
  std::vector<std::unique_ptr<kdb::FactsCache>> caches_;  // one per database, filled by prefetch_ then finish()
  std::thread prefetch_;
  ArchiveDatabases archives_;
};

// A database's report as a FileReport (path: the database directory), so every output format carries it.
FileReport database_file_report(DatabaseReport&& r);

}  // namespace hipguard
