// Tensile's kernel databases (rocBLAS, hipBLASLt): for one target, the .dat files the library's loader
// reads and the code object and kernel each solution names (Tensile SolutionAdapter, hipBLASLt's
// extension ops).
#include <atomic>
#include <filesystem>
#include <thread>
#include <unordered_set>

#include "base/run_on_threads.h"
#include "databases/kernel_database_internal.h"
#include "hipguard/check.h"

namespace hipguard::kdb {

namespace fs = std::filesystem;

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
      d.exists = cache.files().is_file(path);
      if (!d.exists) continue;
      auto file = cache.files().read(path, kMaxDatabaseFileBytes);
      auto sols = file ? read_tensile_solutions(text_of(*file)) : file.error();
      if (!sols) {
        d.error = sols.error().message.empty() ? "unreadable" : sols.error().message;
        continue;
      }
      d.solutions.reserve(sols->size());
      for (size_t k = 0; k < sols->size() && k <= UINT32_MAX; ++k)
        d.solutions.push_back({kernel_name_hash((*sols)[k].kernel), uint32_t(k), (*sols)[k].source_kernel});
    }
  };
  run_on_threads(std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), todo.size()), work);
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
  const DatabaseFiles& files() const { return cache_.files(); }

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
  if (files().is_directory(base_ + "/" + p_)) base_ += "/" + p_;  // both libraries: TestPath(path + "/" + processor)
  std::vector<std::string> tries{base_ + "/TensileLibrary_lazy_" + p_ + ".dat"};
  if (!lite())
    tries.push_back(base_ + "/TensileLibrary_" + p_ + ".dat"), tries.push_back(base_ + "/TensileLibrary.dat");
  for (const auto& path : tries)
    if (files().is_file(path)) return path;
  std::string quote =
      lite() ? "rocblaslt error: Cannot read " + tries.back() + ": No such file or directory"
             : "rocBLAS error: Cannot read " + tries.back() + ": No such file or directory for GPU arch : " + p_;
  std::string tried;
  for (const auto& path : tries) tried += (tried.empty() ? "" : ", ") + fs::path(path).filename().string();
  f_.add(Code::kDatabaseMissing, db_.path, "",
         "no kernel database for " + p_ + " (tried " + tried + "): the library reports \"" + quote + "\"" +
             (lite() ? " and finds no GEMM solution" : " and aborts the process"),
         "install the library build that ships " + p_ + " (its TensileLibrary_lazy_" + p_ +
             ".dat), or run on a GPU it ships kernels for",
         missing_database_severity(files(), base_, p_, false));
  return "";
}

const CodeObjectFacts::Entry* TensileCheck::load(const std::string& name, const std::string& dat, size_t users) {
  size_t dot = name.rfind('.');
  std::string stem = name.substr(0, dot), ext = dot == std::string::npos ? "" : name.substr(dot);
  std::string existing, why_not;
  for (const char* v : {"", "-xnack-", "-xnack+"}) {
    std::string path = base_ + "/" + stem + v + ext;
    if (!files().is_file(path)) continue;
    cache_.mark_opened(path);
    const CodeObjectFacts& facts = cache_.get(path);
    Result<const CodeObjectFacts::Entry*> e = loadable_on(facts, t_);
    if (e) return *e;
    existing += (existing.empty() ? "" : ", ") + fs::path(path).filename().string();
    why_not += (why_not.empty() ? "" : "; ") + fs::path(path).filename().string() + ": " + e.error().message;
  }
  std::string n = std::to_string(users) + " solution(s) of " + fs::path(dat).filename().string();
  if (existing.empty())
    f_.add(Code::kDatabaseFileMissing, base_ + "/" + name, "",
           "code object " + name + " (or its -xnack-/-xnack+ variant), needed by " + n +
               ", does not exist: Tensile's SolutionAdapter gets hipErrorFileNotFound and the launch fails",
           "reinstall the library; the file belongs to its package");
  else
    f_.add(Code::kDatabaseCodeObjectMismatch, base_ + "/" + name, "",
           "no code object for " + t_.str() + " among " + existing + " (needed by " + n + "): " + why_not +
               "; hipModuleLoadData refuses it and the launch fails",
           "install the code objects built for " + t_.str() + " (the library package for this GPU)");
  return nullptr;
}

