// libhipguard.so: LD_PRELOAD shim. Each exported function has libamdhip64's
// signature and symbol version (hipguard.map), asks the core (Guard) what to do,
// and forwards to the real runtime. The shim is also the one place that reads
// the environment for the guard.
#include <dlfcn.h>
#include <link.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/guard.h"
#include "runtime/kernel_table.h"

using hipguard::Action;
using hipguard::Guard;
using hipguard::Decision;

// Minimal ABI types (hip_runtime_api.h); the shim never includes HIP headers
// so that it cannot pull in or depend on the runtime.
using hipError_t = int;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipStream_t;
struct ihipEvent_t;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;
struct uint3;
struct dim3 {  // passed by value: layout must match HIP's (three uint32_t)
  uint32_t x, y, z;
};
using hipJitOption = int;

namespace {

constexpr hipError_t kHipSuccess = 0;
constexpr hipError_t kHipErrorNotInitialized = 3;
constexpr hipError_t kHipErrorNotSupported = 801;

// The guard, configured from this process's environment at the shim's first
// call into it, whichever wrapper that is (hipcc's registration constructors
// may run before or after the shim's own constructor).
Guard& guard() {
  static Guard& g = []() -> Guard& {
    std::vector<std::string> names;  // HIPGUARD_* in any case: misspellings are said
    for (char** e = environ; e && *e; ++e)
      if (strncasecmp(*e, "HIPGUARD_", 9) == 0)
        if (const char* eq = strchr(*e, '=')) names.emplace_back(*e, static_cast<size_t>(eq - *e));
    return Guard::init(hipguard::config_from([](const char* name) -> const char* { return getenv(name); },
                                             getauxval(AT_SECURE) != 0, names));
  }();
  return g;
}

// The loaded libamdhip64, found even when the application does not link it
// and a HIP library was dlopen'ed RTLD_LOCAL (dlsym(RTLD_NEXT) is NULL then).
void* find_runtime_handle() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (info->dlpi_name && strstr(info->dlpi_name, "libamdhip64.so")) {
          *static_cast<std::string*>(data) = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &path);
  if (!path.empty()) return dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  for (const char* name : {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"})
    if (void* h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)) return h;
  return nullptr;
}

void* resolve(const char* name, const char* version, bool optional = false) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  if (!p) p = dlsym(RTLD_NEXT, name);
  if (!p) {
    if (void* h = find_runtime_handle()) {
      p = dlvsym(h, name, version);
      if (!p) p = dlsym(h, name);
    }
  }
  if (p) {
    Dl_info info{};
    if (dladdr(p, &info) && info.dli_fname)
      guard().log("debug", std::string("forwarding ") + name + " to " + info.dli_fname);
  } else if (!optional) {
    if (void* h = find_runtime_handle()) {
      // Loaded, but older than the function (e.g. ROCm 5.2 and a HIP 7 entry
      // point a program looked up by name): the wrapper answers hipErrorNotSupported.
      dlclose(h);
      guard().log("debug", std::string("the loaded HIP runtime has no ") + name + "@" + version);
    } else {
      guard().log("error", std::string("cannot find the HIP runtime's ") + name + "@" + version +
                                    "; is libamdhip64 loaded?");
    }
  }
  return p;
}

// What a wrapper returns when the runtime function it forwards to is missing:
// hipErrorNotSupported when a runtime is loaded that lacks it (older ROCm),
// hipErrorNotInitialized when no runtime is loaded at all.
hipError_t missing_runtime_function() {
  void* h = find_runtime_handle();
  if (!h) return kHipErrorNotInitialized;
  dlclose(h);
  return kHipErrorNotSupported;
}

// One cached pointer per function; a miss is retried (the runtime may be dlopen'ed later).
template <class Fn>
Fn real(std::atomic<void*>& slot, const char* name, const char* version) {
  void* p = slot.load(std::memory_order_acquire);
  if (__builtin_expect(!p, 0)) {
    p = resolve(name, version);
    if (p) slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

#define SLOT(fn) std::atomic<void*> slot_##fn
#define REAL(fn, ver) real<decltype(&fn)>(slot_##fn, #fn, ver)

SLOT(__hipRegisterFatBinary);
SLOT(__hipRegisterFunction);
SLOT(__hipUnregisterFatBinary);
SLOT(hipModuleLoad);
SLOT(hipModuleLoadData);
SLOT(hipModuleLoadDataEx);
SLOT(hipModuleUnload);
SLOT(hipModuleGetFunction);
SLOT(hipGetFuncBySymbol);
SLOT(hipLaunchKernel);
SLOT(hipLaunchKernel_spt);
SLOT(hipLaunchCooperativeKernel);
SLOT(hipLaunchCooperativeKernel_spt);
SLOT(hipModuleLaunchKernel);
SLOT(hipModuleLaunchCooperativeKernel);
SLOT(hipGetLastError);
SLOT(hipLaunchKernelExC);
SLOT(hipPeekAtLastError);

// _exit, not exit: the program's own atexit handlers and destructors must not
// run half-initialised. The report (HIPGUARD_REPORT) is the one thing written first.
[[noreturn]] void strict_exit() {
  guard().write_report();
  _exit(guard().config().exit_code);
}

// The exit status of a process that saw errors and exits with 0 (strict mode,
// HIPGUARD_FAIL_ON): registered before the program's own exit handlers, so it runs after them.
__attribute__((constructor)) void install_exit_status() { hipguard::install_exit_status_handler(); }

// The probe runs at the first launch; hand the core the runtime's lookup functions then.
void provide_probe_functions() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire) || done.exchange(true)) return;  // no locked exchange per launch
  hipguard::ProbeFunctions f;
  f.get_func_by_symbol = reinterpret_cast<int (*)(void**, const void*)>(resolve("hipGetFuncBySymbol", "hip_6.2", true));
  f.func_get_attributes = reinterpret_cast<int (*)(void*, const void*)>(resolve("hipFuncGetAttributes", "hip_4.2", true));
  f.get_last_error = reinterpret_cast<int (*)()>(resolve("hipGetLastError", "hip_4.2", true));
  f.peek_at_last_error = reinterpret_cast<int (*)()>(resolve("hipPeekAtLastError", "hip_4.2", true));
  guard().set_probe_functions(f);
}

