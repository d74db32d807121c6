// Per-kernel facts from an image's report: findings by kernel, LDS headroom
// per target, kernels missing from the selected code object (kernel_index.h).
#include "runtime/kernel_index.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runtime/guard.h"

namespace hipguard {

ImageIndex build_index(const ImageReport& r, const std::vector<TargetId>& targets, bool lds) {
  ImageIndex idx;
  auto image = std::make_shared<std::vector<Diagnostic>>();
  for (const auto& d : r.diagnostics) {
    if (d.severity == Severity::Note) continue;
    if (d.severity == Severity::Error && (d.kernel.empty() || rejects_code_object(d))) image->push_back(d);
    else if (!d.kernel.empty()) idx.by_kernel[d.kernel].push_back(d);
  }
  idx.image_findings = std::move(image);
  idx.origin = r.location.empty() ? r.origin : r.origin + " [" + r.location + "]";
  // Never reallocated: a Selected moved would leave its views behind (a short string's characters move with it).
  idx.selected.reserve(std::min(targets.size(), r.verdicts.size()));
  for (size_t t = 0; t < targets.size() && t < r.verdicts.size(); ++t) {
    const TargetVerdict& v = r.verdicts[t];
    if (v.selection == Selection::None) continue;
    const CodeObject* co = nullptr;
    for (const auto& c : r.code_objects)
      if (c.entry == v.selected || (r.kind == PayloadKind::CodeObject && c.entry.empty())) co = &c.co;
    const ProcessorInfo* proc = find_processor(targets[t].processor);
    if (!co || !proc) continue;
    ImageIndex::Selected& sel = idx.selected.emplace_back();
    sel.target = &targets[t];
    sel.entry = v.selected;
    size_t bytes = 0;
    for (const auto& ki : co->kernels) bytes += ki.name.size();
    sel.names.reserve(bytes);  // never reallocated below: the views stay valid
    sel.kernels.reserve(co->kernels.size());
    sel.held.reserve(co->kernels.size());
    for (const auto& ki : co->kernels) {
      sel.names += ki.name;
      sel.kernels.push_back(std::string_view(sel.names).substr(sel.names.size() - ki.name.size()));
      sel.held.insert(llvm::StringRef(sel.kernels.back().data(), ki.name.size()));
    }
    if (!lds) continue;
    for (const auto& ki : co->kernels) {
      uint64_t lds = ki.group_segment_fixed_size;
      if (ki.descriptor) lds = std::max<uint64_t>(lds, ki.descriptor->group_segment_fixed_size);
      uint64_t limit = lds_limit(targets[t], *proc);
      uint64_t avail = limit > lds ? limit - lds : 0;
      ImageIndex::LdsFit& fit = idx.lds[ki.name];
      if (avail < fit.max_dynamic) fit = {lds, avail, limit, targets[t].label()};
      if (targets.size() > 1) {
        auto& per = idx.lds_by_target[ki.name];
        if (per.size() < targets.size()) per.resize(targets.size());
        if (avail < per[t].max_dynamic) per[t] = {lds, avail, limit, targets[t].label()};
      }
    }
  }
  return idx;
}

// HG409 for each target whose selected code object lacks the kernel `name`.
std::vector<Diagnostic> missing_kernel(std::string_view name, const ImageIndex& idx) {
  std::vector<Diagnostic> out;
  for (const auto& sel : idx.selected) {
    if (sel.holds(name)) continue;
    std::vector<std::string_view> sorted = sel.kernels;
    std::sort(sorted.begin(), sorted.end());
    std::string held;
    size_t n = 0;
    for (const auto& k : sorted) {
      if (++n > 8) {
        held += ", ...";
        break;
      }
      held += (held.empty() ? "" : ", ") + std::string(k);
    }
    Diagnostic d = make_diagnostic(
        Code::kKernelNotInCodeObject, idx.origin,
        "kernel is registered by the program, but the code object selected for " + sel.target->label() + " (" +
            sel.entry +
            ") does not contain it; the runtime fails its lookup and launch with "
            "hipErrorInvalidDeviceFunction. Kernels there: " +
            (held.empty() ? std::string("none") : held),
        "compile the kernel for every --offload-arch (look for #if __gfx...__ / __HIP_ARCH_* guards around its "
        "definition), or do not launch it on " +
            sel.target->processor);
    d.entry = sel.entry;
    d.kernel = name;
    d.target = sel.target->str();
    out.push_back(std::move(d));
  }
  return out;
}

// HG210 into the image's own findings (a warning: verdicts are unchanged).
void add_hotswap(ImageReport& report, const GuardConfig& c) {
  for (auto& d : hotswap_forwarding(report, c.targets, c.hotswap_tool)) report.diagnostics.push_back(std::move(d));
}

// Adds what `idx` says about kernel k.name (its findings, its LDS headroom).
void fill_kernel(KernelState& k, const ImageIndex& idx) {
  auto own = idx.by_kernel.find(k.name);
  std::vector<Diagnostic> missing = missing_kernel(k.name, idx);
  if (!k.findings_ptr && own == idx.by_kernel.end() && missing.empty()) {
    k.findings_ptr = idx.image_findings;  // shared
  } else {
    auto merged = std::make_shared<std::vector<Diagnostic>>(k.findings());
    merged->insert(merged->end(), idx.image_findings->begin(), idx.image_findings->end());
    if (own != idx.by_kernel.end()) merged->insert(merged->end(), own->second.begin(), own->second.end());
    merged->insert(merged->end(), missing.begin(), missing.end());
    k.findings_ptr = std::move(merged);
  }
  k.blocking = false;
  for (const auto& d : k.findings()) k.blocking = k.blocking || d.severity == Severity::Error;
  if (auto fit = idx.lds.find(k.name); fit != idx.lds.end() && fit->second.max_dynamic < k.max_dynamic_lds) {
    k.max_dynamic_lds = fit->second.max_dynamic;
    k.static_lds = fit->second.static_lds;
    k.lds_limit = fit->second.limit;
    k.lds_target = fit->second.target;
  }
  if (auto per = idx.lds_by_target.find(k.name); per != idx.lds_by_target.end()) {
    if (k.lds_by_target.size() < per->second.size()) k.lds_by_target.resize(per->second.size());
    for (size_t t = 0; t < per->second.size(); ++t)
      if (per->second[t].max_dynamic < k.lds_by_target[t].max_dynamic)
        k.lds_by_target[t] = {per->second[t].static_lds, per->second[t].max_dynamic, per->second[t].limit};
  }
}

std::string first_finding(const KernelState& k) {
  if (k.findings().empty()) return "no finding";
  const Diagnostic& d = k.findings().front();
  return std::string(code_string(d.code)) + (d.target.empty() ? "" : " [" + d.target + "]") + ": " + d.message;
}

void refresh_clean(const KernelState& k, bool probe_off) {
  bool clean = k.depth == Depth::Full && !k.superseded && !k.retired && k.findings().empty() &&
               (probe_off || k.probed.load(std::memory_order_relaxed));
  k.set_clean(clean);
}

}  // namespace hipguard