// The kernel of solution `index` of a .dat (read again: only names that go into a finding are kept).
std::string solution_name(const DatabaseFiles& files, const std::string& dat, uint32_t index) {
  auto file = files.read(dat, kMaxDatabaseFileBytes);
  auto sols = file ? read_tensile_solutions(text_of(*file)) : file.error();
  if (sols && index < sols->size()) return (*sols)[index].kernel;
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
      std::string kernel = solution_name(files(), dat, s->index);
      f_.add(
          Code::kDatabaseKernelMissing, base_ + "/" + file, kernel,
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
    f_.add(Code::kDatabaseFileMissing, dat, "",
           "the lazy database names library " + prefix + ", whose " + prefix +
               ".dat does not exist: Tensile's LoadLibraryFile says \"Error loading " + dat +
               " (msgpack):\\nFailed to open file\" (with TENSILE_DB) and returns no library; the placeholder is then "
               "used without one",
           "reinstall the library; the file belongs to its package");
    return;
  }
  ++f_.counts().databases;
  if (!parsed.error.empty()) {
    f_.add(Code::kDatabaseMalformed, dat, "",
           "cannot read this Tensile database: " + parsed.error +
               "; Tensile's LoadLibraryFile says \"Error loading msgpack data\" and returns no library",
           "reinstall the library; the file is damaged");
    return;
  }
  check_solutions(dat, parsed.solutions, prefix);
}

// hipBLASLt's extension ops: each entry's code object (beside the .dat) and kernel, for this processor.
void TensileCheck::check_extops() {
  std::string dat = db_.path + "/hipblasltExtOpLibrary.dat";
  if (!lite() || !files().is_file(dat)) return;
  auto file = files().read(dat, kMaxDatabaseFileBytes);
  auto read = file ? read_extop_entries(text_of(*file), p_) : file.error();
  if (!read) {
    f_.add(Code::kDatabaseMalformed, dat, "", "cannot read hipBLASLt's extension op database: " + read.error().message,
           "reinstall the library; the file is damaged");
    return;
  }
  const std::vector<ExtOpEntry>& entries = *read;
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
      f_.add(
          Code::kDatabaseKernelMissing, base_ + "/" + co_path, e->kernel,
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
  std::string helper = "Kernels.so-000-" + p_ + ".hsaco";
  bool any = false;
  for (const char* v : {"", "-xnack-", "-xnack+"}) {
    std::string path = base_ + "/Kernels.so-000-" + p_ + v + ".hsaco";
    if (!files().is_file(path)) continue;
    any = true;
    cache_.mark_opened(path);
    // Why a variant cannot be loaded is not said: HG706 below says what is missing.
    if (Result<const CodeObjectFacts::Entry*> e = loadable_on(cache_.get(path), t_)) {
      helper_ = *e;
      break;
    }
  }
  if (!helper_)
    f_.add(Code::kDatabaseHelperMissing, base_ + "/" + helper, "",
           std::string(any ? "no helper code object for " + t_.str() + " among Kernels.so-000-" + p_ + "*.hsaco"
                           : helper + " (or its -xnack-/-xnack+ variant) does not exist") +
               ": SolutionAdapter::initializeLazyLoading fails silently, and solutions that need its helper kernels "
               "(beta-only, output conversion) fail at launch",
           "reinstall the library; the file belongs to its package");
  std::string name = fs::path(top).filename().string();
  bool lazy = name.rfind("TensileLibrary_lazy_", 0) == 0;
  auto file = files().read(top, kMaxDatabaseFileBytes);
  if (!file) {
    f_.add(Code::kDatabaseMalformed, top, "", "cannot read: " + file.error().message, "check the file's permissions");
  } else if (lazy) {
    // A lazy database the library cannot read loads nothing: its placeholders are not checked (one cause, one line).
    if (auto prefixes = read_tensile_placeholders(text_of(*file))) {
      std::vector<const ParsedDat*> parsed = read_placeholders(base_, *prefixes, cache_);
      for (size_t i = 0; i < prefixes->size(); ++i) check_placeholder((*prefixes)[i], *parsed[i]);
    } else {
      f_.add(Code::kDatabaseMalformed, top, "",
             "cannot read this lazy Tensile database: " + prefixes.error().message + "; the library reports \"" +
                 (lite() ? "rocblaslt error: Could not load " : "rocBLAS error: Could not load ") + top + "\"",
             "reinstall the library; the file is damaged");
    }
    check_extops();
  } else {
    // A whole (not lazy) database: its solutions are in the file itself, their kernels in the code objects
    // "*<processor>*co" rocBLAS loads at start; hipguard checks the lazy layout only.
    f_.add(Code::kDatabaseChecked, top, "", "not a lazy-loading database: its code objects are not cross-checked",
           "none needed");
  }
  f_.counts().code_objects = cache_.opened();
  f_.counts().kernels = kernels_.size();
}

}  // namespace

void check_tensile_target(const DatabaseDir& db, const TargetId& t, FactsCache& cache, Findings& f) {
  TensileCheck(db, t, cache, f).run();
}

}  // namespace hipguard::kdb
