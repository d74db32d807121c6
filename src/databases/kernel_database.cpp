// Kernel databases: finding them, the checks shared by Tensile (tensile_database.cpp) and AITER
// (aiter_database.cpp), and a database's check per target.
#include "hipguard/kernel_database.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "databases/kernel_database_internal.h"
#include "hipguard/check.h"
#include "hipguard/check_paths.h"

namespace hipguard {

std::string_view to_string(DatabaseKind k) {
  switch (k) {
    case DatabaseKind::Rocblas: return "rocBLAS (Tensile)";
    case DatabaseKind::Hipblaslt: return "hipBLASLt (TensileLite)";
    case DatabaseKind::Aiter: return "AITER";
  }
  return "?";
}

uint64_t kernel_name_hash(std::string_view name) { return std::hash<std::string_view>{}(name); }

CodeObjectFacts::Entry facts_of(const CodeObject& co) {
  CodeObjectFacts::Entry f;
  f.target = co.target;
  f.generic_version = co.generic_version;
  f.kernels.reserve(co.kernels.size());
  for (const auto& k : co.kernels) f.kernels.push_back(kernel_name_hash(k.name));
  std::sort(f.kernels.begin(), f.kernels.end());
  return f;
}

namespace kdb {

namespace {

// The disk: files mapped above 1 MiB (parsed in place, never copied).
class DiskFiles : public DatabaseFiles {
 public:
  bool is_file(const std::string& path) const override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  bool is_directory(const std::string& path) const override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  std::vector<Entry> list(const std::string& dir) const override {
    std::vector<Entry> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code ec2, ec3, ec4;
      out.push_back(
          {it->path().filename().string(), !it->is_symlink(ec2) && it->is_directory(ec3), it->is_regular_file(ec4)});
    }
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return out;
  }
  Result<FileBytes> read(const std::string& path, uint64_t limit) const override {
    auto file = FileData::open(path, kCliMapAbove);
    if (!file) return file.error();
    if (file->bytes().size() > limit)
      return ParseError{Code::kBudgetExceeded, "larger than " + std::to_string(limit) + " bytes"};
    Bytes bytes = file->bytes();
    return FileBytes{std::move(*file), bytes};
  }
};

}  // namespace

const DatabaseFiles& disk_files() {
  static const DiskFiles disk;
  return disk;
}

std::string_view text_of(const FileBytes& f) {
  return std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
}

const CodeObjectFacts& FactsCache::get(const std::string& path) {
  if (lookup_)
    if (const CodeObjectFacts* f = lookup_(path)) return *f;
  auto it = own_.find(path);
  if (it != own_.end()) return it->second;
  CodeObjectFacts& f = own_[path];
  auto file = files_.read(path, UINT64_MAX);
  if (!file) {
    f.error = file.error().message;
    return f;
  }
  Bytes data = file->bytes;
  PayloadKind kind = classify(data);
  if (kind != PayloadKind::CodeObject && kind != PayloadKind::OffloadBundle && kind != PayloadKind::CompressedBundle) {
    f.error = "neither a code object nor an offload bundle";
    return f;
  }
  ImageReport img = check_image(data, path, {});  // no target: every AMDGPU entry is read
  for (const auto& c : img.code_objects) f.entries.push_back(facts_of(c.co));
  if (f.entries.empty())
    f.error = img.diagnostics.empty() ? "no AMDGPU code object in it" : img.diagnostics.front().message;
  return f;
}

void Findings::add(Code code, const std::string& file, const std::string& kernel, std::string message, std::string fix,
                   std::optional<Severity> severity) {
  Diagnostic d = make_diagnostic(code, file, std::move(message), std::move(fix));
  if (severity) d.severity = *severity;
  if (d.severity != Severity::Note) ++s_.findings;
  if (d.severity != Severity::Note && s_.findings > kMaxDatabaseFindings) {
    ++dropped_;
    return;
  }
  d.kernel = kernel;
  d.target = target_;
  r_.diagnostics.push_back(std::move(d));
}

void Findings::summary() {
  std::string m = std::string(to_string(r_.kind)) + " database for " + target_ + ": " + std::to_string(s_.databases) +
                  " database file(s), " + std::to_string(s_.entries) + " entries, " + std::to_string(s_.code_objects) +
                  " code object file(s) and " + std::to_string(s_.kernels) + " kernel(s) cross-checked";
  if (dropped_) m += "; " + std::to_string(dropped_) + " more finding(s) not listed";
  Diagnostic d = make_diagnostic(Code::kDatabaseChecked, r_.path, m, "none needed");
  d.target = target_;
  r_.diagnostics.push_back(std::move(d));
}

Result<const CodeObjectFacts::Entry*> loadable_on(const CodeObjectFacts& f, const TargetId& t) {
  auto not_loadable = [](std::string why) { return ParseError{Code::kDatabaseCodeObjectMismatch, std::move(why)}; };
  if (f.entries.empty()) return not_loadable("not a code object hipguard can read: " + f.error);
  const CodeObjectFacts::Entry* generic = nullptr;
  std::string built;
  for (const auto& e : f.entries) {  // native before generic, as CLR's selection
    MatchResult m = match_target(e.target, e.generic_version, t);
    if (m.kind == Match::Native) return &e;
    if (m.kind == Match::Generic && !generic) generic = &e;
    built += (built.empty() ? "" : ", ") + e.target.str() + (m.detail.empty() ? "" : " (" + m.detail + ")");
  }
  if (!generic) return not_loadable("built for " + built);
  return generic;
}

bool has_code_for(const DatabaseFiles& files, const std::string& dir, const std::string& processor, bool recursive) {
  for (const auto& e : files.list(dir)) {
    const std::string& n = e.name;
    if (e.file && n.find(processor) != std::string::npos && n.size() >= 2 && n.compare(n.size() - 2, 2, "co") == 0)
      return true;
    if (recursive && e.directory && has_code_for(files, dir + "/" + n, processor, true)) return true;
  }
  return false;
}

Severity missing_database_severity(const DatabaseFiles& files, const std::string& dir, const std::string& processor,
                                   bool recursive) {
  return has_code_for(files, dir, processor, recursive) ? Severity::Error : Severity::Note;
}

bool has_kernel(const CodeObjectFacts::Entry& f, const std::string& name) {
  return std::binary_search(f.kernels.begin(), f.kernels.end(), kernel_name_hash(name));
}

std::string target_label(const TargetId& t) { return t.str(); }

}  // namespace kdb

