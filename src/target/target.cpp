// The processor table and target IDs (gfx942:sramecc+:xnack-): parsing, matching, compatibility.
#include "hipguard/target.h"

#include <unordered_map>

#include <algorithm>
#include <array>
#include <cctype>

namespace hipguard {
namespace {

constexpr uint32_t K64 = 65536, K160 = 163840, K320 = 327680;

// clang-format off
// name, mach, major, minor, stepping, lds, wave32, wave64, xnack, sramecc, generic family, is_generic, legacy
constexpr std::array kProcessors = {
  // gfx8: dropped by current ROCm but still found in older fat binaries (e.g. Debian's rocSPARSE).
  ProcessorInfo{"gfx801",  0x028,  8, 0,  1, K64, false, true, true,  false, "",               false, true},
  ProcessorInfo{"gfx802",  0x029,  8, 0,  2, K64, false, true, false, false, "",               false, true},
  ProcessorInfo{"gfx803",  0x02a,  8, 0,  3, K64, false, true, false, false, "",               false, true},
  ProcessorInfo{"gfx805",  0x03c,  8, 0,  5, K64, false, true, false, false, "",               false, true},
  ProcessorInfo{"gfx810",  0x02b,  8, 1,  0, K64, false, true, true,  false, "",               false, true},
  ProcessorInfo{"gfx900",  0x02c,  9, 0,  0, K64, false, true, true,  false, "gfx9-generic",   false, false, Feature::Off},
  ProcessorInfo{"gfx902",  0x02d,  9, 0,  2, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx904",  0x02e,  9, 0,  4, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx906",  0x02f,  9, 0,  6, K64, false, true, true,  true,  "gfx9-generic",   false, false, Feature::Off},
  ProcessorInfo{"gfx908",  0x030,  9, 0,  8, K64, false, true, true,  true,  "",               false, false, Feature::Off},
  ProcessorInfo{"gfx909",  0x031,  9, 0,  9, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx90a",  0x03f,  9, 0, 10, K64, false, true, true,  true,  "",               false, false, Feature::Off},
  ProcessorInfo{"gfx90c",  0x032,  9, 0, 12, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx940",  0x040,  9, 4,  0, K64, false, true, true,  true,  "",               false, true, Feature::Off},
  ProcessorInfo{"gfx941",  0x04b,  9, 4,  1, K64, false, true, true,  true,  "",               false, true, Feature::Off},
  ProcessorInfo{"gfx942",  0x04c,  9, 4,  2, K64, false, true, true,  true,  "gfx9-4-generic", false, false, Feature::Off},
  ProcessorInfo{"gfx950",  0x04f,  9, 5,  0, K160, false, true, true, true,  "gfx9-4-generic", false, false, Feature::Off},
  ProcessorInfo{"gfx1010", 0x033, 10, 1,  0, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1011", 0x034, 10, 1,  1, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1012", 0x035, 10, 1,  2, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1013", 0x042, 10, 1,  3, K64, true,  true, true,  false, "gfx10-1-generic", false, false},
  ProcessorInfo{"gfx1030", 0x036, 10, 3,  0, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1031", 0x037, 10, 3,  1, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1032", 0x038, 10, 3,  2, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1033", 0x039, 10, 3,  3, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1034", 0x03e, 10, 3,  4, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1035", 0x03d, 10, 3,  5, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1036", 0x045, 10, 3,  6, K64, true,  true, false, false, "gfx10-3-generic", false, false},
  ProcessorInfo{"gfx1100", 0x041, 11, 0,  0, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1101", 0x046, 11, 0,  1, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1102", 0x047, 11, 0,  2, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1103", 0x044, 11, 0,  3, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1150", 0x043, 11, 5,  0, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1151", 0x04a, 11, 5,  1, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1152", 0x055, 11, 5,  2, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1153", 0x058, 11, 5,  3, K64, true,  true, false, false, "gfx11-generic",  false, false},
  ProcessorInfo{"gfx1200", 0x048, 12, 0,  0, K64, true,  true, false, false, "gfx12-generic",  false, false},
  ProcessorInfo{"gfx1201", 0x04e, 12, 0,  1, K64, true,  true, false, false, "gfx12-generic",  false, false},
  // gfx125x: wave32 only; AMDGPUUsage lists no target-ID features (e_flags carry "any").
  ProcessorInfo{"gfx1250", 0x049, 12, 5,  0, K320, true, false, false, false, "gfx12-5-generic", false, false},
  ProcessorInfo{"gfx1251", 0x05a, 12, 5,  1, K320, true, false, false, false, "gfx12-5-generic", false, false},
  // Generic processors (code object v6 only).
  ProcessorInfo{"gfx9-generic",    0x051,  9, 0, 0, K64,  false, true, true,  false, "", true, false},
  ProcessorInfo{"gfx9-4-generic",  0x05f,  9, 4, 0, K64,  false, true, true,  true,  "", true, false},
  ProcessorInfo{"gfx10-1-generic", 0x052, 10, 1, 0, K64,  true,  true, true,  false, "", true, false},
  ProcessorInfo{"gfx10-3-generic", 0x053, 10, 3, 0, K64,  true,  true, false, false, "", true, false},
  ProcessorInfo{"gfx11-generic",   0x054, 11, 0, 0, K64,  true,  true, false, false, "", true, false},
  ProcessorInfo{"gfx12-generic",   0x059, 12, 0, 0, K64,  true,  true, false, false, "", true, false},
  ProcessorInfo{"gfx12-5-generic", 0x05b, 12, 5, 0, K320, true,  false, false, false, "", true, false},
};
// clang-format on

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
};
// clang-format on

constexpr std::array kSources = {
    FactSource{"processors, EF_AMDGPU_MACH, generic families",
               "LLVM AMDGPUUsage (AMDGPU Processors, EF_AMDGPU_MACH values, Generic Processors); BinaryFormat/ELF.h"},
    FactSource{"LDS per workgroup", "LLVM AMDGPU.td FeatureAddressableLocalMemorySize; CLR ISA table"},
    FactSource{"wavefront sizes", "LLVM AMDGPUUsage (AMDGPU Processors: wavefrontsize64 / wave32-only gfx125x)"},
    FactSource{"xnack default off", "Linux amdgpu_gmc.c amdgpu_gmc_noretry_set: noretry=1 on GC 9.0.1, 9.4.x, 9.5.0"},
    FactSource{"sramecc default", "Linux kfd_topology.c: HSA_CAP_SRAM_EDCSUPPORTED when GFX RAS (ECC) is enabled; "
                                  "rocminfo: gfx906:sramecc+ on MI50/MI60, sramecc- on Radeon VII"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

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

std::optional<TargetId> parse_target_id(std::string_view text, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<TargetId> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  size_t colon = text.find(':');
  std::string proc = lower(text.substr(0, colon));
  const ProcessorInfo* info = find_processor(proc);
  if (!info) return fail("unknown processor '" + proc + "'");
  TargetId id;
  id.processor = proc;
  if (!info->sramecc) id.sramecc = Feature::Unsupported;
  if (!info->xnack) id.xnack = Feature::Unsupported;
  bool seen_sramecc = false, seen_xnack = false;
  while (colon != std::string_view::npos) {
    size_t next = text.find(':', colon + 1);
    std::string feat = lower(text.substr(colon + 1, next == std::string_view::npos ? std::string_view::npos : next - colon - 1));
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

std::optional<TargetId> parse_target(std::string_view text, std::string* error) {
  std::string head = lower(text.substr(0, text.find(':')));
  const ProductInfo* product = find_product(head);
  if (!product) return parse_target_id(text, error);
  auto id = parse_target_id(std::string(product->processor) + std::string(text.substr(head.size())), error);
  if (!id) return id;
  id->alias = head;
  if (id->sramecc == Feature::Any) id->sramecc = product->sramecc;
  if (id->xnack == Feature::Any) id->xnack = product->xnack;
  return id;
}

std::vector<TargetId> resolve_target(std::string_view text, std::string* error) {
  auto id = parse_target(text, error);
  if (!id) return {};
  bool open = id->sramecc == Feature::Any || id->xnack == Feature::Any;
  if (!id->alias.empty() || !open) return {*id};
  // Every configuration GPUs of this processor ship with, in product order.
  std::vector<TargetId> out;
  for (const auto& p : kProducts) {
    if (p.processor != id->processor) continue;
    TargetId t = *id;
    if (t.sramecc == Feature::Any) t.sramecc = p.sramecc;
    if (t.xnack == Feature::Any) t.xnack = p.xnack;
    auto same = std::find_if(out.begin(), out.end(), [&](const TargetId& o) { return o.str() == t.str(); });
    // "AMD Instinct MI300X" -> "MI300X" in the alias, which every message repeats.
    std::string_view gpu = p.display.substr(p.display.rfind("Instinct ") == std::string_view::npos
                                                ? 0
                                                : p.display.rfind("Instinct ") + 9);
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
    case Match::Generic:
      return {kind, ""};
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
    case Match::FeatureMismatch:
      break;
  }
  std::string detail;
  if (feature_conflicts(code.sramecc, device.sramecc))
    detail = std::string("code object sramecc") + feature_suffix(code.sramecc) + ", device sramecc" +
             feature_suffix(device.sramecc);
  if (feature_conflicts(code.xnack, device.xnack)) {
    if (!detail.empty()) detail += "; ";
    detail += std::string("code object xnack") + feature_suffix(code.xnack) + ", device xnack" +
              feature_suffix(device.xnack);
  }
  return {kind, detail};
}

}  // namespace hipguard
