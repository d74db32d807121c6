// Checking one input: its bundles and code objects, each code object against each target.
#include "hipguard/check.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "checks/kernel_checks.h"
#include "format/read_code_object.h"

namespace hipguard {
namespace {

class Checker {
  struct Candidate {  // an amdgcn HIP entry of a bundle, with its parsed target ID
    const BundleEntry* entry;
    TargetId tid;
  };

 public:
  Checker(Bytes data, const std::string& origin, const std::vector<TargetId>& targets, const std::string& location,
          Depth depth, const Machine& machine, SelectionMemo* memo)
      : data_(data), targets_(targets), depth_(depth), machine_(machine),
        runtime_(machine.runtime ? *machine.runtime : default_runtime()), one_process_(machine.one_process),
        memo_(memo) {
    report_.origin = origin;
    report_.location = location;
  }

  ImageReport run() {
    report_.kind = classify(data_);
    for (const auto& t : targets_) {
      TargetVerdict v;
      v.target = t;
      report_.verdicts.push_back(std::move(v));
    }
    switch (report_.kind) {
      case PayloadKind::OffloadBundle:
      case PayloadKind::CompressedBundle: check_bundle(); break;
      case PayloadKind::CodeObject: check_raw(); break;
      case PayloadKind::Unknown:
        structural(code::kUnknownPayload, "", "",
                   "data is neither an offload bundle (__CLANG_OFFLOAD_BUNDLE__), a compressed bundle (CCOB) "
                   "nor an AMDGPU ELF code object",
                   "pass the fat binary of a HIP program, or a .co/.hsaco file built for amdgcn-amd-amdhsa");
        break;
    }
    // A target fails on its own errors and on structural errors of the whole
    // image (entry "") or of the entry it selected.
    for (auto& v : report_.verdicts) {
      // A SPIR-V fallback runs, with HG207 saying where; a fat binary without kernels runs, with HG211.
      v.can_run = v.selection != Selection::None || v.kernel_free;
      for (const auto& d : report_.diagnostics) {
        if (d.severity != Severity::Error) continue;
        // An entry that shares its bytes with an earlier one shares that entry's structural findings.
        auto alias = aliases_.find(v.selected);
        const std::string& selected = alias == aliases_.end() ? v.selected : alias->second;
        bool mine = d.target.empty() ? (d.entry.empty() || d.entry == selected) : d.target == v.target.str();
        if (mine) v.can_run = false;
      }
    }
    return std::move(report_);
  }

 private:
  Diagnostic& add(std::string_view c, const std::string& entry, const std::string& kernel, const TargetId* target,
                  std::string message, std::string fix) {
    Diagnostic d = make_diagnostic(
        c, report_.location.empty() ? report_.origin : report_.origin + " [" + report_.location + "]",
        std::move(message), std::move(fix));
    d.entry = entry;
    d.kernel = kernel;
    if (target) d.target = target->str();
    report_.diagnostics.push_back(std::move(d));
    return report_.diagnostics.back();
  }

  Diagnostic& structural(std::string_view c, const std::string& entry, const std::string& kernel, std::string message,
                         std::string fix, std::optional<Severity> severity = std::nullopt) {
    Diagnostic& d = add(c, entry, kernel, nullptr, std::move(message), std::move(fix));
    if (severity) d.severity = *severity;
    if (d.severity == Severity::Error) report_.structurally_ok = false;
    return d;
  }

  // Parses a code object once; records its structural findings. Unlisted: not
  // among the report's code objects (read only to its kernel descriptors).
  const CodeObject* code_object(Bytes bytes, const std::string& entry, bool descriptors_only, bool listed = true,
                                uint64_t only_lds_over = 0) {
    auto it = parsed_.find(entry);
    if (it != parsed_.end()) return it->second;
    const CodeObject* result = nullptr;
    Result<CodeObject> co = parse_code_object(bytes, descriptors_only, only_lds_over);
    if (!co) {
      structural(co.error().code, entry, "", co.error().message,
                 co.error().code == code::kUnknownProcessor
                     ? "update hipguard, or check that the file really is an AMDGPU code object"
                     : "rebuild the code object; the file is damaged or was not produced by an AMDGPU toolchain");
    } else {
      for (const auto& issue : co->issues) {
        Diagnostic& d = structural(issue.code, entry, issue.kernel, issue.message, structural_fix(issue.code), issue.severity);
        d.value = issue.value;
        d.limit = issue.limit;
      }
      if (listed) {
        report_.code_objects.push_back({entry, std::move(*co)});
        result = &report_.code_objects.back().co;
      } else {
        result = &unlisted_.emplace(std::move(*co));
      }
    }
    parsed_[entry] = result;
    return result;
  }

