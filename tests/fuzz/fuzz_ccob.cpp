// Compressed offload bundles whose stream is valid: the input is the
// decompressed bundle (usually an uncompressed offload bundle), which this
// target compresses with zlib or zstd and wraps in a CCOB v1/v2/v3 header, so
// the fuzzer reaches the parsing of the inner bundle instead of dying in the
// decompressor. The first input byte picks version, method and header damage.
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/Compression.h>

#include <vector>

#include "ccob.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kCompressedFactor);  // fuzz_common.h: past it is a finding
  if (size < 1 || size > (1u << 20)) return -1;            // keep compression cheap
  uint8_t ctl = data[0];
  llvm::ArrayRef<uint8_t> inner(data + 1, size - 1);
  uint16_t version = 1 + (ctl & 3) % 3;  // 1..3
  uint16_t method = (ctl >> 2) & 1;      // 0 zlib, 1 zstd
  auto format = method ? llvm::compression::Format::Zstd : llvm::compression::Format::Zlib;
  if (llvm::compression::getReasonIfUnsupported(format)) return -1;
  llvm::SmallVector<uint8_t, 0> packed;
  llvm::compression::compress(format, inner, packed);

  // Bits 3..4: lie about the uncompressed size (smaller / larger by one) or
  // the total size (v2/v3), the header fields the parser must not trust.
  uint64_t uncompressed = inner.size();
  if ((ctl >> 3 & 3) == 1 && uncompressed) uncompressed -= 1;
  if ((ctl >> 3 & 3) == 2) uncompressed += 1;
  uint64_t header = hgtest::ccob_header_size(version);
  uint64_t total = header + packed.size();
  if ((ctl >> 3 & 3) == 3) total += (ctl >> 5);  // claims bytes past the end
  std::vector<uint8_t> ccob = hgtest::ccob_header(version, method, total, uncompressed, 0x1234567890abcdefull);
  ccob.insert(ccob.end(), packed.begin(), packed.end());
  // Exactly-sized copy so ASan sees reads past the end.
  std::vector<uint8_t> exact(ccob.begin(), ccob.end());
  hipguard::Bytes bytes(exact.data(), exact.size());

  hipguard::Result<hipguard::Bundle> b = hipguard::parse_bundle(bytes);
  if (b) {
    HG_FUZZ_CHECK(b->compressed);
    HG_FUZZ_CHECK(b->uncompressed_size == uncompressed);
    hgfuzz::check_bundle(*b, bytes);
  } else {
    HG_FUZZ_CHECK(b.error().code == hipguard::Code::kMalformedCompressed);
  }
  return 0;
}
