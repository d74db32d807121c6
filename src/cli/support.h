// hipguard check without --target: the check against every shipped configuration that answers which
// GPUs the inputs run on, and its table (hipguard/support.h).
#pragma once

#include <string>
#include <vector>

#include "cli/progress.h"
#include "hipguard/report.h"
#include "hipguard/support.h"

namespace hipguard {

// `paths` checked with `options` once, against every configuration the product table ships at once,
// each row judged from the verdicts and findings for its target (judge_support): what `hipguard check
// --target <its product>` says, from one read of the inputs instead of one per row. (One difference:
// a Tensile <processor>/ subdirectory a one-target check never reads is read for every row, so a damaged
// file there makes every row fail.) The rows keep the table's order.
std::vector<SupportRow> check_support(const std::vector<std::string>& paths, CheckPathsOptions options,
                                      Progress& progress);

// The table: "which GPUs", a row per configuration; colour as the check's table.
void print_support(const std::vector<SupportRow>& rows, bool color);

}  // namespace hipguard
