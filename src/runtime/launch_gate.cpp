// The launch gate: a launch that did not take the fast path is decided here (first use checks its fat binary in full).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/events.h"
#include "runtime/kernels.h"

namespace hipguard {

void Kernels::check_in_full(const void* handle, bool say) {
  std::vector<Diagnostic> said;
  {
    std::lock_guard lock(mu);
    auto check = [&](Bytes data, const std::string& origin) {
      ImageReport full = check_image(data, origin, config.targets, "", Depth::Full, config.machine);
      add_hotswap(full, config);
      return full;
    };
    const ImageReport* full = registry.check_in_full(handle, check, config.targets);
    if (!full) return;
    said = full->diagnostics;
  }
  if (say)
    for (const auto& d : said) out.say(d);
}

const KernelState* Kernels::kernel_in_full(const void* key) {
  index_kernel(key);
  const KernelState* k = registry.find(key);
  if (!k || k->depth == Depth::Full) return k;
  check_in_full(k->fatbin);
  return registry.find(key);
}

namespace {

// Whether a kernel's "said" flag is set for the first time: a hipFunction_t's
// state sets its stub's (`also`) too, so that a launch finding is said once per kernel.
bool first_said(std::atomic<bool>& flag, std::atomic<bool>* also) {
  bool said = flag.exchange(true);
  if (also) said = also->exchange(true) || said;
  return !said;
}

// HG502: a kernel with findings is launched.
Diagnostic launch_with_findings(const KernelState& k, const char* api, bool strict) {
  Diagnostic d;
  d.code = Code::kLaunchWithFindings;
  d.severity = k.blocking ? Severity::Error : Severity::Warning;
  d.file = k.file_name();
  d.kernel = k.name;
  d.message = std::string(api) + " of a kernel with findings: " + first_finding(k) +
              (k.blocking ? (strict ? "; strict mode: launch refused with hipErrorInvalidDeviceFunction"
                                    : "; the launch is forwarded and will fail or misbehave")
                          : "");
  d.fix = k.findings().front().fix;
  return d;
}

// The LDS of a launch (bytes): the limit of the device launched on when its
// target is known, else the kernel's tightest over the targets. No string is
// built here: this runs at every launch that misses the fast path.
struct LaunchLds {
  uint64_t max_dynamic, static_lds, limit;
  const TargetId* device_target;  // the device's own target, or null: the kernel's lds_target
};

LaunchLds launch_lds(const KernelState& k, const GuardConfig& c, int device) {
  if (device >= 0 && static_cast<size_t>(device) < c.device_targets.size()) {
    int t = c.device_targets[device];
    if (t >= 0 && static_cast<size_t>(t) < k.lds_by_target.size() && k.lds_by_target[t].max_dynamic != UINT64_MAX) {
      const auto& own = k.lds_by_target[t];
      return {own.max_dynamic, own.static_lds, own.limit, &c.targets[t]};
    }
  }
  return {k.max_dynamic_lds, k.static_lds, k.lds_limit, nullptr};
}

// HG306: a launch asks for more dynamic LDS than the kernel can have.
Diagnostic launch_over_lds(const KernelState& k, const LaunchLds& l, uint64_t dynamic_lds, const char* api,
                           bool strict) {
  Diagnostic d;
  d.code = Code::kLaunchLds;
  d.file = k.file_name();
  d.kernel = k.name;
  d.target = l.device_target ? l.device_target->label() : k.lds_target;
  d.message = std::string(api) + " asks for " + std::to_string(l.static_lds) + " bytes of static + " +
              std::to_string(dynamic_lds) + " bytes of dynamic LDS = " + std::to_string(l.static_lds + dynamic_lds) +
              "; " + d.target + " provides " + std::to_string(l.limit) + " bytes per workgroup" +
              (strict ? "; strict mode: launch refused with hipErrorInvalidConfiguration" : "");
  d.fix = "pass at most " + std::to_string(l.max_dynamic) + " bytes of dynamic shared memory for this kernel";
  d.value = l.static_lds + dynamic_lds;
  d.limit = l.limit;
  return d;
}

// The launch of an indexed kernel `k` (under `key`), probed and checked in full: refused (strict)
// for its findings or its LDS, else remembered clean. `v` what the launch decided so far.
Decision judge_launch(Kernels& ks, const KernelState& k, const void* key, uint64_t dynamic_lds, const char* api,
                      int device, Decision v) {
  // Counted for the report only: an atomic add on a shared line costs every launching thread.
  if (!ks.config.report_path.empty()) k.launches.fetch_add(1, std::memory_order_relaxed);
  bool strict = ks.config.mode == Mode::Strict;
  // A hipFunction_t's state says a finding for its stub's too: once per kernel.
  const KernelState* stub = k.stub ? ks.registry.find(k.stub) : nullptr;
  if (!k.findings().empty()) {
    if (first_said(k.warned, stub ? &stub->warned : nullptr))
      ks.out.say_consequence(launch_with_findings(k, api, strict), &k.findings().front());
    if (strict && k.blocking) {
      k.blocked.fetch_add(1, std::memory_order_relaxed);
      return {Action::Refuse, kHipErrorInvalidDeviceFunction, /*sets_last_error=*/true, v.restored_error};
    }
  }
  if (LaunchLds lds = launch_lds(k, ks.config, device); dynamic_lds > lds.max_dynamic) {
    if (first_said(k.lds_warned, stub ? &stub->lds_warned : nullptr))
      ks.out.say(launch_over_lds(k, lds, dynamic_lds, api, strict));
    if (strict) {
      k.blocked.fetch_add(1, std::memory_order_relaxed);
      return {Action::Refuse, kHipErrorInvalidConfiguration, /*sets_last_error=*/true, v.restored_error};
    }
  }
  launch_cache_remember(ks.launch_cache, key, &k);  // its next launches take the fast path
  return v;
}

}  // namespace

// A launch that missed the fast path: its kernel indexed, its fat binary
// probed and checked in full at first use; then its findings and its LDS.
// `v` carries what the probe handed back for the thread's last error, whatever follows.
Decision events::on_launch(Kernels& ks, const void* key, uint64_t dynamic_lds, const char* api, int device) {
  Decision v;
  try {
    if (ks.config.mode == Mode::Off) return v;
    ks.index_kernel(key);
    const KernelState* k = ks.registry.find(key);
    if (!k) return v;
    if ((ks.gate.load(std::memory_order_acquire) & kGateProbe) && !k->probed.load(std::memory_order_acquire)) {
      // The runtime is initialised by now (a launch is under way) and loads this
      // fat binary's code object for the launch anyway: probe its kernels.
      ks.run_probe(k->fatbin, v.restored_error);
      k = ks.registry.find(key);
      if (!k) return v;
    }
    if (k->depth != Depth::Full) {
      ks.check_in_full(k->fatbin);  // first use of this fat binary: check it in full now
      k = ks.registry.find(key);
      if (!k) return v;
    }
    return judge_launch(ks, *k, key, dynamic_lds, api, device, v);
  } catch (...) {
    return {.restored_error = v.restored_error};
  }
}

}  // namespace hipguard
