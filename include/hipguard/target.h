// Processors, target IDs and the code-object/device compatibility rule.
//
// Sources:
//  - processor names, EF_AMDGPU_MACH values, generic families: AMDGPUUsage
//    "AMDGPU Processors", "AMDGPU EF_AMDGPU_MACH Values", "Generic Processors";
//    llvm/BinaryFormat/ELF.h.
//  - LDS per workgroup: LLVM FeatureAddressableLocalMemorySize (AMDGPU.td) and
//    CLR's ISA table (64 KiB; 160 KiB gfx950; 320 KiB gfx125x).
//  - target-ID syntax and feature rule: AMDGPUUsage "Target ID"; clang TargetID.cpp;
//    ROCr Isa::IsCompatible (an unspecified code-object feature matches either
//    device value, '+'/'-' must match).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hipguard {

// A target-ID feature setting (xnack, sramecc).
enum class Feature : uint8_t {
  Unsupported,  // the processor has no such feature
  Any,          // unspecified: code object runs with either setting
  Off,          // "feature-"
  On,           // "feature+"
};

// One row of hipguard's processor table.
struct ProcessorInfo {
  std::string_view name;     // "gfx942", "gfx9-4-generic"
  uint32_t mach;             // EF_AMDGPU_MACH value (e_flags & 0xff)
  uint8_t major, minor, stepping;  // ISA version (gfx_target_version = M*10000+m*100+s)
  uint32_t lds_bytes;        // max group segment (LDS) per workgroup, bytes
  bool wave32, wave64;       // supported wavefront sizes
  bool xnack, sramecc;       // supported as target-ID features
  std::string_view generic;  // generic family this processor belongs to ("" if none)
  bool is_generic;           // this row is a generic processor
  bool legacy;               // no longer supported by current ROCm (gfx8, gfx940, gfx941)
};

std::span<const ProcessorInfo> all_processors();
const ProcessorInfo* find_processor(std::string_view name);
const ProcessorInfo* find_processor_by_mach(uint32_t mach);
// gfx_target_version triple as reported by KFD (e.g. 9,4,2 -> gfx942).
const ProcessorInfo* find_processor_by_version(unsigned major, unsigned minor, unsigned stepping);

// A target ID: processor plus optional features, e.g. "gfx942:sramecc+:xnack-".
struct TargetId {
  std::string processor;
  Feature sramecc = Feature::Any;
  Feature xnack = Feature::Any;
  std::string alias;  // product name the user typed ("mi300x") or the GPU ("GPU 0"); empty otherwise
  // LDS per workgroup the GPU itself reports (KFD lds_size_in_kb × 1024), bytes;
  // 0 when unknown (a target named by the user): the processor table's value.
  uint64_t lds_bytes = 0;

  // Canonical spelling: features in alphabetical order (sramecc, xnack), only
  // those that are On/Off.
  std::string str() const;
  // str() plus the alias in parentheses, for messages: "gfx942 (mi300x)", "gfx942:sramecc+ (GPU 0)".
  std::string label() const { return alias.empty() ? str() : str() + " (" + alias + ")"; }
  bool operator==(const TargetId&) const = default;
};

// Parses "gfx942", "gfx942:xnack-", "gfx90a:sramecc+:xnack+". Rejects unknown
// processors, unknown or repeated features and features the processor lacks.
// On failure returns nullopt and sets *error.
std::optional<TargetId> parse_target_id(std::string_view text, std::string* error);

// As parse_target_id, and also accepts product names: mi300x, mi300a, mi325x
// (gfx942), mi350x, mi355x (gfx950), mi250x, mi250, mi210 (gfx90a), mi100 (gfx908),
// optionally followed by features ("mi300x:xnack+").
std::optional<TargetId> parse_target(std::string_view text, std::string* error);

// Static + dynamic LDS one workgroup of `t` may use, bytes: the processor's
// addressable LDS, or less when the GPU reports less (shared reference,
// amdgpu-code-object.md: min(lds_size_in_kb × 1024, addressable size); on
// gfx10+ KFD may report the per-WGP size, which is more).
inline uint64_t lds_limit(const TargetId& t, const ProcessorInfo& p) {
  return t.lds_bytes && t.lds_bytes < p.lds_bytes ? t.lds_bytes : p.lds_bytes;
}

enum class Match {
  Native,             // same processor, features compatible
  Generic,            // generic code object of the device's family, features compatible
  ProcessorMismatch,  // different processor / family
  FeatureMismatch,    // processor fits, xnack or sramecc setting differs
  GenericTooOld,      // generic code object whose generic version is below the minimum
};

struct MatchResult {
  Match kind;
  std::string detail;  // human-readable reason for a mismatch, e.g. "code object xnack+, device xnack-"
};

// Can a code object built for `code` (with generic version `generic_version`
// from e_flags, 0 for non-generic) run on `device`? A device feature left Any
// (the user named only the processor) is compatible with every code-object value.
MatchResult match_target(const TargetId& code, unsigned generic_version, const TargetId& device);
// The same verdict without the reason text (selection runs it for every bundle
// entry at every registration; the text is only needed for a diagnostic).
Match match_kind(const TargetId& code, unsigned generic_version, const TargetId& device);

}  // namespace hipguard