inline Decision gate(const void* key, uint64_t dynamic_lds, const char* api) {
  provide_probe_functions();
  return guard().on_launch(key, dynamic_lds, api);
}

}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))

// ---------------------------------------------------------------- registration (hip_4.2)

EXPORT void** __hipRegisterFatBinary(const void* data) {
  Decision v = guard().on_register_fatbin(data);
  if (v.action == Action::Exit) strict_exit();
  auto fn = REAL(__hipRegisterFatBinary, "hip_4.2");
  void** handle = fn ? fn(data) : nullptr;
  guard().on_registered_fatbin(handle);
  return handle;
}

EXPORT void __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction,
                                  const char* deviceName, unsigned int threadLimit, uint3* tid, uint3* bid,
                                  dim3* blockDim, dim3* gridDim, int* wSize) {
  if (guard().on_register_function(modules, hostFunction, deviceName).action == Action::Exit) strict_exit();
  auto fn = REAL(__hipRegisterFunction, "hip_4.2");
  if (fn) fn(modules, hostFunction, deviceFunction, deviceName, threadLimit, tid, bid, blockDim, gridDim, wSize);
}

EXPORT void __hipUnregisterFatBinary(void** modules) {
  guard().on_unregister_fatbin(modules);
  auto fn = REAL(__hipUnregisterFatBinary, "hip_4.2");
  if (fn) fn(modules);
}

// ---------------------------------------------------------------- modules (hip_4.2)

EXPORT hipError_t hipModuleLoad(hipModule_t* module, const char* fname) {
  Decision v = guard().on_module_load_file(fname);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoad, "hip_4.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(module, fname);
  if (r == kHipSuccess && module) guard().on_module_loaded(*module);
  return r;
}

EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  Decision v = guard().on_module_load_data(image);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoadData, "hip_4.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(module, image);
  if (r == kHipSuccess && module) guard().on_module_loaded(*module);
  return r;
}

EXPORT hipError_t hipModuleLoadDataEx(hipModule_t* module, const void* image, unsigned int numOptions,
                                      hipJitOption* options, void** optionValues) {
  Decision v = guard().on_module_load_data(image);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoadDataEx, "hip_4.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(module, image, numOptions, options, optionValues);
  if (r == kHipSuccess && module) guard().on_module_loaded(*module);
  return r;
}

EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  guard().on_module_unloaded(module);
  auto fn = REAL(hipModuleUnload, "hip_4.2");
  return fn ? fn(module) : missing_runtime_function();
}

EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* kname) {
  Decision v = guard().before_module_get_function(module, kname);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleGetFunction, "hip_4.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(function, module, kname);
  guard().on_module_get_function(module, kname, function ? *function : nullptr, r);
  return r;
}

// ---------------------------------------------------------------- lookups (hip_6.2)

EXPORT hipError_t hipGetFuncBySymbol(hipFunction_t* functionPtr, const void* symbolPtr) {
  auto fn = REAL(hipGetFuncBySymbol, "hip_6.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(functionPtr, symbolPtr);
  if (r != kHipSuccess) guard().on_get_func_by_symbol(symbolPtr, r);
  return r;
}

// ---------------------------------------------------------------- launches
// Fast path: one relaxed load and a compare, then a tail call to the runtime.

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
extern "C" hipError_t hipLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                  size_t sharedMemBytes, hipStream_t stream);
__attribute__((noinline)) static hipError_t hipLaunchKernel_slow(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                  size_t sharedMemBytes, hipStream_t stream) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Decision v = gate(function_address, sharedMemBytes, "hipLaunchKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchKernel, "hip_4.2");
  return fn ? fn(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream) : missing_runtime_function();
}

EXPORT hipError_t hipLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                  size_t sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchKernel.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && (!hipguard::launch_needs_check(sharedMemBytes) ||
                                            hipguard::launch_known_clean(function_address, sharedMemBytes)), 1))
    return reinterpret_cast<decltype(&hipLaunchKernel)>(p)(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
  return hipLaunchKernel_slow(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
}

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
extern "C" hipError_t hipLaunchKernel_spt(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                      size_t sharedMemBytes, hipStream_t stream);
__attribute__((noinline)) static hipError_t hipLaunchKernel_spt_slow(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                      size_t sharedMemBytes, hipStream_t stream) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Decision v = gate(function_address, sharedMemBytes, "hipLaunchKernel_spt");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchKernel_spt, "hip_5.2");
  return fn ? fn(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream) : missing_runtime_function();
}