  void check_kernels(const CodeObject& co, const std::string& entry, const TargetId& target, bool lds_only = false) {
    const ProcessorInfo* found = find_processor(target.processor);
    if (!found) return;
    ProcessorInfo proc = *found;
    proc.lds_bytes = static_cast<uint32_t>(lds_limit(target, *found));
    std::vector<KernelFinding> findings = check_kernels_on(co, proc, lds_only);
    // At most kMaxIssuesPerCodeObject findings per code object and target, then one HG112.
    size_t shown = std::min<size_t>(findings.size(), kMaxIssuesPerCodeObject);
    Severity worst = Severity::Note;
    for (size_t i = 0; i < findings.size(); ++i) {
      KernelFinding& f = findings[i];
      if (i >= shown) {
        const CodeInfo* info = find_code(f.code);
        worst = std::max(worst, info ? info->severity : Severity::Error);
        continue;
      }
      Diagnostic& d = add(f.code, entry, f.kernel, &target, std::move(f.message), std::move(f.fix));
      d.value = f.value;
      d.limit = f.limit;
    }
    if (findings.size() > shown) {
      Diagnostic& d = add(code::kFindingsCapped, entry, "", &target,
                          "and " + std::to_string(findings.size() - shown) + " more findings for " + target.label() +
                              " in this code object (the most severe: " + std::string(to_string(worst)) +
                              "); hipguard reports at most " + std::to_string(kMaxIssuesPerCodeObject) +
                              " per code object and target",
                          std::string(find_code(code::kFindingsCapped)->fix));
      d.severity = worst;
      d.value = findings.size();
      d.limit = kMaxIssuesPerCodeObject;
    }
  }

  // The table's fix (diagnostics.def), else the fix for broken or incomplete metadata.
  static std::string structural_fix(std::string_view c) {
    const CodeInfo* info = find_code(c);
    if (info && !info->fix.empty()) return std::string(info->fix);
    return "regenerate the code object with a current toolchain; hand-assembled objects need a complete .amdgpu_metadata block";
  }

  // The code object of a bundle entry; for a compressed bundle this decodes up
  // to the entry, and a payload that ends early is a compressed-bundle error.
  // Entries with the same offset and size are parsed once (the later ones are
  // aliases of the first, aliases_); the bytes parsed per bundle stay
  // within kMaxParsedBytesFactor times its size, past that an entry is HG111.
  const CodeObject* entry_code_object(Bundle& b, const BundleEntry& e) {
    if (auto it = parsed_.find(e.id); it != parsed_.end()) return it->second;
    auto range = std::make_pair(e.offset, e.size);
    if (auto same = by_range_.find(range); same != by_range_.end()) {
      aliases_[e.id] = same->second;
      const CodeObject* co = parsed_[same->second];
      parsed_[e.id] = co;
      return co;
    }
    uint64_t bundle_size = b.compressed ? b.uncompressed_size : b.encoded_size;
    uint64_t budget = bundle_size > UINT64_MAX / kMaxParsedBytesFactor ? UINT64_MAX : bundle_size * kMaxParsedBytesFactor;
    if (over_budget_ || e.size > budget - std::min(budget, parsed_bytes_)) {
      parsed_[e.id] = nullptr;
      if (over_budget_) return nullptr;  // said once, for the whole bundle (entry ""): every target fails
      over_budget_ = true;
      Diagnostic& d = structural(code::kBudgetExceeded, "", "",
                                 "entry '" + e.id + "' (" + std::to_string(e.size) + " bytes at offset " +
                                     std::to_string(e.offset) + ") and the entries after it are not parsed: the "
                                     "bundle's entries overlap; hipguard has parsed " + std::to_string(parsed_bytes_) +
                                     " bytes of this " + std::to_string(bundle_size) + "-byte bundle already and "
                                     "parses at most " + std::to_string(budget) + " bytes per bundle (" +
                                     std::to_string(kMaxParsedBytesFactor) + "x its size)",
                                 "the bundle was assembled by hand or by a broken tool: rebuild it with "
                                 "clang-offload-bundler, one entry per code object");
      d.value = parsed_bytes_ + e.size;
      d.limit = budget;
      return nullptr;
    }
    parsed_bytes_ += e.size;
    by_range_[range] = e.id;
    Bytes bytes = entry_bytes(b, data_, e);
    if (bytes.empty() && e.size != 0) {
      if (!parsed_.count(e.id))
        structural(b.compressed ? code::kMalformedCompressed : code::kMalformedBundle, e.id, "",
                   "cannot extract entry '" + e.id + "' (" + std::to_string(e.size) + " bytes at offset " +
                       std::to_string(e.offset) + "): the compressed data ends early or is corrupt",
                   "the fat binary is truncated or corrupt: rebuild the program or library");
      parsed_[e.id] = nullptr;
      return nullptr;
    }
    return code_object(bytes, e.id, descriptors_only(), true, depth_ == Depth::Headers ? UINT64_MAX : 0);
  }

