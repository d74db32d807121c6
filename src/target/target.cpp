// The processor table and target IDs (gfx942:sramecc+:xnack-): parsing, matching, compatibility.
#include "hipguard/target.h"

#include "hipguard/diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/BinaryFormat/ELF.h>

#include <unordered_map>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdlib>

namespace hipguard {
namespace {

namespace E = llvm::ELF;

// Processors newer than LLVM 16, which lacks their EF_AMDGPU_MACH numbers
// (AMDGPUUsage, ELF Header, EF_AMDGPU_MACH; the generic ones: AMDGPUUsage, Generic Processors).
constexpr uint32_t kMach_gfx941 = 0x04b;
constexpr uint32_t kMach_gfx942 = 0x04c;
constexpr uint32_t kMach_gfx950 = 0x04f;
constexpr uint32_t kMach_gfx1150 = 0x043;
constexpr uint32_t kMach_gfx1151 = 0x04a;
constexpr uint32_t kMach_gfx1152 = 0x055;
constexpr uint32_t kMach_gfx1153 = 0x058;
constexpr uint32_t kMach_gfx1200 = 0x048;
constexpr uint32_t kMach_gfx1201 = 0x04e;
constexpr uint32_t kMach_gfx1250 = 0x049;
constexpr uint32_t kMach_gfx1251 = 0x05a;
constexpr uint32_t kMach_gfx9_generic = 0x051;
constexpr uint32_t kMach_gfx9_4_generic = 0x05f;
constexpr uint32_t kMach_gfx10_1_generic = 0x052;
constexpr uint32_t kMach_gfx10_3_generic = 0x053;
constexpr uint32_t kMach_gfx11_generic = 0x054;
constexpr uint32_t kMach_gfx12_generic = 0x059;
constexpr uint32_t kMach_gfx12_5_generic = 0x05b;

constexpr uint32_t K64 = 65536, K160 = 163840, K320 = 327680;

// clang-format off
// name, mach, major, minor, stepping, lds, wave32, wave64, xnack, sramecc, generic family, is_generic, legacy,
// then, where not the default: default_xnack, unified_vgprs, vgprs, hotswap (ProcessorInfo, target.h)
constexpr std::array kProcessors = {
  // gfx8: dropped by current ROCm but still found in older fat binaries (e.g. Debian's rocSPARSE).
  ProcessorInfo{"gfx801",  E::EF_AMDGPU_MACH_AMDGCN_GFX801,  8, 0,  1, K64, false, true, true,  false, "",               false, true},
  ProcessorInfo{"gfx802",  E::EF_AMDGPU_MACH_AMDGCN_GFX802,  8, 0,  2, K64, false, true, false, false, "",               false, true},
  ProcessorInfo{"gfx803",  E::EF_AMDGPU_MACH_AMDGCN_GFX803,  8, 0,  3, K64, false, true, false, false, "",               false, true},
  ProcessorInfo{"gfx805",  E::EF_AMDGPU_MACH_AMDGCN_GFX805,  8, 0,  5, K64, false, true, false, false, "",               false, true},
  ProcessorInfo{"gfx810",  E::EF_AMDGPU_MACH_AMDGCN_GFX810,  8, 1,  0, K64, false, true, true,  false, "",               false, true},
  ProcessorInfo{"gfx900",  E::EF_AMDGPU_MACH_AMDGCN_GFX900,  9, 0,  0, K64, false, true, true,  false, "gfx9-generic",   false, false, Feature::Off},
  ProcessorInfo{"gfx902",  E::EF_AMDGPU_MACH_AMDGCN_GFX902,  9, 0,  2, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx904",  E::EF_AMDGPU_MACH_AMDGCN_GFX904,  9, 0,  4, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx906",  E::EF_AMDGPU_MACH_AMDGCN_GFX906,  9, 0,  6, K64, false, true, true,  true,  "gfx9-generic",   false, false, Feature::Off},
  ProcessorInfo{"gfx908",  E::EF_AMDGPU_MACH_AMDGCN_GFX908,  9, 0,  8, K64, false, true, true,  true,  "",               false, false, Feature::Off},
  ProcessorInfo{"gfx909",  E::EF_AMDGPU_MACH_AMDGCN_GFX909,  9, 0,  9, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx90a",  E::EF_AMDGPU_MACH_AMDGCN_GFX90A,  9, 0, 10, K64, false, true, true,  true,  "",               false, false, Feature::Off, true, 512},
  ProcessorInfo{"gfx90c",  E::EF_AMDGPU_MACH_AMDGCN_GFX90C,  9, 0, 12, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx940",  E::EF_AMDGPU_MACH_AMDGCN_GFX940,  9, 4,  0, K64, false, true, true,  true,  "",               false, true, Feature::Off, true, 512},
  ProcessorInfo{"gfx941",  kMach_gfx941,  9, 4,  1, K64, false, true, true,  true,  "",               false, true, Feature::Off, true, 512},
  ProcessorInfo{"gfx942",  kMach_gfx942,  9, 4,  2, K64, false, true, true,  true,  "gfx9-4-generic", false, false, Feature::Off, true, 512, HotSwap::Native},
  ProcessorInfo{"gfx950",  kMach_gfx950,  9, 5,  0, K160, false, true, true, true,  "gfx9-4-generic", false, false, Feature::Off, true, 512, HotSwap::Native},
  ProcessorInfo{"gfx1010", E::EF_AMDGPU_MACH_AMDGCN_GFX1010, 10, 1,  0, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1011", E::EF_AMDGPU_MACH_AMDGCN_GFX1011, 10, 1,  1, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1012", E::EF_AMDGPU_MACH_AMDGCN_GFX1012, 10, 1,  2, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1013", E::EF_AMDGPU_MACH_AMDGCN_GFX1013, 10, 1,  3, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1030", E::EF_AMDGPU_MACH_AMDGCN_GFX1030, 10, 3,  0, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1031", E::EF_AMDGPU_MACH_AMDGCN_GFX1031, 10, 3,  1, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1032", E::EF_AMDGPU_MACH_AMDGCN_GFX1032, 10, 3,  2, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1033", E::EF_AMDGPU_MACH_AMDGCN_GFX1033, 10, 3,  3, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1034", E::EF_AMDGPU_MACH_AMDGCN_GFX1034, 10, 3,  4, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1035", E::EF_AMDGPU_MACH_AMDGCN_GFX1035, 10, 3,  5, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1036", E::EF_AMDGPU_MACH_AMDGCN_GFX1036, 10, 3,  6, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1100", E::EF_AMDGPU_MACH_AMDGCN_GFX1100, 11, 0,  0, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1101", E::EF_AMDGPU_MACH_AMDGCN_GFX1101, 11, 0,  1, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1102", E::EF_AMDGPU_MACH_AMDGCN_GFX1102, 11, 0,  2, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1103", E::EF_AMDGPU_MACH_AMDGCN_GFX1103, 11, 0,  3, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1150", kMach_gfx1150, 11, 5,  0, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1151", kMach_gfx1151, 11, 5,  1, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1152", kMach_gfx1152, 11, 5,  2, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1153", kMach_gfx1153, 11, 5,  3, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1200", kMach_gfx1200, 12, 0,  0, K64, true,  true, false, false, "gfx12-generic",  false, false},
  ProcessorInfo{"gfx1201", kMach_gfx1201, 12, 0,  1, K64, true,  true, false, false, "gfx12-generic",  false, false},
  // gfx125x: wave32 only; AMDGPUUsage lists no target-ID features (e_flags carry "any").
  ProcessorInfo{"gfx1250", kMach_gfx1250, 12, 5,  0, K320, true, false, false, false, "gfx12-5-generic", false, false, Feature::Any, false, 1024, HotSwap::Forwarded},
  ProcessorInfo{"gfx1251", kMach_gfx1251, 12, 5,  1, K320, true, false, false, false, "gfx12-5-generic", false, false, Feature::Any, false, 1024},
  // Generic processors (code object v6 only).
  ProcessorInfo{"gfx9-generic",    kMach_gfx9_generic,  9, 0, 0, K64,  false, true, true,  false, "", true, false},
  ProcessorInfo{"gfx9-4-generic",  kMach_gfx9_4_generic,  9, 4, 0, K64,  false, true, true,  true,  "", true, false, Feature::Any, true, 512},
  ProcessorInfo{"gfx10-1-generic", kMach_gfx10_1_generic, 10, 1, 0, K64,  true,  true, true,  false, "", true, false},
  ProcessorInfo{"gfx10-3-generic", kMach_gfx10_3_generic, 10, 3, 0, K64,  true,  true, false, false, "", true, false},
  ProcessorInfo{"gfx11-generic",   kMach_gfx11_generic, 11, 0, 0, K64,  true,  true, false, false, "", true, false},
  ProcessorInfo{"gfx12-generic",   kMach_gfx12_generic, 12, 0, 0, K64,  true,  true, false, false, "", true, false},
  ProcessorInfo{"gfx12-5-generic", kMach_gfx12_5_generic, 12, 5, 0, K320, true,  false, false, false, "", true, false, Feature::Any, false, 1024},
};
// clang-format on

// The unified VGPR/AGPR file is the 512-VGPR one (target.h, ProcessorInfo::vgprs).
static_assert(std::all_of(kProcessors.begin(), kProcessors.end(),
                          [](const ProcessorInfo& p) { return p.unified_vgprs == (p.vgprs == 512); }));

// Products and the configuration they run with as shipped (sources: target.h).
constexpr Feature kOn = Feature::On, kOff = Feature::Off, kNone = Feature::Unsupported;
// clang-format off
constexpr std::array kProducts = {
  ProductInfo{"mi300x",     "AMD Instinct MI300X",   "gfx942",  kOn,   kOff},
  ProductInfo{"mi300a",     "AMD Instinct MI300A",   "gfx942",  kOn,   kOff},
  ProductInfo{"mi308x",     "AMD Instinct MI308X",   "gfx942",  kOn,   kOff},
  ProductInfo{"mi325x",     "AMD Instinct MI325X",   "gfx942",  kOn,   kOff},
  ProductInfo{"mi350x",     "AMD Instinct MI350X",   "gfx950",  kOn,   kOff},
  ProductInfo{"mi355x",     "AMD Instinct MI355X",   "gfx950",  kOn,   kOff},
  ProductInfo{"mi210",      "AMD Instinct MI210",    "gfx90a",  kOn,   kOff},
  ProductInfo{"mi250",      "AMD Instinct MI250",    "gfx90a",  kOn,   kOff},
  ProductInfo{"mi250x",     "AMD Instinct MI250X",   "gfx90a",  kOn,   kOff},
  ProductInfo{"mi100",      "AMD Instinct MI100",    "gfx908",  kOn,   kOff},
  ProductInfo{"mi50",       "AMD Instinct MI50",     "gfx906",  kOn,   kOff},
  ProductInfo{"mi60",       "AMD Instinct MI60",     "gfx906",  kOn,   kOff},
  ProductInfo{"radeon-vii", "AMD Radeon VII",        "gfx906",  kOff,  kOff},
  ProductInfo{"mi25",       "AMD Instinct MI25",     "gfx900",  kNone, kOff},
  ProductInfo{"w7900",      "AMD Radeon PRO W7900",  "gfx1100", kNone, kNone},
  ProductInfo{"rx7900xtx",  "AMD Radeon RX 7900 XTX", "gfx1100", kNone, kNone},
  ProductInfo{"rx9070xt",   "AMD Radeon RX 9070 XT", "gfx1201", kNone, kNone},
  ProductInfo{"rx9070",     "AMD Radeon RX 9070",    "gfx1201", kNone, kNone},
  ProductInfo{"rx9060xt",   "AMD Radeon RX 9060 XT", "gfx1200", kNone, kNone},
  ProductInfo{"ryzen-ai-max", "AMD Ryzen AI Max 300", "gfx1151", kNone, kNone},  // Strix Halo: Radeon 8060S and its smaller siblings
};
// clang-format on

constexpr std::array kSources = {
    FactSource{"processors, EF_AMDGPU_MACH, generic families",
               "LLVM AMDGPUUsage (AMDGPU Processors, EF_AMDGPU_MACH values, Generic Processors); BinaryFormat/ELF.h"},
    FactSource{"products' processors",
               "LLVM AMDGPUUsage (AMDGPU Processors, Example Products; e.g. Radeon 8060S of "
               "the Ryzen AI Max 300 series: gfx1151)"},
    FactSource{"LDS per workgroup", "LLVM AMDGPU.td FeatureAddressableLocalMemorySize; CLR ISA table"},
    FactSource{"wavefront sizes", "LLVM AMDGPUUsage (AMDGPU Processors: wavefrontsize64 / wave32-only gfx125x)"},
    FactSource{"xnack default off", "Linux amdgpu_gmc.c amdgpu_gmc_noretry_set: noretry=1 on GC 9.0.1, 9.4.x, 9.5.0"},
    FactSource{"sramecc default",
               "Linux kfd_topology.c: HSA_CAP_SRAM_EDCSUPPORTED when GFX RAS (ECC) is enabled; "
               "rocminfo: gfx906:sramecc+ on MI50/MI60, sramecc- on Radeon VII"},
};

const char* feature_suffix(Feature f) { return f == Feature::On ? "+" : "-"; }

// Only '+'/'-' on both sides can conflict.
bool feature_conflicts(Feature code, Feature device) {
  bool code_set = code == Feature::On || code == Feature::Off;
  bool dev_set = device == Feature::On || device == Feature::Off;
  return code_set && dev_set && code != device;
}

}  // namespace

std::span<const ProcessorInfo> all_processors() { return kProcessors; }
std::span<const ProductInfo> all_products() { return kProducts; }
std::span<const FactSource> fact_sources() { return kSources; }

const ProductInfo* find_product(std::string_view name) {
  for (const auto& p : kProducts)
    if (p.name == name) return &p;
  return nullptr;
}

const ProcessorInfo* find_processor(std::string_view name) {
  // Hashed: registration looks up two processors per bundle entry (thousands per library).
  static const std::unordered_map<std::string_view, const ProcessorInfo*> by_name = [] {
    std::unordered_map<std::string_view, const ProcessorInfo*> m;
    for (const auto& p : kProcessors) m.emplace(p.name, &p);
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

std::vector<std::string> nearest_processors(std::string_view device, std::span<const std::string> candidates) {
  const ProcessorInfo* dev = find_processor(device);
  std::vector<std::string> nearest;
  if (!dev) return nearest;
  int best = INT_MAX;
  for (const auto& c : candidates) {
    const ProcessorInfo* p = find_processor(std::string_view(c).substr(0, c.find(':')));
    if (!p || p->major != dev->major) continue;
    int distance = std::abs(int(p->minor) - int(dev->minor));
    if (distance < best) nearest.clear(), best = distance;
    if (distance == best && std::find(nearest.begin(), nearest.end(), c) == nearest.end()) nearest.push_back(c);
  }
  return nearest;
}

const ProcessorInfo* find_processor_by_mach(uint32_t mach) {
  for (const auto& p : kProcessors)
    if (p.mach == mach) return &p;
  return nullptr;
}

const ProcessorInfo* find_processor_by_version(unsigned major, unsigned minor, unsigned stepping) {
  for (const auto& p : kProcessors)
    if (!p.is_generic && p.major == major && p.minor == minor && p.stepping == stepping) return &p;
  return nullptr;
}

std::string TargetId::str() const {
  std::string s = processor;
  if (sramecc == Feature::On || sramecc == Feature::Off) s += std::string(":sramecc") + feature_suffix(sramecc);
  if (xnack == Feature::On || xnack == Feature::Off) s += std::string(":xnack") + feature_suffix(xnack);
  return s;
}

Result<TargetId> parse_target_id(std::string_view text) {
  auto fail = [](std::string msg) { return ParseError{Code::kBadTarget, std::move(msg)}; };
  size_t colon = text.find(':');
  std::string proc = llvm::StringRef(text.substr(0, colon)).lower();
  const ProcessorInfo* info = find_processor(proc);
  if (!info) return fail("unknown processor '" + proc + "'");
  TargetId id;
  id.processor = proc;
  if (!info->sramecc) id.sramecc = Feature::Unsupported;
  if (!info->xnack) id.xnack = Feature::Unsupported;
  bool seen_sramecc = false, seen_xnack = false;
  while (colon != std::string_view::npos) {
    size_t next = text.find(':', colon + 1);
    size_t end = next == std::string_view::npos ? text.size() : next;
    std::string feat = llvm::StringRef(text.substr(colon + 1, end - colon - 1)).lower();
    colon = next;
    if (feat.size() < 2 || (feat.back() != '+' && feat.back() != '-'))
      return fail("feature '" + feat + "' must end in '+' or '-'");
    Feature value = feat.back() == '+' ? Feature::On : Feature::Off;
    feat.pop_back();
    if (feat == "sramecc") {
      if (seen_sramecc) return fail("feature 'sramecc' given twice");
      if (!info->sramecc) return fail(proc + " has no sramecc setting");
      seen_sramecc = true;
      id.sramecc = value;
    } else if (feat == "xnack") {
      if (seen_xnack) return fail("feature 'xnack' given twice");
      if (!info->xnack) return fail(proc + " has no xnack setting");
      seen_xnack = true;
      id.xnack = value;
    } else {
      return fail("unknown feature '" + feat + "' (only sramecc and xnack exist)");
    }
  }
  return id;
}

Result<TargetId> parse_target(std::string_view text) {
  std::string head = llvm::StringRef(text.substr(0, text.find(':'))).lower();
  const ProductInfo* product = find_product(head);
  if (!product) return parse_target_id(text);
  auto id = parse_target_id(std::string(product->processor) + std::string(text.substr(head.size())));
  if (!id) return id;
  id->alias = head;
  if (id->sramecc == Feature::Any) id->sramecc = product->sramecc;
  if (id->xnack == Feature::Any) id->xnack = product->xnack;
  return id;
}

Result<std::vector<TargetId>> resolve_target(std::string_view text) {
  auto id = parse_target(text);
  if (!id) return id.error();
  bool open = id->sramecc == Feature::Any || id->xnack == Feature::Any;
  if (!id->alias.empty() || !open) return std::vector<TargetId>{*id};
  // Every configuration GPUs of this processor ship with, in product order.
  std::vector<TargetId> out;
  for (const auto& p : kProducts) {
    if (p.processor != id->processor) continue;
    TargetId t = *id;
    if (t.sramecc == Feature::Any) t.sramecc = p.sramecc;
    if (t.xnack == Feature::Any) t.xnack = p.xnack;
    auto same = std::find_if(out.begin(), out.end(), [&](const TargetId& o) { return o.str() == t.str(); });
    // "AMD Instinct MI300X" -> "MI300X" in the alias, which every message repeats.
    std::string_view gpu =
        p.display.substr(p.display.rfind("Instinct ") == std::string_view::npos ? 0 : p.display.rfind("Instinct ") + 9);
    if (same == out.end()) {
      t.alias = id->processor + " as shipped in " + std::string(gpu);
      out.push_back(std::move(t));
    } else {
      same->alias += ", " + std::string(gpu);
    }
  }
  if (out.empty()) {  // no product known: the driver's xnack default, sramecc open
    const ProcessorInfo* info = find_processor(id->processor);
    if (info && id->xnack == Feature::Any) id->xnack = info->default_xnack;
    out.push_back(*id);
  }
  return out;
}

Match match_kind(const TargetId& code, unsigned generic_version, const TargetId& device) {
  Match kind;
  if (code.processor == device.processor) {
    kind = Match::Native;
  } else {
    const ProcessorInfo* code_p = find_processor(code.processor);
    const ProcessorInfo* dev_p = find_processor(device.processor);
    if (!(code_p && code_p->is_generic && dev_p && dev_p->generic == code.processor)) return Match::ProcessorMismatch;
    // AMDGPUUsage "Generic Processor Versioning": every current member joined at version 1.
    if (generic_version < 1) return Match::GenericTooOld;
    kind = Match::Generic;
  }
  if (feature_conflicts(code.sramecc, device.sramecc) || feature_conflicts(code.xnack, device.xnack))
    return Match::FeatureMismatch;
  return kind;
}

MatchResult match_target(const TargetId& code, unsigned generic_version, const TargetId& device) {
  Match kind = match_kind(code, generic_version, device);
  switch (kind) {
    case Match::Native:
    case Match::Generic: return {kind, ""};
    case Match::GenericTooOld:
      return {kind, "generic code object has generic version " + std::to_string(generic_version) +
                        ", the loader requires at least 1"};
    case Match::ProcessorMismatch: {
      const ProcessorInfo* code_p = find_processor(code.processor);
      const ProcessorInfo* dev_p = find_processor(device.processor);
      std::string why = "code object is for " + code.processor + ", device is " + device.processor;
      if (dev_p && !dev_p->generic.empty() && code_p && code_p->is_generic)
        why += " (member of " + std::string(dev_p->generic) + ")";
      return {kind, why};
    }
    case Match::FeatureMismatch: break;
  }
  std::string detail;
  if (feature_conflicts(code.sramecc, device.sramecc))
    detail = std::string("code object sramecc") + feature_suffix(code.sramecc) + ", device sramecc" +
             feature_suffix(device.sramecc);
  if (feature_conflicts(code.xnack, device.xnack)) {
    if (!detail.empty()) detail += "; ";
    detail +=
        std::string("code object xnack") + feature_suffix(code.xnack) + ", device xnack" + feature_suffix(device.xnack);
  }
  return {kind, detail};
}

}  // namespace hipguard
