// Which of the product table's GPUs checked files run on (hipguard/support.h).
#include "hipguard/support.h"

#include <algorithm>

namespace hipguard {
namespace {

// The first error a file or its images report: the file's own first.
const Diagnostic* first_error(const FileReport& r) {
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::Error) return &d;
  for (const auto& img : r.images)
    for (const auto& d : img.diagnostics)
      if (d.severity == Severity::Error) return &d;
  return nullptr;
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

void judge_support(SupportRow& row, bool ok, const std::vector<FileReport>& reports) {
  row.runs = ok;
  if (ok) return;
  for (const auto& r : reports)
    if (const Diagnostic* d = first_error(r)) {
      Diagnostic brief = *d;
      brief.fix.clear();
      row.cause = format_line(brief);
      row.code = d->code;
      return;
    }
  row.cause = "cannot run on " + row.target.str();  // no error says why (not expected: a failing check has one)
}

}  // namespace hipguard