EXPORT hipError_t hipLaunchKernel_spt(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                      size_t sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchKernel_spt.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && (!hipguard::launch_needs_check(sharedMemBytes) ||
                                            hipguard::launch_known_clean(function_address, sharedMemBytes)), 1))
    return reinterpret_cast<decltype(&hipLaunchKernel_spt)>(p)(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
  return hipLaunchKernel_spt_slow(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
}

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
extern "C" hipError_t hipLaunchCooperativeKernel(const void* f, dim3 gridDim, dim3 blockDimX, void** kernelParams,
                                             unsigned int sharedMemBytes, hipStream_t stream);
__attribute__((noinline)) static hipError_t hipLaunchCooperativeKernel_slow(const void* f, dim3 gridDim, dim3 blockDimX, void** kernelParams,
                                             unsigned int sharedMemBytes, hipStream_t stream) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Decision v = gate(f, sharedMemBytes, "hipLaunchCooperativeKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchCooperativeKernel, "hip_4.2");
  return fn ? fn(f, gridDim, blockDimX, kernelParams, sharedMemBytes, stream) : missing_runtime_function();
}

EXPORT hipError_t hipLaunchCooperativeKernel(const void* f, dim3 gridDim, dim3 blockDimX, void** kernelParams,
                                             unsigned int sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchCooperativeKernel.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && (!hipguard::launch_needs_check(sharedMemBytes) ||
                                            hipguard::launch_known_clean(f, sharedMemBytes)), 1))
    return reinterpret_cast<decltype(&hipLaunchCooperativeKernel)>(p)(f, gridDim, blockDimX, kernelParams, sharedMemBytes, stream);
  return hipLaunchCooperativeKernel_slow(f, gridDim, blockDimX, kernelParams, sharedMemBytes, stream);
}

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
// hip_5.2; the per-thread-stream form of hipLaunchCooperativeKernel (CLR hip_runtime_api.h).
extern "C" hipError_t hipLaunchCooperativeKernel_spt(const void* f, dim3 gridDim, dim3 blockDim, void** kernelParams,
                                                 uint32_t sharedMemBytes, hipStream_t stream);
__attribute__((noinline)) static hipError_t hipLaunchCooperativeKernel_spt_slow(const void* f, dim3 gridDim, dim3 blockDim,
                                                 void** kernelParams, uint32_t sharedMemBytes, hipStream_t stream) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Decision v = gate(f, sharedMemBytes, "hipLaunchCooperativeKernel_spt");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchCooperativeKernel_spt, "hip_5.2");
  return fn ? fn(f, gridDim, blockDim, kernelParams, sharedMemBytes, stream) : missing_runtime_function();
}

EXPORT hipError_t hipLaunchCooperativeKernel_spt(const void* f, dim3 gridDim, dim3 blockDim, void** kernelParams,
                                                 uint32_t sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchCooperativeKernel_spt.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && (!hipguard::launch_needs_check(sharedMemBytes) ||
                                            hipguard::launch_known_clean(f, sharedMemBytes)), 1))
    return reinterpret_cast<decltype(&hipLaunchCooperativeKernel_spt)>(p)(f, gridDim, blockDim, kernelParams,
                                                                          sharedMemBytes, stream);
  return hipLaunchCooperativeKernel_spt_slow(f, gridDim, blockDim, kernelParams, sharedMemBytes, stream);
}

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
extern "C" hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                        void** kernelParams, void** extra);
__attribute__((noinline)) static hipError_t hipModuleLaunchKernel_slow(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                        void** kernelParams, void** extra) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Decision v = gate(f, sharedMemBytes, "hipModuleLaunchKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipModuleLaunchKernel, "hip_4.2");
  return fn ? fn(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, kernelParams, extra) : missing_runtime_function();
}

EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                        void** kernelParams, void** extra) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipModuleLaunchKernel.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && (!hipguard::launch_needs_check(sharedMemBytes) ||
                                            hipguard::launch_known_clean(f, sharedMemBytes)), 1))
    return reinterpret_cast<decltype(&hipModuleLaunchKernel)>(p)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, kernelParams, extra);
  return hipModuleLaunchKernel_slow(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, kernelParams, extra);
}

// ROCm 5.x exports hipExtModuleLaunchKernel only with C++ linkage (hip_ext.h had no
// extern "C"); newer runtimes export the C symbol too. Both are interposed; each
// forwards to the same-named runtime symbol, falling back to the other spelling.
#define HIP_EXT_MODULE_LAUNCH_CXX "_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j"
using ExtLaunchFn = hipError_t (*)(hipFunction_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, size_t,
                                   hipStream_t, void**, void**, hipEvent_t, hipEvent_t, uint32_t);
std::atomic<void*> slot_ext_c, slot_ext_cxx;

