// parse_kfd_properties on arbitrary text (a KFD topology "properties" file),
// and discovery over a one-node sysfs tree holding it.
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "hipguard/devices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  std::string_view text(reinterpret_cast<const char*>(data), size);
  hipguard::KfdNode n = hipguard::parse_kfd_properties(text);
  // What was parsed is the last well-formed value of each key: re-parsing the same text agrees.
  hipguard::KfdNode again = hipguard::parse_kfd_properties(text);
  HG_FUZZ_CHECK(n.gfx_target_version == again.gfx_target_version && n.simd_count == again.simd_count &&
                n.lds_size_in_kb == again.lds_size_in_kb && n.capability == again.capability);
  return 0;
}
