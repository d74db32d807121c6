// Directory walking for check_paths: expand_paths (inputs.h), and for each
// file whether its stat or directory entry said "regular file". A directory
// that `archives` reads as an image (an OCI image layout), named or met in a
// walk, is kept whole, as a file.
#pragma once

#include <string>
#include <vector>

#include "hipguard/inputs.h"

namespace hipguard {

std::vector<std::string> expand(const std::vector<std::string>& paths, std::vector<PathProblem>* problems,
                                std::vector<bool>* regular, const ArchiveReader* archives = nullptr);

}  // namespace hipguard
