// The whole pipeline: check_image on arbitrary bytes against gfx942 and
// gfx950:xnack+, and with no target (structural checks over every entry);
// Depth::Descriptors must find the errors it can decide,
// Depth::ForTargets (hipguard check) must reach the same verdicts.
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "hipguard/check.h"

// Errors the full check finds without the metadata's help (bundle and ELF
// structure, code object version, selection and e_flags, a missing note).
static bool decided_without_metadata(hipguard::Code c) {
  using hipguard::Code;
  return (c >= Code::kUnreadable && c <= Code::kMalformedElf) || c == Code::kUnknownProcessor ||
         c == Code::kCodeObjectVersion || (c >= Code::kNoCodeObject && c <= Code::kGenericTooOld) ||
         c == Code::kNoMetadata;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kCompressedFactor);  // fuzz_common.h: past it is a finding
  static const std::vector<hipguard::TargetId> targets = {*hipguard::parse_target_id("gfx942"),
                                                          *hipguard::parse_target_id("gfx950:xnack+")};
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
    // A target runs on a selected code object, or on nothing when no entry has a kernel (HG211).
    for (const auto& v : r.verdicts)
      if (v.can_run) HG_FUZZ_CHECK(v.selection != hipguard::Selection::None || v.kernel_free);
    (void)r.ok();
    // Strict mode's registration depth (no metadata read) finds every error the
    // full check finds in the bundle, the ELF header, the selection or the note's
    // presence; the registration confirms its errors with the full check.
    hipguard::ImageReport e = hipguard::check_image(bytes, "fuzz", *ts, "", hipguard::Depth::Descriptors);
    HG_FUZZ_CHECK(e.verdicts.size() == r.verdicts.size());
    for (size_t i = 0; i < e.verdicts.size(); ++i) HG_FUZZ_CHECK(e.verdicts[i].selected == r.verdicts[i].selected);
    for (const auto& d : r.diagnostics) {
      if (d.severity != hipguard::Severity::Error || !decided_without_metadata(d.code)) continue;
      bool found = false;
      for (const auto& x : e.diagnostics)
        found = found || (x.code == d.code && x.target == d.target && x.entry == d.entry && x.severity == d.severity);
      HG_FUZZ_CHECK(found);
    }
    // `hipguard check`'s depth (a raw code object for other processors read to
    // its descriptors) reaches the same verdicts as the full check.
    hipguard::ImageReport t = hipguard::check_image(bytes, "fuzz", *ts, "", hipguard::Depth::ForTargets);
    HG_FUZZ_CHECK(t.verdicts.size() == r.verdicts.size());
    for (size_t i = 0; i < t.verdicts.size(); ++i)
      HG_FUZZ_CHECK(t.verdicts[i].can_run == r.verdicts[i].can_run && t.verdicts[i].selected == r.verdicts[i].selected);
  }
  return 0;
}
