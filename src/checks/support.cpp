// Which of the product table's GPUs checked files run on (hipguard/support.h).
#include "hipguard/support.h"

#include <algorithm>

namespace hipguard {
namespace {

// Whether the images of `r`, its own diagnostics or its members' say it cannot run on `target`
// (its str()): an error of the file for it or for every target (none named), or an image whose verdict
// for it fails (check.h: an error about its selected code object, not a file counted as another
// processor's by its kernel library). `*cause`: the first such error, the file's own first.
bool fails_on(const FileReport& r, const std::string& target, const Diagnostic** cause) {
  auto first = [&](const Diagnostic& d) {
    if (!*cause) *cause = &d;
    return true;
  };
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::Error && (d.target.empty() || d.target == target)) return first(d);
  for (const auto& img : r.images) {
    auto v = std::find_if(img.verdicts.begin(), img.verdicts.end(),
                          [&](const TargetVerdict& t) { return t.target.str() == target; });
    if (v == img.verdicts.end() ? img.structurally_ok : !v->fails()) continue;
    for (const auto& d : img.diagnostics)
      if (d.severity == Severity::Error &&
          (v == img.verdicts.end() ? d.target.empty() || d.target == target : v->counts(d, v->selected)))
        return first(d);
    return true;  // no error says why (not expected: a failing verdict has one)
  }
  for (const auto& m : r.members)
    if (fails_on(m, target, cause)) return true;
  return false;
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
  const Diagnostic* cause = nullptr;
  row.runs = true;
  for (const auto& r : reports)
    if (fails_on(r, target, &cause)) {
      row.runs = false;
      if (cause) break;
    }
  if (row.runs) return;
  if (!cause) {
    row.cause = "cannot run on " + target;  // no error says why (not expected: a failing check has one)
    return;
  }
  Diagnostic brief = *cause;
  brief.fix.clear();
  row.cause = format_line(brief);
  row.code = cause->code;
}

}  // namespace hipguard
