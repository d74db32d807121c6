// The registration probe (does the runtime accept each kernel?), kept invisible to the program's
// last-error state.
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernels.h"

namespace hipguard {

void Kernels::run_probe(const void* fatbin_handle, int& restored_error) {
  std::optional<Probe::Batch> batch;
  {
    // Taken and marked in one section of the registry's lock, so that an
    // unregistration or a new registration under the same handle cannot come
    // between (it would leave its own kernels marked, its list never taken).
    std::lock_guard lock(mu);
    batch = probe.take(fatbin_handle);
    if (!batch) return;
    for (const void* host : batch->host_functions)
      if (const KernelState* k = registry.find(host)) {
        k->probed.store(true, std::memory_order_release);
        refresh_clean(*k, probe.off());
      }
  }
  const std::vector<const void*>& todo = batch->host_functions;
  const ProbeFunctions& fns = batch->functions;
  if (todo.empty() || (!fns.get_func_by_symbol && !fns.func_get_attributes)) return;
  const char* via = fns.get_func_by_symbol ? "hipGetFuncBySymbol" : "hipFuncGetAttributes";
  // Leave the program's last-error state as it was (Decision::restored_error).
  const int prior = fns.peek_at_last_error ? fns.peek_at_last_error() : 0;
  bool failed = false;
  auto restore = [&] {
    if (!failed || !fns.get_last_error) return;
    fns.get_last_error();  // drain what the probe caused
    if (prior != 0) restored_error = prior;
  };
  for (const void* host : todo) {
    const KernelState* k = registry.find(host);  // the current state (a first use may have refined it)
    if (!k) continue;                            // unregistered meanwhile
    alignas(16) unsigned char attr[512] = {};    // hipFuncAttributes is far smaller
    void* fn = nullptr;
    int r = fns.get_func_by_symbol ? fns.get_func_by_symbol(&fn, host) : fns.func_get_attributes(attr, host);
    failed = failed || r != 0;
    if (no_device_error(r)) {
      restore();
      out.log("debug", std::string("registration probe off: the runtime has no usable GPU (") + via + " returned " +
                           std::to_string(r) + ")");
      probe.switch_off();
      return;
    }
    if (r == 0) continue;
    if (k->depth != Depth::Full) {  // explain the rejection with the full check of its fat binary
      check_in_full(k->fatbin);
      if (const KernelState* fresh = registry.find(host)) k = fresh;
    }
    Diagnostic d;
    d.code = Code::kRuntimeRejected;
    d.file = k->file_name();
    d.kernel = k->name;
    d.message = std::string("the runtime rejected this kernel (") + via + " returned hipError_t " + std::to_string(r) +
                "); " +
                (k->findings().empty() ? "cause unknown to hipguard" : "hipguard's finding: " + first_finding(*k));
    d.fix = k->findings().empty() ? "run with AMD_LOG_LEVEL=4 for the runtime's own reason" : k->findings().front().fix;
    out.say_consequence(d, k->findings().empty() ? nullptr : &k->findings().front());
  }
  restore();
  out.log("debug",
          std::string("registration probe done through ") + via + " (" + std::to_string(todo.size()) + " kernels)");
}

}  // namespace hipguard
