// The code object reader without the checks (internal): parse_code_object (checks/) runs them on its output.
#pragma once

#include "hipguard/code_object.h"

namespace hipguard {

// Reads an AMDGPU code object into a CodeObject: ELF header, the first
// NT_AMDGPU_METADATA note, symbols and kernel descriptors; reading problems
// are in co.issues, uncapped by the HG112 summary (parse_code_object adds it).
// errors_only (Depth::Errors): kernel arguments are read and judged but not
// kept, and the symbols the metadata does not name (kernels without metadata,
// device functions) are not listed.
Result<CodeObject> read_code_object(Bytes data, bool errors_only = false);

// read_metadata_note (code_object.h), keeping the kernel arguments or not.
void read_metadata_note(std::string_view desc, CodeObject& co, bool keep_args);

// The severity of an issue: its own, else its code's.
Severity issue_severity(const CodeObjectIssue& i);

}  // namespace hipguard
