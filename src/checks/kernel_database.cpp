// Kernel databases: finding them, the shared checks, and Tensile's (rocBLAS, hipBLASLt) loader rules.
#include "hipguard/kernel_database.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <atomic>
#include <set>
#include <unordered_set>
#include <thread>

#include "checks/kernel_database_internal.h"
#include "hipguard/check.h"
#include "hipguard/inputs.h"

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

std::optional<FileData> read_file(const std::string& path, uint64_t limit, std::string* error) {
  auto file = FileData::open(path, kCliMapAbove);  // mapped above 1 MiB: parsed in place, never copied
  if (!file) return *error = file.error().message, std::nullopt;
  if (file->bytes().size() > limit) return *error = "larger than " + std::to_string(limit) + " bytes", std::nullopt;
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

bool has_kernel(const CodeObjectFacts::Entry& f, const std::string& name) {
  return std::binary_search(f.kernels.begin(), f.kernels.end(), kernel_name_hash(name));
}

std::string target_label(const TargetId& t) { return t.str(); }

}  // namespace kdb

namespace {
namespace fs = std::filesystem;
using namespace kdb;

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

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

// One target of a Tensile library directory.
class TensileCheck {
 public:
  TensileCheck(const DatabaseDir& db, const TargetId& t, FactsCache& cache, Findings& f)
      : db_(db), t_(t), p_(t.processor), cache_(cache), f_(f) {}
  void run();

 private:
  std::string database_path();
  void check_placeholder(const std::string& prefix, const ParsedDat& parsed);
  void check_extops();
  void check_solutions(const std::string& dat, const std::vector<CompactSolution>& sols, const std::string& prefix);
  // The code object file SolutionAdapter would load for `name`, or null (a finding said why).
  const CodeObjectFacts::Entry* load(const std::string& name, const std::string& dat, size_t users);
  bool lite() const { return db_.kind == DatabaseKind::Hipblaslt; }

