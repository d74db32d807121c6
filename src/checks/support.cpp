// Which of the product table's GPUs checked files run on (hipguard/support.h).
#include "hipguard/support.h"

#include <algorithm>

namespace hipguard {
namespace {

// An error of the check against `target`: about it, or structural (no target).
bool error_for(const Diagnostic& d, const std::string& target) {
  return d.severity == Severity::Error && (d.target.empty() || d.target == target);
}

// The first error against `target` a file or its images report: the file's own first.
const Diagnostic* first_error(const FileReport& r, const std::string& target) {
  for (const auto& d : r.diagnostics)
    if (error_for(d, target)) return &d;
  for (const auto& img : r.images)
    for (const auto& d : img.diagnostics)
      if (error_for(d, target)) return &d;
  return nullptr;
}

// Whether a file (its members are files of their own) runs on `target`: FileReport::ok for it alone.
bool runs_on(const FileReport& r, const std::string& target) {
  for (const auto& d : r.diagnostics)
    if (error_for(d, target)) return false;
  for (const auto& img : r.images) {
    if (img.verdicts.empty() && !img.structurally_ok) return false;
    for (const auto& v : img.verdicts)
      if (v.target.str() == target && v.fails()) return false;
  }
  for (const auto& m : r.members)
    if (!runs_on(m, target)) return false;
  return true;
}

}  // namespace

std::vector<SupportRow> support_rows() {
  std::vector<SupportRow> rows;
  for (const auto& p : all_products()) {
    auto t = parse_target(p.name);
    if (!t) continue;
    t->alias.clear();
    auto same = std::find_if(rows.begin(), rows.end(), [&](const SupportRow& r) { return r.target == *t; });
    if (same == rows.end()) same = rows.insert(rows.end(), SupportRow{*t, {}, true, {}, {}});
    same->products.emplace_back(p.name);
  }
  return rows;
}

void judge_support(SupportRow& row, const std::vector<FileReport>& reports) {
  const std::string target = row.target.str();
  row.runs = std::all_of(reports.begin(), reports.end(), [&](const FileReport& r) { return runs_on(r, target); });
  if (row.runs) return;
  for (const auto& r : reports)
    if (const Diagnostic* d = first_error(r, target)) {
      Diagnostic brief = *d;
      brief.fix.clear();
      row.cause = format_line(brief);
      row.code = d->code;
      return;
    }
  row.cause = "cannot run on " + row.target.str();  // no error says why (not expected: a failing check has one)
}

}  // namespace hipguard
