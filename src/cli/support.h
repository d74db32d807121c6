// hipguard check without --target: the second pass that answers which GPUs the inputs run on, and
// its table (hipguard/support.h).
#pragma once

#include <string>
#include <vector>

#include "cli/progress.h"
#include "hipguard/report.h"
#include "hipguard/support.h"

namespace hipguard {

// `paths` checked with `options` against every configuration the product table ships (a second
// pass: the structural check reads every code object in full, this one what each configuration
// loads), each row judged.
std::vector<SupportRow> check_support(const std::vector<std::string>& paths, CheckPathsOptions options,
                                      Progress& progress);

// The table: "which GPUs", a row per configuration; colour as the check's table.
void print_support(const std::vector<SupportRow>& rows, bool color);

}  // namespace hipguard
