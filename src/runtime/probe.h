// The registration probe's state (internal): the runtime's lookup functions
// and, per fat binary, the kernels not probed yet, under a lock of its own.
// Kernels::run_probe (probe.cpp) takes a fat binary's list and calls the runtime
// outside every lock.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hipguard/owned_mutex.h"
#include "runtime/guard.h"

namespace hipguard {

// Its invariant: the launch gate's kGateProbe bit is set exactly while some
// fat binary has kernels waiting (changed under its lock). Its lock is a leaf:
// it is taken under the registry's (kernels indexed: Kernels::to_probe; a fat
// binary registered anew or unregistered: Kernels::register_fatbin and
// unregister_fatbin; run_probe's take, which marks the kernels taken in the
// same section) or alone, and nothing else is taken under it.
class Probe {
 public:
  explicit Probe(std::atomic<unsigned>& gate) : gate_(gate) {}

  // What a fat binary's first launch probes: its kernels' host functions, and
  // the runtime's functions to probe them with.
  struct Batch {
    ProbeFunctions functions;
    std::vector<const void*> host_functions;
  };

  // Handed in by the shim at the first launch.
  void set_functions(const ProbeFunctions& f) {
    std::lock_guard lock(mu_);
    functions_ = f;
  }
  // The kernels `host_functions` of fat binary `handle` wait for its first
  // launch (nothing, once the probe is off).
  void add(const void* handle, std::span<const void* const> host_functions) {
    if (host_functions.empty()) return;
    std::lock_guard lock(mu_);
    if (off()) return;
    auto& waiting = unprobed_[handle];
    waiting.insert(waiting.end(), host_functions.begin(), host_functions.end());
    gate_.fetch_or(kGateProbe, std::memory_order_release);
  }
  // The fat binary is gone: its kernels no longer wait.
  void forget(const void* handle) {
    std::lock_guard lock(mu_);
    if (unprobed_.erase(handle)) close_gate_if_done();
  }
  // The kernels of `handle` still waiting, taken once: each kernel is probed
  // by whichever launch gets here first. None when the probe is off.
  std::optional<Batch> take(const void* handle) {
    std::lock_guard lock(mu_);
    if (off()) return std::nullopt;
    auto it = unprobed_.find(handle);
    if (it == unprobed_.end()) return std::nullopt;
    Batch b{functions_, std::move(it->second)};
    unprobed_.erase(it);
    close_gate_if_done();
    return b;
  }
  // The runtime has no usable GPU: probing says nothing from now on.
  void switch_off() {
    std::lock_guard lock(mu_);
    off_.store(true, std::memory_order_release);
    unprobed_.clear();
    close_gate_if_done();
  }
  // Read without the lock: once off, it stays off.
  bool off() const { return off_.load(std::memory_order_acquire); }

  // fork(): events::before_fork and after_fork hold it across.
  void unlock_after_fork() { mu_.unlock_after_fork(); }
  OwnedMutex::ForkHold lock_for_fork() { return mu_.lock_for_fork(); }

 private:
  void close_gate_if_done() {
    if (unprobed_.empty()) gate_.fetch_and(~kGateProbe, std::memory_order_acq_rel);
  }

  OwnedMutex mu_;
  std::atomic<unsigned>& gate_;
  ProbeFunctions functions_;
  std::unordered_map<const void*, std::vector<const void*>> unprobed_;
  std::atomic<bool> off_{false};
};

}  // namespace hipguard
