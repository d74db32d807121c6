// HIP runtime versions and how each selects a fat binary's code object (one table: src/target/runtime_version.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace hipguard {

// How one range of HIP runtime versions (CLR hip_fatbin.cpp) picks the code
// object for each GPU. The differences hipguard models; everything else (the
// feature rule, native before generic) is the same in every version.
struct RuntimeInfo {
  std::string_view name;  // "6.4": what --runtime takes and messages say ("HIP 6.4")
  unsigned since;         // lowest HIP_VERSION (major*10000000 + minor*100000 + patch) it covers
  bool generic;           // selects generic code objects (gfx9-4-generic, ...) when no native one fits
  // Asks for "<generic>:<device features>": a feature the generic processor
  // lacks (gfx9-generic has no sramecc) makes the name invalid, so a gfx906
  // (sramecc+ or sramecc-) never gets a gfx9-generic code object.
  bool generic_keeps_features;
  // One comgr lookup for all the process's GPUs, in which each bundle entry
  // serves at most one GPU (comgr lookUpCodeObject / the unbundler's work list).
  bool batch_lookup;
  // An uncompressed bundle that holds a generic entry is read by HIP's own
  // parser instead, which serves every GPU from every entry (no batch limit).
  bool own_parser_with_generic;
  bool sorted_queries;  // the batch's query list is sorted (std::set); else its order is unspecified
  bool spirv;           // compiles an amdgcnspirv entry when nothing native or generic fits
  // Aborts at HIP initialisation for any fat binary without a code object for
  // a GPU, kernels or not (ROCm 5.2 and older: HG201 even for rocFFT's kernel-free one, not HG211).
  bool aborts_without_code_object;
  std::string_view source;  // the runtime source this row models
};

// Every modelled range, oldest first.
std::span<const RuntimeInfo> all_runtimes();
// The newest range: hipguard's default when the runtime is not known, since it
// is the strictest (a CI gate must not pass what the newest runtime refuses).
const RuntimeInfo& default_runtime();
// The range covering HIP_VERSION `hip_version`; the oldest for older versions.
const RuntimeInfo& runtime_for_version(unsigned hip_version);
// "6.4", "6.4.3", "7", "7.0.2" -> the range covering it; nullptr when `text` is
// no version. `*hip_version` (optional) receives the HIP_VERSION it stands for.
const RuntimeInfo* parse_runtime(std::string_view text, unsigned* hip_version = nullptr);
// The runtime version in a libamdhip64 file name: "libamdhip64.so.6.4.43484"
// (the real file behind the libamdhip64.so.6 link) -> 6.4; nullptr when the
// name carries no major.minor. `*version` (optional) receives the name's
// "major.minor" ("6.3", which the 5.6 row covers).
const RuntimeInfo* runtime_for_library(std::string_view file_name, std::string* version = nullptr);
// Whether `name` (a DT_NEEDED string or DT_SONAME) is HIP's runtime library: "libamdhip64.so[.<version>]".
bool is_hip_runtime_name(std::string_view name);
// "HIP 6.4" / "HIP 7.x" for messages.
std::string runtime_label(const RuntimeInfo& r);

}  // namespace hipguard