namespace {
namespace fs = std::filesystem;
using namespace kdb;

// What a directory holds, for find_kernel_databases.
std::optional<DatabaseKind> kind_of(const DatabaseFiles& files, const std::string& dir) {
  bool tensile = false, lite = false;
  for (const auto& e : files.list(dir)) {
    const std::string& n = e.name;
    if (n.rfind("TensileLibrary", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".dat") == 0) tensile = true;
    if (n == "TensileLiteLibrary_lazy_Mapping.dat" || n == "hipblasltExtOpLibrary.dat") lite = true;
  }
  if (tensile) return lite ? DatabaseKind::Hipblaslt : DatabaseKind::Rocblas;
  std::string_view base = std::string_view(dir).substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
  if (base == "hsa" && !aiter_processors(files, dir).empty()) return DatabaseKind::Aiter;
  return std::nullopt;
}

}  // namespace

namespace kdb {

std::vector<DatabaseDir> find_kernel_databases(const DatabaseFiles& files, const std::string& dir) {
  std::vector<DatabaseDir> out;
  std::string top = dir;  // "lib/" as "lib": the paths built below then match expand_paths' ("lib/x.co")
  while (top.size() > 1 && top.back() == '/') top.pop_back();
  std::vector<std::string> todo{top};
  while (!todo.empty()) {
    std::string d = std::move(todo.back());
    todo.pop_back();
    if (auto k = kind_of(files, d)) out.push_back({d, *k});
    for (const auto& e : files.list(d))
      if (e.directory) todo.push_back(d + (d == "/" ? "" : "/") + e.name);
  }
  std::sort(out.begin(), out.end(), [](const DatabaseDir& a, const DatabaseDir& b) { return a.path < b.path; });
  return out;
}

}  // namespace kdb

std::vector<DatabaseDir> find_kernel_databases(const std::string& dir) {
  try {
    return kdb::find_kernel_databases(disk_files(), dir);
  } catch (...) {
    return {};  // a path that cannot be represented: nothing found there
  }
}

namespace {
std::vector<TargetId> shipped_targets(const DatabaseFiles& files, const DatabaseDir& db) {
  std::set<std::string> procs;
  if (db.kind == DatabaseKind::Aiter) {
    for (auto& p : aiter_processors(files, db.path)) procs.insert(p);
  } else {
    const std::string lazy = "TensileLibrary_lazy_";
    for (const auto& e : files.list(db.path)) {
      const std::string& n = e.name;
      if (n.rfind(lazy, 0) == 0 && n.size() > lazy.size() + 4 && n.compare(n.size() - 4, 4, ".dat") == 0)
        procs.insert(n.substr(lazy.size(), n.size() - lazy.size() - 4));
    }
  }
  std::vector<TargetId> out;
  for (const auto& p : procs)
    if (find_processor(p)) {
      TargetId t;
      t.processor = p;
      out.push_back(std::move(t));
    }
  return out;
}

}  // namespace

namespace kdb {

DatabaseReport check_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets, FactsCache& cache) {
  DatabaseReport r;
  r.path = db.path;
  r.kind = db.kind;
  try {
    std::vector<TargetId> ts = targets.empty() ? shipped_targets(cache.files(), db) : targets;
    r.targets.reserve(ts.size());
    for (const auto& t : ts) {  // the cache is shared by the targets: each file is read once
      r.targets.push_back({t.str()});
      cache.reset_opened();
      Findings f(r, r.targets.back(), t.str());
      if (db.kind == DatabaseKind::Aiter) check_aiter_target(db.path, t, cache, f);
      else check_tensile_target(db, t, cache, f);
      f.summary();
    }
  } catch (const std::exception& e) {
    r.diagnostics.push_back(make_diagnostic(Code::kDatabaseMalformed, db.path,
                                            std::string("database check stopped: ") + e.what(), "report this"));
  }
  return r;
}

void prefetch_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets, FactsCache& cache) {
  if (db.kind == DatabaseKind::Aiter) return;
  std::set<std::string> done;
  const DatabaseFiles& files = cache.files();
  for (const auto& t : targets.empty() ? shipped_targets(files, db) : targets) {
    if (!done.insert(t.processor).second) continue;
    std::string base = db.path;
    if (files.is_directory(base + "/" + t.processor)) base += "/" + t.processor;
    auto file = files.read(base + "/TensileLibrary_lazy_" + t.processor + ".dat", kMaxDatabaseFileBytes);
    if (!file) continue;
    if (auto prefixes = read_tensile_placeholders(text_of(*file))) read_placeholders(base, *prefixes, cache);
  }
}

}  // namespace kdb

DatabaseReport check_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets,
                                     const FactsLookup& lookup) {
  FactsCache cache(lookup);
  return kdb::check_kernel_database(db, targets, cache);
}

}  // namespace hipguard