static hipError_t ext_module_launch(bool cxx, hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                                    uint32_t ly, uint32_t lz, size_t sharedMemBytes, hipStream_t hStream,
                                    void** kernelParams, void** extra, hipEvent_t startEvent, hipEvent_t stopEvent,
                                    uint32_t flags) {
  if (__builtin_expect(hipguard::launch_needs_check(sharedMemBytes), 0) &&
      !hipguard::launch_known_clean(f, sharedMemBytes)) {
    Decision v = gate(f, sharedMemBytes, "hipExtModuleLaunchKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  std::atomic<void*>& slot = cxx ? slot_ext_cxx : slot_ext_c;
  void* p = slot.load(std::memory_order_acquire);
  if (!p) {
    const char* first = cxx ? HIP_EXT_MODULE_LAUNCH_CXX : "hipExtModuleLaunchKernel";
    const char* second = cxx ? "hipExtModuleLaunchKernel" : HIP_EXT_MODULE_LAUNCH_CXX;
    p = resolve(first, "hip_4.2", /*optional=*/true);
    if (!p) p = resolve(second, "hip_4.2");
    if (p) slot.store(p, std::memory_order_release);
  }
  if (!p) return missing_runtime_function();
  return reinterpret_cast<ExtLaunchFn>(p)(f, gx, gy, gz, lx, ly, lz, sharedMemBytes, hStream, kernelParams, extra,
                                          startEvent, stopEvent, flags);
}

EXPORT hipError_t hipExtModuleLaunchKernel(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                                           uint32_t globalWorkSizeZ, uint32_t localWorkSizeX, uint32_t localWorkSizeY,
                                           uint32_t localWorkSizeZ, size_t sharedMemBytes, hipStream_t hStream,
                                           void** kernelParams, void** extra, hipEvent_t startEvent,
                                           hipEvent_t stopEvent, uint32_t flags) {
  return ext_module_launch(false, f, globalWorkSizeX, globalWorkSizeY, globalWorkSizeZ, localWorkSizeX, localWorkSizeY,
                           localWorkSizeZ, sharedMemBytes, hStream, kernelParams, extra, startEvent, stopEvent, flags);
}

EXPORT hipError_t hipguard_ext_module_launch_cxx(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                                                 uint32_t ly, uint32_t lz, size_t sharedMemBytes, hipStream_t hStream,
                                                 void** kernelParams, void** extra, hipEvent_t startEvent,
                                                 hipEvent_t stopEvent, uint32_t flags) __asm__(HIP_EXT_MODULE_LAUNCH_CXX);
EXPORT hipError_t hipguard_ext_module_launch_cxx(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                                                 uint32_t ly, uint32_t lz, size_t sharedMemBytes, hipStream_t hStream,
                                                 void** kernelParams, void** extra, hipEvent_t startEvent,
                                                 hipEvent_t stopEvent, uint32_t flags) {
  return ext_module_launch(true, f, gx, gy, gz, lx, ly, lz, sharedMemBytes, hStream, kernelParams, extra, startEvent,
                           stopEvent, flags);
}

EXPORT hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                                   unsigned int gridDimZ, unsigned int blockDimX,
                                                   unsigned int blockDimY, unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, hipStream_t stream,
                                                   void** kernelParams) {
  if (__builtin_expect(hipguard::launch_needs_check(sharedMemBytes), 0) &&
      !hipguard::launch_known_clean(f, sharedMemBytes)) {
    Decision v = gate(f, sharedMemBytes, "hipModuleLaunchCooperativeKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipModuleLaunchCooperativeKernel, "hip_5.5");
  return fn ? fn(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream,
                 kernelParams)
            : missing_runtime_function();
}

// ---------------------------------------------------------------- last error (hip_4.2)
// A launch strict mode refused never reached the runtime: report it here, once.

EXPORT hipError_t hipGetLastError() {
  auto fn = REAL(hipGetLastError, "hip_4.2");
  hipError_t r = fn ? fn() : missing_runtime_function();  // also clears the runtime's own state
  int restored = hipguard::restored_last_error(/*clear=*/true);
  if (int refused = hipguard::refused_launch_error(/*clear=*/true)) return refused;
  return r != kHipSuccess ? r : restored;
}

EXPORT hipError_t hipPeekAtLastError() {
  auto fn = REAL(hipPeekAtLastError, "hip_4.2");
  hipError_t r = fn ? fn() : missing_runtime_function();
  if (int refused = hipguard::refused_launch_error(/*clear=*/false)) return refused;
  return r != kHipSuccess ? r : hipguard::restored_last_error(/*clear=*/false);
}

// ---------------------------------------------------------------- hipLaunchKernelExC (hip_6.5)
// hipLaunchConfig_t mirrors cudaLaunchConfig_t: dim3 gridDim, dim3 blockDim,
// size_t dynamicSmemBytes (offset 24), stream, attrs, numAttrs.
struct hipLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  void* attrs;
  unsigned int numAttrs;
};
static_assert(offsetof(hipLaunchConfig_t, dynamicSmemBytes) == 24);

extern "C" hipError_t hipLaunchKernelExC(const hipLaunchConfig_t* config, const void* fPtr, void** args);
__attribute__((noinline)) static hipError_t hipLaunchKernelExC_slow(const hipLaunchConfig_t* config, const void* fPtr,
                                                                     void** args) {
  size_t dynamic = config ? config->dynamicSmemBytes : 0;
  if (hipguard::launch_needs_check(dynamic)) {
    Decision v = gate(fPtr, dynamic, "hipLaunchKernelExC");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchKernelExC, "hip_6.5");
  return fn ? fn(config, fPtr, args) : missing_runtime_function();
}

EXPORT hipError_t hipLaunchKernelExC(const hipLaunchConfig_t* config, const void* fPtr, void** args) {
  void* p = slot_hipLaunchKernelExC.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && (!hipguard::launch_needs_check(config ? config->dynamicSmemBytes : 0) ||
                                            hipguard::launch_known_clean(fPtr, config ? config->dynamicSmemBytes : 0)), 1))
    return reinterpret_cast<decltype(&hipLaunchKernelExC)>(p)(config, fPtr, args);
  return hipLaunchKernelExC_slow(config, fPtr, args);
}