  void check_raw() {
    bool elsewhere = built_for_other_processors();
    if (elsewhere && depth_ == Depth::Library) return library_file_elsewhere();
    // Built for other processors: only the kernels that fit no target's LDS matter (HG301).
    const CodeObject* co = code_object(data_, "", /*descriptors_only=*/elsewhere, /*listed=*/!elsewhere,
                                       elsewhere ? smallest_lds_limit() : 0);
    if (!co) return;
    report_.built_for = describe_target(*co);
    for (auto& v : report_.verdicts) {
      const TargetId& t = v.target;
      MatchResult m = match_target(co->target, co->generic_version, t);
      switch (m.kind) {
        case Match::Native:
        case Match::Generic:
          v.selection = m.kind == Match::Native ? Selection::Native : Selection::Generic;
          v.selected = describe_target(*co);
          v.kernels = co->kernels.size();
          check_kernels(*co, "", t);
          break;
        case Match::ProcessorMismatch:
          processor_mismatch(*co, t);
          // Raw code objects are loaded by hand (AITER-style): say too whether the
          // kernels would fit this GPU at all, since a plain rebuild would not fix that.
          check_kernels(*co, "", t, /*lds_only=*/true);
          break;
        case Match::FeatureMismatch:
          add(code::kFeatureMismatch, "", "", &t, m.detail, feature_fix(co->target, t));
          break;
        case Match::GenericTooOld:
          add(code::kGenericTooOld, "", "", &t, m.detail, "rebuild with a current compiler for " + t.processor);
          break;
      }
    }
  }

  // Depth::Library: a library's file for processors none of the targets has is
  // loaded on none of them; its ELF header says which (HG202 per target, which
  // the library's tally turns into "for another processor").
  void library_file_elsewhere() {
    Result<CodeObject> head = read_code_object_header(data_);
    if (!head) return;  // not reached: built_for_other_processors() read it
    report_.built_for = describe_target(*head);
    for (const auto& v : report_.verdicts) processor_mismatch(*head, v.target);
  }

  void processor_mismatch(const CodeObject& co, const TargetId& t) {
    add(code::kProcessorMismatch, "", "", &t, "code object is built for " + describe_target(co) + ", cannot run on " + t.label(),
        "load the variant of this code object built for " + t.processor + ", or rebuild it with --offload-arch=" +
            t.processor + " (-mcpu=" + t.processor + ")" + override_workaround(co.target.processor, t.processor));
  }

  // Depth::ForTargets: a raw code object whose processor none of the targets
  // has is loaded on none of them, like a bundle entry the runtime does not
  // select: it is read only to its kernel descriptors (HG202 and whether the
  // kernels would fit at all, HG301); its metadata findings belong to a check
  // against its own processor (docs/performance.md, P1). The shim reads such
  // an object in full: it may run on the GPU present when HIPGUARD_TARGET
  // names another, and its kernel and device-function names serve lookups.
  bool built_for_other_processors() const {
    if ((depth_ != Depth::ForTargets && depth_ != Depth::Library) || targets_.empty()) return false;
    Result<CodeObject> head = read_code_object_header(data_);
    if (!head) return false;  // the full read says why
    return std::all_of(targets_.begin(), targets_.end(), [&](const TargetId& t) {
      return match_target(head->target, head->generic_version, t).kind == Match::ProcessorMismatch;
    });
  }

  // The least static LDS any target provides (bytes); 0 when a target's processor is unknown.
  uint64_t smallest_lds_limit() const {
    uint64_t least = UINT64_MAX;
    for (const auto& t : targets_) {
      const ProcessorInfo* p = find_processor(t.processor);
      least = std::min(least, p ? lds_limit(t, *p) : 0);
    }
    return least == UINT64_MAX ? 0 : least;
  }

  static bool conflicts(Feature code, Feature device) {
    return (code == Feature::On || code == Feature::Off) && (device == Feature::On || device == Feature::Off) &&
           code != device;
  }

  static std::string feature_fix(const TargetId& code, const TargetId& device) {
    std::string fix;
    // HSA_XNACK switches the GPU's xnack mode; it cannot help when sramecc differs too.
    if (conflicts(code.xnack, device.xnack) && !conflicts(code.sramecc, device.sramecc))
      fix = std::string("run with HSA_XNACK=") + (code.xnack == Feature::On ? "1" : "0") + " (if the GPU supports it), or ";
    TargetId want = device;
    fix += "rebuild with --offload-arch=" + device.processor +
           " (no feature suffix: runs with either setting) or --offload-arch=" + want.str();
    return fix;
  }

