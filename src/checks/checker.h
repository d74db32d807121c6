// The check of one input (check_image, hipguard/check.h) as a class: check.cpp reads the bundle or code
// object and checks each selected code object, selection.cpp decides which bundle entry the runtime
// selects for each target. Internal to src/checks/.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hipguard/check.h"

namespace hipguard {

class Checker {
 public:
  Checker(Bytes data, const std::string& origin, const std::vector<TargetId>& targets, const std::string& location,
          Depth depth, const Machine& machine, SelectionMemo* memo, Bytes head = {})
      : data_(data),
        head_(head.size() > data.size() ? head.first(data.size()) : head),
        targets_(targets),
        depth_(depth),
        machine_(machine),
        runtime_(machine.runtime ? *machine.runtime : default_runtime()),
        one_process_(machine.one_process),
        memo_(memo) {
    report_.origin = origin;
    report_.location = location;
  }

  ImageReport run();
  std::function<void(Bytes)> release_read;  // check_image's

 private:
  struct Candidate {  // an amdgcn HIP entry of a bundle, with its parsed target ID
    const BundleEntry* entry;
    TargetId tid;
  };

  // The bundle's entries as the runtime sees them: the amdgcn code objects it
  // may select (candidates) and the first SPIR-V entry.
  struct Entries {
    std::vector<Candidate> candidates;
    const BundleEntry* spirv = nullptr;  // first hip SPIR-V entry (amdgcnspirv), if any
    bool compressed = false;
  };

  // check.cpp: structure, code objects and kernels

  Diagnostic& add(Code c, const std::string& entry, const std::string& kernel, const TargetId* target,
                  std::string message, std::string fix);

  Diagnostic& structural(Code c, const std::string& entry, const std::string& kernel, std::string message,
                         std::string fix, std::optional<Severity> severity = std::nullopt);

  // Parses a code object once; records its structural findings. Unlisted: not
  // among the report's code objects (read only to its kernel descriptors).
  const CodeObject* code_object(Bytes bytes, const std::string& entry, bool descriptors_only, bool listed = true,
                                uint64_t only_lds_over = 0);

  void check_kernels(const CodeObject& co, const std::string& entry, const TargetId& target, bool lds_only = false);

  // The table's fix (diagnostics.def), else the fix for broken or incomplete metadata.
  static std::string structural_fix(Code c);

  // The code object of a bundle entry; for a compressed bundle this decodes up
  // to the entry, and a payload that ends early is a compressed-bundle error.
  // Entries with the same offset and size are parsed once (the later ones are
  // aliases of the first, aliases_); the bytes parsed per bundle stay
  // within kMaxParsedBytesFactor times its size, past that an entry is HG111.
  const CodeObject* entry_code_object(Bundle& b, const BundleEntry& e);

  void check_raw();
  bool raw_selected_from_header();

  // Depth::Library: a library's file for processors none of the targets has is
  // loaded on none of them; its ELF header says which (HG202 per target, which
  // the library's tally turns into "for another processor").
  void library_file_elsewhere();

  void processor_mismatch(const CodeObject& co, const TargetId& t);

  // Depth::ForTargets: a raw code object whose processor none of the targets
  // has is loaded on none of them, like a bundle entry the runtime does not
  // select: it is read only to its kernel descriptors (HG202 and whether the
  // kernels would fit at all, HG301); its metadata findings belong to a check
  // against its own processor (docs/performance.md, P1). The shim reads such
  // an object in full: it may run on the GPU present when HIPGUARD_TARGET
  // names another, and its kernel and device-function names serve lookups.
  bool built_for_other_processors() const;

  // The least static LDS any target provides (bytes); 0 when a target's processor is unknown.
  uint64_t smallest_lds_limit() const;

  static bool conflicts(Feature code, Feature device);

  static std::string feature_fix(const TargetId& code, const TargetId& device);

  // An offload bundle: its entries, then for each target the entry the
  // runtime selects and that entry's code object.
  void check_bundle();
  // The bundle, its table from head_ when that holds it (check_image's head).
  Result<Bundle> read_bundle() const;

  // The selected entry's code object on v.target: the loader's own e_flags
  // check, the generic version, then every kernel.
  void check_selected(TargetVerdict& v, const Candidate& chosen, Bundle& b);

  // Depth::Descriptors applies to bundle entries; a raw code
  // object is checked in full unless Depth::ForTargets finds it built for other processors (check_raw).
  bool descriptors_only() const;

  // An ISA-compatible sibling (same major.minor and generic family, e.g. gfx1031
  // device, gfx1030 code): HSA_OVERRIDE_GFX_VERSION makes ROCr report the GPU as
  // the code's processor. "" when `code` is no such sibling of `device`.
  static std::string override_workaround(const std::string& code, const std::string& device);

  // selection.cpp: the entry the runtime selects for each target, and the findings when it selects none

  // SelectionMemo: the entry IDs, each after its length, as the key; a
  // remembered selection applied to this bundle's entries (check_selected
  // needs the entry of each candidate only).
  bool select_from_memo(std::string& ids, std::vector<Candidate>& chosen);