// ================================================================ HIP 7.2 load and launch paths
// Prototypes and struct layouts from HIP 7.2's hip_runtime_api.h / hip_ext.h
// (ROCm/rocm-systems projects/hip/include/hip); the offsets are asserted.

struct ihipLibrary_t;
struct ihipKernel_t;
struct ihipGraph;
struct hipGraphNode;
struct hipGraphExec;
using hipLibrary_t = ihipLibrary_t*;
using hipKernel_t = ihipKernel_t*;  // CLR: a hipFunction_t (LibraryContainer::Kernel -> getDynFunc)
using hipGraph_t = ihipGraph*;
using hipGraphNode_t = hipGraphNode*;
using hipGraphExec_t = hipGraphExec*;
using hipLibraryOption = int;

struct hipLaunchParams {  // hipLaunchCooperativeKernelMultiDevice, hipExtLaunchMultiKernelMultiDevice
  void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  hipStream_t stream;
};
static_assert(offsetof(hipLaunchParams, args) == 32 && offsetof(hipLaunchParams, sharedMem) == 40 &&
              sizeof(hipLaunchParams) == 56);

struct hipFunctionLaunchParams {  // hipModuleLaunchCooperativeKernelMultiDevice
  hipFunction_t function;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  hipStream_t hStream;
  void** kernelParams;
};
static_assert(offsetof(hipFunctionLaunchParams, sharedMemBytes) == 32 &&
              offsetof(hipFunctionLaunchParams, hStream) == 40 && sizeof(hipFunctionLaunchParams) == 56);

struct HIP_LAUNCH_CONFIG {  // hipDrvLaunchKernelEx
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  hipStream_t hStream;
  void* attrs;
  unsigned int numAttrs;
};
static_assert(offsetof(HIP_LAUNCH_CONFIG, sharedMemBytes) == 24 && offsetof(HIP_LAUNCH_CONFIG, hStream) == 32);

struct hipKernelNodeParams {
  dim3 blockDim;
  void** extra;
  void* func;  // host function (or hipFunction_t)
  dim3 gridDim;
  void** kernelParams;
  unsigned int sharedMemBytes;
};
static_assert(offsetof(hipKernelNodeParams, func) == 24 && offsetof(hipKernelNodeParams, sharedMemBytes) == 56 &&
              sizeof(hipKernelNodeParams) == 64);

// hipGraphNodeParams: node type, reserved, then a union whose kernel member is
// a hipKernelNodeParams. hipGraphNodeTypeKernel is 0 in HIP >= 5.3 (ROCm 5.2's
// headers had 1; hipGraphAddNode is hip_5.5).
constexpr int kHipGraphNodeTypeKernel = 0;
struct hipGraphNodeParams {
  int type;
  int reserved0[3];
  union {
    long long reserved1[29];
    hipKernelNodeParams kernel;
  };
  long long reserved2;
};
static_assert(offsetof(hipGraphNodeParams, kernel) == 16 && sizeof(hipGraphNodeParams) == 256);

namespace {

// Gate for a launch that is not on a fast path: refuses in strict mode.
inline bool refused(const void* key, uint64_t dynamic_lds, const char* api, hipError_t* err, int device = -1) {
  if (!hipguard::launch_needs_check(dynamic_lds)) return false;
  provide_probe_functions();
  Decision v = guard().on_launch(key, dynamic_lds, api, device);
  if (v.action != Action::Refuse) return false;
  *err = v.hip_error;
  return true;
}

// A graph kernel node is checked when it is created or its parameters set:
// the kernel and its dynamic LDS are known there, the launch (hipGraphLaunch)
// runs it later. A strict refusal leaves the graph unchanged.
inline bool node_refused(const hipKernelNodeParams* p, const char* api, hipError_t* err) {
  if (!p) return false;
  return refused(p->func, p->sharedMemBytes, api, err);
}
inline bool node_refused(const hipGraphNodeParams* p, const char* api, hipError_t* err) {
  if (!p || p->type != kHipGraphNodeTypeKernel) return false;
  return refused(p->kernel.func, p->kernel.sharedMemBytes, api, err);
}

// hipLaunchByPtr launches what the last hipConfigureCall configured (CLR
// PlatformState::popExec): that call's dynamic LDS, per thread.
thread_local std::vector<size_t> t_configured_lds;

}  // namespace

#define DECLARE_SLOT(fn) std::atomic<void*> slot_##fn
DECLARE_SLOT(hipModuleLoadFatBinary);
DECLARE_SLOT(hipLibraryLoadData);
DECLARE_SLOT(hipLibraryLoadFromFile);
DECLARE_SLOT(hipLibraryUnload);
DECLARE_SLOT(hipLibraryGetKernel);
DECLARE_SLOT(hipExtLaunchKernel);
DECLARE_SLOT(hipLaunchByPtr);
DECLARE_SLOT(hipConfigureCall);
DECLARE_SLOT(hipLaunchCooperativeKernelMultiDevice);
DECLARE_SLOT(hipExtLaunchMultiKernelMultiDevice);
DECLARE_SLOT(hipModuleLaunchCooperativeKernelMultiDevice);
DECLARE_SLOT(hipDrvLaunchKernelEx);
DECLARE_SLOT(hipGraphAddKernelNode);
DECLARE_SLOT(hipGraphKernelNodeSetParams);
DECLARE_SLOT(hipGraphExecKernelNodeSetParams);
DECLARE_SLOT(hipGraphAddNode);
DECLARE_SLOT(hipGraphNodeSetParams);
DECLARE_SLOT(hipGraphExecNodeSetParams);
DECLARE_SLOT(hipGetProcAddress);
DECLARE_SLOT(hipGetDriverEntryPoint);
DECLARE_SLOT(hipGetDriverEntryPoint_spt);

