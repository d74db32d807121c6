// The whole pipeline: check_image on arbitrary bytes against gfx942 and
// gfx950:xnack+, and with no target (structural checks over every entry).
#include <vector>

#include "fuzz_common.h"
#include "hipguard/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kCompressedFactor);  // fuzz_common.h: past it is a finding
  static const std::vector<hipguard::TargetId> targets = {*hipguard::parse_target_id("gfx942", nullptr),
                                                          *hipguard::parse_target_id("gfx950:xnack+", nullptr)};
  static const std::vector<hipguard::TargetId> none;
  hipguard::Bytes bytes(data, size);
  for (const auto* ts : {&targets, &none}) {
    hipguard::ImageReport r = hipguard::check_image(bytes, "fuzz", *ts);
    HG_FUZZ_CHECK(r.verdicts.size() == ts->size());
    bool error = false;
    for (const auto& d : r.diagnostics) {
      hgfuzz::check_diagnostic(d);
      if (d.severity == hipguard::Severity::Error && d.target.empty()) error = true;
    }
    HG_FUZZ_CHECK(r.structurally_ok == !error);
    for (const auto& v : r.verdicts)
      if (v.can_run) HG_FUZZ_CHECK(v.selection != hipguard::Selection::None);
    (void)r.ok();
  }
  return 0;
}
