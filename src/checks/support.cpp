// Which of the product table's GPUs checked files run on (hipguard/support.h).
#include "hipguard/support.h"

#include <algorithm>

namespace hipguard {
namespace {

// The first error a file or its images report for `target`, or for every target (a structural
// one: the runtime rejects the file anywhere); the file's own first.
const Diagnostic* first_error(const FileReport& r, const std::string& target) {
  auto counts = [&](const Diagnostic& d) {
    return d.severity == Severity::Error && (d.target.empty() || d.target == target);
  };
  for (const auto& d : r.diagnostics)
    if (counts(d)) return &d;
  for (const auto& img : r.images)
    for (const auto& d : img.diagnostics)
      if (counts(d)) return &d;
  return nullptr;
}

// A fat binary or code object of `r` that cannot run on target `t` (its verdict fails), if any.
const ImageReport* failing_image(const FileReport& r, size_t t) {
  for (const auto& img : r.images)
    if (t < img.verdicts.size() && img.verdicts[t].fails()) return &img;
  return nullptr;
}

void does_not_run(SupportRow& row, const Diagnostic& d) {
  Diagnostic brief = d;
  brief.fix.clear();
  row.runs = false;
  row.cause = format_line(brief);
  row.code = d.code;
}

void does_not_run(SupportRow& row, std::string why) {
  row.runs = false;
  row.cause = std::move(why);
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

void judge_support(std::vector<SupportRow>& rows, const std::vector<FileReport>& reports,
                   const std::vector<LibrarySummary>& libraries) {
  for (size_t t = 0; t < rows.size(); ++t) {
    SupportRow& row = rows[t];
    const std::string id = row.target.str();
    for (const auto& r : reports) {
      if (const Diagnostic* d = first_error(r, id)) {
        does_not_run(row, *d);
        break;
      }
      if (const ImageReport* img = failing_image(r, t)) {
        does_not_run(row, escape_text(img->origin) + ": cannot run on " + id);
        break;
      }
    }
    for (const auto& l : libraries)
      if (row.runs && t < l.targets.size() && (l.targets[t].code_objects == 0 || l.targets[t].failing))
        does_not_run(row, escape_text(l.name) + "/: kernel library with no file that runs on " + id);
  }
}

}  // namespace hipguard