  // Only a selection without any finding, every target native or generic.
  void remember_selection(std::string ids, const std::vector<const Candidate*>& chosen);

  // The name a runtime that keeps the device's features asks for as the
  // generic code object (CLR hip_fatbin.cpp TargetToGeneric: "<generic>:<device
  // sramecc>:<device xnack>"); nullopt when comgr rejects that name because the
  // generic processor lacks one of the features (comgr parseTargetIdentifier).
  static std::optional<TargetId> generic_query(const TargetId& t, const RuntimeInfo& rt);

  // One comgr lookup for all the targets (the GPUs of one process): CLR 5.6+
  // hip_fatbin.cpp ExtractFatBinaryUsingCOMGR queries every device ISA name at once.
  bool batch_applies(const Entries& entries) const;

  // comgr-metadata.cpp lookUpCodeObject: entries in file order, each filling the
  // first still-empty compatible query, then `break`: an entry serves one query.
  // A target whose own query stays empty gets no code object even when an entry
  // fits it (HG212); one whose query got another entry than the first fitting
  // one in file order loads that entry.
  void batch_lookup(const Entries& entries, std::vector<const Candidate*>& chosen);

  // HG212: the entry target v would load alone went to another GPU's query.
  void starved(TargetVerdict& v, const Candidate& wanted, const std::map<std::string, const Candidate*>& filled);

  Entries collect_candidates(bool compressed);

  static bool is_spirv(const BundleEntry& e);

  // comgr unbundles compressed bundles with HipOpenmpCompatible: openmp- entries
  // are candidates there; the uncompressed lookup takes hip/hipv4/hcc only.
  static bool may_select(const BundleEntry& e, bool compressed);

  // What the bundle holds, for HG201's message (built only for it).
  std::string held(const Entries& entries) const;

  // The runtime's choice for v.target: native, then generic, then SPIR-V
  // (which is said here, with nothing to check); null when it has none.
  const Candidate* select(TargetVerdict& v, const Entries& entries, Bundle& b);

  // HG213: a gfx906 (sramecc+/-) under HIP 7.x asks for "gfx9-generic:sramecc+:xnack-", a name comgr rejects.
  void generic_refused(const Candidate& c, const TargetId& t, bool spirv_follows);

  // Does any amdgcn entry define a kernel ("<name>.kd" symbols, no metadata
  // read)? Asked only when nothing fits a target; an entry that cannot be read
  // counts as having kernels, so a damaged bundle keeps HG201. The entries are
  // not the report's code objects and their findings are not reported.
  bool has_kernels(Bundle& b, const Entries& entries);

  // Nothing for the target, and no kernels in any entry (a library whose
  // kernels are compiled at run time, like rocFFT, ships only __device__
  // variables). Since ROCm 5.3 the runtime logs hipErrorNoBinaryForGpu at HIP
  // init and goes on (clr hip_platform.cpp PlatformState::init); a variable's
  // first use builds the program for the device and fails (hip_global.cpp
  // Var::getStatDeviceVar -> hip_fatbin.cpp FatBinaryInfo::BuildProgram).
  // ROCm 5.2 aborted at HIP init (hip_fatbin.cpp ExtractFatBinary, guarantee;
  // removed by clr 9f37acc55, SWDEV-341326).
  void no_kernels(const TargetId& t, const std::string& held);

  // Does candidate `c` fit target `t` in selection pass `pass` (native or generic)?
  // The generic version is checked on the ELF once an entry is chosen.
  static bool fits(const Candidate& c, const TargetId& t, Selection pass);

  // comgr visits a compressed bundle's entries in StringMap (hash) order, not
  // file order: with several entries that fit, which one the runtime loads
  // depends on comgr's LLVM version. hipguard checks the first in file order.
  void ambiguous_in_ccob(const std::vector<Candidate>& candidates, const Candidate& chosen, const TargetId& t,
                         Selection pass);

  void no_match(const std::vector<Candidate>& candidates, const TargetId& t, const std::string& held,
                const std::string& why = "");

  Bytes data_;
  Bytes head_;  // a copy of data_'s first bytes, or empty (check_image)
  const std::vector<TargetId>& targets_;
  Depth depth_;
  const Machine& machine_;
  const RuntimeInfo& runtime_;
  bool one_process_;
  SelectionMemo* memo_;
  ImageReport report_;
  std::map<std::string, const CodeObject*> parsed_;
  std::optional<CodeObject> unlisted_;  // a raw code object built for other processors (check_raw)
  std::map<std::pair<uint64_t, uint64_t>, std::string> by_range_;  // (offset, size) -> the entry parsed for it
  std::map<std::string, std::string> aliases_;  // entry -> the entry with the same bytes, whose findings it shares
  uint64_t parsed_bytes_ = 0;                   // bytes of this bundle's entries parsed so far
  bool over_budget_ = false;                    // an entry was refused: the bundle's entries overlap too much
  std::optional<bool> has_kernels_;             // does any amdgcn entry define a kernel (has_kernels)
};

}  // namespace hipguard
