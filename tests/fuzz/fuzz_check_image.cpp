// The whole pipeline: check_image on arbitrary bytes against gfx942 and
// gfx950:xnack+, and with no target (structural checks over every entry);
// Depth::Errors (strict registration) must reach the same verdicts.
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
    // Strict mode's registration depth decides like the full check.
    hipguard::ImageReport e = hipguard::check_image(bytes, "fuzz", *ts, "", hipguard::Depth::Errors);
    HG_FUZZ_CHECK(e.structurally_ok == r.structurally_ok);
    HG_FUZZ_CHECK(e.verdicts.size() == r.verdicts.size());
    for (size_t i = 0; i < e.verdicts.size(); ++i) HG_FUZZ_CHECK(e.verdicts[i].can_run == r.verdicts[i].can_run);
  }
  return 0;
}
