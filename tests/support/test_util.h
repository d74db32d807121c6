// Shared helpers for the unit tests: where the real inputs are and looking for
// diagnostics. The builders of crafted inputs (code objects, bundles, CCOBs)
// and the file helpers are in tests/support.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/check.h"
#include "hipguard/diagnostic.h"
#include "hipguard/check_paths.h"
#include "bundle.h"
#include "bytes.h"
#include "ccob.h"
#include "code_object.h"
#include "files.h"
#include "print_code.h"

namespace hgtest {

namespace fs = std::filesystem;

// ---- Where the inputs are -------------------------------------------------

inline fs::path corpus_dir() { return fs::path(HIPGUARD_CORPUS_DIR) / "aiter"; }
inline bool have_corpus() {
  std::error_code ec;
  return fs::is_directory(corpus_dir(), ec);
}
// Every .co of the corpus, sorted by name.
inline std::vector<fs::path> corpus_files(std::string_view prefix = "") {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!have_corpus()) return out;
  for (const auto& e : fs::directory_iterator(corpus_dir(), ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".co" && name.rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

#define HG_REQUIRE_CORPUS()                                                              \
  do {                                                                                   \
    if (!::hgtest::have_corpus())                                                        \
      GTEST_SKIP() << "AITER corpus not found at " << ::hgtest::corpus_dir()             \
                   << " (set -DHIPGUARD_CORPUS_DIR=...; CI has it at ../shared/corpus)"; \
  } while (0)

// A hipcc-built program or bundle from tests/apps, or "" when absent.
inline std::string app(std::string_view name) {
  std::string dir = HIPGUARD_APPS_DIR;
  if (dir.empty()) return "";
  fs::path p = fs::path(dir) / name;
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : "";
}

#define HG_REQUIRE_APP(var, name)                                                                         \
  std::string var = ::hgtest::app(name);                                                                  \
  do {                                                                                                    \
    if (var.empty())                                                                                      \
      GTEST_SKIP() << "hipcc-built " << (name) << " not available (HIPGUARD_APPS_DIR='" HIPGUARD_APPS_DIR \
                   << "'; needs hipcc at configure time)";                                                \
  } while (0)

// ---- Diagnostics -----------------------------------------------------------

inline std::vector<const hipguard::Diagnostic*> find_diags(const std::vector<hipguard::Diagnostic>& ds,
                                                           hipguard::Code code) {
  std::vector<const hipguard::Diagnostic*> out;
  for (const auto& d : ds)
    if (d.code == code) out.push_back(&d);
  return out;
}
inline bool has_code(const std::vector<hipguard::Diagnostic>& ds, hipguard::Code code) {
  return !find_diags(ds, code).empty();
}
inline bool has_issue(const hipguard::CodeObject& co, hipguard::Code code) {
  for (const auto& i : co.issues)
    if (i.code == code) return true;
  return false;
}
// Every diagnostic of a file report (file-level and per image), one per line, for failure messages.
inline std::vector<hipguard::Diagnostic> all_diags(const hipguard::FileReport& r) {
  std::vector<hipguard::Diagnostic> out = r.diagnostics;
  for (const auto& i : r.images) out.insert(out.end(), i.diagnostics.begin(), i.diagnostics.end());
  return out;
}
inline std::string dump(const std::vector<hipguard::Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += "  " + hipguard::format_line(d) + "\n";
  return s.empty() ? "  (no diagnostics)\n" : s;
}

inline hipguard::TargetId target(std::string_view text) {
  auto t = hipguard::parse_target(text);
  EXPECT_TRUE(t) << text << ": " << t.error().message;
  return t ? *t : hipguard::TargetId{};
}

}  // namespace hgtest
