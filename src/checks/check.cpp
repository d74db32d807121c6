// Checking one input: its bundles and code objects, each code object against each target (the selection
// of a bundle entry: selection.cpp).
#include "checks/checker.h"

#include <algorithm>

#include "checks/kernel_checks.h"
#include "format/read_code_object.h"

namespace hipguard {

ImageReport Checker::run() {
  report_.kind = classify(head_.empty() ? data_ : head_);
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
      structural(Code::kUnknownPayload, "", "",
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
      if (v.counts(d, selected)) v.can_run = false;
    }
  }
  return std::move(report_);
}

Diagnostic& Checker::add(Code c, const std::string& entry, const std::string& kernel, const TargetId* target,
                         std::string message, std::string fix) {
  Diagnostic d =
      make_diagnostic(c, report_.location.empty() ? report_.origin : report_.origin + " [" + report_.location + "]",
                      std::move(message), std::move(fix));
  d.entry = entry;
  d.kernel = kernel;
  if (target) d.target = target->str();
  report_.diagnostics.push_back(std::move(d));
  return report_.diagnostics.back();
}

Diagnostic& Checker::structural(Code c, const std::string& entry, const std::string& kernel, std::string message,
                                std::string fix, std::optional<Severity> severity) {
  Diagnostic& d = add(c, entry, kernel, nullptr, std::move(message), std::move(fix));
  if (severity) d.severity = *severity;
  if (d.severity == Severity::Error) report_.structurally_ok = false;
  return d;
}

const CodeObject* Checker::code_object(Bytes bytes, const std::string& entry, bool descriptors_only, bool listed,
                                       uint64_t only_lds_over) {
  auto it = parsed_.find(entry);
  if (it != parsed_.end()) return it->second;
  const CodeObject* result = nullptr;
  Result<CodeObject> co = parse_code_object(bytes, descriptors_only, only_lds_over);
  if (!co) {
    structural(co.error().code, entry, "", co.error().message,
               co.error().code == Code::kUnknownProcessor
                   ? "update hipguard, or check that the file really is an AMDGPU code object"
                   : "rebuild the code object; the file is damaged or was not produced by an AMDGPU toolchain");
  } else {
    for (const auto& issue : co->issues) {
      Diagnostic& d =
          structural(issue.code, entry, issue.kernel, issue.message, structural_fix(issue.code), issue.severity);
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

void Checker::check_kernels(const CodeObject& co, const std::string& entry, const TargetId& target, bool lds_only) {
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
      worst = std::max(worst, code_info(f.code).severity);
      continue;
    }
    Diagnostic& d = add(f.code, entry, f.kernel, &target, std::move(f.message), std::move(f.fix));
    d.value = f.value;
    d.limit = f.limit;
  }
  if (findings.size() > shown) {
    Diagnostic& d = add(Code::kFindingsCapped, entry, "", &target,
                        "and " + std::to_string(findings.size() - shown) + " more findings for " + target.label() +
                            " in this code object (the most severe: " + std::string(to_string(worst)) +
                            "); hipguard reports at most " + std::to_string(kMaxIssuesPerCodeObject) +
                            " per code object and target",
                        std::string(code_info(Code::kFindingsCapped).fix));
    d.severity = worst;
    d.value = findings.size();
    d.limit = kMaxIssuesPerCodeObject;
  }
}

std::string Checker::structural_fix(Code c) {
  if (!code_info(c).fix.empty()) return std::string(code_info(c).fix);
  return "regenerate the code object with a current toolchain; hand-assembled objects need a complete .amdgpu_metadata block";
}

const CodeObject* Checker::entry_code_object(Bundle& b, const BundleEntry& e) {
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
    Diagnostic& d = structural(
        Code::kBudgetExceeded, "", "",
        "entry '" + e.id + "' (" + std::to_string(e.size) + " bytes at offset " + std::to_string(e.offset) +
            ") and the entries after it are not parsed: the "
            "bundle's entries overlap; hipguard has parsed " +
            std::to_string(parsed_bytes_) + " bytes of this " + std::to_string(bundle_size) +
            "-byte bundle already and "
            "parses at most " +
            std::to_string(budget) + " bytes per bundle (" + std::to_string(kMaxParsedBytesFactor) + "x its size)",
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
      structural(b.compressed ? Code::kMalformedCompressed : Code::kMalformedBundle, e.id, "",
                 "cannot extract entry '" + e.id + "' (" + std::to_string(e.size) + " bytes at offset " +
                     std::to_string(e.offset) + "): the compressed data ends early or is corrupt",
                 "the fat binary is truncated or corrupt: rebuild the program or library");
    parsed_[e.id] = nullptr;
    return nullptr;
  }
  return code_object(bytes, e.id, descriptors_only(), true);
}

void Checker::check_raw() {
  if (depth_ == Depth::Selection && raw_selected_from_header()) return;
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
      case Match::FeatureMismatch: add(Code::kFeatureMismatch, "", "", &t, m.detail, feature_fix(co->target, t)); break;
      case Match::GenericTooOld:
        add(Code::kGenericTooOld, "", "", &t, m.detail, "rebuild with a current compiler for " + t.processor);
        break;
    }
  }
}