  // The bundle's entries as the runtime sees them: the amdgcn code objects it
  // may select (candidates) and the first SPIR-V entry.
  struct Entries {
    std::vector<Candidate> candidates;
    const BundleEntry* spirv = nullptr;  // first hip SPIR-V entry (amdgcnspirv), if any
    bool compressed = false;
  };
  // An offload bundle: its entries, then for each target the entry the
  // runtime selects and that entry's code object.
  void check_bundle() {
    Result<Bundle> parsed = parse_bundle(data_);
    if (!parsed) {
      structural(parsed.error().code, "", "", parsed.error().message,
                 parsed.error().code == code::kBudgetExceeded
                     ? "no toolchain compresses code objects this well (real bundles: 5-28x); check where the file "
                       "comes from, and rebuild it (limits: docs/limits.md)"
                     : "the fat binary is truncated or corrupt: rebuild the program or library");
      return;
    }
    Bundle& b = *parsed;
    report_.ccob_version = b.ccob_version;
    report_.ccob_method = b.ccob_method;
    report_.entries = std::move(b.entries);  // candidates point into report_.entries from here on
    for (const auto& e : report_.entries) report_.entry_ids.push_back(e.id);
    std::string ids;  // the memo's key
    bool memoized = memo_ && (depth_ == Depth::Selection || depth_ == Depth::Headers) && !b.compressed &&
                    !targets_.empty();
    std::vector<Candidate> remembered;  // what the memo selected, one per target
    Entries entries;                    // or what selection chose from
    std::vector<const Candidate*> chosen;
    if (memoized && select_from_memo(ids, remembered)) {
      for (const auto& c : remembered) chosen.push_back(&c);
    } else {
      entries = collect_candidates(b.compressed);
      if (targets_.empty()) {
        if (depth_ != Depth::Selection)
          for (const auto& c : entries.candidates) entry_code_object(b, *c.entry);
        return;
      }
      for (auto& v : report_.verdicts) {
        chosen.push_back(select(v, entries, b));
        if (chosen.back()) v.selected = chosen.back()->entry->id;
      }
      if (batch_applies(entries)) batch_lookup(entries, chosen);
      if (memoized) remember_selection(std::move(ids), chosen);
    }
    for (size_t i = 0; i < chosen.size(); ++i)
      if (chosen[i] && depth_ != Depth::Selection) check_selected(report_.verdicts[i], *chosen[i], b);
  }

  // SelectionMemo: the entry IDs, each after its length, as the key; a
  // remembered selection applied to this bundle's entries (check_selected
  // needs the entry of each candidate only).
  bool select_from_memo(std::string& ids, std::vector<Candidate>& chosen) {
    size_t n = 0;
    for (const auto& e : report_.entries) n += e.id.size() + sizeof(uint32_t);
    ids.reserve(n);
    for (const auto& e : report_.entries) {
      uint32_t len = static_cast<uint32_t>(e.id.size());  // parse_bundle bounds IDs (4 KiB)
      ids.append(reinterpret_cast<const char*>(&len), sizeof len).append(e.id);
    }
    auto hit = memo_->find(targets_, machine_, ids);
    if (!hit || hit->size() != report_.verdicts.size()) return false;
    for (const auto& c : *hit)
      if (c.entry >= report_.entries.size()) return false;
    chosen.reserve(hit->size());
    for (size_t i = 0; i < hit->size(); ++i) {
      const BundleEntry& e = report_.entries[(*hit)[i].entry];
      report_.verdicts[i].selection = (*hit)[i].selection;
      report_.verdicts[i].selected = e.id;
      chosen.push_back({&e, TargetId{}});
    }
    return true;
  }

  // Only a selection without any finding, every target native or generic.
  void remember_selection(std::string ids, const std::vector<const Candidate*>& chosen) {
    if (!report_.diagnostics.empty()) return;
    std::vector<SelectionMemo::Choice> choices;
    for (size_t i = 0; i < chosen.size(); ++i) {
      Selection how = report_.verdicts[i].selection;
      if (!chosen[i] || (how != Selection::Native && how != Selection::Generic)) return;
      choices.push_back({how, static_cast<size_t>(chosen[i]->entry - report_.entries.data())});
    }
    memo_->remember(targets_, machine_, std::move(ids), std::move(choices));
  }

  // The name a runtime that keeps the device's features asks for as the
  // generic code object (CLR hip_fatbin.cpp TargetToGeneric: "<generic>:<device
  // sramecc>:<device xnack>"); nullopt when comgr rejects that name because the
  // generic processor lacks one of the features (comgr parseTargetIdentifier).
  static std::optional<TargetId> generic_query(const TargetId& t, const RuntimeInfo& rt) {
    const ProcessorInfo* dev = find_processor(t.processor);
    if (!dev || dev->generic.empty()) return std::nullopt;
    TargetId bare = t;
    bare.processor = std::string(dev->generic);
    bare.alias.clear();
    if (!rt.generic_keeps_features) {
      bare.sramecc = bare.xnack = Feature::Any;
      return bare;
    }
    return parse_target_id(bare.str(), nullptr);
  }

