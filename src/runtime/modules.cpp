// Code loaded at run time: module and library loads, unloads and kernel lookups (hipModuleGetFunction,
// hipLibraryGetKernel, hipGetFuncBySymbol).
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hipguard/check_paths.h"
#include "runtime/address.h"
#include "runtime/events.h"
#include "runtime/kernels.h"

namespace hipguard {

void PendingDelete::operator()(ModuleInfo* p) const noexcept { delete p; }

namespace {
// Strict mode with a refused setting, at a module load: the same stop as at a
// fat binary's registration (the shim's strict_exit), from here.
[[noreturn]] void stop_for_settings(Guard& guard, Reporting& out) {
  const GuardConfig& c = out.config();
  out.log("error", "strict mode: stopping " + self_exe() + " at its first module load (exit status " +
                       std::to_string(c.exit_code) + "): the hipguard settings above are not accepted");
  guard.write_report();
  _exit(c.exit_code);
}
}  // namespace

Decision events::on_module_load_file(Guard& guard, Kernels& k, const char* path, PendingModulePtr& pending) {
  const GuardConfig& c = k.config;
  if (c.mode == Mode::Off || !path) return {};
  if (c.mode == Mode::Strict && c.config_error) stop_for_settings(guard, k.out);
  CheckFileOptions options;
  options.map_above = UINT64_MAX;  // FileData::Access::CopyAlways: a host process has no SIGBUS handler of ours
  options.machine = c.machine;
  FileReport fr = check_file(path, c.targets, options);
  for (const auto& d : fr.diagnostics)
    if (d.code == Code::kUnreadable) return {};  // let the runtime report hipErrorFileNotFound itself
  PendingModulePtr info(new ModuleInfo());
  info->origin = path;
  bool structurally_ok = true;
  for (const auto& d : fr.diagnostics) k.out.say(d);
  for (auto& img : fr.images) add_hotswap(img, c);
  for (const auto& img : fr.images) {
    for (const auto& d : img.diagnostics) k.out.say(d);
    structurally_ok = structurally_ok && img.structurally_ok;
    for (const auto& co : img.code_objects) {
      for (const auto& kernel : co.co.kernels) info->kernels.insert(kernel.name);
      info->device_functions.insert(co.co.device_functions.begin(), co.co.device_functions.end());
    }
  }
  info->images = std::move(fr.images);
  bool ok = fr.ok();
  for (const auto& img : info->images) ok = ok && img.ok();
  pending = std::move(info);
  if (ok || c.mode != Mode::Strict) return {};
  return {Action::Refuse, structurally_ok ? kHipErrorNoBinaryForGpu : kHipErrorInvalidImage};
}

Decision events::on_module_load_data(Guard& guard, Kernels& k, const void* image, PendingModulePtr& pending,
                                     const char* api) {
  const GuardConfig& c = k.config;
  if (c.mode == Mode::Off || !image) return {};
  if (c.mode == Mode::Strict && c.config_error) stop_for_settings(guard, k.out);
  std::string origin = std::string(api) + " image at " + hex(image) + " in " + origin_of(image);
  uint64_t extent = readable_extent(image, kMaxDecompressedBytes);
  ImageReport report;
  if (extent == 0) {
    report.origin = origin;
    report.diagnostics.push_back(make_diagnostic(Code::kUnreadable, origin, "image pointer is not readable memory",
                                                 "pass a pointer to a loaded code object or offload bundle"));
    report.structurally_ok = false;
  } else {
    Bytes data(static_cast<const uint8_t*>(image), extent);
    if (classify(data) == PayloadKind::CodeObject) {
      if (auto size = elf_image_size(data); size && *size <= extent) data = data.first(*size);
    }
    report = check_image(data, origin, c.targets, "", Depth::Full, c.machine);
    add_hotswap(report, c);
  }
  PendingModulePtr info(new ModuleInfo());
  info->origin = origin;
  for (const auto& co : report.code_objects) {
    for (const auto& kernel : co.co.kernels) info->kernels.insert(kernel.name);
    info->device_functions.insert(co.co.device_functions.begin(), co.co.device_functions.end());
  }
  Decision v = k.out.judge(report, false);
  info->images.push_back(std::move(report));
  pending = std::move(info);
  return v;
}

void events::on_module_loaded(Kernels& k, const void* module, PendingModulePtr pending) {
  if (!module || !pending) return;
  std::lock_guard lock(k.mu);
  k.registry.add_module(module, std::move(*pending));
}

void events::on_module_unloaded(Kernels& k, const void* module) {
  std::lock_guard lock(k.mu);
  k.unload_module(module);
}

Decision events::before_module_get_function(Kernels& k, const void* module, const char* name, const char* api) {
  if (!name || k.config.mode == Mode::Off) return {};
  Diagnostic d;
  {
    std::lock_guard lock(k.mu);
    const ModuleInfo* m = k.registry.find_module(module);
    if (!m || !m->device_functions.count(name)) return {};
    std::string kernels;
    for (const auto& kernel : m->kernels) kernels += (kernels.empty() ? "" : ", ") + kernel;
    d.code = Code::kDeviceFunction;
    d.file = m->origin;
    d.kernel = name;
    d.message = std::string(api) + " asks for a device function, not a kernel; kernels in this module: " +
                (kernels.empty() ? std::string("none") : kernels);
    d.fix = "ask for a __global__ kernel; device functions can only be called from kernels";
  }
  k.out.say(d);  // outside the registry's lock
  if (k.config.mode == Mode::Strict) return {Action::Refuse, kHipErrorNotFound};
  return {};
}

void events::on_module_get_function(Kernels& k, const void* module, const char* name, const void* function, int result,
                                    const char* api) {
  if (!name) return;
  if (k.config.mode == Mode::Off) return;
  std::unique_lock lock(k.mu);
  const ModuleInfo* found = k.registry.find_module(module);
  if (!found) return;
  const ModuleInfo& m = *found;
  if (result == 0 && function) return k.registry.add_module_function(module, function, name, k.config.targets);
  if (m.device_functions.count(name)) return;  // HG408 was said before the call
  Diagnostic d;
  d.code = Code::kLookupFailed;
  d.file = m.origin;
  d.kernel = name;
  d.fix = "check the kernel name (mangled C++ name, or extern \"C\") against 'hipguard inspect " + m.origin + "'";
  std::string prefix = std::string(api) + " failed (hipError_t " + std::to_string(result) + "): ";
  if (!m.kernels.empty() && !m.kernels.count(name)) {
    std::string list;
    for (const auto& kernel : m.kernels) list += (list.empty() ? "" : ", ") + kernel;
    d.message = prefix + "the code object has no kernel of that name; its kernels: " + list;
  } else {
    KernelState probe;
    probe.name = name;
    for (const auto& img : m.images) fill_kernel(probe, build_index(img, k.config.targets));
    d.message = prefix + (probe.findings().empty() ? "hipguard found no cause in the code object"
                                                   : "cause: " + first_finding(probe));
    if (!probe.findings().empty()) {
      d.fix = probe.findings().front().fix;
      lock.unlock();
      k.out.say_consequence(d, &probe.findings().front());
      return;
    }
  }
  lock.unlock();
  k.out.say(d);
}

// Before hipGetFuncBySymbol and the other calls that take a kernel (Guard::before_kernel_call):
// the kernel's fat binary is checked in full now, as the runtime loads its code object for this call
// (and some runtimes abort on a kernel the code object lacks: CLR Function::BuildKernel's guarantee),
// so its findings are said first. Strict mode refuses a kernel that cannot run with
// hipErrorInvalidDeviceFunction, as it refuses its launch, and hipGetLastError returns that error
// (CLR's HIP_RETURN records every call's failure).
Decision events::before_kernel_call(Kernels& ks, const void* key, const char* api, bool say_in_warn) {
  if (!key || ks.config.mode == Mode::Off) return {};
  const KernelState* k = ks.kernel_in_full(key);
  if (!k || !k->blocking) return {};
  const bool strict = ks.config.mode == Mode::Strict;
  // Said once per kernel, with its launches' HG502 (a hipFunction_t's stub counts as the same kernel).
  const KernelState* stub = k->stub ? ks.registry.find(k->stub) : nullptr;
  auto first_said = [&] {
    bool first = !k->warned.exchange(true);
    if (stub) first = !stub->warned.exchange(true) && first;
    return first;
  };
  if ((strict || say_in_warn) && first_said()) {
    Diagnostic d;
    d.code = Code::kLookupFailed;
    d.file = k->file_name();
    d.kernel = k->name;
    d.message =
        std::string(api) + " of a kernel that cannot run: " + first_finding(*k) +
        (strict ? "; strict mode: refused with hipErrorInvalidDeviceFunction" : "; forwarded (its launches will fail)");
    d.fix = k->findings().front().fix;
    ks.out.say_consequence(d, &k->findings().front());
  }
  if (!strict) return {};
  return {Action::Refuse, kHipErrorInvalidDeviceFunction, /*sets_last_error=*/true};
}

void events::on_get_func_by_symbol(Kernels& ks, const void* host_function, int result, const void* function) {
  if (result == 0 && !function) return;
  if (no_device_error(result)) return;
  if (ks.config.mode == Mode::Off) return;
  if (result == 0) {
    ks.index_kernel(host_function);
    std::lock_guard lock(ks.mu);
    return ks.registry.enter_function_of(host_function, function);
  }
  const KernelState* k = ks.kernel_in_full(host_function);
  Diagnostic d;
  d.code = Code::kLookupFailed;
  if (!k) {
    d.file = self_exe();
    d.message = "hipGetFuncBySymbol(" + hex(host_function) + ") failed (hipError_t " + std::to_string(result) +
                "): that pointer was never registered as a kernel";
    d.fix = "pass the kernel's host-side symbol (the __global__ function), not a device pointer";
  } else {
    d.file = k->file_name();
    d.kernel = k->name;
    d.message = "hipGetFuncBySymbol failed (hipError_t " + std::to_string(result) + "): " +
                (k->findings().empty() ? "hipguard found no cause in the code object" : "cause: " + first_finding(*k));
    d.fix = k->findings().empty() ? "run with AMD_LOG_LEVEL=4 for the runtime's own reason" : k->findings().front().fix;
  }
  ks.out.say_consequence(d, k && !k->findings().empty() ? &k->findings().front() : nullptr);
}

}  // namespace hipguard
