// The guard's kernels (internal): the registry (registry.h) under its mutex, the registration probe
// (probe.h), the launch gate they write and the launch cache, and what crosses them and the sink.
// One part of the guard's state (state.h); the event handlers (events.h) reach the registry
// through it. Methods say whether they take `mu` or require it held.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <utility>

#include "hipguard/owned_mutex.h"
#include "runtime/config.h"
#include "runtime/guard.h"
#include "runtime/kernel_table.h"
#include "runtime/probe.h"
#include "runtime/registry.h"
#include "runtime/reporting.h"

namespace hipguard {

class Kernels {
  std::atomic<unsigned> own_gate_{0};  // a guard of its own's gate (first: `gate` may refer to it)

 public:
  // The process's guard keeps the process-wide launch gate and cache, which the shim's launch
  // wrappers read (`process_gate`, `cache`); a guard built on its own keeps its own gate and no
  // cache (no wrapper reads it). `config` and `out` outlive it.
  Kernels(const GuardConfig& config, Reporting& out, std::atomic<unsigned>* process_gate, LaunchCache* cache)
      : config(config), out(out), gate(process_gate ? *process_gate : own_gate_), launch_cache(cache) {}
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  const GuardConfig& config;
  Reporting& out;
  // The registry's lock. Taken before the probe's or the sink's when both are needed; those two
  // are leaves, never held together.
  OwnedMutex mu;
  // The kGate* bits (guard.h): g_launch_gate or own_gate_. Its owner is this part: the registry
  // writes three bits, the probe one (registry.h, probe.h); nothing else writes it.
  std::atomic<unsigned>& gate;
  LaunchCache* const launch_cache;  // g_launch_cache, or null
  Probe probe{gate};                // the kernels waiting for their first launch's probe: its own lock
  Registry registry{gate, probe};   // fat binaries, modules, kernels, stub owners, the kernel table: requires mu
  uint64_t fork_seq = 0;  // registry.last_seq() at the last fork: a child's report lists what has a seq above it

  // What crosses the parts: a kernel leaving the registry leaves what it found (or how often it
  // ran into findings) with the sink, and so does an image report, when a report is kept; a fat
  // binary leaving it is no longer waiting for the probe. Each requires mu.
  void register_fatbin(const void* handle, PendingFatbin&& pending) {
    registry.add_fatbin(handle, std::move(pending), [this](const KernelState& k) { keep_gone(k); });
    probe.forget(handle);  // registered anew: the earlier registration's kernels no longer wait
  }
  void unregister_fatbin(const void* handle) {
    registry.remove_fatbin(
        handle, [this](const KernelState& k) { keep_gone(k); },
        [this](ImageReport&& img, uint64_t seq) { keep_gone_image(std::move(img), seq); });
    probe.forget(handle);
  }
  void unload_module(const void* module) {
    registry.remove_module(
        module, [this](const KernelState& k) { keep_gone(k); },
        [this](ImageReport&& img, uint64_t seq) { keep_gone_image(std::move(img), seq); });
  }
  // The registry's `entered` for the kernel table's lazy indexing: the kernels wait for the probe.
  auto to_probe() {
    return
        [this](const void* handle, std::span<const void* const> host_functions) { probe.add(handle, host_functions); };
  }

  // Registered kernels enter the kernel table lazily, a fat binary at a time (the first launch or
  // lookup of one of its kernels, or the report): the fat binary whose registration of `key`
  // counts (takes mu), or `handle`'s (requires mu).
  void index_kernel(const void* key);
  void index_kernels_of(const void* handle);
  // A fat binary registered checked to selection only, checked in full (takes mu): at its first
  // use, where its findings are said (and count for the exit status); for the report (`say`
  // false), where they are only listed: an unused kernel changes neither the log nor the exit status.
  void check_in_full(const void* handle, bool say = true);
  // `key` indexed and its fat binary checked in full: its state, or null (takes mu).
  const KernelState* kernel_in_full(const void* key);
  // Not in full, registered by this process, report not written (takes mu).
  bool for_the_report(const void* handle);
  // Probes the kernels of one fat binary, once, outside every lock but to take its list (probe.cpp).
  // When the probe drained errors the runtime kept, the error the program's last-error state held
  // before goes to `restored_error` (Decision::restored_error), unless it was none.
  void run_probe(const void* handle, int& restored_error);

 private:
  void keep_gone(const KernelState& k) {
    if (k.superseded || config.report_path.empty() || (k.findings().empty() && k.launches == 0)) return;
    KernelRecord rec{k.name, k.file_name(), k.launches.load(), k.blocked.load(), {}};
    for (const auto& d : k.findings()) rec.codes.push_back(d.code);
    out.sink().keep_gone_kernel(std::move(rec), k.seq);
  }
  void keep_gone_image(ImageReport&& img, uint64_t seq) {
    if (!config.report_path.empty()) out.sink().keep_gone_image(std::move(img), seq);  // only the report reads it
  }
};

// The runtime answers these when it has no usable GPU at all: a probe then says nothing.
inline bool no_device_error(int e) {
  return e == kHipErrorNoDevice || e == kHipErrorInvalidDevice || e == kHipErrorInsufficientDriver ||
         e == kHipErrorNotInitialized;
}

}  // namespace hipguard