// Depth::Selection (registration): a raw code object is selected as a bundle's entry is, from its ELF
// header alone, and read when it is first used (CLR loads it then too). True when it fits every target;
// otherwise it is read in full now (the mismatch and whether its kernels would fit at all).
bool Checker::raw_selected_from_header() {
  Result<CodeObject> head = read_code_object_header(data_);
  if (!head) return false;  // the full read says why
  std::vector<Match> kinds;
  for (const auto& v : report_.verdicts) {
    Match m = match_target(head->target, head->generic_version, v.target).kind;
    if (m != Match::Native && m != Match::Generic) return false;
    kinds.push_back(m);
  }
  report_.built_for = describe_target(*head);
  for (size_t i = 0; i < kinds.size(); ++i) {
    report_.verdicts[i].selection = kinds[i] == Match::Native ? Selection::Native : Selection::Generic;
    report_.verdicts[i].selected = report_.built_for;
  }
  return true;
}

void Checker::library_file_elsewhere() {
  Result<CodeObject> head = read_code_object_header(data_);
  if (!head) return;  // not reached: built_for_other_processors() read it
  report_.built_for = describe_target(*head);
  for (const auto& v : report_.verdicts) processor_mismatch(*head, v.target);
}

void Checker::processor_mismatch(const CodeObject& co, const TargetId& t) {
  add(Code::kProcessorMismatch, "", "", &t,
      "code object is built for " + describe_target(co) + ", cannot run on " + t.label(),
      "load the variant of this code object built for " + t.processor + ", or rebuild it with --offload-arch=" +
          t.processor + " (-mcpu=" + t.processor + ")" + override_workaround(co.target.processor, t.processor));
}

bool Checker::built_for_other_processors() const {
  if ((depth_ != Depth::ForTargets && depth_ != Depth::Library) || targets_.empty()) return false;
  Result<CodeObject> head = read_code_object_header(data_);
  if (!head) return false;  // the full read says why
  return std::all_of(targets_.begin(), targets_.end(), [&](const TargetId& t) {
    return match_target(head->target, head->generic_version, t).kind == Match::ProcessorMismatch;
  });
}

uint64_t Checker::smallest_lds_limit() const {
  uint64_t least = UINT64_MAX;
  for (const auto& t : targets_) {
    const ProcessorInfo* p = find_processor(t.processor);
    least = std::min(least, p ? lds_limit(t, *p) : 0);
  }
  return least == UINT64_MAX ? 0 : least;
}

bool Checker::conflicts(Feature code, Feature device) {
  return (code == Feature::On || code == Feature::Off) && (device == Feature::On || device == Feature::Off) &&
         code != device;
}

