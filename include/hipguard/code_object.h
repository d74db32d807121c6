// AMDGPU HSA code objects: ELF header, e_flags, kernels from the
// NT_AMDGPU_METADATA note, device functions from the symbol table.
//
// Sources: AMDGPUUsage "ELF Code Object" (header, e_flags, note records),
// "Code Object V3+ Metadata" (kernel keys), "Symbols".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/diagnostic.h"
#include "hipguard/result.h"
#include "hipguard/target.h"

namespace hipguard {

// The 64-byte kernel descriptor at symbol "<kernel>.kd" (AMDHSAKernelDescriptor.h;
// AMDGPUUsage "Code Object V3 Kernel Descriptor"). Sizes in bytes.
struct KernelDescriptor {
  uint32_t group_segment_fixed_size = 0;    // static LDS
  uint32_t private_segment_fixed_size = 0;  // scratch per work-item
  uint32_t kernarg_size = 0;                // 0 = unspecified
  int64_t kernel_code_entry_byte_offset = 0;
  uint32_t compute_pgm_rsrc1 = 0, compute_pgm_rsrc2 = 0, compute_pgm_rsrc3 = 0;
  uint16_t kernel_code_properties = 0;
  uint16_t kernarg_preload = 0;
  // kernel_code_properties bits (LLVM's KERNEL_CODE_PROPERTY_*, asserted equal in code_object.cpp).
  static constexpr uint16_t kWavefrontSize32 = 1u << 10, kUsesDynamicStack = 1u << 11;
  bool wavefront_size32() const { return kernel_code_properties & kWavefrontSize32; }
  bool uses_dynamic_stack() const { return kernel_code_properties & kUsesDynamicStack; }
};

// One kernel argument (amdhsa.kernels[i].args[j]). Offsets and sizes in bytes.
struct KernelArg {
  std::string name;        // .name, may be empty
  std::string value_kind;  // by_value, global_buffer, hidden_block_count_x, ...
  uint64_t offset = 0;
  uint64_t size = 0;
  bool hidden() const { return value_kind.rfind("hidden_", 0) == 0; }
};

// One kernel as described by its metadata map (amdhsa.kernels[i]).
// All sizes in bytes; register counts in registers.
struct KernelInfo {
  std::string name;                         // .name (source-level name)
  std::string symbol;                       // .symbol (kernel descriptor symbol, "<name>.kd")
  uint64_t group_segment_fixed_size = 0;    // static LDS per workgroup
  uint64_t private_segment_fixed_size = 0;  // scratch per work-item
  uint64_t kernarg_segment_size = 0;
  uint64_t kernarg_segment_align = 0;
  uint64_t wavefront_size = 0;
  uint64_t max_flat_workgroup_size = 0;
  uint64_t sgpr_count = 0;
  uint64_t vgpr_count = 0;
  std::optional<uint64_t> agpr_count;  // gfx90a-class only
  uint64_t sgpr_spill_count = 0, vgpr_spill_count = 0;
  bool uses_dynamic_stack = false;  // v5+
  std::optional<std::array<uint64_t, 3>> reqd_workgroup_size;
  std::vector<KernelArg> args;
  std::optional<KernelDescriptor> descriptor;  // absent when the .kd symbol is missing or out of bounds
};

// A problem found while reading one code object (not yet tied to a target).
struct CodeObjectIssue {
  Code code;           // diagnostic code
  std::string kernel;  // kernel name, if the issue is about one
  std::string message;
  // Where one code covers cases the runtime treats differently (HG304, HG402,
  // HG403: docs/diagnostics.md), the severity of this case; else the code's.
  std::optional<Severity> severity = std::nullopt;
  std::optional<uint64_t> value = std::nullopt;  // a number compared with a limit (HG111), if any
  std::optional<uint64_t> limit = std::nullopt;
};

// Parser limits per code object (docs/limits.md): over a limit is an HG111
// finding, and what lies past it is skipped, never allocated.
inline constexpr uint64_t kMaxKernelsPerCodeObject = 65536;  // amdhsa.kernels entries (rocSPARSE: 728)
inline constexpr uint64_t kMaxArgsPerKernel = 1024;          // .args entries of one kernel (rocSPARSE: 24)
// Findings (issues) kept per code object; the rest are counted and summed up
// in one HG112 finding, so one hostile code object cannot flood the log.
inline constexpr uint64_t kMaxIssuesPerCodeObject = 100;

struct CodeObject {
  unsigned version = 0;  // code object version: EI_ABIVERSION + 2 (v2..v6)
  uint32_t e_flags = 0;
  uint32_t mach = 0;                           // e_flags & EF_AMDGPU_MACH
  const ProcessorInfo* processor = nullptr;    // null when mach is unknown
  TargetId target;                             // processor + xnack/sramecc from e_flags
  unsigned generic_version = 0;                // e_flags bits 24..31 (v6 generic code objects)
  std::optional<std::string> metadata_target;  // amdhsa.target, when present
  std::vector<KernelInfo> kernels;
  std::vector<std::string> device_functions;          // STT_FUNC symbols that are not kernel entries
  std::vector<std::string> kernels_without_metadata;  // "<name>.kd" symbols no metadata entry names
  std::vector<CodeObjectIssue> issues;                // target-independent findings (HG109, HG111, HG4xx), at most
                                                      // kMaxIssuesPerCodeObject, then one HG112 summary
  uint64_t issues_dropped = 0;                        // findings past the cap (counted, not kept)
  Severity dropped_severity = Severity::Note;         // the most severe of them
  uint64_t size = 0;                                  // bytes of the ELF image
};

// Reads the descriptors of a code object's NT_AMDGPU_METADATA notes (MessagePack;
// AMDGPUUsage "Code Object V3+ Metadata"), in file order, into co.kernels and
// co.metadata_target, merged as comgr merges them for the runtime
// (comgr-metadata.cpp mergeNoteRecords): the first note whose root is a map is
// the document, each later note's amdhsa.kernels are appended when both notes
// have the same amdhsa.version and an amdhsa.kernels array and not both an
// amdhsa.printf; a note that cannot be merged adds HG402 (warning) when it has
// kernels. Tensile code objects (rocBLAS, hipBLASLt) hold one note per kernel.
// A note that is not valid MessagePack, or whose amdhsa map is malformed, adds
// HG402; a malformed kernel entry adds HG403 (co.issues). Never fails
// otherwise. Over kMaxKernelsPerCodeObject kernels (all notes together) or
// kMaxArgsPerKernel arguments: HG111, the rest is skipped.
void read_metadata_notes(std::span<const std::string_view> descs, CodeObject& co);
// One note: read_metadata_notes of {desc}.
void read_metadata_note(std::string_view desc, CodeObject& co);

// Appends `issue` to co.issues, or counts it in co.issues_dropped once
// co.issues holds kMaxIssuesPerCodeObject findings.
void add_issue(CodeObject& co, CodeObjectIssue issue);

// Human-readable e_flags summary: "gfx942:sramecc+:xnack-" plus generic version.
std::string describe_target(const CodeObject& co);

}  // namespace hipguard
