// What the shim knows of the process it is preloaded into: the guard configured
// from its environment, the loaded HIP runtime and its functions, and the shim's
// own wrappers for the runtime's lookups (process.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hip_abi.h"
#include "runtime/guard.h"
#include "runtime/runtime_exports.h"

namespace hipguard::shim {

// The lines of hip_api.def: an index each (the shim caches a runtime pointer per index), and the
// symbol and version node each.
enum Api : unsigned {
#define HG_API(sym, ...) api_##sym,
#define HG_SKIP(...)
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
  kApiCount
};

struct ApiEntry {
  const char* name;
  const char* node;
};
inline constexpr ApiEntry kApis[] = {
#define HG_API(sym, node, ...) {#sym, #node},
#define HG_SKIP(...)
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
};
static_assert(sizeof kApis / sizeof kApis[0] == kApiCount);
// The HG_SKIP lines: entry points on a kernel's path that need no wrapper.
inline constexpr ApiEntry kSkippedApis[] = {
#define HG_API(...)
#define HG_SKIP(sym, node, why) {#sym, #node},
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
};

// hip_api.def as the start-up audit of the runtime's exports takes it (HG604, process.cpp).
inline std::vector<hipguard::KnownEntryPoint> table_entry_points() {
  std::vector<hipguard::TableEntry> wrapped, skipped;
  for (const auto& a : kApis) wrapped.emplace_back(a.name, a.node);
  for (const auto& a : kSkippedApis) skipped.emplace_back(a.name, a.node);
  return hipguard::known_entry_points(wrapped, skipped);
}

// The guard, configured from this process's environment at the shim's first
// call into it, whichever wrapper that is (hipcc's registration constructors
// may run before or after the shim's own constructor).
Guard& guard();

// Logs the line `message()` builds: building it may throw too.
template <class Message>
void log_line(const char* level, Message message) {
  guarded([&] { guard().log(level, message()); });
}

// The loaded libamdhip64's function `name` at `version` (else any version), or
// null; a miss is logged unless `optional`.
void* resolve(const char* name, const char* version, bool optional = false);

// The version node hip_api.def gives `name` (an HG_API or HG_SKIP line): a function the shim calls
// without a wrapper of its own is resolved under the node its table line names, not one typed
// again. Not a constant (a name the table lacks) when the table has no such line.
consteval const char* table_node(std::string_view name) {
  for (const auto& a : kApis)
    if (name == a.name) return a.node;
  for (const auto& a : kSkippedApis)
    if (name == a.name) return a.node;
  throw "not in hip_api.def";
}

// What a wrapper returns when the runtime function it forwards to is missing:
// hipErrorNotSupported when a runtime is loaded that lacks it (older ROCm),
// hipErrorNotInitialized when no runtime is loaded at all.
hipError_t missing_runtime_function();

// Ends the process for strict mode (_exit, not exit: the program's own atexit
// handlers and destructors must not run half-initialised). The report
// (HIPGUARD_REPORT) is the one thing written first.
[[noreturn]] void strict_exit();

// The HIP device of a multi-device launch entry (its stream's: CLR rejects null streams there), or -1.
int stream_device(hipStream_t stream);

// CLR's hipGetProcAddress / hipGetDriverEntryPoint(_spt) dlsym the runtime's
// own handle (appending "_spt" for per-thread-stream requests), which hands out
// the runtime's functions and so bypasses an LD_PRELOAD shim. When the runtime
// found a function (*pfn) and it is one hipguard interposes, the caller gets the
// shim's wrapper instead: the same symbol, under the same version node.
// `requested` is what the caller asked for; `per_thread` whether the runtime
// looked up the "_spt" form first.
void redirect(const char* requested, bool per_thread, void** pfn);

}  // namespace hipguard::shim
