// Helpers shared by the libFuzzer targets: invariants every parser result must
// satisfy, checked with __builtin_trap() so a violation is a libFuzzer crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "hipguard/bundle.h"
#include "hipguard/diagnostic.h"

namespace hgfuzz {

// Aborts the run (a libFuzzer "crash") when an invariant does not hold.
#define HG_FUZZ_CHECK(cond)                                                          \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                             \
    }                                                                               \
  } while (0)

// Reads every byte of `b` so ASan reports a span that points outside its buffer.
inline uint8_t touch(hipguard::Bytes b) {
  volatile uint8_t acc = 0;
  for (uint8_t x : b) acc = acc ^ x;
  return acc;
}

// A bundle that parse_bundle accepted: encoded_size lies inside `data`, its
// entries inside `data` (plain) or the header's uncompressed size (CCOB), and
// every entry's bytes can be read in full (or, for a CCOB whose stream ends
// early, come back empty).
inline void check_bundle(hipguard::Bundle& b, hipguard::Bytes data) {
  HG_FUZZ_CHECK(b.encoded_size <= data.size());
  HG_FUZZ_CHECK(b.table_size <= (b.compressed ? b.uncompressed_size : data.size()));
  uint64_t base = b.compressed ? b.uncompressed_size : data.size();
  if (b.compressed) HG_FUZZ_CHECK(b.payload.data() >= data.data() && b.payload.data() + b.payload.size() <= data.data() + data.size());
  for (const auto& e : b.entries) {
    HG_FUZZ_CHECK(e.offset <= base && e.size <= base - e.offset);
    hipguard::Bytes payload = hipguard::entry_bytes(b, data, e);
    if (!b.compressed) HG_FUZZ_CHECK(payload.size() == e.size);
    HG_FUZZ_CHECK(payload.empty() || payload.size() == e.size);
    touch(payload);
  }
}

// Every diagnostic carries a code hipguard documents.
inline void check_diagnostic(const hipguard::Diagnostic& d) {
  HG_FUZZ_CHECK(hipguard::find_code(d.code) != nullptr);
  std::string line = hipguard::format_line(d);
  HG_FUZZ_CHECK(!line.empty());
}

}  // namespace hgfuzz