  // One comgr lookup for all the targets (the GPUs of one process): CLR 5.6+
  // hip_fatbin.cpp ExtractFatBinaryUsingCOMGR queries every device ISA name at once.
  bool batch_applies(const Entries& entries) const {
    if (!one_process_ || !runtime_.batch_lookup || targets_.size() < 2) return false;
    // CLR 6.4 hip_fatbin.cpp: an uncompressed bundle with a generic entry goes to hip_code_object.cpp's own parser.
    if (runtime_.own_parser_with_generic && !entries.compressed)
      for (const auto& c : entries.candidates)
        if (const ProcessorInfo* p = find_processor(c.tid.processor); p && p->is_generic) return false;
    return true;
  }

  // comgr-metadata.cpp lookUpCodeObject: entries in file order, each filling the
  // first still-empty compatible query, then `break`: an entry serves one query.
  // A target whose own query stays empty gets no code object even when an entry
  // fits it (HG212); one whose query got another entry than the first fitting
  // one in file order loads that entry.
  void batch_lookup(const Entries& entries, std::vector<const Candidate*>& chosen) {
    std::map<std::string, TargetId> queries;  // key -> query; std::set order in CLR 7.x (unspecified before)
    for (const auto& t : targets_) {
      queries.emplace(t.str(), t);  // str() leaves out the alias, as the ISA name the runtime asks with
      if (runtime_.generic_keeps_features)  // CLR 7.x adds the generic names to the same lookup
        if (auto g = generic_query(t, runtime_)) queries.emplace(g->str(), *g);
    }
    std::map<std::string, const Candidate*> filled;
    for (const auto& c : entries.candidates)
      for (const auto& [key, q] : queries)
        if (!filled.count(key) && match_kind(c.tid, 1, q) == Match::Native) {
          filled[key] = &c;
          break;
        }
    for (size_t i = 0; i < targets_.size(); ++i) {
      TargetVerdict& v = report_.verdicts[i];
      if (!chosen[i] || (v.selection != Selection::Native && v.selection != Selection::Generic)) continue;
      const TargetId& t = targets_[i];
      const Candidate* got = nullptr;
      if (auto it = filled.find(t.str()); it != filled.end()) {
        got = it->second;
        v.selection = Selection::Native;
      } else if (v.selection == Selection::Generic && !runtime_.generic_keeps_features) {
        got = chosen[i];  // CLR 6.4 asks for the generic names separately: as chosen alone
      } else if (auto g = generic_query(t, runtime_); g && filled.count(g->str())) {
        got = filled[g->str()];
        v.selection = Selection::Generic;
      }
      if (got) {
        chosen[i] = got;
        v.selected = got->entry->id;
        continue;
      }
      starved(v, *chosen[i], filled);
      chosen[i] = nullptr;
    }
  }

  // HG212: the entry target v would load alone went to another GPU's query.
  void starved(TargetVerdict& v, const Candidate& wanted, const std::map<std::string, const Candidate*>& filled) {
    std::string taker;
    for (const auto& [key, c] : filled)
      if (c == &wanted)
        for (const auto& o : targets_) {
          auto g = generic_query(o, runtime_);
          if (o.str() == key || (g && g->str() == key)) taker += (taker.empty() ? "" : ", ") + o.str();
        }
    std::string who = runtime_.sorted_queries ? runtime_label(runtime_) + " gives it to " + taker +
                                                    " (first in its sorted query list)"
                                              : runtime_label(runtime_) + " gives it to one of them (" + taker +
                                                    " here; which one is unspecified: an unordered_map)";
    const TargetId& t = v.target;
    bool xnack = t.xnack == Feature::On || t.xnack == Feature::Off;
    std::string variants = xnack ? "--offload-arch=" + t.processor + ":xnack+ --offload-arch=" + t.processor + ":xnack-"
                                 : "--offload-arch=" + t.str() + " besides the others";
    add(code::kBatchLookupStarved, wanted.entry->id, "", &t,
        "bundle entry '" + wanted.entry->id + "' fits both " + taker + " and " + t.str() +
            ", but in one process the runtime looks up all GPUs at once and comgr gives each entry to one GPU only: " +
            who + "; " + t.str() + " gets no code object (\"No compatible code objects found\") and HIP assigns "
            "none to the GPUs after it",
        "ship one code object per setting the GPUs run with (" + variants + ")" +
            (xnack ? ", or run all GPUs with the same xnack setting (HSA_XNACK=0 or 1)" : ""));
    v.selection = Selection::None;
    v.selected.clear();
  }

  Entries collect_candidates(bool compressed) {
    Entries out;
    out.compressed = compressed;
    for (const auto& e : report_.entries) {
      if (is_spirv(e) && !out.spirv) out.spirv = &e;
      if (!may_select(e, compressed)) continue;
      std::string err;
      auto tid = parse_target_id(e.parsed.target_id, &err);
      if (!tid) continue;  // unknown processor: cannot be selected for any known target
      out.candidates.push_back({&e, *tid});
    }
    return out;
  }

