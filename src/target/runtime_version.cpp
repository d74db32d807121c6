// The HIP runtime versions hipguard models and how each selects code objects (runtime_version.h).
#include "hipguard/runtime_version.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace hipguard {
namespace {

// Read in the ROCm/clr tags rocm-5.6.0..rocm-6.2.2 (comgr lookup, unordered_map) and in CLR's
// hip_fatbin.cpp of the ROCm 7.2 era (TargetToGeneric, std::set; the real libamdhip64.so.7.2.53211
// carries the generic-with-features names). The 6.4 and 7.x rows are checked against comgr 3 and
// comgr 7.2.4 as HIP 6.4 and 7.2 ask them, over whole real libraries (Oracle.ComgrSelection,
// Oracle72.ComgrSelection). Not confirmed from source: ROCm 5.0-5.5 (taken from
// the 5.2 parser), HIP 6.3 (counted with 5.6: no generic), and 6.4.0, which asks for no generic entry
// in a compressed bundle (6.4.1, CLR "Support generic target in compressed fatbin", does; the 6.4 row
// is 6.4.1's behaviour).
// clang-format off
constexpr std::array kRuntimes = {
  // name, since, generic, generic_keeps_features, batch_lookup, own_parser_with_generic, sorted_queries, spirv,
  // aborts_without_code_object, source
  RuntimeInfo{"5.0", 0,        false, false, false, false, false, false, true,
              "CLR rocm-5.2 hipamd/src/hip_code_object.cpp extractCodeObjectFromFatBinary (each entry serves every GPU); "
              "hip_fatbin.cpp FatBinaryInfo::ExtractFatBinary guarantee(false, \"hipErrorNoBinaryForGpu: ...\")"},
  RuntimeInfo{"5.3", 50300000, false, false, false, false, false, false, false,
              "CLR 9f37acc55 (SWDEV-341326, July 2022): no abort for a fat binary without a code object for the GPU"},
  RuntimeInfo{"5.6", 50600000, false, false, true,  false, false, false, false,
              "CLR rocm-5.6.0..6.2 hipamd/src/hip_fatbin.cpp FatBinaryInfo::ExtractFatBinaryUsingCOMGR (unordered_map "
              "query list, amd_comgr_lookup_code_object)"},
  RuntimeInfo{"6.4", 60400000, true,  false, true,  true,  false, true,  false,
              "CLR rocm-6.4 hipamd/src/hip_fatbin.cpp ExtractFatBinaryUsingCOMGR; hip_code_object.cpp "
              "extractCodeObjectFromFatBinary / isCodeObjectCompatibleWithDevice for bundles with a generic entry"},
  RuntimeInfo{"7.0", 70000000, true,  true,  true,  false, true,  true,  false,
              "CLR 7.x (ROCm 7.2: rocm-systems projects/clr) hipamd/src/hip_fatbin.cpp ExtractFatBinaryUsingCOMGR: "
              "std::set of the devices' ISA names, TargetToGeneric (generic name + the device's sramecc, xnack) and "
              "the SPIR-V names, for compressed and uncompressed bundles alike; native, then generic, then SPIR-V"},
};
// clang-format on

unsigned parse_number(std::string_view& text, bool* ok) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  *ok = ec == std::errc() && end != text.data();
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return v;
}

}  // namespace

std::span<const RuntimeInfo> all_runtimes() { return kRuntimes; }
const RuntimeInfo& default_runtime() { return kRuntimes.back(); }

const RuntimeInfo& runtime_for_version(unsigned hip_version) {
  const RuntimeInfo* best = &kRuntimes.front();
  for (const auto& r : kRuntimes)
    if (r.since <= hip_version) best = &r;
  return *best;
}

const RuntimeInfo* parse_runtime(std::string_view text, unsigned* hip_version) {
  bool ok = false;
  unsigned major = parse_number(text, &ok);
  if (!ok || major == 0 || major > 99) return nullptr;
  unsigned minor = 0, patch = 0;
  if (!text.empty()) {
    if (text.front() != '.') return nullptr;
    text.remove_prefix(1);
    minor = parse_number(text, &ok);
    if (!ok || minor > 99) return nullptr;
    if (!text.empty()) {
      if (text.front() != '.') return nullptr;
      text.remove_prefix(1);
      patch = parse_number(text, &ok);
      if (!ok || !text.empty()) return nullptr;
    }
  }
  unsigned v = major * 10000000 + minor * 100000 + std::min(patch, 99999u);
  if (hip_version) *hip_version = v;
  return &runtime_for_version(v);
}

const RuntimeInfo* runtime_for_library(std::string_view file_name, std::string* version) {
  constexpr std::string_view kStem = "libamdhip64.so.";
  size_t at = file_name.rfind(kStem);
  if (at == std::string_view::npos) return nullptr;
  std::string_view rest = file_name.substr(at + kStem.size());
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return nullptr;  // libamdhip64.so.6: the major only
  size_t end = rest.find('.', dot + 1);
  const RuntimeInfo* r = parse_runtime(rest.substr(0, end));
  if (r && version) *version = std::string(rest.substr(0, end));
  return r;
}

bool is_hip_runtime_name(std::string_view name) {
  constexpr std::string_view kName = "libamdhip64.so";
  return name.substr(0, kName.size()) == kName && (name.size() == kName.size() || name[kName.size()] == '.');
}

std::string runtime_label(const RuntimeInfo& r) {
  if (&r == &kRuntimes.back()) return "HIP " + std::string(r.name.substr(0, r.name.find('.'))) + ".x";
  return "HIP " + std::string(r.name);
}

}  // namespace hipguard
