// Shared by the report writers (internal).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/report.h"

#include <llvm/Support/JSON.h>

namespace hipguard {

inline constexpr const char* kReportSchema = "hipguard-report/1";

// One failed JUnit test case, a line: <testcase classname="hipguard.<suite>"
// name=...><failure type=... message=...>xml_body</failure></testcase>, the
// failure empty (<failure .../>) without a body. `xml_body` is XML already.
std::string junit_failed_case(const std::string& suite, const std::string& name, const std::string& type,
                              const std::string& message, const std::string& xml_body);

struct SeverityCounts {
  uint64_t error = 0, warning = 0, note = 0;
  void add(Severity s);
};

// The JSON report's "summary": what was checked and found, per target and
// severity. The JUnit counts are these: per target suite, tests = images +
// file_errors, failures = cannot_run + file_errors (without targets:
// structural.failed_images + file_errors).
struct ReportSummary {
  struct TargetSummary {
    std::string target;
    uint64_t can_run = 0, cannot_run = 0;  // images
    uint64_t other_target = 0;             // images of library files for other processors (neither)
    SeverityCounts diagnostics;            // findings for this target
  };
  explicit ReportSummary(const std::vector<TargetId>& targets);
  void add_image(const ImageReport& img);
  void add_file(const FileReport& r);  // the file's own diagnostics (its images come through add_image)

  uint64_t files = 0, file_errors = 0, images = 0, code_objects = 0, kernels = 0, structural_failed_images = 0;
  SeverityCounts all, structural, other_targets;
  std::vector<TargetSummary> per_target;

 private:
  void add_diagnostic(const Diagnostic& d);
};

// Which GPUs the files run on (hipguard/support.h), as the attribute "support": a row per shipped
// configuration (docs/report.md). The JSON report's top level, SARIF's run properties.
void write_support(llvm::json::OStream& j, const std::vector<SupportRow>& rows);

std::unique_ptr<ReportWriter> make_junit_writer(llvm::raw_ostream& os, const std::vector<TargetId>& targets);
std::unique_ptr<ReportWriter> make_sarif_writer(llvm::raw_ostream& os, const std::vector<TargetId>& targets);

// docs/diagnostics.md as built into hipguard (generated at build time), and
// the section of one code in it ("" when it has none).
std::string_view diagnostics_markdown();
std::string_view diagnostic_section(Code code);

}  // namespace hipguard
