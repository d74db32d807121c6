// parse_bundle on arbitrary bytes: uncompressed offload bundles and CCOB
// headers/streams (seeded with real .hipfb bundles and their CCOB forms).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kCompressedFactor);  // fuzz_common.h: past it is a finding
  hipguard::Bytes bytes(data, size);
  hipguard::classify(bytes);
  hipguard::Result<hipguard::Bundle> b = hipguard::parse_bundle(bytes);
  if (b) {
    hgfuzz::check_bundle(*b, bytes);
  } else {
    HG_FUZZ_CHECK(b.error().code == hipguard::Code::kMalformedBundle ||
                  b.error().code == hipguard::Code::kMalformedCompressed ||
                  b.error().code == hipguard::Code::kBudgetExceeded);
  }
  return 0;
}
