// Tensile's kernel databases as bytes: the msgpack .dat files rocBLAS's and hipBLASLt's Tensile
// read at run time (Tensile Serialization/, msgpack/MessagePack.cpp), read into what a database
// check needs. Formats only: which database a processor opens, and what it must find, is
// kernel_database.h's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hipguard/result.h"

namespace hipguard {

// Parser limit (docs/limits.md): msgpack nesting deeper than this is HG702.
inline constexpr int kMaxDatabaseDepth = 128;

// The solutions of one Tensile .dat (msgpack): each solution's kernel and
// whether it is a source kernel. Fails (HG702, kDatabaseMalformed) on anything the
// library's loader would reject: not msgpack, not a map, "solutions" not an
// array of maps, a solution without a string "name", no "library". A
// "library" after "solutions" (as Tensile writes them) is not read: its
// matching tables are a fifth of the bytes and half the parse time, and a
// file cut inside them passes. Exposed for the tests.
struct TensileSolution {
  std::string kernel;  // "kernelName" when present (hipBLASLt), else "name"
  bool source_kernel = false;
};
Result<std::vector<TensileSolution>> read_tensile_solutions(std::string_view data);
// The "Placeholder" library names of a lazy Tensile database, in file order,
// without repeats. Fails as read_tensile_solutions does.
Result<std::vector<std::string>> read_tensile_placeholders(std::string_view data);

// The entries of hipBLASLt's hipblasltExtOpLibrary.dat for one processor
// ({processor: {op: {type: [{func_name, co_path, ...}]}}}, ROCm/rocm-libraries
// projects/hipblaslt/library/src/amd_detail/hipblaslt-ext-op.cpp, ExtOpMasterLibrary):
// the kernel and the code object file (beside the .dat) of each. Fails as
// read_tensile_solutions does, or on an entry without a string func_name or co_path.
struct ExtOpEntry {
  std::string kernel, code_object;
};
Result<std::vector<ExtOpEntry>> read_extop_entries(std::string_view data, std::string_view processor);

}  // namespace hipguard
