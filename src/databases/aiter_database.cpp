// AITER kernel lists: hsa/<processor>/**/*.csv rows (knl_name, co_name) against the code objects beside them.
#include <algorithm>
#include <filesystem>
#include <set>

#include "databases/kernel_database_internal.h"

namespace hipguard::kdb {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kMaxCsvBytes = 64ull << 20;

// The text hsa/codegen.py hands to pandas (_strip_csv_comments): /* */ blocks,
// lines starting with //, # or ;, and trailing // or # comments removed.
std::vector<std::string> csv_lines(const std::string& text) {
  std::string s = text;
  for (size_t a; (a = s.find("/*")) != std::string::npos;) {
    size_t b = s.find("*/", a + 2);
    s.erase(a, b == std::string::npos ? std::string::npos : b + 2 - a);
  }
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t nl = s.find('\n', pos);
    std::string line = s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? s.size() + 1 : nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // utf-8-sig
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line.compare(first, 2, "//") == 0 || line[first] == '#' || line[first] == ';') continue;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') quoted = !quoted;
      if (quoted) continue;
      bool slash = line.compare(i, 2, "//") == 0 && !(i > 0 && line[i - 1] == ':');
      if (slash || line[i] == '#' || (line[i] == ';' && i > 0 && (line[i - 1] == ' ' || line[i - 1] == '\t'))) {
        line.resize(i);
        break;
      }
    }
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  for (auto& f : out) {  // pandas strips nothing, but a trailing space in a name is never meant
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.pop_back();
    size_t b = f.find_first_not_of(" \t");
    f.erase(0, b == std::string::npos ? f.size() : b);
  }
  return out;
}

// The .csv files at or below `dir` (symlinked directories are not walked), sorted.
void add_csv_files(const DatabaseFiles& files, const std::string& dir, std::vector<std::string>& out) {
  for (const auto& e : files.list(dir)) {
    std::string path = dir + "/" + e.name;
    if (e.file && e.name.size() > 4 && e.name.compare(e.name.size() - 4, 4, ".csv") == 0) out.push_back(path);
    if (e.directory) add_csv_files(files, path, out);
  }
}
std::vector<std::string> csv_files(const DatabaseFiles& files, const std::string& dir) {
  std::vector<std::string> out;
  add_csv_files(files, dir, out);
  std::sort(out.begin(), out.end());
  return out;
}

// One csv: every row's code object and kernel.
void check_csv(const std::string& csv, const std::string& proc_dir, const TargetId& t, FactsCache& cache, Findings& f,
               std::set<uint64_t>& kernels) {
  auto file = cache.files().read(csv, kMaxCsvBytes);
  if (!file) {
    f.add(Code::kDatabaseMalformed, csv, "", "cannot read this AITER kernel list: " + file.error().message,
          "check the file");
    return;
  }
  ++f.counts().databases;
  std::vector<std::string> lines = csv_lines(std::string(text_of(*file)));
  std::vector<std::string> head = lines.empty() ? std::vector<std::string>{} : csv_fields(lines[0]);
  auto col = [&](const char* n) { return size_t(std::find(head.begin(), head.end(), n) - head.begin()); };
  size_t knl = col("knl_name"), co = col("co_name");
  if (knl >= head.size() || co >= head.size()) {
    f.add(Code::kDatabaseMalformed, csv, "",
          "no knl_name and co_name columns in the header: AITER's hsa/codegen.py stops with \"ERROR: Invalid "
          "assembly CSV format -- " +
              csv + ". Missing required columns\"",
          "add the header line knl_name,co_name,... as in AITER's own kernel lists");
    return;
  }
  std::string rel = fs::path(csv).parent_path().lexically_relative(proc_dir).string();
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> row = csv_fields(lines[i]);
    if (row.size() <= std::max(knl, co) || row[knl].empty() || row[co].empty()) {
      f.add(Code::kDatabaseMalformed, csv, "", "row " + std::to_string(i + 1) + " has no knl_name or co_name",
            "complete the row or remove it");
      continue;
    }
    ++f.counts().entries;
    std::string path = fs::path(csv).parent_path().string() + "/" + row[co];
    std::string shown = "$AITER_ASM_DIR/" + t.processor + "/" + (rel == "." ? "" : rel + "/") + row[co];
    if (!cache.files().is_file(path)) {
      f.add(Code::kDatabaseFileMissing, path, row[knl],
            "row " + std::to_string(i + 1) + " of " + fs::path(csv).filename().string() + " names " + row[co] +
                ", which does not exist: AITER stops with \"failed to open " + shown + "\"",
            "reinstall AITER, or rebuild its hsa/ tree; the csv and the code objects must ship together");
      continue;
    }
    cache.mark_opened(path);
    const CodeObjectFacts& facts = cache.get(path);
    Result<const CodeObjectFacts::Entry*> entry = loadable_on(facts, t);
    if (!entry) {
      const std::string& why = entry.error().message;
      f.add(entry.error().code, path, row[knl],
            row[co] + " (row " + std::to_string(i + 1) + " of " + fs::path(csv).filename().string() + ") is " + why +
                ", not for " + t.str() +
                ": the runtime rejects it and AITER stops with \"kernel registration failed "
                "for '" +
                row[knl] + "'.\"",
            "put the code object built for " + t.processor + " in hsa/" + t.processor + "/");
    } else if (!has_kernel(**entry, row[knl])) {
      f.add(Code::kDatabaseKernelMissing, path, row[knl],
            "row " + std::to_string(i + 1) + " of " + fs::path(csv).filename().string() + " names kernel '" + row[knl] +
                "', which is not in the metadata of " + row[co] +
                ": hipGetFuncBySymbol finds nothing and AITER stops with \"kernel registration failed for '" +
                row[knl] + "'.\"",
            "fix the row's knl_name (the mangled name, as `hipguard inspect` lists it) or rebuild the code object");
    } else {
      kernels.insert(kernel_name_hash(row[knl]));
    }
  }
}

}  // namespace

std::vector<std::string> aiter_processors(const DatabaseFiles& files, const std::string& hsa) {
  std::vector<std::string> out;
  for (const auto& e : files.list(hsa))
    if (e.name.rfind("gfx", 0) == 0 && files.is_directory(hsa + "/" + e.name) &&
        !csv_files(files, hsa + "/" + e.name).empty())
      out.push_back(e.name);
  return out;
}

void check_aiter_target(const std::string& hsa, const TargetId& t, FactsCache& cache, Findings& f) {
  std::string dir = hsa + "/" + t.processor;
  std::vector<std::string> csvs = csv_files(cache.files(), dir);
  if (csvs.empty()) {
    f.add(Code::kDatabaseMissing, hsa, "",
          "no AITER kernel list for " + t.processor + " (no .csv below hsa/" + t.processor +
              "/): every assembly kernel AITER loads for this GPU fails with \"failed to open $AITER_ASM_DIR/" +
              t.processor + "/...\"",
          "install an AITER build with kernels for " + t.processor + ", or run on a GPU it ships kernels for",
          missing_database_severity(cache.files(), dir, t.processor, true));
    return;
  }
  std::set<uint64_t> kernels;
  for (const auto& csv : csvs) check_csv(csv, dir, t, cache, f, kernels);
  f.counts().code_objects = cache.opened();
  f.counts().kernels = kernels.size();
}

}  // namespace hipguard::kdb
