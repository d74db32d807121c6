#include "hipguard/diagnostic.h"

#include <array>

namespace hipguard {
namespace {
using S = Severity;
constexpr std::array kCodes = {
    CodeInfo{code::kUnreadable, "unreadable-input", S::Error},
    CodeInfo{code::kBadFatbinWrapper, "bad-fatbin-wrapper", S::Error},
    CodeInfo{code::kUnknownPayload, "unknown-payload", S::Error},
    CodeInfo{code::kMalformedBundle, "malformed-bundle", S::Error},
    CodeInfo{code::kMalformedCompressed, "malformed-compressed-bundle", S::Error},
    CodeInfo{code::kMalformedElf, "malformed-code-object", S::Error},
    CodeInfo{code::kNoHipFatbin, "no-hip-fatbin", S::Error},
    CodeInfo{code::kUnknownProcessor, "unknown-processor", S::Error},
    CodeInfo{code::kCodeObjectVersion, "code-object-version", S::Error},
    CodeInfo{code::kNothingToCheck, "nothing-to-check", S::Error},
    CodeInfo{code::kBudgetExceeded, "budget-exceeded", S::Error},
    CodeInfo{code::kFindingsCapped, "findings-capped", S::Note},
    CodeInfo{code::kNoCodeObject, "no-code-object-for-target", S::Error},
    CodeInfo{code::kProcessorMismatch, "processor-mismatch", S::Error},
    CodeInfo{code::kFeatureMismatch, "feature-mismatch", S::Error},
    CodeInfo{code::kDeviceChecksSkipped, "device-checks-skipped", S::Note},
    CodeInfo{code::kGenericTooOld, "generic-version-too-old", S::Error},
    CodeInfo{code::kBadTarget, "bad-target", S::Error},
    CodeInfo{code::kSpirvFallback, "spirv-fallback", S::Warning},
    CodeInfo{code::kAmbiguousSelection, "ambiguous-compressed-selection", S::Warning},
    CodeInfo{code::kLdsOverLimit, "lds-over-limit", S::Error},
    CodeInfo{code::kWavefrontSize, "wavefront-size-unsupported", S::Error},
    CodeInfo{code::kRegisterLimit, "register-limit", S::Error},
    CodeInfo{code::kWorkgroupSize, "workgroup-size", S::Warning},
    CodeInfo{code::kDynamicStack, "dynamic-stack", S::Note},
    CodeInfo{code::kLaunchLds, "launch-lds-over-limit", S::Error},
    CodeInfo{code::kNoMetadata, "no-metadata", S::Error},
    CodeInfo{code::kBadMetadata, "bad-metadata", S::Error},
    CodeInfo{code::kBadKernelMetadata, "bad-kernel-metadata", S::Warning},
    CodeInfo{code::kDescriptorMismatch, "descriptor-mismatch", S::Warning},
    CodeInfo{code::kKernargLayout, "kernarg-layout", S::Warning},
    CodeInfo{code::kDescriptorMissing, "descriptor-missing", S::Error},
    CodeInfo{code::kKernelWithoutMetadata, "kernel-without-metadata", S::Warning},
    CodeInfo{code::kDeviceFunction, "device-function-not-kernel", S::Error},
    CodeInfo{code::kKernelNotInCodeObject, "kernel-not-in-code-object", S::Error},
    CodeInfo{code::kRuntimeRejected, "runtime-rejected-kernel", S::Error},
    CodeInfo{code::kLaunchWithFindings, "launch-with-findings", S::Error},
    CodeInfo{code::kLookupFailed, "lookup-failed", S::Error},
};
}  // namespace

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::span<const CodeInfo> all_codes() { return kCodes; }

const CodeInfo* find_code(std::string_view c) {
  for (const auto& info : kCodes)
    if (info.code == c) return &info;
  return nullptr;
}

Diagnostic make_diagnostic(std::string_view c, std::string file, std::string message, std::string fix) {
  Diagnostic d;
  d.code = std::string(c);
  const CodeInfo* info = find_code(c);
  d.severity = info ? info->severity : Severity::Error;
  d.file = std::move(file);
  d.message = std::move(message);
  d.fix = std::move(fix);
  return d;
}

std::string format_line(const Diagnostic& d) {
  std::string s;
  s += to_string(d.severity);
  s += ' ';
  s += d.code;
  if (!d.target.empty()) s += " [" + d.target + "]";
  s += ' ';
  s += d.file.empty() ? std::string("<input>") : d.file;
  if (!d.entry.empty()) s += " (" + d.entry + ")";
  if (!d.kernel.empty()) s += " kernel '" + d.kernel + "'";
  s += ": " + d.message;
  if (!d.fix.empty()) s += " -- fix: " + d.fix;
  return s;
}

}  // namespace hipguard