  const DatabaseDir& db_;
  const TargetId& t_;
  std::string p_, base_;
  FactsCache& cache_;
  Findings& f_;
  const CodeObjectFacts::Entry* helper_ = nullptr;
  std::unordered_set<uint64_t> kernels_;  // kernel_name_hash
};

std::string TensileCheck::database_path() {
  base_ = db_.path;
  if (is_dir(base_ + "/" + p_)) base_ += "/" + p_;  // both libraries: TestPath(path + "/" + processor)
  std::vector<std::string> tries{base_ + "/TensileLibrary_lazy_" + p_ + ".dat"};
  if (!lite()) tries.push_back(base_ + "/TensileLibrary_" + p_ + ".dat"), tries.push_back(base_ + "/TensileLibrary.dat");
  for (const auto& path : tries)
    if (is_regular_file(path)) return path;
  std::string quote = lite() ? "rocblaslt error: Cannot read " + tries.back() + ": No such file or directory"
                             : "rocBLAS error: Cannot read " + tries.back() + ": No such file or directory for GPU arch : " + p_;
  std::string tried;
  for (const auto& path : tries) tried += (tried.empty() ? "" : ", ") + fs::path(path).filename().string();
  f_.add(code::kDatabaseMissing, db_.path, "",
         "no kernel database for " + p_ + " (tried " + tried + "): the library reports \"" + quote + "\"" +
             (lite() ? " and finds no GEMM solution" : " and aborts the process"),
         "install the library build that ships " + p_ + " (its TensileLibrary_lazy_" + p_ +
             ".dat), or run on a GPU it ships kernels for",
         missing_database_severity(base_, p_, false));
  return "";
}

const CodeObjectFacts::Entry* TensileCheck::load(const std::string& name, const std::string& dat, size_t users) {
  size_t dot = name.rfind('.');
  std::string stem = name.substr(0, dot), ext = dot == std::string::npos ? "" : name.substr(dot);
  std::string existing, why_not;
  for (const char* v : {"", "-xnack-", "-xnack+"}) {
    std::string path = base_ + "/" + stem + v + ext;
    if (!is_regular_file(path)) continue;
    cache_.mark_opened(path);
    const CodeObjectFacts& facts = cache_.get(path);
    std::string why;
    if (const CodeObjectFacts::Entry* e = loadable_on(facts, t_, &why)) return e;
    existing += (existing.empty() ? "" : ", ") + fs::path(path).filename().string();
    why_not += (why_not.empty() ? "" : "; ") + fs::path(path).filename().string() + ": " + why;
  }
  std::string n = std::to_string(users) + " solution(s) of " + fs::path(dat).filename().string();
  if (existing.empty())
    f_.add(code::kDatabaseFileMissing, base_ + "/" + name, "",
           "code object " + name + " (or its -xnack-/-xnack+ variant), needed by " + n +
               ", does not exist: Tensile's SolutionAdapter gets hipErrorFileNotFound and the launch fails",
           "reinstall the library; the file belongs to its package");
  else
    f_.add(code::kDatabaseCodeObjectMismatch, base_ + "/" + name, "",
           "no code object for " + t_.str() + " among " + existing + " (needed by " + n + "): " + why_not +
               "; hipModuleLoadData refuses it and the launch fails",
           "install the code objects built for " + t_.str() + " (the library package for this GPU)");
  return nullptr;
}

// The kernel of solution `index` of a .dat (read again: only names that go into a finding are kept).
std::string solution_name(const std::string& dat, uint32_t index) {
  std::string error;
  std::vector<TensileSolution> sols;
  auto file = read_file(dat, kMaxDatabaseFileBytes, &error);
  if (file && read_tensile_solutions(text_of(*file), &sols, &error) && index < sols.size()) return sols[index].kernel;
  return "#" + std::to_string(index);
}

void TensileCheck::check_solutions(const std::string& dat, const std::vector<CompactSolution>& sols,
                                   const std::string& prefix) {
  // Solutions grouped by the code object file PlaceholderLibrary::getCodeObjectFileName names.
  std::map<std::string, std::vector<const CompactSolution*>> by_file;
  for (const auto& s : sols) {
    std::string file = prefix + ".co";
    if (!lite() && s.source_kernel)
      file = prefix + (prefix.find("fallback") != std::string::npos ? "_" + p_ + ".hsaco" : ".hsaco");
    by_file[file].push_back(&s);
  }
  f_.counts().entries += sols.size();
  for (const auto& [file, users] : by_file) {
    const CodeObjectFacts::Entry* co = load(file, dat, users.size());
    if (!co) continue;
    for (const CompactSolution* s : users) {
      auto found = [&](const CodeObjectFacts::Entry& e) {
        return std::binary_search(e.kernels.begin(), e.kernels.end(), s->kernel_hash);
      };
      if (found(*co) || (helper_ && found(*helper_))) {
        kernels_.insert(s->kernel_hash);
        continue;
      }
      std::string kernel = solution_name(dat, s->index);
      f_.add(code::kDatabaseKernelMissing, base_ + "/" + file, kernel,
             "solution of " + fs::path(dat).filename().string() + " names kernel '" + kernel +
                 "', which is not in the metadata of " + file +
                 " (nor in the helper Kernels.so-000): hipModuleGetFunction returns hipErrorNotFound and the GEMM fails",
             "reinstall the library: its database and code objects come from different builds");
    }
  }
}

void TensileCheck::check_placeholder(const std::string& prefix, const ParsedDat& parsed) {
  std::string dat = base_ + "/" + prefix + ".dat";
  if (!parsed.exists) {
    f_.add(code::kDatabaseFileMissing, dat, "",
           "the lazy database names library " + prefix + ", whose " + prefix +
               ".dat does not exist: Tensile's LoadLibraryFile says \"Error loading " + dat +
               " (msgpack):\\nFailed to open file\" (with TENSILE_DB) and returns no library; the placeholder is then "
               "used without one",
           "reinstall the library; the file belongs to its package");
    return;
  }
  ++f_.counts().databases;
  if (!parsed.error.empty()) {
    f_.add(code::kDatabaseMalformed, dat, "", "cannot read this Tensile database: " + parsed.error +
           "; Tensile's LoadLibraryFile says \"Error loading msgpack data\" and returns no library",
           "reinstall the library; the file is damaged");
    return;
  }
  check_solutions(dat, parsed.solutions, prefix);
}

// The placeholder databases of one lazy database, read by several threads (each file once per database).
std::vector<const ParsedDat*> read_placeholders(const std::string& base, const std::vector<std::string>& prefixes,
                                                 FactsCache& cache) {
  std::vector<const ParsedDat*> out(prefixes.size());
  std::vector<std::pair<size_t, ParsedDat*>> todo;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    auto [dat, fresh] = cache.dat(base + "/" + prefixes[i] + ".dat");
    out[i] = dat;
    if (fresh) todo.emplace_back(i, dat);
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next.fetch_add(1)) < todo.size();) {
      ParsedDat& d = *todo[j].second;
      std::string path = base + "/" + prefixes[todo[j].first] + ".dat";
      d.exists = is_regular_file(path);
      if (!d.exists) continue;
      auto file = read_file(path, kMaxDatabaseFileBytes, &d.error);
      std::vector<TensileSolution> sols;
      if (file && !read_tensile_solutions(text_of(*file), &sols, &d.error) && d.error.empty()) d.error = "unreadable";
      if (!d.error.empty()) continue;
      d.solutions.reserve(sols.size());
      for (size_t k = 0; k < sols.size() && k <= UINT32_MAX; ++k)
        d.solutions.push_back({kernel_name_hash(sols[k].kernel), uint32_t(k), sols[k].source_kernel});
    }
  };
  unsigned n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), todo.size());
  std::vector<std::thread> threads;
  try {
    for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
  } catch (...) {
    // no more threads: this one does the rest
  }
  work();
  for (auto& t : threads) t.join();
  return out;
}