// ---------------------------------------------------------------- loads (hip_7.1, hip_7.2)

// CLR: hipModuleLoadFatBinary is hipModuleLoadData (PlatformState::loadModule).
EXPORT hipError_t hipModuleLoadFatBinary(hipModule_t* module, const void* fatbin) {
  Decision v = guard().on_module_load_data(fatbin, "hipModuleLoadFatBinary");
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoadFatBinary, "hip_7.1");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(module, fatbin);
  if (r == kHipSuccess && module) guard().on_module_loaded(*module);
  return r;
}

// A library is a module whose code object CLR builds lazily (at the first
// hipLibraryGetKernel); hipguard checks it at load, as hipModuleLoadData.
EXPORT hipError_t hipLibraryLoadData(hipLibrary_t* library, const void* code, hipJitOption* jitOptions,
                                     void** jitOptionsValues, unsigned int numJitOptions,
                                     hipLibraryOption* libraryOptions, void** libraryOptionValues,
                                     unsigned int numLibraryOptions) {
  Decision v = guard().on_module_load_data(code, "hipLibraryLoadData");
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipLibraryLoadData, "hip_7.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues,
                    numLibraryOptions);
  if (r == kHipSuccess && library) guard().on_module_loaded(*library);
  return r;
}

EXPORT hipError_t hipLibraryLoadFromFile(hipLibrary_t* library, const char* fileName, hipJitOption* jitOptions,
                                         void** jitOptionsValues, unsigned int numJitOptions,
                                         hipLibraryOption* libraryOptions, void** libraryOptionValues,
                                         unsigned int numLibraryOptions) {
  Decision v = guard().on_module_load_file(fileName);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipLibraryLoadFromFile, "hip_7.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                    libraryOptionValues, numLibraryOptions);
  if (r == kHipSuccess && library) guard().on_module_loaded(*library);
  return r;
}

EXPORT hipError_t hipLibraryUnload(hipLibrary_t library) {
  guard().on_module_unloaded(library);
  auto fn = REAL(hipLibraryUnload, "hip_7.2");
  return fn ? fn(library) : missing_runtime_function();
}

EXPORT hipError_t hipLibraryGetKernel(hipKernel_t* pKernel, hipLibrary_t library, const char* name) {
  Decision v = guard().before_module_get_function(library, name, "hipLibraryGetKernel");
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipLibraryGetKernel, "hip_7.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(pKernel, library, name);
  guard().on_module_get_function(library, name, pKernel ? *pKernel : nullptr, r, "hipLibraryGetKernel");
  return r;
}

// ---------------------------------------------------------------- more launches (hip_4.2 .. hip_6.5)

EXPORT hipError_t hipExtLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                     size_t sharedMemBytes, hipStream_t stream, hipEvent_t startEvent,
                                     hipEvent_t stopEvent, int flags) {
  hipError_t err;
  if (refused(function_address, sharedMemBytes, "hipExtLaunchKernel", &err)) return err;
  auto fn = REAL(hipExtLaunchKernel, "hip_4.2");
  return fn ? fn(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream, startEvent, stopEvent, flags)
            : missing_runtime_function();
}

EXPORT hipError_t hipConfigureCall(dim3 gridDim, dim3 blockDim, size_t sharedMem, hipStream_t stream) {
  auto fn = REAL(hipConfigureCall, "hip_4.2");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(gridDim, blockDim, sharedMem, stream);
  try {
    if (r == kHipSuccess) t_configured_lds.push_back(sharedMem);
  } catch (...) {
  }
  return r;
}

EXPORT hipError_t hipLaunchByPtr(const void* func) {
  size_t lds = 0;
  if (!t_configured_lds.empty()) {
    lds = t_configured_lds.back();
    t_configured_lds.pop_back();  // the runtime pops its configuration too, refused or not
  }
  hipError_t err;
  if (refused(func, lds, "hipLaunchByPtr", &err)) return err;
  auto fn = REAL(hipLaunchByPtr, "hip_4.2");
  return fn ? fn(func) : missing_runtime_function();
}

// Multi-device launches: one entry per device, each checked on its own
// against its device (its stream's: CLR rejects null streams there), all
// before any is forwarded (the runtime launches all or none).
std::atomic<void*> slot_stream_get_device;
static int stream_device(hipStream_t stream) {
  using Fn = hipError_t (*)(hipStream_t, int*);
  if (!stream) return -1;
  void* p = slot_stream_get_device.load(std::memory_order_acquire);
  if (!p) {
    p = resolve("hipStreamGetDevice", "hip_4.2", /*optional=*/true);
    if (!p) return -1;
    slot_stream_get_device.store(p, std::memory_order_release);
  }
  int device = -1;
  return reinterpret_cast<Fn>(p)(stream, &device) == kHipSuccess ? device : -1;
}

template <class Params, class Key, class Lds, class Stream>
static bool any_refused(const Params* list, long n, const char* api, hipError_t* err, Key key, Lds lds,
                        Stream stream) {
  if (!list || n <= 0 || n > 1024) return false;
  for (long i = 0; i < n; ++i) {
    if (!hipguard::launch_needs_check(lds(list[i]))) continue;
    if (refused(key(list[i]), lds(list[i]), api, err, stream_device(stream(list[i])))) return true;
  }
  return false;
}

