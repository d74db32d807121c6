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

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<FileData> read_file(const std::string& path, uint64_t limit) {
  auto file = FileData::open(path, kCliMapAbove);  // mapped above 1 MiB: parsed in place, never copied
  if (!file) return file.error();
  if (file->bytes().size() > limit)
    return ParseError{Code::kBudgetExceeded, "larger than " + std::to_string(limit) + " bytes"};
  return std::move(*file);
}

std::string_view text_of(const FileData& f) {
  return std::string_view(reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size());
}

const CodeObjectFacts& FactsCache::get(const std::string& path) {
  if (lookup_)
    if (const CodeObjectFacts* f = lookup_(path)) return *f;
  auto it = own_.find(path);
  if (it != own_.end()) return it->second;
  CodeObjectFacts& f = own_[path];
  auto file = FileData::open(path, kCliMapAbove);
  if (!file) {
    f.error = file.error().message;
    return f;
  }
  Bytes data = file->bytes();
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

void Findings::add(std::string_view code, const std::string& file, const std::string& kernel, std::string message,
                   std::string fix, std::optional<Severity> severity) {
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
  Diagnostic d = make_diagnostic(code::kDatabaseChecked, r_.path, m, "none needed");
  d.target = target_;
  r_.diagnostics.push_back(std::move(d));
}

const CodeObjectFacts::Entry* loadable_on(const CodeObjectFacts& f, const TargetId& t, std::string* why) {
  if (f.entries.empty()) return *why = "not a code object hipguard can read: " + f.error, nullptr;
  const CodeObjectFacts::Entry* generic = nullptr;
  std::string built;
  for (const auto& e : f.entries) {  // native before generic, as CLR's selection
    MatchResult m = match_target(e.target, e.generic_version, t);
    if (m.kind == Match::Native) return &e;
    if (m.kind == Match::Generic && !generic) generic = &e;
    built += (built.empty() ? "" : ", ") + e.target.str() + (m.detail.empty() ? "" : " (" + m.detail + ")");
  }
  if (!generic) *why = "built for " + built;
  return generic;
}

bool has_code_for(const std::string& dir, const std::string& processor, bool recursive) {
  std::error_code ec;
  auto named = [&](const std::filesystem::directory_entry& e) {
    std::string n = e.path().filename().string();
    std::error_code ec2;
    return n.find(processor) != std::string::npos && n.size() >= 2 && n.compare(n.size() - 2, 2, "co") == 0 &&
           e.is_regular_file(ec2);
  };
  if (recursive) {
    for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (named(*it)) return true;
  } else {
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (named(*it)) return true;
  }
  return false;
}

Severity missing_database_severity(const std::string& dir, const std::string& processor, bool recursive) {
  return has_code_for(dir, processor, recursive) ? Severity::Error : Severity::Note;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
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
std::optional<DatabaseKind> kind_of(const fs::path& dir) {
  std::error_code ec;
  bool tensile = false, lite = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (n.rfind("TensileLibrary", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".dat") == 0) tensile = true;
    if (n == "TensileLiteLibrary_lazy_Mapping.dat" || n == "hipblasltExtOpLibrary.dat") lite = true;
  }
  if (tensile) return lite ? DatabaseKind::Hipblaslt : DatabaseKind::Rocblas;
  if (dir.filename() == "hsa" && !aiter_processors(dir.string()).empty()) return DatabaseKind::Aiter;
  return std::nullopt;
}

}  // namespace

std::vector<DatabaseDir> find_kernel_databases(const std::string& dir) {
  std::vector<DatabaseDir> out;
  std::string top = dir;  // "lib/" as "lib": the paths built below then match expand_paths' ("lib/x.co")
  while (top.size() > 1 && top.back() == '/') top.pop_back();
  try {
    std::vector<fs::path> todo{fs::path(top)};
    while (!todo.empty()) {
      fs::path d = std::move(todo.back());
      todo.pop_back();
      if (auto k = kind_of(d)) out.push_back({d.string(), *k});
      std::error_code ec;
      for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code ec2;
        if (!it->is_symlink(ec2) && it->is_directory(ec2)) todo.push_back(it->path());
      }
    }
  } catch (...) {
    // a path that cannot be represented: nothing found there
  }
  std::sort(out.begin(), out.end(), [](const DatabaseDir& a, const DatabaseDir& b) { return a.path < b.path; });
  return out;
}

namespace {
std::vector<TargetId> shipped_targets(const DatabaseDir& db) {
  std::set<std::string> procs;
  if (db.kind == DatabaseKind::Aiter) {
    for (auto& p : aiter_processors(db.path)) procs.insert(p);
  } else {
    std::error_code ec;
    const std::string lazy = "TensileLibrary_lazy_";
    for (fs::directory_iterator it(db.path, ec), end; !ec && it != end; it.increment(ec)) {
      std::string n = it->path().filename().string();
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
    std::vector<TargetId> ts = targets.empty() ? shipped_targets(db) : targets;
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
    r.diagnostics.push_back(make_diagnostic(code::kDatabaseMalformed, db.path,
                                            std::string("database check stopped: ") + e.what(), "report this"));
  }
  return r;
}

void prefetch_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets, FactsCache& cache) {
  if (db.kind == DatabaseKind::Aiter) return;
  std::set<std::string> done;
  for (const auto& t : targets.empty() ? shipped_targets(db) : targets) {
    if (!done.insert(t.processor).second) continue;
    std::string base = db.path;
    if (is_directory(base + "/" + t.processor)) base += "/" + t.processor;
    auto file = read_file(base + "/TensileLibrary_lazy_" + t.processor + ".dat", kMaxDatabaseFileBytes);
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
