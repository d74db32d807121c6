// The code object reader without the checks (internal): parse_code_object (checks/) runs them on its output.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <llvm/ADT/DenseMap.h>

#include "format/name_hash.h"
#include "hipguard/code_object.h"

namespace hipguard {

// Reads an AMDGPU code object into a CodeObject: ELF header, its
// NT_AMDGPU_METADATA notes (merged as comgr merges them), symbols and kernel descriptors; reading problems
// are in co.issues, uncapped by the HG112 summary (parse_code_object adds it).
// descriptors_only (Depth::Descriptors): the metadata note is looked for but
// not read; the kernels are the "<name>.kd" objects of the symbol table, with
// their descriptors (HG406 for one outside its section); with only_lds_over,
// only those whose descriptor declares more static LDS than that (bytes).
Result<CodeObject> read_code_object(Bytes data, bool descriptors_only = false, uint64_t only_lds_over = 0);

// The ELF header's facts only (version, processor, xnack/sramecc, generic
// version: what selection compares), for deciding how far to read. Fails as
// read_code_object fails on the identification or the processor; the
// sections are not looked at, so a later read may still fail.
Result<CodeObject> read_code_object_header(Bytes data);

// The severity of an issue: its own, else its code's.
Severity issue_severity(const CodeObjectIssue& i);

}  // namespace hipguard