std::string Checker::feature_fix(const TargetId& code, const TargetId& device) {
  std::string fix;
  // HSA_XNACK switches the GPU's xnack mode; it cannot help when sramecc differs too.
  if (conflicts(code.xnack, device.xnack) && !conflicts(code.sramecc, device.sramecc))
    fix =
        std::string("run with HSA_XNACK=") + (code.xnack == Feature::On ? "1" : "0") + " (if the GPU supports it), or ";
  TargetId want = device;
  fix += "rebuild with --offload-arch=" + device.processor +
         " (no feature suffix: runs with either setting) or --offload-arch=" + want.str();
  return fix;
}

Result<Bundle> Checker::read_bundle() const {
  if (!head_.empty() && report_.kind == PayloadKind::OffloadBundle) {
    bool need_more = false;
    Result<Bundle> table = parse_bundle_table(head_, data_.size(), &need_more);
    if (table || !need_more) return table;
  }
  return parse_bundle(data_);
}

void Checker::check_bundle() {
  Result<Bundle> parsed = read_bundle();
  if (!parsed) {
    structural(parsed.error().code, "", "", parsed.error().message,
               parsed.error().code == Code::kBudgetExceeded
                   ? "no toolchain compresses code objects this well (real bundles: 5-28x); check where the file "
                     "comes from, and rebuild it (limits: docs/limits.md)"
                   : "the fat binary is truncated or corrupt: rebuild the program or library");
    return;
  }
  Bundle& b = *parsed;
  b.release_read = release_read;
  report_.ccob_version = b.ccob_version;
  report_.ccob_method = b.ccob_method;
  report_.table_bytes = b.table_size;
  if (b.compressed) report_.encoded_read = (b.encoded_size - b.payload.size()) + b.payload_read;
  report_.entries = std::move(b.entries);  // candidates point into report_.entries from here on
  for (const auto& e : report_.entries) report_.entry_ids.push_back(e.id);
  std::string ids;  // the memo's key
  bool memoized = memo_ && depth_ == Depth::Selection && !b.compressed && !targets_.empty();
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

void Checker::check_selected(TargetVerdict& v, const Candidate& chosen, Bundle& b) {
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
    add(own.kind == Match::FeatureMismatch ? Code::kFeatureMismatch : Code::kProcessorMismatch, chosen.entry->id, "",
        &t,
        "bundle entry '" + chosen.entry->id + "' is selected for " + t.label() + ", but its code object is built for " +
            describe_target(*co) + " (ELF e_flags); the runtime's loader rejects it" +
            (own.detail.empty() ? "" : ": " + own.detail),
        "the bundle was assembled by hand or by a broken tool: rebuild it with clang-offload-bundler from code "
        "objects built with --offload-arch=" +
            t.processor);
    return;
  }
  if (v.selection == Selection::Generic && co->generic_version < 1)
    add(Code::kGenericTooOld, chosen.entry->id, "", &t,
        "generic code object has generic version " + std::to_string(co->generic_version) +
            ", the loader requires at least 1",
        "rebuild with a current compiler for " + t.processor);
  // Without metadata only the descriptor's static LDS is known (wave size and
  // registers are metadata facts to CLR).
  check_kernels(*co, chosen.entry->id, t, /*lds_only=*/descriptors_only());
}

bool Checker::descriptors_only() const {
  return depth_ == Depth::Descriptors && report_.kind != PayloadKind::CodeObject;
}

std::string Checker::override_workaround(const std::string& code, const std::string& device) {
  const ProcessorInfo* dev = find_processor(device);
  const ProcessorInfo* p = find_processor(code);
  if (!dev || !p || p == dev || p->is_generic || p->major != dev->major || p->minor != dev->minor ||
      dev->generic.empty() || p->generic != dev->generic)
    return "";
  return "; workaround (not supported by AMD): HSA_OVERRIDE_GFX_VERSION=" + std::to_string(p->major) + "." +
         std::to_string(p->minor) + "." + std::to_string(p->stepping) + " makes the runtime treat the GPU as " + code;
}

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
                        const std::string& location, Depth depth, const Machine& machine, SelectionMemo* memo,
                        Bytes head, const std::function<void(Bytes)>& release_read) {
  Checker checker(data, origin, targets, location, depth, machine, memo, head);
  checker.release_read = release_read;
  return checker.run();
}

}  // namespace hipguard
