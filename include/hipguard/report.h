// Machine-readable reports: one JSON schema ("hipguard-report/1") shared by
// `hipguard check --json`, `hipguard inspect --json` and the shim's
// HIPGUARD_REPORT file; a JUnit XML rendering for CI systems. See docs/report.md.
#pragma once

#include <string>
#include <vector>

#include "hipguard/inputs.h"

namespace llvm::json {
class Value;
}

namespace hipguard {

// What the shim adds about the process it ran in.
struct KernelRecord {
  std::string name;                // device-side kernel name
  std::string file;                // file holding it
  uint64_t launches = 0;           // launches seen (slow path only: kernels with findings)
  uint64_t blocked = 0;            // launches refused in strict mode
  std::vector<std::string> codes;  // diagnostic codes that concern it
};
struct RunInfo {
  std::string program;
  long pid = 0;
  std::string mode;                 // warn | strict | off
  std::string target_source;        // HIPGUARD_TARGET or the GPUs found
  std::vector<std::string> devices; // target IDs of the devices checked against
  std::vector<KernelRecord> kernels;
  // Runtime events (HG501/HG502/HG503) of findings already reported, in order
  // (at most Guard::kMaxConsequences).
  std::vector<Diagnostic> consequences;
  // Images and kernels of unloaded modules / unregistered fat binaries beyond
  // the report's bounds (docs/limits.md): counted, not listed.
  size_t not_listed = 0;
};

std::string report_json(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets,
                        const RunInfo* run = nullptr);
// One diagnostic as the report writes it (docs/report.md, "Diagnostic").
llvm::json::Value diagnostic_json(const Diagnostic& d);
// Text for XML attributes and content: escape_text, then XML's own escapes.
std::string xml_escape(const std::string& text);

std::string report_junit(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets);

}  // namespace hipguard