EXPORT hipError_t hipLaunchCooperativeKernelMultiDevice(hipLaunchParams* launchParamsList, int numDevices,
                                                        unsigned int flags) {
  hipError_t err;
  if (any_refused(launchParamsList, numDevices, "hipLaunchCooperativeKernelMultiDevice", &err,
                  [](const hipLaunchParams& p) { return p.func; }, [](const hipLaunchParams& p) { return p.sharedMem; },
                  [](const hipLaunchParams& p) { return p.stream; }))
    return err;
  auto fn = REAL(hipLaunchCooperativeKernelMultiDevice, "hip_4.2");
  return fn ? fn(launchParamsList, numDevices, flags) : missing_runtime_function();
}

EXPORT hipError_t hipExtLaunchMultiKernelMultiDevice(hipLaunchParams* launchParamsList, int numDevices,
                                                     unsigned int flags) {
  hipError_t err;
  if (any_refused(launchParamsList, numDevices, "hipExtLaunchMultiKernelMultiDevice", &err,
                  [](const hipLaunchParams& p) { return p.func; }, [](const hipLaunchParams& p) { return p.sharedMem; },
                  [](const hipLaunchParams& p) { return p.stream; }))
    return err;
  auto fn = REAL(hipExtLaunchMultiKernelMultiDevice, "hip_4.2");
  return fn ? fn(launchParamsList, numDevices, flags) : missing_runtime_function();
}

EXPORT hipError_t hipModuleLaunchCooperativeKernelMultiDevice(hipFunctionLaunchParams* launchParamsList,
                                                              unsigned int numDevices, unsigned int flags) {
  hipError_t err;
  if (any_refused(launchParamsList, static_cast<long>(numDevices), "hipModuleLaunchCooperativeKernelMultiDevice",
                  &err, [](const hipFunctionLaunchParams& p) { return static_cast<const void*>(p.function); },
                  [](const hipFunctionLaunchParams& p) { return p.sharedMemBytes; },
                  [](const hipFunctionLaunchParams& p) { return p.hStream; }))
    return err;
  auto fn = REAL(hipModuleLaunchCooperativeKernelMultiDevice, "hip_5.5");
  return fn ? fn(launchParamsList, numDevices, flags) : missing_runtime_function();
}

EXPORT hipError_t hipDrvLaunchKernelEx(const HIP_LAUNCH_CONFIG* config, hipFunction_t f, void** params,
                                       void** extra) {
  hipError_t err;
  if (refused(f, config ? config->sharedMemBytes : 0, "hipDrvLaunchKernelEx", &err)) return err;
  auto fn = REAL(hipDrvLaunchKernelEx, "hip_6.5");
  return fn ? fn(config, f, params, extra) : missing_runtime_function();
}

// hipHccModuleLaunchKernel: C++ linkage only (hip_hcc.map.in extern "C++"
// hipHccModuleLaunchKernel*, hip_4.2); hipExtModuleLaunchKernel without flags.
#define HIP_HCC_MODULE_LAUNCH_CXX "_Z24hipHccModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_"
using HccLaunchFn = hipError_t (*)(hipFunction_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, size_t,
                                   hipStream_t, void**, void**, hipEvent_t, hipEvent_t);
std::atomic<void*> slot_hcc_cxx;
EXPORT hipError_t hipguard_hcc_module_launch_cxx(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                                                 uint32_t ly, uint32_t lz, size_t sharedMemBytes, hipStream_t hStream,
                                                 void** kernelParams, void** extra, hipEvent_t startEvent,
                                                 hipEvent_t stopEvent) __asm__(HIP_HCC_MODULE_LAUNCH_CXX);
EXPORT hipError_t hipguard_hcc_module_launch_cxx(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                                                 uint32_t ly, uint32_t lz, size_t sharedMemBytes, hipStream_t hStream,
                                                 void** kernelParams, void** extra, hipEvent_t startEvent,
                                                 hipEvent_t stopEvent) {
  hipError_t err;
  if (refused(f, sharedMemBytes, "hipHccModuleLaunchKernel", &err)) return err;
  auto fn = real<HccLaunchFn>(slot_hcc_cxx, HIP_HCC_MODULE_LAUNCH_CXX, "hip_4.2");
  return fn ? fn(f, gx, gy, gz, lx, ly, lz, sharedMemBytes, hStream, kernelParams, extra, startEvent, stopEvent)
            : missing_runtime_function();
}

// ---------------------------------------------------------------- graph kernel nodes (hip_4.3 .. hip_6.2)

EXPORT hipError_t hipGraphAddKernelNode(hipGraphNode_t* pGraphNode, hipGraph_t graph,
                                        const hipGraphNode_t* pDependencies, size_t numDependencies,
                                        const hipKernelNodeParams* pNodeParams) {
  hipError_t err;
  if (node_refused(pNodeParams, "hipGraphAddKernelNode", &err)) return err;
  auto fn = REAL(hipGraphAddKernelNode, "hip_4.3");
  return fn ? fn(pGraphNode, graph, pDependencies, numDependencies, pNodeParams) : missing_runtime_function();
}