  static bool is_spirv(const BundleEntry& e) { return e.parsed.is_hip() && e.parsed.target_id == "amdgcnspirv"; }

  // comgr unbundles compressed bundles with HipOpenmpCompatible: openmp- entries
  // are candidates there; the uncompressed lookup takes hip/hipv4/hcc only.
  static bool may_select(const BundleEntry& e, bool compressed) {
    bool kind_ok = e.parsed.is_hip() || (compressed && e.parsed.kind == "openmp");
    return kind_ok && e.parsed.is_amdgcn() && !e.parsed.target_id.empty();
  }

  // What the bundle holds, for HG201's message (built only for it).
  std::string held(const Entries& entries) const {
    std::string out;
    for (const auto& e : report_.entries) {
      if (&e == entries.spirv) out += (out.empty() ? "" : ", ") + std::string("amdgcnspirv (SPIR-V)");
      if (may_select(e, entries.compressed)) out += (out.empty() ? "" : ", ") + e.parsed.target_id;
    }
    return out.empty() ? "no amdgcn code object" : out;
  }

  // The runtime's choice for v.target: native, then generic, then SPIR-V
  // (which is said here, with nothing to check); null when it has none.
  const Candidate* select(TargetVerdict& v, const Entries& entries, Bundle& b) {
    const TargetId& t = v.target;
    bool compressed = b.compressed;
    const Candidate* refused = nullptr;  // a generic entry this runtime does not take (HG213, HG201)
    for (Selection pass : {Selection::Native, Selection::Generic})
      for (const auto& c : entries.candidates)
        if (fits(c, t, pass)) {
          // CLR 7.x hip_fatbin.cpp TargetToGeneric: the generic name keeps the device's features.
          if (pass == Selection::Generic && (!runtime_.generic || !generic_query(t, runtime_))) {
            if (!refused) refused = &c;
            continue;
          }
          v.selection = pass;
          if (compressed) ambiguous_in_ccob(entries.candidates, c, t, pass);
          return &c;
        }
    // A library's file for other processors is not loaded there at all (Depth::Library):
    // whether it has kernels does not matter, and reading an entry of a compressed one
    // (hipBLASLt: 25 MiB each) would decompress it.
    if (!runtime_.aborts_without_code_object && depth_ != Depth::Library && !has_kernels(b, entries)) {
      v.kernel_free = true;
      no_kernels(t, held(entries));
      return nullptr;
    }
    if (refused && runtime_.generic) generic_refused(*refused, t, entries.spirv && runtime_.spirv);
    if (entries.spirv && runtime_.spirv) {
      // CLR with SPIR-V support (2025+) compiles the amdgcnspirv entry for the device
      // when nothing native or generic matches (CLR hip_fatbin.cpp priority: native > generic > SPIR-V).
      v.selection = Selection::Spirv;
      v.selected = entries.spirv->id;
      add(code::kSpirvFallback, entries.spirv->id, "", &t,
          "no native or generic code object for " + t.label() +
              "; only a ROCm runtime with SPIR-V support compiles the SPIR-V entry at first use (slow start), "
              "older runtimes fail with hipErrorNoBinaryForGpu",
          "add --offload-arch=" + t.processor + " to ship native code");
      return nullptr;
    }
    if (refused && runtime_.generic) return nullptr;  // said by HG213
    no_match(entries.candidates, t, held(entries),
             refused ? " (" + refused->entry->id + " is generic: " + runtime_label(runtime_) +
                           " selects no generic code object; HIP 6.4 and later do)"
                     : std::string());
    return nullptr;
  }

  // HG213: a gfx906 (sramecc+/-) under HIP 7.x asks for "gfx9-generic:sramecc+:xnack-", a name comgr rejects.
  void generic_refused(const Candidate& c, const TargetId& t, bool spirv_follows) {
    const ProcessorInfo* gen = find_processor(c.tid.processor);
    TargetId asked = t;
    asked.processor = c.tid.processor;
    asked.alias.clear();
    bool no_sramecc = gen && !gen->sramecc && (t.sramecc == Feature::On || t.sramecc == Feature::Off);
    std::string lacks = no_sramecc ? "sramecc" : "xnack";
    std::string older;
    for (const auto& r : all_runtimes())
      if (r.generic && !r.generic_keeps_features) older = std::string(r.name);
    Diagnostic& d = add(code::kGenericFeaturesRejected, c.entry->id, "", &t,
        "generic entry '" + c.entry->id + "' fits " + t.label() + ", but " + runtime_label(runtime_) +
            " asks for it as " + asked.str() + " (the device's features kept), which comgr rejects: " +
            asked.processor + " has no " + lacks + " setting; HIP " + older + " selects it (hipguard check --runtime " + older + ")" +
            (spirv_follows ? "; the SPIR-V entry is compiled instead" : ""),
        "add --offload-arch=" + t.processor + " to the existing --offload-arch list (native code runs under every HIP "
        "version)");
    if (spirv_follows) d.severity = Severity::Warning;
  }

