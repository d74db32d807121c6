// Helpers shared by the libFuzzer targets: invariants every parser result must
// satisfy, checked with __builtin_trap() so a violation is a libFuzzer crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hipguard/bundle.h"
#include "hipguard/diagnostic.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HG_FUZZ_TRACK_ALLOCATIONS 1
#include <sanitizer/allocator_interface.h>
#endif
#endif

namespace hgfuzz {

// Aborts the run (a libFuzzer "crash") when an invariant does not hold.
#define HG_FUZZ_CHECK(cond)                                                              \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                  \
    }                                                                                    \
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
  if (b.compressed)
    HG_FUZZ_CHECK(b.payload.data() >= data.data() && b.payload.data() + b.payload.size() <= data.data() + data.size());
  for (const auto& e : b.entries) {
    HG_FUZZ_CHECK(e.offset <= base && e.size <= base - e.offset);
    hipguard::Bytes payload = hipguard::entry_bytes(b, data, e);
    if (!b.compressed) HG_FUZZ_CHECK(payload.size() == e.size);
    HG_FUZZ_CHECK(payload.empty() || payload.size() == e.size);
    touch(payload);
  }
}

// Every diagnostic carries a code hipguard documents (an enumerator of Code).
inline void check_diagnostic(const hipguard::Diagnostic& d) {
  HG_FUZZ_CHECK(!hipguard::code_string(d.code).empty());
  std::string line = hipguard::format_line(d);
  HG_FUZZ_CHECK(!line.empty());
}

// ---- Memory budget (issue 12, docs/limits.md) ---------------------------------
//
// hipguard must never allocate in proportion to what an input claims, only to
// what it holds: an input that makes the parsers hold more than
//   kBudgetBase + factor * input size
// bytes at once (peak of live heap bytes while the input runs) is a finding,
// reported like a crash. The factor is per target: 64 for parsers of plain
// bytes (a kernel's KernelInfo, a symbol's map node are a few times the bytes
// that describe them), kMaxCompressionRatio * 2 where a compressed bundle may
// be decoded (what the ratio limit lets a payload claim, plus the growth of the
// output buffer). Counted with the sanitizer allocator's hooks (ASan builds,
// which scripts/fuzz.sh makes); elsewhere Budget does nothing.
inline constexpr uint64_t kBudgetBase = 64ull << 20;
inline constexpr uint64_t kPlainFactor = 64;
inline constexpr uint64_t kCompressedFactor = hipguard::kMaxCompressionRatio * 2;

#ifdef HG_FUZZ_TRACK_ALLOCATIONS
inline uint64_t g_live = 0, g_peak = 0;
inline void budget_malloc_hook(const volatile void*, size_t size) {
  g_live += size;
  if (g_live > g_peak) g_peak = g_live;
}
inline void budget_free_hook(const volatile void* p) {
  size_t size = __sanitizer_get_allocated_size(const_cast<const void*>(p));
  g_live = size > g_live ? 0 : g_live - size;
}
#endif

class Budget {
 public:
  // `extra`: bytes a target may hold whatever the input's size (fuzz_archive: libarchive's decoders).
  Budget(size_t input_size, uint64_t factor, uint64_t extra = 0) : limit_(kBudgetBase + factor * input_size + extra) {
    // HIPGUARD_FUZZ_BUDGET_BYTES=N replaces the budget (to see the check trap: N=1).
    static const char* forced = std::getenv("HIPGUARD_FUZZ_BUDGET_BYTES");
    if (forced && *forced) limit_ = std::strtoull(forced, nullptr, 10);
#ifdef HG_FUZZ_TRACK_ALLOCATIONS
    static bool installed = __sanitizer_install_malloc_and_free_hooks(budget_malloc_hook, budget_free_hook) != 0;
    (void)installed;
    start_ = g_live;
    g_peak = g_live;
#endif
  }
  ~Budget() {
#ifdef HG_FUZZ_TRACK_ALLOCATIONS
    uint64_t used = g_peak - start_;
    if (used > limit_) {
      std::fprintf(stderr, "budget exceeded: %llu bytes held at once, budget %llu\n",
                   static_cast<unsigned long long>(used), static_cast<unsigned long long>(limit_));
      __builtin_trap();
    }
#endif
  }
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

 private:
  uint64_t limit_;
  uint64_t start_ = 0;
};

}  // namespace hgfuzz
