// A do-nothing libamdhip64.so.5 for the launch benchmarks (P3n, P7): every
// entry point of the API tables returns 0 at once, so what a benchmark measures
// with and without the shim is the shim's own cost, not a runtime's. Only
// __hipRegisterFatBinary does anything: it hands out a distinct handle, as the
// real runtime does, so the shim keeps each fat binary apart.
#include <atomic>
#include <cstdint>

namespace {
std::atomic<uintptr_t> g_next_handle{0x1000};
}

// Strong definition: wins over the weak alias that null_runtime_aliases.cpp makes.
extern "C" __attribute__((visibility("default"))) void** __hipRegisterFatBinary(const void*) {
  return reinterpret_cast<void**>(g_next_handle.fetch_add(0x10, std::memory_order_relaxed));
}
