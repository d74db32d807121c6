// Which GPUs checked files run on: `hipguard check` without --target answers with one row per
// configuration the product table ships (mi300x ... ryzen-ai-max), "runs" or "does not run" and the
// first cause; the text table, the JSON report's "support" (docs/report.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hipguard/check_paths.h"

namespace hipguard {

// One shipped configuration, the products that ship with it and whether the files run on it.
struct SupportRow {
  TargetId target;                    // as parse_target gives each of its products: "gfx942:sramecc+:xnack-"
  std::vector<std::string> products;  // "mi300x", "mi300a", ... in the product table's order
  bool runs = true;
  // Why not: the first error of the check against it, as its line without the fix.
  std::string cause;
  std::optional<Code> code;  // the cause's diagnostic code (Code::kProcessorMismatch), none when no finding says it
};

// Every configuration all_products() ships, each once, in the order of its first product; each
// row "runs" until judged.
std::vector<SupportRow> support_rows();

// Judges `row` from the reports of one check_paths over every row's target at once: it does not run
// when a file has an error for its target or for every target, or an image's verdict for its target
// fails; as `hipguard check --target <its product>` would exit non-zero. The cause is the first such
// error (a file's own first, then its images', in input order).
void judge_support(SupportRow& row, const std::vector<FileReport>& reports);

}  // namespace hipguard
