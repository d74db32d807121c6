// hipguard check without --target: the checks, one per shipped configuration, that answer which GPUs
// the inputs run on, and their table (hipguard/support.h).
#pragma once

#include <string>
#include <vector>

#include "cli/progress.h"
#include "hipguard/report.h"
#include "hipguard/support.h"

namespace hipguard {

// `paths` checked with `options` against every configuration the product table ships, in one pass
// with the configurations as separate machines (an image's layers are read once, not once a row),
// each row judged on its own target: what `hipguard check --target <its product>` says (the pass
// also reads the Tensile files of the other rows' processors, which only count as other targets).
std::vector<SupportRow> check_support(const std::vector<std::string>& paths, CheckPathsOptions options,
                                      Progress& progress);

// The table: "which GPUs", a row per configuration; colour as the check's table.
void print_support(const std::vector<SupportRow>& rows, bool color);

}  // namespace hipguard
