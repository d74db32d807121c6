// parse_target / parse_target_id on arbitrary text. A parsed target ID
// round-trips through its canonical spelling, and match_target accepts it.
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "hipguard/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string err1, err2;
  auto id = hipguard::parse_target_id(text, &err1);
  auto t = hipguard::parse_target(text, &err2);
  if (!id) HG_FUZZ_CHECK(!err1.empty());
  if (id) HG_FUZZ_CHECK(t.has_value());  // parse_target accepts everything parse_target_id does
  if (t) {
    std::string canon = t->str();
    std::string err3;
    auto again = hipguard::parse_target_id(canon, &err3);
    HG_FUZZ_CHECK(again.has_value());
    HG_FUZZ_CHECK(again->str() == canon);
    HG_FUZZ_CHECK(hipguard::find_processor(t->processor) != nullptr);
    static const auto gfx942 = *hipguard::parse_target_id("gfx942", nullptr);
    static const auto gfx950 = *hipguard::parse_target_id("gfx950:xnack+", nullptr);
    for (unsigned gv : {0u, 1u, 255u}) {
      hipguard::match_target(*t, gv, gfx942);
      hipguard::match_target(*t, gv, gfx950);
      hipguard::match_target(gfx942, gv, *t);
    }
    HG_FUZZ_CHECK(hipguard::match_target(*t, 1, *t).kind == hipguard::Match::Native);
  }
  return 0;
}
