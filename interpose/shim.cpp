// libhipguard.so: LD_PRELOAD shim. Each exported function has libamdhip64's
// signature and symbol version (hipguard.map), asks the core (Guard) what to do,
// and forwards to the real runtime. Nothing else lives here.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "hipguard/guard.h"

using hipguard::Action;
using hipguard::Guard;
using hipguard::Verdict;

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
      Guard::get().log("debug", std::string("forwarding ") + name + " to " + info.dli_fname);
  } else if (!optional) {
    Guard::get().log("error", std::string("cannot find the HIP runtime's ") + name + "@" + version +
                                  "; is libamdhip64 loaded?");
  }
  return p;
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
  Guard::get().write_report();
  _exit(Guard::get().config().exit_code);
}

// The exit status of a process that saw errors and exits with 0 (strict mode,
// HIPGUARD_FAIL_ON): registered before the program's own exit handlers, so it runs after them.
__attribute__((constructor)) void install_exit_status() { hipguard::install_exit_status_handler(); }

// The probe runs at the first launch; hand the core the runtime's lookup functions then.
void provide_probe_functions() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  hipguard::ProbeFunctions f;
  f.get_func_by_symbol = reinterpret_cast<int (*)(void**, const void*)>(resolve("hipGetFuncBySymbol", "hip_6.2", true));
  f.func_get_attributes = reinterpret_cast<int (*)(void*, const void*)>(resolve("hipFuncGetAttributes", "hip_4.2", true));
  f.get_last_error = reinterpret_cast<int (*)()>(resolve("hipGetLastError", "hip_4.2", true));
  f.peek_at_last_error = reinterpret_cast<int (*)()>(resolve("hipPeekAtLastError", "hip_4.2", true));
  Guard::get().set_probe_functions(f);
}

inline Verdict gate(const void* key, uint64_t dynamic_lds, const char* api) {
  provide_probe_functions();
  return Guard::get().on_launch(key, dynamic_lds, api);
}

}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))

// ---------------------------------------------------------------- registration (hip_4.2)

EXPORT void** __hipRegisterFatBinary(const void* data) {
  Verdict v = Guard::get().on_register_fatbin(data);
  if (v.action == Action::Exit) strict_exit();
  auto fn = REAL(__hipRegisterFatBinary, "hip_4.2");
  void** handle = fn ? fn(data) : nullptr;
  Guard::get().on_registered_fatbin(handle);
  return handle;
}

EXPORT void __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction,
                                  const char* deviceName, unsigned int threadLimit, uint3* tid, uint3* bid,
                                  dim3* blockDim, dim3* gridDim, int* wSize) {
  if (Guard::get().on_register_function(modules, hostFunction, deviceName).action == Action::Exit) strict_exit();
  auto fn = REAL(__hipRegisterFunction, "hip_4.2");
  if (fn) fn(modules, hostFunction, deviceFunction, deviceName, threadLimit, tid, bid, blockDim, gridDim, wSize);
}

EXPORT void __hipUnregisterFatBinary(void** modules) {
  Guard::get().on_unregister_fatbin(modules);
  auto fn = REAL(__hipUnregisterFatBinary, "hip_4.2");
  if (fn) fn(modules);
}

// ---------------------------------------------------------------- modules (hip_4.2)

EXPORT hipError_t hipModuleLoad(hipModule_t* module, const char* fname) {
  Verdict v = Guard::get().on_module_load_file(fname);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoad, "hip_4.2");
  if (!fn) return kHipErrorNotInitialized;
  hipError_t r = fn(module, fname);
  if (r == kHipSuccess && module) Guard::get().on_module_loaded(*module);
  return r;
}

EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  Verdict v = Guard::get().on_module_load_data(image);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoadData, "hip_4.2");
  if (!fn) return kHipErrorNotInitialized;
  hipError_t r = fn(module, image);
  if (r == kHipSuccess && module) Guard::get().on_module_loaded(*module);
  return r;
}

EXPORT hipError_t hipModuleLoadDataEx(hipModule_t* module, const void* image, unsigned int numOptions,
                                      hipJitOption* options, void** optionValues) {
  Verdict v = Guard::get().on_module_load_data(image);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleLoadDataEx, "hip_4.2");
  if (!fn) return kHipErrorNotInitialized;
  hipError_t r = fn(module, image, numOptions, options, optionValues);
  if (r == kHipSuccess && module) Guard::get().on_module_loaded(*module);
  return r;
}

EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  Guard::get().on_module_unloaded(module);
  auto fn = REAL(hipModuleUnload, "hip_4.2");
  return fn ? fn(module) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* kname) {
  Verdict v = Guard::get().before_module_get_function(module, kname);
  if (v.action == Action::Refuse) return v.hip_error;
  auto fn = REAL(hipModuleGetFunction, "hip_4.2");
  if (!fn) return kHipErrorNotInitialized;
  hipError_t r = fn(function, module, kname);
  Guard::get().on_module_get_function(module, kname, function ? *function : nullptr, r);
  return r;
}

// ---------------------------------------------------------------- lookups (hip_6.2)

