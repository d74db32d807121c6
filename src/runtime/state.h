// The guard's state (internal): its registry (registry.h: what it knows of
// each kernel, fat binary and module, and their lifetimes) under the state
// mutex; the probe (probe.h), the findings sink (findings.h), the selection
// memo and the mapped files under locks of their own.
// Guard's parts (registration, modules, launch_gate, probe, report_output,
// exit_status) share it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/owned_mutex.h"
#include "hipguard/report.h"
#include "runtime/address.h"
#include "runtime/findings.h"
#include "runtime/guard.h"
#include "runtime/kernel_table.h"
#include "runtime/probe.h"
#include "runtime/registry.h"

// spdlog (header-only, and heavy to compile) is included by guard.cpp alone,
// which builds the logger and writes to it (log_warning below).
namespace spdlog {
class logger;
}

namespace hipguard {

struct Guard::State {
  // The process's guard (Guard::get()) keeps the process-wide launch gate and
  // cache, which the shim's launch wrappers read; a guard built on its own
  // keeps its own gate and no cache (no wrapper reads it).
  State(std::atomic<unsigned>* launch_gate, LaunchCache* cache)
      : gate(launch_gate ? *launch_gate : own_gate), launch_cache(cache) {}
  // The registry's lock. Taken before the probe's or the sink's when both are
  // needed; those two are leaves, never held together.
  OwnedMutex mu;
  GuardConfig config;
  std::shared_ptr<spdlog::logger> logger;
  std::once_flag setup_said;  // the set-up findings, said at first use (config())
  std::atomic<unsigned> own_gate{0};
  std::atomic<unsigned>& gate;     // the kGate* bits (guard.h): g_launch_gate or own_gate
  LaunchCache* launch_cache;       // g_launch_cache, or null
  Probe probe{gate};               // the kernels waiting for their first launch's probe: its own lock
  Registry registry{gate, probe};  // fat binaries, modules, kernels, stub owners, the kernel table (registry.h)
  FindingsSink findings;           // what was said, what the report keeps, the exit status's counts: its own lock
  // Registration's selections by bundle entry IDs (warn and strict mode): its
  // own lock, taken by check_image outside this mutex.
  SelectionMemo selection_memo;
  // The files of the loaded objects whose fat binaries' tables registration
  // read from the file (Guard::head_from_file), each checked once: its own lock.
  MappedFiles mapped_files;
  uint64_t fork_seq = 0;  // registry.last_seq() at the last fork: a child's report lists what has a seq above it
  std::string unclean_fork_line;  // HG605's line, made at start: a child's fork handler cannot allocate

  // What crosses the parts: a kernel leaving the registry leaves what it found
  // (or how often it ran into findings) with the sink, and so does an image
  // report, when a report is kept; a fat binary leaving it is no longer
  // waiting for the probe. State mutex held.
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
  void keep_gone(const KernelState& k) {
    if (k.superseded || config.report_path.empty() || (k.findings().empty() && k.launches == 0)) return;
    KernelRecord rec{k.name, k.file_name(), k.launches.load(), k.blocked.load(), {}};
    for (const auto& d : k.findings()) rec.codes.push_back(d.code);
    findings.keep_gone_kernel(std::move(rec), k.seq);
  }
  void keep_gone_image(ImageReport&& img, uint64_t seq) {
    if (!config.report_path.empty()) findings.keep_gone_image(std::move(img), seq);  // only the report reads it
  }
  // The registry's `entered` for the kernel table's lazy indexing: the kernels wait for the probe.
  auto to_probe() {
    return
        [this](const void* handle, std::span<const void* const> host_functions) { probe.add(handle, host_functions); };
  }
};

// Set once the guard's state exists: the process called HIP. The exit status
// handler does nothing before that.
extern std::atomic<bool> g_state_ready;

// The runtime answers these when it has no usable GPU at all: a probe then says nothing.
inline bool no_device_error(int e) {
  return e == kHipErrorNoDevice || e == kHipErrorInvalidDevice || e == kHipErrorInsufficientDriver ||
         e == kHipErrorNotInitialized;
}

// A warning line on `logger` (guard.cpp).
void log_warning(spdlog::logger& logger, const std::string& line);
// The lock of hipguard's lines on stderr (every guard's logger), held across fork() with the guard's.
OwnedMutex& log_mutex();

}  // namespace hipguard