  // Does any amdgcn entry define a kernel ("<name>.kd" symbols, no metadata
  // read)? Asked only when nothing fits a target; an entry that cannot be read
  // counts as having kernels, so a damaged bundle keeps HG201. The entries are
  // not the report's code objects and their findings are not reported.
  bool has_kernels(Bundle& b, const Entries& entries) {
    if (has_kernels_) return *has_kernels_;
    has_kernels_ = entries.candidates.empty();  // nothing for any GPU: keep HG201
    std::set<std::pair<uint64_t, uint64_t>> seen;
    for (const auto& c : entries.candidates) {
      if (*has_kernels_) break;
      if (!seen.insert({c.entry->offset, c.entry->size}).second) continue;
      Bytes bytes = entry_bytes(b, data_, *c.entry);
      Result<CodeObject> co = parse_code_object(bytes, /*descriptors_only=*/true, 0);
      has_kernels_ = bytes.empty() || !co || !co->kernels.empty();
    }
    return *has_kernels_;
  }

  // Nothing for the target, and no kernels in any entry (a library whose
  // kernels are compiled at run time, like rocFFT, ships only __device__
  // variables). Since ROCm 5.3 the runtime logs hipErrorNoBinaryForGpu at HIP
  // init and goes on (clr hip_platform.cpp PlatformState::init); a variable's
  // first use builds the program for the device and fails (hip_global.cpp
  // Var::getStatDeviceVar -> hip_fatbin.cpp FatBinaryInfo::BuildProgram).
  // ROCm 5.2 aborted at HIP init (hip_fatbin.cpp ExtractFatBinary, guarantee;
  // removed by clr 9f37acc55, SWDEV-341326).
  void no_kernels(const TargetId& t, const std::string& held) {
    add(code::kNoCodeObjectNoKernels, "", "", &t,
        "no code object for " + t.label() + "; the bundle holds: " + held +
            ", but no kernel in any of them: the runtime loads nothing from it for this GPU and goes on (ROCm 5.3 "
            "and later); a use of its __device__ variables on this GPU (hipMemcpyToSymbol, hipGetSymbolAddress) "
            "fails. ROCm 5.2 (Debian 12's libamdhip64.so.5) aborts at HIP initialisation instead (--runtime 5.2)",
        "nothing to do unless the program uses these variables on this GPU; then rebuild with --offload-arch=" +
            t.processor + " added (with ROCm 5.2, also to start at all)");
  }

  // The selected entry's code object on v.target: the loader's own e_flags
  // check, the generic version, then every kernel.
  void check_selected(TargetVerdict& v, const Candidate& chosen, Bundle& b) {
    const TargetId& t = v.target;
    const CodeObject* co = entry_code_object(b, *chosen.entry);
    if (!co) return;
    v.kernels = co->kernels.size();
    // The runtime selects by entry ID, then its loader checks the ELF's own
    // processor and features (e_flags) against the GPU: an entry whose label
    // and code object disagree is selected and then rejected.
    // (A generic version below the minimum is HG205, below.)
    if (MatchResult own = match_target(co->target, co->generic_version, t);
        own.kind == Match::ProcessorMismatch || own.kind == Match::FeatureMismatch) {
      add(own.kind == Match::FeatureMismatch ? code::kFeatureMismatch : code::kProcessorMismatch, chosen.entry->id, "",
          &t,
          "bundle entry '" + chosen.entry->id + "' is selected for " + t.label() + ", but its code object is built for " +
              describe_target(*co) + " (ELF e_flags); the runtime's loader rejects it" +
              (own.detail.empty() ? "" : ": " + own.detail),
          "the bundle was assembled by hand or by a broken tool: rebuild it with clang-offload-bundler from code "
          "objects built with --offload-arch=" + t.processor);
      return;
    }
    if (v.selection == Selection::Generic && co->generic_version < 1)
      add(code::kGenericTooOld, chosen.entry->id, "", &t,
          "generic code object has generic version " + std::to_string(co->generic_version) +
              ", the loader requires at least 1",
          "rebuild with a current compiler for " + t.processor);
    // Without metadata only the descriptor's static LDS is known (wave size and
    // registers are metadata facts to CLR).
    check_kernels(*co, chosen.entry->id, t, /*lds_only=*/descriptors_only());
  }

  // Depth::Descriptors and Headers apply to bundle entries (Headers reads no kernel); a raw code
  // object is checked in full unless Depth::ForTargets finds it built for other processors (check_raw).
  bool descriptors_only() const {
    return (depth_ == Depth::Descriptors || depth_ == Depth::Headers) && report_.kind != PayloadKind::CodeObject;
  }