EXPORT hipError_t hipGetFuncBySymbol(hipFunction_t* functionPtr, const void* symbolPtr) {
  auto fn = REAL(hipGetFuncBySymbol, "hip_6.2");
  if (!fn) return kHipErrorNotInitialized;
  hipError_t r = fn(functionPtr, symbolPtr);
  if (r != kHipSuccess) Guard::get().on_get_func_by_symbol(symbolPtr, r);
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
    Verdict v = gate(function_address, sharedMemBytes, "hipLaunchKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchKernel, "hip_4.2");
  return fn ? fn(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                  size_t sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchKernel.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && !hipguard::launch_needs_check(sharedMemBytes), 1))
    return reinterpret_cast<decltype(&hipLaunchKernel)>(p)(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
  return hipLaunchKernel_slow(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
}

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
extern "C" hipError_t hipLaunchKernel_spt(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                      size_t sharedMemBytes, hipStream_t stream);
__attribute__((noinline)) static hipError_t hipLaunchKernel_spt_slow(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                      size_t sharedMemBytes, hipStream_t stream) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Verdict v = gate(function_address, sharedMemBytes, "hipLaunchKernel_spt");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchKernel_spt, "hip_5.2");
  return fn ? fn(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipLaunchKernel_spt(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void** args,
                                      size_t sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchKernel_spt.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && !hipguard::launch_needs_check(sharedMemBytes), 1))
    return reinterpret_cast<decltype(&hipLaunchKernel_spt)>(p)(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
  return hipLaunchKernel_spt_slow(function_address, numBlocks, dimBlocks, args, sharedMemBytes, stream);
}

// Slow path: kernels with findings, dynamic LDS, first launches (probe), unresolved runtime.
extern "C" hipError_t hipLaunchCooperativeKernel(const void* f, dim3 gridDim, dim3 blockDimX, void** kernelParams,
                                             unsigned int sharedMemBytes, hipStream_t stream);
__attribute__((noinline)) static hipError_t hipLaunchCooperativeKernel_slow(const void* f, dim3 gridDim, dim3 blockDimX, void** kernelParams,
                                             unsigned int sharedMemBytes, hipStream_t stream) {
  if (hipguard::launch_needs_check(sharedMemBytes)) {
    Verdict v = gate(f, sharedMemBytes, "hipLaunchCooperativeKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchCooperativeKernel, "hip_4.2");
  return fn ? fn(f, gridDim, blockDimX, kernelParams, sharedMemBytes, stream) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipLaunchCooperativeKernel(const void* f, dim3 gridDim, dim3 blockDimX, void** kernelParams,
                                             unsigned int sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchCooperativeKernel.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && !hipguard::launch_needs_check(sharedMemBytes), 1))
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
    Verdict v = gate(f, sharedMemBytes, "hipLaunchCooperativeKernel_spt");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchCooperativeKernel_spt, "hip_5.2");
  return fn ? fn(f, gridDim, blockDim, kernelParams, sharedMemBytes, stream) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipLaunchCooperativeKernel_spt(const void* f, dim3 gridDim, dim3 blockDim, void** kernelParams,
                                                 uint32_t sharedMemBytes, hipStream_t stream) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipLaunchCooperativeKernel_spt.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && !hipguard::launch_needs_check(sharedMemBytes), 1))
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
    Verdict v = gate(f, sharedMemBytes, "hipModuleLaunchKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipModuleLaunchKernel, "hip_4.2");
  return fn ? fn(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, kernelParams, extra) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                        void** kernelParams, void** extra) {
  // Fast path: one load of the resolved function, one of the gate, a tail call.
  void* p = slot_hipModuleLaunchKernel.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && !hipguard::launch_needs_check(sharedMemBytes), 1))
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
  if (__builtin_expect(hipguard::launch_needs_check(sharedMemBytes), 0)) {
    Verdict v = gate(f, sharedMemBytes, "hipExtModuleLaunchKernel");
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
  if (!p) return kHipErrorNotInitialized;
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
  if (__builtin_expect(hipguard::launch_needs_check(sharedMemBytes), 0)) {
    Verdict v = gate(f, sharedMemBytes, "hipModuleLaunchCooperativeKernel");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipModuleLaunchCooperativeKernel, "hip_5.5");
  return fn ? fn(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream,
                 kernelParams)
            : kHipErrorNotInitialized;
}

// ---------------------------------------------------------------- last error (hip_4.2)
// A launch strict mode refused never reached the runtime: report it here, once.

EXPORT hipError_t hipGetLastError() {
  auto fn = REAL(hipGetLastError, "hip_4.2");
  hipError_t r = fn ? fn() : kHipErrorNotInitialized;  // also clears the runtime's own state
  int restored = hipguard::restored_last_error(/*clear=*/true);
  if (int refused = hipguard::refused_launch_error(/*clear=*/true)) return refused;
  return r != kHipSuccess ? r : restored;
}

EXPORT hipError_t hipPeekAtLastError() {
  auto fn = REAL(hipPeekAtLastError, "hip_4.2");
  hipError_t r = fn ? fn() : kHipErrorNotInitialized;
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
    Verdict v = gate(fPtr, dynamic, "hipLaunchKernelExC");
    if (v.action == Action::Refuse) return v.hip_error;
  }
  auto fn = REAL(hipLaunchKernelExC, "hip_6.5");
  return fn ? fn(config, fPtr, args) : kHipErrorNotInitialized;
}

EXPORT hipError_t hipLaunchKernelExC(const hipLaunchConfig_t* config, const void* fPtr, void** args) {
  void* p = slot_hipLaunchKernelExC.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr && !hipguard::launch_needs_check(config ? config->dynamicSmemBytes : 0), 1))
    return reinterpret_cast<decltype(&hipLaunchKernelExC)>(p)(config, fPtr, args);
  return hipLaunchKernelExC_slow(config, fPtr, args);
}
