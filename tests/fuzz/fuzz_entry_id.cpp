// parse_entry_id: the three fields are pieces of the input, in order.
#include <string_view>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  std::string_view id(reinterpret_cast<const char*>(data), size);
  hipguard::BundleEntryId e = hipguard::parse_entry_id(id);
  HG_FUZZ_CHECK(e.kind.find('-') == std::string::npos);
  HG_FUZZ_CHECK(id.substr(0, e.kind.size()) == e.kind);
  HG_FUZZ_CHECK(e.kind.size() + e.triple.size() + e.target_id.size() <= size);
  if (!e.triple.empty()) HG_FUZZ_CHECK(id.substr(e.kind.size() + 1, e.triple.size()) == e.triple);
  if (!e.target_id.empty()) HG_FUZZ_CHECK(id.substr(size - e.target_id.size()) == e.target_id);
  (void)e.is_hip();
  (void)e.is_amdgcn();
  return 0;
}
