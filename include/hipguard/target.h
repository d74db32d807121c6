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
//  - the configuration a GPU ships with (kSources below, cited by `hipguard targets`):
//    xnack is off unless the user changes the driver default: amdgpu's noretry
//    parameter defaults to 1 on GC 9.0.1 (gfx900), 9.4.x (gfx906, gfx908, gfx90a,
//    gfx94x) and 9.5.0 (gfx950) (Linux amdgpu_gmc.c, amdgpu_gmc_noretry_set), and
//    ROCr then reports xnack- (HSA_XNACK=1 turns it on per process). sramecc is
//    what KFD reports as HSA_CAP_SRAM_EDCSUPPORTED, set when the board's GFX RAS
//    (ECC) is enabled (Linux kfd_topology.c): on for Instinct boards, off for
//    Radeon VII (rocminfo on those boards: gfx906:sramecc+:xnack- on MI50,
//    gfx906:sramecc-:xnack- on Radeon VII).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/result.h"

namespace hipguard {

// A target-ID feature setting (xnack, sramecc).
enum class Feature : uint8_t {
  Unsupported,  // the processor has no such feature
  Any,          // unspecified: code object runs with either setting
  Off,          // "feature-"
  On,           // "feature+"
};

enum class HotSwap : uint8_t { None, Native, Forwarded };

// One row of hipguard's processor table.
struct ProcessorInfo {
  std::string_view name;           // "gfx942", "gfx9-4-generic"
  uint32_t mach;                   // EF_AMDGPU_MACH value (e_flags & 0xff)
  uint8_t major, minor, stepping;  // ISA version (gfx_target_version = M*10000+m*100+s)
  uint32_t lds_bytes;              // max group segment (LDS) per workgroup, bytes
  bool wave32, wave64;             // supported wavefront sizes
  bool xnack, sramecc;             // supported as target-ID features
  std::string_view generic;        // generic family this processor belongs to ("" if none)
  bool is_generic;                 // this row is a generic processor
  bool legacy;                     // no longer supported by current ROCm (gfx8, gfx940, gfx941)
  // xnack as the amdgpu driver sets it by default (Off: noretry=1), Any where
  // hipguard knows no default; see the sources above.
  Feature default_xnack = Feature::Any;
  // One 512-entry VGPR file shared by arch VGPRs and AGPRs (gfx90a-class;
  // LLVM AMDGPUBaseInfo, FeatureGFX90AInsts; AMDGPUUsage, .amdhsa_accum_offset).
  bool unified_vgprs = false;
  // VGPRs one work-item addresses (AMDGPUBaseInfo getAddressableNumVGPRs): the unified file's 512,
  // gfx125x's 1024, else 256.
  uint16_t vgprs = 256;
  // Its part in CLR's HotSwap forwarding (HG210; CLR builds with HotSwap, before ROCm PR #9856):
  // Native, a processor whose selected code object the forwarding replaces; Forwarded, the
  // processor of the bundle entry handed to the HotSwap tool instead.
  HotSwap hotswap = HotSwap::None;
};

std::span<const ProcessorInfo> all_processors();

// A GPU product and the target-ID configuration it runs with as shipped.
struct ProductInfo {
  std::string_view name;       // as typed on the command line: "mi300x"
  std::string_view display;    // "AMD Instinct MI300X"
  std::string_view processor;  // "gfx942"
  Feature sramecc, xnack;      // default configuration (On/Off, Unsupported)
};
std::span<const ProductInfo> all_products();
const ProductInfo* find_product(std::string_view name);

// One line per fact source that the processor and product tables use, for
// `hipguard targets` and the docs.
struct FactSource {
  std::string_view fact, source;
};
std::span<const FactSource> fact_sources();
const ProcessorInfo* find_processor(std::string_view name);
const ProcessorInfo* find_processor_by_mach(uint32_t mach);
// Of `candidates` (target IDs: "gfx90a:xnack+", or processor names), the ones nearest to the
// processor `device`, for "nearest: ..." in messages: those of its ISA major version whose minor
// version is closest to its own (gfx950 -> gfx942 before gfx90a), each once, in the candidates'
// order. Empty when none shares the major version or a processor is not in the table.
std::vector<std::string> nearest_processors(std::string_view device, std::span<const std::string> candidates);
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
// HG206 (kBadTarget) on failure, saying why.
Result<TargetId> parse_target_id(std::string_view text);

// As parse_target_id, and also accepts product names (all_products(): mi300x,
// mi325x, mi355x, mi250x, ...), optionally followed by features
// ("mi250x:xnack+"). A product means the configuration it ships with: every
// feature not given is the product's default (mi300x -> gfx942:sramecc+:xnack-).
Result<TargetId> parse_target(std::string_view text);

// What a user's target names, as the GPUs run it: a product as parse_target;
// a target ID whose features are not all given is checked in every
// configuration that GPUs of that processor ship with (gfx90a ->
// gfx90a:sramecc+:xnack-; gfx906 -> sramecc+ (MI50, MI60) and sramecc- (Radeon
// VII)); the alias says which GPUs each configuration stands for. A processor
// with no known product keeps its driver's xnack default and "any" elsewhere.
// Never empty; HG206 (kBadTarget) on failure, as parse_target.
Result<std::vector<TargetId>> resolve_target(std::string_view text);

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
