// split_fatbin_section on arbitrary bytes (seeded with .hip_fatbin sections
// that objcopy extracted from the hipcc-built executables and libraries).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kCompressedFactor);  // fuzz_common.h: past it is a finding
  hipguard::Bytes section(data, size);
  std::vector<hipguard::SectionBundle> parts = hipguard::split_fatbin_section(section);
  uint64_t last = 0;
  bool first = true;
  for (auto& p : parts) {
    HG_FUZZ_CHECK(p.offset < size);
    HG_FUZZ_CHECK(first || p.offset > last);  // strictly forward: no loops
    first = false;
    last = p.offset;
    if (p.bundle) hgfuzz::check_bundle(*p.bundle, section.subspan(p.offset));
  }
  HG_FUZZ_CHECK(parts.size() <= size / 32 + 1);
  return 0;
}
