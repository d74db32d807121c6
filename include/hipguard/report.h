// Machine-readable reports: one JSON schema ("hipguard-report/1",
// docs/report.schema.json) shared by `hipguard check --json`, `hipguard inspect
// --json` and the shim's HIPGUARD_REPORT file; JUnit XML and SARIF 2.1.0
// renderings for CI systems. See docs/report.md.
//
// The writers stream: each file and image is written as it is handed over
// (llvm::json::OStream on a raw_ostream), so a library with 111 fat binaries
// and 12k kernels never exists as one document tree or one string.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <llvm/Support/raw_ostream.h>

#include "hipguard/check_paths.h"
#include "hipguard/support.h"

namespace llvm::json {
class Value;
}

namespace hipguard {

// What the shim adds about the process it ran in.
struct KernelRecord {
  std::string name;         // device-side kernel name
  std::string file;         // file holding it
  uint64_t launches = 0;    // launches seen (slow path only: kernels with findings)
  uint64_t blocked = 0;     // launches refused in strict mode
  std::vector<Code> codes;  // diagnostic codes that concern it
};
struct RunInfo {
  std::string program;
  long pid = 0;
  std::string mode;                  // warn | strict | off
  std::string target_source;         // HIPGUARD_TARGET or the GPUs found
  std::vector<std::string> devices;  // target IDs of the devices checked against
  std::vector<KernelRecord> kernels;
  // Runtime events (HG501/HG502/HG503) of findings already reported, in order
  // (at most FindingsSink::kMaxConsequences).
  std::vector<Diagnostic> consequences;
  // Images and kernels of unloaded modules / unregistered fat binaries beyond
  // the report's bounds (docs/limits.md): counted, not listed.
  size_t not_listed = 0;
};

// A report being written, one file at a time (FileSink order: begin_file,
// image..., end_file), then finish(). Nothing is complete before finish().
class ReportWriter : public FileSink {
 public:
  // Which GPUs the files run on (check without --target), before finish(): JSON's "support",
  // SARIF's runs[0].properties.support; JUnit ignores it.
  virtual void support(const std::vector<SupportRow>& /*rows*/) {}
  // `run`: the shim's section (JSON only; ignored by the other formats).
  virtual void finish(const RunInfo* run = nullptr) = 0;
};

enum class ReportFormat { Json, JUnit, Sarif };

// A writer of `format` on `os` (which must outlive it). JSON: the report
// schema, pretty-printed; JUnit: one <testsuite> per target (a "structural"
// one without targets), one <testcase> per (target, image) with at most one
// <failure>, the counts of the JSON summary; SARIF 2.1.0: one rule per
// diagnostic code (its docs/diagnostics.md section as help), one result per
// finding, located at the file.
std::unique_ptr<ReportWriter> make_report_writer(ReportFormat format, llvm::raw_ostream& os,
                                                 const std::vector<TargetId>& targets);

// A raw_ostream that writes through `f` (stdout): write errors stay visible
// in ferror(f), as for everything else the CLI prints.
std::unique_ptr<llvm::raw_ostream> stdio_ostream(std::FILE* f);

// Whole documents as strings (the shim's HIPGUARD_REPORT).
std::string report_json(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets,
                        const RunInfo* run = nullptr);
// One diagnostic as the report writes it (docs/report.md, "Diagnostic").
llvm::json::Value diagnostic_json(const Diagnostic& d);
// Text for XML attributes and content: escape_text, then XML's own escapes.
std::string xml_escape(const std::string& text);

std::string report_junit(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets);
std::string report_sarif(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets);

}  // namespace hipguard