  // Does candidate `c` fit target `t` in selection pass `pass` (native or generic)?
  // The generic version is checked on the ELF once an entry is chosen.
  static bool fits(const Candidate& c, const TargetId& t, Selection pass) {
    Match m = match_kind(c.tid, 1, t);
    return (pass == Selection::Native && m == Match::Native) || (pass == Selection::Generic && m == Match::Generic);
  }

  // comgr visits a compressed bundle's entries in StringMap (hash) order, not
  // file order: with several entries that fit, which one the runtime loads
  // depends on comgr's LLVM version. hipguard checks the first in file order.
  void ambiguous_in_ccob(const std::vector<Candidate>& candidates, const Candidate& chosen, const TargetId& t,
                         Selection pass) {
    std::string fitting;
    size_t n = 0;
    for (const auto& c : candidates)
      if (fits(c, t, pass)) {
        fitting += (fitting.empty() ? "" : ", ") + c.entry->id;
        ++n;
      }
    if (n < 2) return;
    add(code::kAmbiguousSelection, chosen.entry->id, "", &t,
        "compressed bundle has " + std::to_string(n) + " entries that fit " + t.label() + " (" + fitting +
            "); comgr unbundles in hash order, so which one the runtime loads depends on its version; hipguard "
            "checked the first in file order",
        "ship one code object per processor (e.g. only --offload-arch=" + t.processor +
            ", or only the feature variants you need), or an uncompressed bundle, where the first in file order wins");
  }

  // An ISA-compatible sibling (same major.minor and generic family, e.g. gfx1031
  // device, gfx1030 code): HSA_OVERRIDE_GFX_VERSION makes ROCr report the GPU as
  // the code's processor. "" when `code` is no such sibling of `device`.
  static std::string override_workaround(const std::string& code, const std::string& device) {
    const ProcessorInfo* dev = find_processor(device);
    const ProcessorInfo* p = find_processor(code);
    if (!dev || !p || p == dev || p->is_generic || p->major != dev->major || p->minor != dev->minor ||
        dev->generic.empty() || p->generic != dev->generic)
      return "";
    return "; workaround (not supported by AMD): HSA_OVERRIDE_GFX_VERSION=" + std::to_string(p->major) + "." +
           std::to_string(p->minor) + "." + std::to_string(p->stepping) + " makes the runtime treat the GPU as " + code;
  }

  void no_match(const std::vector<Candidate>& candidates, const TargetId& t, const std::string& held,
                const std::string& why = "") {
    // Same processor with a conflicting xnack/sramecc setting is the more precise finding.
    for (const auto& c : candidates) {
      if (match_kind(c.tid, 1, t) != Match::FeatureMismatch) continue;
      add(code::kFeatureMismatch, c.entry->id, "", &t,
          "bundle has " + c.tid.str() + " but not for " + t.label() + ": " + match_target(c.tid, 1, t).detail,
          feature_fix(c.tid, t));
      return;
    }
    std::string fix = "rebuild with --offload-arch=" + t.processor + " added to the existing --offload-arch list";
    const ProcessorInfo* dev = find_processor(t.processor);
    for (const auto& c : candidates)
      if (std::string w = override_workaround(c.tid.processor, t.processor); !w.empty()) {
        fix += w;
        break;
      }
    // The nearest candidates: same ISA major.minor, else same major version.
    std::string nearest;
    for (int level = 0; level < 2 && nearest.empty(); ++level)
      for (const auto& c : candidates) {
        const ProcessorInfo* p = find_processor(c.tid.processor);
        if (dev && p && p->major == dev->major && (level == 1 || p->minor == dev->minor) &&
            nearest.find(c.tid.str()) == std::string::npos)
          nearest += (nearest.empty() ? "" : ", ") + c.tid.str();
      }
    add(code::kNoCodeObject, "", "", &t,
        "no code object for " + t.label() + "; the bundle holds: " + held +
            (nearest.empty() ? "" : " (nearest: " + nearest + ")") + why,
        fix);
  }

  Bytes data_;
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
  uint64_t parsed_bytes_ = 0;                    // bytes of this bundle's entries parsed so far
  bool over_budget_ = false;                     // an entry was refused: the bundle's entries overlap too much
  std::optional<bool> has_kernels_;              // does any amdgcn entry define a kernel (has_kernels)
};

}  // namespace

std::string_view to_string(Selection s) {
  switch (s) {
    case Selection::Native: return "native";
    case Selection::Generic: return "generic";
    case Selection::Spirv: return "spir-v";
    case Selection::None: return "none";
  }
  return "none";
}

bool ImageReport::ok() const {
  if (verdicts.empty()) return structurally_ok;
  for (const auto& v : verdicts)
    if (v.fails()) return false;
  return true;
}

ImageReport check_image(Bytes data, const std::string& origin, const std::vector<TargetId>& targets,
                        const std::string& location, Depth depth, const Machine& machine, SelectionMemo* memo) {
  return Checker(data, origin, targets, location, depth, machine, memo).run();
}

}  // namespace hipguard
