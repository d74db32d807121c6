// parse_target / parse_target_id on arbitrary text. A parsed target ID
// round-trips through its canonical spelling, and match_target accepts it.
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "hipguard/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto id = hipguard::parse_target_id(text);
  auto t = hipguard::parse_target(text);
  if (!id) HG_FUZZ_CHECK(!id.error().message.empty());
  if (id) HG_FUZZ_CHECK(static_cast<bool>(t));  // parse_target accepts everything parse_target_id does
  if (t) {
    std::string canon = t->str();
    auto again = hipguard::parse_target_id(canon);
    HG_FUZZ_CHECK(static_cast<bool>(again));
    HG_FUZZ_CHECK(again->str() == canon);
    HG_FUZZ_CHECK(hipguard::find_processor(t->processor) != nullptr);
    static const auto gfx942 = *hipguard::parse_target_id("gfx942");
    static const auto gfx950 = *hipguard::parse_target_id("gfx950:xnack+");
    for (unsigned gv : {0u, 1u, 255u}) {
      hipguard::match_target(*t, gv, gfx942);
      hipguard::match_target(*t, gv, gfx950);
      hipguard::match_target(gfx942, gv, *t);
    }
    HG_FUZZ_CHECK(hipguard::match_target(*t, 1, *t).kind == hipguard::Match::Native);
  }
  return 0;
}
