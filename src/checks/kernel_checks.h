// Kernel checks (internal): parse_code_object, the target-independent structural checks that
// become CodeObject issues, and the target-dependent ones asked for each processor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hipguard/code_object.h"

namespace hipguard {

// Descriptor vs metadata, kernarg layout, workgroup sizes, dynamic stack,
// code object version of generic targets. Appends to co.issues.
void add_structural_kernel_issues(CodeObject& co);

struct KernelFinding {
  Code code;
  std::string kernel;
  std::string message;
  std::string fix;
  std::optional<uint64_t> value, limit;
};

// LDS, wavefront size and register file of `proc` for every kernel of `co`.
// `lds_only` for code objects built for another processor: only whether the
// kernels would fit at all is worth saying there.
std::vector<KernelFinding> check_kernels_on(const CodeObject& co, const ProcessorInfo& proc, bool lds_only = false);

}  // namespace hipguard
