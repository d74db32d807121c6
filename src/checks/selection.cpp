// Selection: the bundle entry each runtime version selects for each target (CLR hip_fatbin.cpp, comgr
// lookUpCodeObject), and the findings when it selects none or not the one expected.
#include <set>

#include "checks/checker.h"
#include "format/read_code_object.h"

namespace hipguard {

bool Checker::select_from_memo(std::string& ids, std::vector<Candidate>& chosen) {
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

void Checker::remember_selection(std::string ids, const std::vector<const Candidate*>& chosen) {
  if (!report_.diagnostics.empty()) return;
  std::vector<SelectionMemo::Choice> choices;
  for (size_t i = 0; i < chosen.size(); ++i) {
    Selection how = report_.verdicts[i].selection;
    if (!chosen[i] || (how != Selection::Native && how != Selection::Generic)) return;
    choices.push_back({how, static_cast<size_t>(chosen[i]->entry - report_.entries.data())});
  }
  memo_->remember(targets_, machine_, std::move(ids), std::move(choices));
}

std::optional<TargetId> Checker::generic_query(const TargetId& t, const RuntimeInfo& rt) {
  const ProcessorInfo* dev = find_processor(t.processor);
  if (!dev || dev->generic.empty()) return std::nullopt;
  TargetId bare = t;
  bare.processor = std::string(dev->generic);
  bare.alias.clear();
  if (!rt.generic_keeps_features) {
    bare.sramecc = bare.xnack = Feature::Any;
    return bare;
  }
  auto g = parse_target_id(bare.str());
  return g ? std::optional<TargetId>(*g) : std::nullopt;
}

bool Checker::batch_applies(const Entries& entries) const {
  if (!one_process_ || !runtime_.batch_lookup || targets_.size() < 2) return false;
  // CLR 6.4 hip_fatbin.cpp: an uncompressed bundle with a generic entry goes to hip_code_object.cpp's own parser.
  if (runtime_.own_parser_with_generic && !entries.compressed)
    for (const auto& c : entries.candidates)
      if (const ProcessorInfo* p = find_processor(c.tid.processor); p && p->is_generic) return false;
  return true;
}

void Checker::batch_lookup(const Entries& entries, std::vector<const Candidate*>& chosen) {
  std::map<std::string, TargetId> queries;  // key -> query; std::set order in CLR 7.x (unspecified before)
  for (const auto& t : targets_) {
    queries.emplace(t.str(), t);          // str() leaves out the alias, as the ISA name the runtime asks with
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

void Checker::starved(TargetVerdict& v, const Candidate& wanted,
                      const std::map<std::string, const Candidate*>& filled) {
  std::string taker;
  for (const auto& [key, c] : filled)
    if (c == &wanted)
      for (const auto& o : targets_) {
        auto g = generic_query(o, runtime_);
        if (o.str() == key || (g && g->str() == key)) taker += (taker.empty() ? "" : ", ") + o.str();
      }
  std::string who = runtime_.sorted_queries
                        ? runtime_label(runtime_) + " gives it to " + taker + " (first in its sorted query list)"
                        : runtime_label(runtime_) + " gives it to one of them (" + taker +
                              " here; which one is unspecified: an unordered_map)";
  const TargetId& t = v.target;
  bool xnack = t.xnack == Feature::On || t.xnack == Feature::Off;
  std::string variants = xnack ? "--offload-arch=" + t.processor + ":xnack+ --offload-arch=" + t.processor + ":xnack-"
                               : "--offload-arch=" + t.str() + " besides the others";
  add(Code::kBatchLookupStarved, wanted.entry->id, "", &t,
      "bundle entry '" + wanted.entry->id + "' fits both " + taker + " and " + t.str() +
          ", but in one process the runtime looks up all GPUs at once and comgr gives each entry to one GPU only: " +
          who + "; " + t.str() +
          " gets no code object (\"No compatible code objects found\") and HIP assigns "
          "none to the GPUs after it",
      "ship one code object per setting the GPUs run with (" + variants + ")" +
          (xnack ? ", or run all GPUs with the same xnack setting (HSA_XNACK=0 or 1)" : ""));
  v.selection = Selection::None;
  v.selected.clear();
}

Checker::Entries Checker::collect_candidates(bool compressed) {
  Entries out;
  out.compressed = compressed;
  for (const auto& e : report_.entries) {
    if (is_spirv(e) && !out.spirv) out.spirv = &e;
    if (!may_select(e, compressed)) continue;
    auto tid = parse_target_id(e.parsed.target_id);
    if (!tid) continue;  // unknown processor: cannot be selected for any known target
    out.candidates.push_back({&e, *tid});
  }
  return out;
}

bool Checker::is_spirv(const BundleEntry& e) { return e.parsed.is_hip() && e.parsed.target_id == "amdgcnspirv"; }

bool Checker::may_select(const BundleEntry& e, bool compressed) {
  bool kind_ok = e.parsed.is_hip() || (compressed && e.parsed.kind == "openmp");
  return kind_ok && e.parsed.is_amdgcn() && !e.parsed.target_id.empty();
}

std::string Checker::held(const Entries& entries) const {
  std::string out;
  for (const auto& e : report_.entries) {
    if (&e == entries.spirv) out += (out.empty() ? "" : ", ") + std::string("amdgcnspirv (SPIR-V)");
    if (may_select(e, entries.compressed)) out += (out.empty() ? "" : ", ") + e.parsed.target_id;
  }
  return out.empty() ? "no amdgcn code object" : out;
}

const Checker::Candidate* Checker::select(TargetVerdict& v, const Entries& entries, Bundle& b) {
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
    add(Code::kSpirvFallback, entries.spirv->id, "", &t,
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

void Checker::generic_refused(const Candidate& c, const TargetId& t, bool spirv_follows) {
  const ProcessorInfo* gen = find_processor(c.tid.processor);
  TargetId asked = t;
  asked.processor = c.tid.processor;
  asked.alias.clear();
  bool no_sramecc = gen && !gen->sramecc && (t.sramecc == Feature::On || t.sramecc == Feature::Off);
  std::string lacks = no_sramecc ? "sramecc" : "xnack";
  std::string older;
  for (const auto& r : all_runtimes())
    if (r.generic && !r.generic_keeps_features) older = std::string(r.name);
  Diagnostic& d = add(Code::kGenericFeaturesRejected, c.entry->id, "", &t,
                      "generic entry '" + c.entry->id + "' fits " + t.label() + ", but " + runtime_label(runtime_) +
                          " asks for it as " + asked.str() +
                          " (the device's features kept), which comgr rejects: " + asked.processor + " has no " +
                          lacks + " setting; HIP " + older + " selects it (hipguard check --runtime " + older + ")" +
                          (spirv_follows ? "; the SPIR-V entry is compiled instead" : ""),
                      "add --offload-arch=" + t.processor +
                          " to the existing --offload-arch list (native code runs under every HIP "
                          "version)");
  if (spirv_follows) d.severity = Severity::Warning;
}

bool Checker::has_kernels(Bundle& b, const Entries& entries) {
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

void Checker::no_kernels(const TargetId& t, const std::string& held) {
  add(Code::kNoCodeObjectNoKernels, "", "", &t,
      "no code object for " + t.label() + "; the bundle holds: " + held +
          ", but no kernel in any of them: the runtime loads nothing from it for this GPU and goes on (ROCm 5.3 "
          "and later); a use of its __device__ variables on this GPU (hipMemcpyToSymbol, hipGetSymbolAddress) "
          "fails. ROCm 5.2 (Debian 12's libamdhip64.so.5) aborts at HIP initialisation instead (--runtime 5.2)",
      "nothing to do unless the program uses these variables on this GPU; then rebuild with --offload-arch=" +
          t.processor + " added (with ROCm 5.2, also to start at all)");
}

bool Checker::fits(const Candidate& c, const TargetId& t, Selection pass) {
  Match m = match_kind(c.tid, 1, t);
  return (pass == Selection::Native && m == Match::Native) || (pass == Selection::Generic && m == Match::Generic);
}

void Checker::ambiguous_in_ccob(const std::vector<Candidate>& candidates, const Candidate& chosen, const TargetId& t,
                                Selection pass) {
  std::string fitting;
  size_t n = 0;
  for (const auto& c : candidates)
    if (fits(c, t, pass)) {
      fitting += (fitting.empty() ? "" : ", ") + c.entry->id;
      ++n;
    }
  if (n < 2) return;
  add(Code::kAmbiguousSelection, chosen.entry->id, "", &t,
      "compressed bundle has " + std::to_string(n) + " entries that fit " + t.label() + " (" + fitting +
          "); comgr unbundles in hash order, so which one the runtime loads depends on its version; hipguard "
          "checked the first in file order",
      "ship one code object per processor (e.g. only --offload-arch=" + t.processor +
          ", or only the feature variants you need), or an uncompressed bundle, where the first in file order wins");
}

void Checker::no_match(const std::vector<Candidate>& candidates, const TargetId& t, const std::string& held,
                       const std::string& why) {
  // Same processor with a conflicting xnack/sramecc setting is the more precise finding.
  for (const auto& c : candidates) {
    if (match_kind(c.tid, 1, t) != Match::FeatureMismatch) continue;
    add(Code::kFeatureMismatch, c.entry->id, "", &t,
        "bundle has " + c.tid.str() + " but not for " + t.label() + ": " + match_target(c.tid, 1, t).detail,
        feature_fix(c.tid, t));
    return;
  }
  std::string fix = "rebuild with --offload-arch=" + t.processor + " added to the existing --offload-arch list";
  for (const auto& c : candidates)
    if (std::string w = override_workaround(c.tid.processor, t.processor); !w.empty()) {
      fix += w;
      break;
    }
  std::vector<std::string> ids;
  for (const auto& c : candidates) ids.push_back(c.tid.str());
  std::string nearest;
  for (const auto& n : nearest_processors(t.processor, ids)) nearest += (nearest.empty() ? "" : ", ") + n;
  add(Code::kNoCodeObject, "", "", &t,
      "no code object for " + t.label() + "; the bundle holds: " + held +
          (nearest.empty() ? "" : " (nearest: " + nearest + ")") + why,
      fix);
}

}  // namespace hipguard
