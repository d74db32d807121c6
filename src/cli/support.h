// hipguard check without --target: the checks, one per shipped configuration, that answer which GPUs
// the inputs run on, and their table (hipguard/support.h).
#pragma once

#include <string>
#include <vector>

#include "cli/progress.h"
#include "hipguard/report.h"
#include "hipguard/support.h"

namespace hipguard {

// `paths` checked with `options` against each configuration the product table ships, one pass per
// configuration (each row is what `hipguard check --target <its product>` says, exactly: a pass
// over all of them at once would read library files and Tensile subdirectories a one-target check
// never reads), each row judged. The passes run side by side (up to 4, sharing options.jobs'
// threads); the rows keep the table's order.
std::vector<SupportRow> check_support(const std::vector<std::string>& paths, CheckPathsOptions options,
                                      Progress& progress);

// The table: "which GPUs", a row per configuration; colour as the check's table.
void print_support(const std::vector<SupportRow>& rows, bool color);

}  // namespace hipguard