// hipBLASLt's extension ops: each entry's code object (beside the .dat) and kernel, for this processor.
void TensileCheck::check_extops() {
  std::string dat = db_.path + "/hipblasltExtOpLibrary.dat", error;
  if (!lite() || !is_regular_file(dat)) return;
  std::vector<ExtOpEntry> entries;
  auto file = read_file(dat, kMaxDatabaseFileBytes, &error);
  if (!file || !read_extop_entries(text_of(*file), p_, &entries, &error)) {
    f_.add(code::kDatabaseMalformed, dat, "", "cannot read hipBLASLt's extension op database: " + error,
           "reinstall the library; the file is damaged");
    return;
  }
  if (entries.empty()) return;  // no ext ops for this processor: hipBLASLt's softmax etc. are then not supported
  ++f_.counts().databases;
  f_.counts().entries += entries.size();
  std::string saved = base_;
  base_ = db_.path;  // the ext op library folder: the .dat's own directory
  std::map<std::string, std::vector<const ExtOpEntry*>> by_file;
  for (const auto& e : entries) by_file[e.code_object].push_back(&e);
  for (const auto& [co_path, users] : by_file) {
    const CodeObjectFacts::Entry* co = load(co_path, dat, users.size());
    for (const ExtOpEntry* e : co ? users : std::vector<const ExtOpEntry*>{}) {
      if (has_kernel(*co, e->kernel)) {
        kernels_.insert(kernel_name_hash(e->kernel));
        continue;
      }
      f_.add(code::kDatabaseKernelMissing, base_ + "/" + co_path, e->kernel,
             "hipblasltExtOpLibrary.dat names kernel '" + e->kernel + "' in " + co_path +
                 ", whose metadata does not have it: hipModuleGetFunction returns hipErrorNotFound and the ext op fails",
             "reinstall the library: its database and code objects come from different builds");
    }
  }
  base_ = saved;
}

void TensileCheck::run() {
  std::string top = database_path();
  if (top.empty()) return;
  ++f_.counts().databases;
  // The helper code object SolutionAdapter::initializeLazyLoading loads (its failure is ignored).
  std::string helper = "Kernels.so-000-" + p_ + ".hsaco", error;
  bool any = false;
  for (const char* v : {"", "-xnack-", "-xnack+"}) {
    std::string path = base_ + "/Kernels.so-000-" + p_ + v + ".hsaco", why;
    if (!is_regular_file(path)) continue;
    any = true;
    cache_.mark_opened(path);
    if ((helper_ = loadable_on(cache_.get(path), t_, &why))) break;
  }
  if (!helper_)
    f_.add(code::kDatabaseHelperMissing, base_ + "/" + helper, "",
           std::string(any ? "no helper code object for " + t_.str() + " among Kernels.so-000-" + p_ + "*.hsaco"
                           : helper + " (or its -xnack-/-xnack+ variant) does not exist") +
               ": SolutionAdapter::initializeLazyLoading fails silently, and solutions that need its helper kernels "
               "(beta-only, output conversion) fail at launch",
           "reinstall the library; the file belongs to its package");
  std::string name = fs::path(top).filename().string();
  bool lazy = name.rfind("TensileLibrary_lazy_", 0) == 0;
  auto file = read_file(top, kMaxDatabaseFileBytes, &error);
  if (!file) {
    f_.add(code::kDatabaseMalformed, top, "", "cannot read: " + error, "check the file's permissions");
  } else if (lazy) {
    std::vector<std::string> prefixes;
    if (!read_tensile_placeholders(text_of(*file), &prefixes, &error))
      f_.add(code::kDatabaseMalformed, top, "",
             "cannot read this lazy Tensile database: " + error + "; the library reports \"" +
                 (lite() ? "rocblaslt error: Could not load " : "rocBLAS error: Could not load ") + top + "\"",
             "reinstall the library; the file is damaged");
    std::vector<const ParsedDat*> parsed = read_placeholders(base_, prefixes, cache_);
    for (size_t i = 0; i < prefixes.size(); ++i) check_placeholder(prefixes[i], *parsed[i]);
    check_extops();
  } else {
    // A whole (not lazy) database: its solutions are in the file itself, their kernels in the code objects
    // "*<processor>*co" rocBLAS loads at start; hipguard checks the lazy layout only.
    f_.add(code::kDatabaseChecked, top, "", "not a lazy-loading database: its code objects are not cross-checked",
           "none needed");
  }
  f_.counts().code_objects = cache_.opened();
  f_.counts().kernels = kernels_.size();
}

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
      else TensileCheck(db, t, cache, f).run();
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
    std::string base = db.path, error;
    if (is_dir(base + "/" + t.processor)) base += "/" + t.processor;
    auto file = read_file(base + "/TensileLibrary_lazy_" + t.processor + ".dat", kMaxDatabaseFileBytes, &error);
    std::vector<std::string> prefixes;
    if (file && read_tensile_placeholders(text_of(*file), &prefixes, &error)) read_placeholders(base, prefixes, cache);
  }
}

}  // namespace kdb

DatabaseReport check_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets,
                                     const FactsLookup& lookup) {
  FactsCache cache(lookup);
  return kdb::check_kernel_database(db, targets, cache);
}

}  // namespace hipguard