EXPORT hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams* pNodeParams) {
  hipError_t err;
  if (node_refused(pNodeParams, "hipGraphKernelNodeSetParams", &err)) return err;
  auto fn = REAL(hipGraphKernelNodeSetParams, "hip_4.4");
  return fn ? fn(node, pNodeParams) : missing_runtime_function();
}

EXPORT hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t hGraphExec, hipGraphNode_t node,
                                                  const hipKernelNodeParams* pNodeParams) {
  hipError_t err;
  if (node_refused(pNodeParams, "hipGraphExecKernelNodeSetParams", &err)) return err;
  auto fn = REAL(hipGraphExecKernelNodeSetParams, "hip_4.4");
  return fn ? fn(hGraphExec, node, pNodeParams) : missing_runtime_function();
}

EXPORT hipError_t hipGraphAddNode(hipGraphNode_t* pGraphNode, hipGraph_t graph, const hipGraphNode_t* pDependencies,
                                  size_t numDependencies, hipGraphNodeParams* nodeParams) {
  hipError_t err;
  if (node_refused(nodeParams, "hipGraphAddNode", &err)) return err;
  auto fn = REAL(hipGraphAddNode, "hip_5.5");
  return fn ? fn(pGraphNode, graph, pDependencies, numDependencies, nodeParams) : missing_runtime_function();
}

EXPORT hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams* nodeParams) {
  hipError_t err;
  if (node_refused(nodeParams, "hipGraphNodeSetParams", &err)) return err;
  auto fn = REAL(hipGraphNodeSetParams, "hip_6.2");
  return fn ? fn(node, nodeParams) : missing_runtime_function();
}

EXPORT hipError_t hipGraphExecNodeSetParams(hipGraphExec_t graphExec, hipGraphNode_t node,
                                            hipGraphNodeParams* nodeParams) {
  hipError_t err;
  if (node_refused(nodeParams, "hipGraphExecNodeSetParams", &err)) return err;
  auto fn = REAL(hipGraphExecNodeSetParams, "hip_6.2");
  return fn ? fn(graphExec, node, nodeParams) : missing_runtime_function();
}

// ---------------------------------------------------------------- entry points resolved at run time
// CLR's hipGetProcAddress / hipGetDriverEntryPoint(_spt) dlsym the runtime's
// own handle (appending "_spt" for per-thread-stream requests), which hands out
// the runtime's functions and so bypasses an LD_PRELOAD shim. When the runtime
// found a function and it is one hipguard interposes, the caller gets the
// shim's wrapper instead: the same symbol, under the same version node.

namespace {

struct ApiEntry {
  const char* name;
  const char* node;
};
constexpr ApiEntry kApis[] = {
#define HG_API(sym, node, kind) {#sym, #node},
#define HG_SKIP(sym, node, why)
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
};

void* self_handle() {
  static void* h = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&self_handle), &info) || !info.dli_fname) return static_cast<void*>(nullptr);
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return h;
}

const ApiEntry* find_api(const char* name) {
  if (!name) return nullptr;
  for (const auto& a : kApis)
    if (strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

// `requested` is what the caller asked for; `per_thread` whether the runtime
// looked up the "_spt" form first. The runtime's answer names the function it
// chose (dladdr); failing that, the same rule as CLR's picks it.
void redirect(const char* requested, bool per_thread, void** pfn) {
  if (!pfn || !*pfn) return;
  const ApiEntry* api = nullptr;
  Dl_info info{};
  if (dladdr(*pfn, &info) && info.dli_sname) api = find_api(info.dli_sname);
  if (!api && requested) {
    std::string name = requested;
    if (per_thread) api = find_api((name + "_spt").c_str());
    if (!api) api = find_api(requested);
  }
  if (!api) return;
  void* self = self_handle();
  void* mine = self ? dlvsym(self, api->name, api->node) : nullptr;
  if (!mine || mine == *pfn) return;
  guard().log("debug", std::string(requested ? requested : "?") + ": handing out hipguard's " + api->name +
                                " instead of the runtime's");
  *pfn = mine;
}

constexpr uint64_t kPerThreadDefaultStream = 2;  // HIP_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, hipEnablePerThreadDefaultStream

}  // namespace

EXPORT hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags,
                                    void* symbolStatus) {
  auto fn = REAL(hipGetProcAddress, "hip_6.1");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(symbol, pfn, hipVersion, flags, symbolStatus);
  if (r == kHipSuccess) {
    try {
      redirect(symbol, flags == kPerThreadDefaultStream, pfn);
    } catch (...) {
    }
  }
  return r;
}

EXPORT hipError_t hipGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                         void* driverStatus) {
  auto fn = REAL(hipGetDriverEntryPoint, "hip_7.1");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(symbol, funcPtr, flags, driverStatus);
  if (r == kHipSuccess) {
    try {
      redirect(symbol, flags == kPerThreadDefaultStream, funcPtr);
    } catch (...) {
    }
  }
  return r;
}

EXPORT hipError_t hipGetDriverEntryPoint_spt(const char* symbol, void** funcPtr, unsigned long long flags,
                                             void* driverStatus) {
  auto fn = REAL(hipGetDriverEntryPoint_spt, "hip_7.1");
  if (!fn) return missing_runtime_function();
  hipError_t r = fn(symbol, funcPtr, flags, driverStatus);
  if (r == kHipSuccess) {
    try {
      redirect(symbol, flags == 0 || flags == kPerThreadDefaultStream, funcPtr);  // default means per-thread here
    } catch (...) {
    }
  }
  return r;
}
