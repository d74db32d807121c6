// check_paths' kernel-database step: the code objects seen below a database, its .dat files read ahead, the check.
#include "databases/database_hook.h"

#include <algorithm>
#include <filesystem>

namespace hipguard {

DatabaseHook::DatabaseHook(const std::vector<std::string>& paths, const std::vector<TargetId>& targets)
    : targets_(targets), archives_(targets) {
  for (const auto& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) continue;
    for (auto& d : find_kernel_databases(p))
      if (std::none_of(dbs_.begin(), dbs_.end(), [&](const DatabaseDir& x) { return x.path == d.path; }))
        dbs_.push_back(std::move(d));
  }
  if (dbs_.empty()) return;
  lookup_ = [this](const std::string& path) -> const CodeObjectFacts* {
    auto it = seen_.find(path);
    return it == seen_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i < dbs_.size(); ++i) caches_.push_back(std::make_unique<kdb::FactsCache>(lookup_));
  // The databases' own files (.dat) are read while the files are checked; finish() waits for them.
  try {
    prefetch_ = std::thread([this] {
      for (size_t i = 0; i < dbs_.size(); ++i) {
        try {
          kdb::prefetch_kernel_database(dbs_[i], targets_, *caches_[i]);
        } catch (...) {
          // finish() reads again what is missing, and reports it
        }
      }
    });
  } catch (...) {
    // no thread: finish() reads them
  }
}

DatabaseHook::~DatabaseHook() {
  if (prefetch_.joinable()) prefetch_.join();
}

void DatabaseHook::observe(const ImageReport& img) {
  archives_.observe(img);
  if (img.code_objects.empty() || !img.location.empty()) return;  // whole files only
  for (const auto& d : dbs_)
    if (img.origin.size() > d.path.size() && img.origin.compare(0, d.path.size(), d.path) == 0 &&
        img.origin[d.path.size()] == '/') {
      CodeObjectFacts f;  // the entries the check parsed: with targets, those selected for them
      for (const auto& c : img.code_objects) f.entries.push_back(facts_of(c.co));
      seen_.emplace(img.origin, std::move(f));
      return;
    }
}

void DatabaseHook::finish(const std::function<void(FileReport&&)>& deliver) {
  if (prefetch_.joinable()) prefetch_.join();
  for (size_t i = 0; i < dbs_.size(); ++i)
    deliver(database_file_report(kdb::check_kernel_database(dbs_[i], targets_, *caches_[i])));
  for (auto& r : archives_.check()) deliver(std::move(r));
}

std::unique_ptr<DatabaseStep> kernel_database_step(const std::vector<std::string>& paths,
                                                   const std::vector<TargetId>& targets) {
  return std::make_unique<DatabaseHook>(paths, targets);
}

FileReport database_file_report(DatabaseReport&& r) {
  FileReport f;
  f.path = r.path;
  f.hip = true;
  f.diagnostics = std::move(r.diagnostics);
  return f;
}

}  // namespace hipguard
