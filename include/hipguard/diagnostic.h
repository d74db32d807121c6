// Diagnostics: every user-visible finding carries a stable code (listed with
// cause and fix in docs/diagnostics.md), a severity and a subject.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hipguard {

enum class Severity : uint8_t {
  Note,     // information; never makes a verdict fail
  Warning,  // suspicious, the kernel may still run
  Error,    // the kernel / code object cannot run on the target
};

std::string_view to_string(Severity s);

// Stable diagnostic codes, one per line of diagnostics.def. Never renumber:
// scripts and CI match on them. Inside hipguard a code is always a Code
// (Code::kLdsOverLimit: only a code of the table compiles); its text ("HG301",
// code_string) is made only where a code is written out: format_line, the
// JSON, SARIF and JUnit reports. find_code is for a code given as text.
enum class Code : uint16_t {
#define HG_DIAGNOSTIC(constant, code, name, severity, title, fix) constant,
#include "hipguard/diagnostics.def"
#undef HG_DIAGNOSTIC
};

// The code's text: code_string(Code::kLdsOverLimit) == "HG301".
constexpr std::string_view code_string(Code c) {
  switch (c) {
#define HG_DIAGNOSTIC(constant, code, name, severity, title, fix) \
  case Code::constant:                                            \
    return code;
#include "hipguard/diagnostics.def"
#undef HG_DIAGNOSTIC
  }
  return {};  // not a value of the table (a cast integer)
}

struct CodeInfo {
  Code code;               // its text: code_string(code)
  std::string_view name;   // short kebab-case name, e.g. "lds-over-limit"
  Severity severity;       // the default; a finding may set another (e.g. HG404's VGPR part)
  std::string_view title;  // what the code means, in a few words
  std::string_view fix;    // for findings whose fix does not depend on the finding; else empty
};
// Every code hipguard can emit, in code order (all_codes()[i].code == Code(i)).
std::span<const CodeInfo> all_codes();
// The table row of `c`, an enumerator of Code.
const CodeInfo& code_info(Code c);
// The code whose text is `text` ("HG301"), null for none: for codes given as text.
const CodeInfo* find_code(std::string_view text);

struct Diagnostic {
  Code code;  // e.g. Code::kLdsOverLimit, written out as "HG301"
  Severity severity = Severity::Error;
  std::string file;               // file path, or the origin of an in-memory image
  std::string entry;              // bundle entry ID, empty for raw code objects
  std::string kernel;             // kernel name, empty when not about one kernel
  std::string target;             // target ID checked against, empty for structural findings
  std::string message;            // what is wrong, with the value and the limit
  std::string fix;                // what to do about it
  std::optional<uint64_t> value;  // the offending number (bytes, version, ...), if any
  std::optional<uint64_t> limit;  // the limit it was checked against, if any
};

// An error about one kernel for which CLR rejects its whole code object, so no
// kernel of it can run: HG403 without .name, .symbol or .max_flat_workgroup_size
// (devprogram.cpp createKernelMetadataMap), HG304 for .max_flat_workgroup_size 0
// (rockernel.cpp postLoad). Errors without a kernel name are about the whole image anyway.
bool rejects_code_object(const Diagnostic& d);

// A diagnostic with the code's severity from the table.
Diagnostic make_diagnostic(Code code, std::string file, std::string message, std::string fix);

// "error HG301 [gfx942] file: entry: kernel 'k': message (fix: ...)" on one
// line, passed through escape_text.
std::string format_line(const Diagnostic& d);

// Text for a terminal, a log line or XML: control characters (newline, ESC,
// ...) and bytes that are not valid UTF-8 become \xNN and a backslash becomes
// \\, so a crafted file or kernel name can neither forge nor hide lines.
std::string escape_text(std::string_view s);

}  // namespace hipguard
