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
  ProcessorInfo{"gfx900",  0x02c,  9, 0,  0, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx902",  0x02d,  9, 0,  2, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx904",  0x02e,  9, 0,  4, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx906",  0x02f,  9, 0,  6, K64, false, true, true,  true,  "gfx9-generic",   false, false},
  ProcessorInfo{"gfx908",  0x030,  9, 0,  8, K64, false, true, true,  true,  "",               false, false},
  ProcessorInfo{"gfx909",  0x031,  9, 0,  9, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx90a",  0x03f,  9, 0, 10, K64, false, true, true,  true,  "",               false, false},
  ProcessorInfo{"gfx90c",  0x032,  9, 0, 12, K64, false, true, true,  false, "gfx9-generic",   false, false},
  ProcessorInfo{"gfx940",  0x040,  9, 4,  0, K64, false, true, true,  true,  "",               false, true},
  ProcessorInfo{"gfx941",  0x04b,  9, 4,  1, K64, false, true, true,  true,  "",               false, true},
  ProcessorInfo{"gfx942",  0x04c,  9, 4,  2, K64, false, true, true,  true,  "gfx9-4-generic", false, false},
  ProcessorInfo{"gfx950",  0x04f,  9, 5,  0, K160, false, true, true, true,  "gfx9-4-generic", false, false},
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

struct Alias {
  std::string_view product, processor;
};
constexpr std::array kAliases = {
    Alias{"mi300x", "gfx942"}, Alias{"mi300a", "gfx942"}, Alias{"mi325x", "gfx942"},
    Alias{"mi308x", "gfx942"}, Alias{"mi350x", "gfx950"}, Alias{"mi355x", "gfx950"},
    Alias{"mi250x", "gfx90a"}, Alias{"mi250", "gfx90a"},  Alias{"mi210", "gfx90a"},
    Alias{"mi100", "gfx908"},  Alias{"mi50", "gfx906"},   Alias{"mi60", "gfx906"},
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
  for (const auto& a : kAliases) {
    if (head == a.product) {
      std::string rewritten = std::string(a.processor) + std::string(text.substr(head.size()));
      auto id = parse_target_id(rewritten, error);
      if (id) id->alias = head;
      return id;
    }
  }
  return parse_target_id(text, error);
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
