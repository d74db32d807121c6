// HG210: an HSA_TOOLS_LIB HotSwap tool would forward a bundle entry (gfx1250) instead of the
// native code object CLR selects (gfx942, gfx950): the processors' hotswap column (target.h).
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/target.h"
#include "runtime/guard.h"

namespace hipguard {

std::vector<Diagnostic> hotswap_forwarding(const ImageReport& report, const std::vector<TargetId>& targets,
                                           const std::string& tool) {
  std::vector<Diagnostic> out;
  if (tool.empty()) return out;
  // The bundle entry CLR's HotSwap branch would forward: the first of a Forwarded processor.
  std::string foreign;
  for (const auto& id : report.entry_ids) {
    // The processor alone: CLR forwards the entry whatever features it names.
    const std::string target = parse_entry_id(id).target_id;
    if (const ProcessorInfo* p = find_processor(std::string_view(target).substr(0, target.find(':')));
        p && p->hotswap == HotSwap::Forwarded) {
      foreign = id;
      break;
    }
  }
  if (foreign.empty()) return out;
  for (size_t i = 0; i < targets.size() && i < report.verdicts.size(); ++i) {
    const TargetId& t = targets[i];
    const TargetVerdict& v = report.verdicts[i];
    const ProcessorInfo* p = find_processor(t.processor);
    if (!p || p->hotswap != HotSwap::Native) continue;
    if (v.selection == Selection::None) continue;  // nothing native to lose (HG201 says why)
    Diagnostic d = make_diagnostic(
        Code::kHotSwapForwarding, report.origin,
        "HSA_TOOLS_LIB loads the HotSwap tool (" + tool +
            "): CLR builds with HotSwap forwarding hand the bundle entry " + foreign + " to the tool for " +
            t.processor + " instead of loading the code object selected for it (" + v.selected + ")",
        "unset HSA_TOOLS_LIB (or remove " + tool +
            " from it); HSA_HOTSWAP_DISABLE=1 disables the forwarding only in "
            "some CLR builds, and CLR without HotSwap (after ROCm PR #9856) loads the native code object");
    d.target = t.str();
    d.entry = foreign;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace hipguard
