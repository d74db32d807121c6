// hipguard check without --target: which of the product table's GPUs the inputs run on.
#include "cli/support.h"

#include <cstdio>

#include "cli/common.h"

namespace hipguard {

// One check over every row's target at once: each input is read and parsed once, not once per row,
// and each row is judged from the verdicts and findings for its target (judge_support).
std::vector<SupportRow> check_support(const std::vector<std::string>& paths, CheckPathsOptions options,
                                      Progress& progress) {
  std::vector<SupportRow> rows = support_rows();
  options.targets.clear();
  for (const auto& row : rows) options.targets.push_back(row.target);
  CollectSink sink(/*keep_parsed=*/false, {}, /*keep=*/true);
  check_paths(paths, options, sink);
  progress.clear();
  for (auto& row : rows) judge_support(row, sink.reports);
  return rows;
}

void print_support(const std::vector<SupportRow>& rows, bool color) {
  printf("which GPUs (no --target: every product as shipped; --target names the ones a CI gate checks)\n");
  printf("  %s %s %s %s\n", pad("RESULT", 12).c_str(), pad("TARGET ID", 24).c_str(), pad("PRODUCTS", 34).c_str(),
         "FIRST CAUSE");
  for (const auto& r : rows) {
    std::string products;
    for (const auto& p : r.products) products += (products.empty() ? "" : " ") + p;
    printf("  %s %s %s %s\n", paint(color, r.runs ? "32" : "1;31", pad(r.runs ? "runs" : "does not run", 12)).c_str(),
           pad(r.target.str(), 24).c_str(), pad(products, 34).c_str(), r.cause.c_str());
  }
  printf("\n");
}

}  // namespace hipguard
