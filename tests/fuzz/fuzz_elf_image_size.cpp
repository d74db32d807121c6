// elf_image_size: header arithmetic on arbitrary bytes. Besides "no crash":
// the result is deterministic and never smaller than the end of the section
// header table it read.
#include <cstring>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  hipguard::Bytes bytes(data, size);
  std::optional<uint64_t> n = hipguard::elf_image_size(bytes);
  if (n) {
    HG_FUZZ_CHECK(size >= 64);
    uint64_t shoff;
    uint16_t shnum;
    std::memcpy(&shoff, data + 40, 8);
    std::memcpy(&shnum, data + 60, 2);
    HG_FUZZ_CHECK(*n >= shoff + uint64_t(shnum) * 64);
    HG_FUZZ_CHECK(hipguard::elf_image_size(bytes) == n);
  }
  return 0;
}
