// A check cache's recordings (cache/report_codec.h) read back from arbitrary bytes: the input is the
// events, framed and checksummed here as RecordingSink frames them, so the reader itself is what is
// fuzzed, not the checksum. What replay accepts, recorded again, replays to the same recording.
#include <llvm/Support/xxhash.h>

#include <string>

#include "cache/report_codec.h"
#include "fuzz_common.h"

namespace {

std::string framed(const uint8_t* data, size_t size) {
  std::string out = "HGRC";
  for (unsigned i = 0; i < 4; ++i) out.push_back(static_cast<char>(hipguard::kReportCodecVersion >> (8 * i)));
  out.append(reinterpret_cast<const char*>(data), size);
  uint64_t sum = llvm::xxHash64(out);
  for (unsigned i = 0; i < 8; ++i) out.push_back(static_cast<char>(sum >> (8 * i)));
  return out;
}

hipguard::Bytes bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Each value read takes at least a byte of input; the most memory per byte is an empty string's 32
  // bytes in a vector, held up to three times over while the vector grows.
  hgfuzz::Budget budget(size, 256);
  std::string input = framed(data, size);
  if (!hipguard::replay(bytes_of(input), nullptr)) return 0;
  hipguard::RecordingSink once;
  HG_FUZZ_CHECK(static_cast<bool>(hipguard::replay(bytes_of(input), &once)));
  std::string a = once.finish();
  hipguard::RecordingSink twice;
  HG_FUZZ_CHECK(static_cast<bool>(hipguard::replay(bytes_of(a), &twice)));
  HG_FUZZ_CHECK(twice.finish() == a);
  return 0;
}
