// libhipguard.so: LD_PRELOAD shim. One wrapper per line of hip_api.def, with
// libamdhip64's signature and symbol version (hipguard.map): it asks the core
// (Guard) what to do through the line's hook and forwards to the real runtime
// (process.cpp finds it and configures the guard).
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hip_abi.h"
#include "process.h"
#include "runtime/guard.h"
#include "runtime/kernel_table.h"

using hipguard::Action;
using hipguard::Decision;
using hipguard::Guard;
using hipguard::guarded;

namespace {

using hipguard::kHipSuccess;
using namespace hipguard::shim;

// ---------------------------------------------------------------- the real runtime

// The runtime's function for each line of the table, once resolved.
std::atomic<void*> g_slots[kApiCount];

// The runtime symbol a line falls back to when its own is missing: the other
// spelling of hipExtModuleLaunchKernel / hipHccModuleLaunchKernel (C, or C++ as
// ROCm 5.x exports them only).
constexpr std::pair<Api, Api> kSpellings[] = {
    {api_hipExtModuleLaunchKernel,
     api__Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j},
    {api_hipHccModuleLaunchKernel,
     api__Z24hipHccModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_},
};
Api other_spelling(Api api) {
  for (auto [c, cxx] : kSpellings) {
    if (api == c) return cxx;
    if (api == cxx) return c;
  }
  return kApiCount;
}

// The runtime's function for `api`, cached; a miss is retried (the runtime may be dlopen'ed later)
// and logged unless `optional`.
template <class Fn>
Fn real(Api api, bool optional = false) {
  void* p = g_slots[api].load(std::memory_order_acquire);
  if (__builtin_expect(!p, 0)) {
    Api other = other_spelling(api);
    p = resolve(kApis[api].name, kApis[api].node, /*optional=*/optional || other != kApiCount);
    if (!p && other != kApiCount) p = resolve(kApis[other].name, kApis[other].node, optional);
    if (p) g_slots[api].store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

// The probe runs at the first launch; hands the guard the runtime's lookup functions then, once.
// A runtime without one (ROCm 5.2 has no hipGetFuncBySymbol) leaves it null: not probed that way.
void provide_probe_functions() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire) || done.exchange(true)) return;  // no locked exchange per launch
  hipguard::ProbeFunctions f;
  f.get_func_by_symbol = real<decltype(f.get_func_by_symbol)>(api_hipGetFuncBySymbol, /*optional=*/true);
  f.func_get_attributes = real<decltype(f.func_get_attributes)>(api_hipFuncGetAttributes, /*optional=*/true);
  f.get_last_error = real<decltype(f.get_last_error)>(api_hipGetLastError, /*optional=*/true);
  f.peek_at_last_error = real<decltype(f.peek_at_last_error)>(api_hipPeekAtLastError, /*optional=*/true);
  guard().set_probe_functions(f);
}

// ---------------------------------------------------------------- helpers of the hooks

// hipguard's part of this thread's last error (HIP keeps its own per thread too), from the guard's
// decisions (Decision::sets_last_error, restored_error); the LastError hook reports it.
thread_local int t_refused_error = 0;
thread_local int t_refused_command_error = 0;  // hipExtGetLastError's copy
thread_local int t_restored_error = 0;

Decision noted(Decision d) {
  if (d.sets_last_error) t_refused_error = t_refused_command_error = d.hip_error;
  if (d.restored_error != 0) t_restored_error = d.restored_error;
  return d;
}

// A launch the fast path did not let through: the guard decides.
Decision launch_decision(const void* key, uint64_t dynamic_lds, const char* api, int device = -1) {
  if (!hipguard::launch_needs_check(dynamic_lds)) return {};
  provide_probe_functions();
  return noted(guard().on_launch(key, dynamic_lds, api, device));
}

// A call that builds a kernel without launching it: the guard decides.
Decision kernel_call_decision(const void* key, const char* api, bool say_in_warn = true) {
  return noted(guard().before_kernel_call(key, api, say_in_warn));
}

// hipLaunchByPtr launches what the last hipConfigureCall configured (CLR
// PlatformState::popExec): that call's dynamic LDS, per thread.
thread_local std::vector<size_t> t_configured_lds;

// ---------------------------------------------------------------- hooks: one per argument shape
// A hook is built from a wrapper's arguments (the last field of its line).
// Members, all optional:
//   fast_path, clean()           the launch fast path: clean() true forwards at once
//   Decision before()            asks the guard; Refuse returns its error, Exit ends the process
//   void after(R& result)        sees (and may change) the runtime's result
//   after_missing                after() also runs when the runtime lacks the function
// `api` names the call in messages (default: the symbol).

namespace hook {

struct Hook {
  const char* api = nullptr;
  static constexpr bool fast_path = false;  // clean() is asked first, outside the slow path
  bool clean() const { return false; }
};

struct Launch : Hook {
  const void* key;
  uint64_t lds;
  Launch(const void* k, uint64_t dynamic_lds, const char* name = nullptr) : Hook{name}, key(k), lds(dynamic_lds) {}
  static constexpr bool fast_path = true;
  // The launch cache's slot for this kernel, then the process-wide gate
  // (launch_may_skip_guard): a few loads and compares, no call (P3, P3b).
  bool clean() const { return hipguard::launch_may_skip_guard(key, lds); }
  Decision before() const { return launch_decision(key, lds, api); }
};

// hipLaunchByPtr: its dynamic LDS is the last hipConfigureCall's, popped refused or not (as the runtime does).
struct LaunchByPtr : Hook {
  const void* key;
  explicit LaunchByPtr(const void* k) : key(k) {}
  Decision before() const {
    size_t lds = 0;
    if (!t_configured_lds.empty()) {
      lds = t_configured_lds.back();
      t_configured_lds.pop_back();
    }
    return launch_decision(key, lds, api);
  }
};

struct ConfigureCall : Hook {
  size_t lds;
  explicit ConfigureCall(size_t dynamic_lds) : lds(dynamic_lds) {}
  void after(hipError_t r) const {
    if (r == kHipSuccess) t_configured_lds.push_back(lds);
  }
};

// Multi-device launches: one entry per device, each checked on its own
// against its device, all before any is forwarded (the runtime launches all or none).
inline const void* kernel_of(const hipLaunchParams& p) { return p.func; }
inline uint64_t lds_of(const hipLaunchParams& p) { return p.sharedMem; }
inline hipStream_t stream_of(const hipLaunchParams& p) { return p.stream; }
inline const void* kernel_of(const hipFunctionLaunchParams& p) { return p.function; }
inline uint64_t lds_of(const hipFunctionLaunchParams& p) { return p.sharedMemBytes; }
inline hipStream_t stream_of(const hipFunctionLaunchParams& p) { return p.hStream; }

template <class Params>
struct LaunchList : Hook {
  const Params* list;
  long n;
  LaunchList(const Params* l, long count) : list(l), n(count) {}
  Decision before() const {
    if (!list || n <= 0 || n > 1024) return {};
    for (long i = 0; i < n; ++i) {
      if (!hipguard::launch_needs_check(lds_of(list[i]))) continue;
      Decision d = launch_decision(kernel_of(list[i]), lds_of(list[i]), api, stream_device(stream_of(list[i])));
      if (d.action == Action::Refuse) return d;
    }
    return {};
  }
};

// A graph kernel node is checked when it is created or its parameters set:
// the kernel and its dynamic LDS are known there, the launch (hipGraphLaunch)
// runs it later. A strict refusal leaves the graph unchanged.
struct Node : Hook {
  const hipKernelNodeParams* kernel;
  explicit Node(const hipKernelNodeParams* p) : kernel(p) {}
  explicit Node(const hipGraphNodeParams* p) : kernel(p && p->type == kHipGraphNodeTypeKernel ? &p->kernel : nullptr) {}
  Decision before() const { return kernel ? launch_decision(kernel->func, kernel->sharedMemBytes, api) : Decision{}; }
};

// The registration and load hooks carry the check from before() to after().
struct RegisterFatbin : Hook {
  const void* data;
  mutable hipguard::PendingFatbinPtr pending;
  explicit RegisterFatbin(const void* d) : data(d) {}
  Decision before() const { return guard().on_register_fatbin(data, pending); }
  void after(void** handle) const { guard().on_registered_fatbin(handle, std::move(pending)); }
  static constexpr bool after_missing = true;  // a null handle still keeps its report
};

struct RegisterFunction : Hook {
  const void* handle;
  const void* host_function;
  const char* device_name;
  RegisterFunction(const void* h, const void* f, const char* name) : handle(h), host_function(f), device_name(name) {}
  Decision before() const { return guard().on_register_function(handle, host_function, device_name); }
};

struct UnregisterFatbin : Hook {
  const void* handle;
  explicit UnregisterFatbin(const void* h) : handle(h) {}
  Decision before() const {
    guard().on_unregister_fatbin(handle);
    return {};
  }
};

// Loads: checked before, the loaded module (or library: its handle is the key, like a module's) noted after.
template <class Handle>
struct LoadFile : Hook {
  Handle* out;
  const char* path;
  mutable hipguard::PendingModulePtr pending;
  LoadFile(Handle* o, const char* p) : out(o), path(p) {}
  Decision before() const { return guard().on_module_load_file(path, pending); }
  void after(hipError_t r) const {
    if (r == kHipSuccess && out) guard().on_module_loaded(*out, std::move(pending));
  }
};

template <class Handle>
struct LoadData : Hook {
  Handle* out;
  const void* image;
  mutable hipguard::PendingModulePtr pending;
  LoadData(Handle* o, const void* i, const char* name = nullptr) : Hook{name}, out(o), image(i) {}
  Decision before() const { return guard().on_module_load_data(image, pending, api); }
  void after(hipError_t r) const {
    if (r == kHipSuccess && out) guard().on_module_loaded(*out, std::move(pending));
  }
};

struct Unload : Hook {
  const void* module;
  explicit Unload(const void* m) : module(m) {}
  Decision before() const {
    guard().on_module_unloaded(module);
    return {};
  }
};

// hipModuleGetFunction / hipLibraryGetKernel: strict refuses a device function; a failed lookup is explained.
template <class Function>
struct GetFunction : Hook {
  Function* out;
  const void* module;
  const char* name;
  GetFunction(Function* o, const void* m, const char* n) : out(o), module(m), name(n) {}
  Decision before() const { return guard().before_module_get_function(module, name, api); }
  void after(hipError_t r) const { guard().on_module_get_function(module, name, out ? *out : nullptr, r, api); }
};

// hipLibraryEnumerateKernels: each handle it fills in is a lookup of that
// kernel, as hipLibraryGetKernel's (launches through it are gated). The names
// come from the runtime's hipKernelGetName (hip_7.2, as the enumeration); a
// handle it cannot name stays unknown to the guard, as without the hook.
struct EnumerateKernels : Hook {
  hipKernel_t* kernels;
  unsigned int n;
  const void* library;
  EnumerateKernels(hipKernel_t* k, unsigned int count, const void* lib) : kernels(k), n(count), library(lib) {}
  void after(hipError_t r) const {
    if (r != kHipSuccess || !kernels) return;
    using GetName = hipError_t (*)(const char**, hipKernel_t);
    // resolved once: the runtime that just enumerated is loaded and stays so
    static const auto get_name =
        reinterpret_cast<GetName>(resolve("hipKernelGetName", table_node("hipKernelGetName"), /*optional=*/true));
    if (!get_name) return;
    for (unsigned int i = 0; i < n; ++i) {
      const char* name = nullptr;
      if (kernels[i] && get_name(&name, kernels[i]) == kHipSuccess && name)
        guard().on_module_get_function(library, name, kernels[i], r, api);
    }
  }
};

// hipGetFuncBySymbol: its kernel checked before the call (strict mode refuses
// one that cannot run; warn mode says nothing before it: a failure is explained
// after the call); its hipFunction_t gets the kernel's facts (module launches take it).
struct FuncBySymbol : Hook {
  hipFunction_t* out;
  const void* symbol;
  FuncBySymbol(hipFunction_t* o, const void* s) : out(o), symbol(s) {}
  Decision before() const { return kernel_call_decision(symbol, api, /*say_in_warn=*/false); }
  void after(hipError_t r) const { guard().on_get_func_by_symbol(symbol, r, r == kHipSuccess && out ? *out : nullptr); }
};

// A call that makes the runtime build a kernel without launching it (attributes, occupancy): checked
// as hipGetFuncBySymbol's kernel is; strict mode refuses one that cannot run.
struct KernelCall : Hook {
  const void* key;  // host function or hipFunction_t
  explicit KernelCall(const void* k) : key(k) {}
  Decision before() const { return kernel_call_decision(key, api); }
};

struct ProcAddress : Hook {
  const char* symbol;
  void** pfn;
  bool per_thread;
  ProcAddress(const char* s, void** p, bool spt) : symbol(s), pfn(p), per_thread(spt) {}
  void after(hipError_t r) const {
    if (r == kHipSuccess) redirect(symbol, per_thread, pfn);
  }
};

// A launch or kernel call strict mode refused never reached the runtime: reported here, once
// (hipGetLastError clears it, hipPeekAtLastError does not). hipExtGetLastError
// reads CLR's other slot (the last call's result), which has its own copy. The
// error the registration probe restored is reported while the runtime has none newer.
struct LastError : Hook {
  bool clear;
  bool command;
  explicit LastError(bool c, bool cmd = false) : clear(c), command(cmd) {}
  static int take(int& slot, bool clear) {
    int e = slot;
    if (clear) slot = 0;
    return e;
  }
  void after(hipError_t& r) const {  // the runtime's call also clears its own state
    if (command) {
      if (int refused = take(t_refused_command_error, clear)) r = refused;
      return;
    }
    int restored = take(t_restored_error, clear);
    if (int refused = take(t_refused_error, clear)) r = refused;
    else if (r == kHipSuccess) r = restored;
  }
  static constexpr bool after_missing = true;
};

}  // namespace hook

// The slow path of every wrapper: the hook's calls into the guard are
// guarded (an exception there forwards the call unchanged); the runtime's own
// call is outside, its result returned as it is unless the hook changes it.
template <class Fn, class Hook, class Call>
auto run(Api api, Hook hook, Call call) {
  using R = std::invoke_result_t<Call, Fn>;
  if (!hook.api) hook.api = kApis[api].name;
  if constexpr (requires { hook.before(); }) {
    Decision d = guarded(Decision{}, [&] { return hook.before(); });
    if (d.action == Action::Exit) strict_exit();
    if constexpr (std::is_same_v<R, hipError_t>)
      if (d.action == Action::Refuse) return R(d.hip_error);
  }
  Fn fn = real<Fn>(api);
  if constexpr (std::is_void_v<R>) {
    if (fn) call(fn);
  } else {
    constexpr bool after_missing = requires { Hook::after_missing; };
    R r{};
    if (fn) r = call(fn);
    else if constexpr (std::is_same_v<R, hipError_t>) r = missing_runtime_function();
    if constexpr (requires { hook.after(r); })
      if (fn || after_missing) guarded([&] { hook.after(r); });
    return r;
  }
}

}  // namespace

// ---------------------------------------------------------------- the wrappers (hip_api.def)
// Fast path (Launch hooks): one load of the resolved function, the gate, a
// tail call. Everything else: the slow path above, out of line, so that the
// fast path spills nothing for it (docs/performance.md, P3).

// A dim3 passed by value is two INTEGER eightbytes, (x, y) and (z, padding)
// (SysV ABI, parameter classification): in the wrappers it is declared as the
// 16-byte integer with the same classification, which GCC keeps in the two
// registers, where a struct would be spilled and reloaded around the fast
// path's test (docs/performance.md, P3). The wrappers never look inside one.
// Every by-value dim3 of the table is passed in registers (no 16-byte stack
// alignment to differ on); dim3 in structs (hip_abi.h) keeps its layout.
using dim3_in_registers = unsigned __int128;
#define dim3 dim3_in_registers
#define HG_API(sym, node, kind, ret, params, args, shape)                                                            \
  extern "C" ret sym params;                                                                                         \
  __attribute__((noinline)) static ret sym##_slow params {                                                           \
    using Fn = ret(*) params;                                                                                        \
    return run<Fn>(api_##sym, hook::shape, [&](Fn fn) { return fn args; });                                          \
  }                                                                                                                  \
  extern "C" __attribute__((visibility("default"))) ret sym params {                                                 \
    if constexpr (decltype(hook::shape)::fast_path) {                                                                \
      void* p = g_slots[api_##sym].load(std::memory_order_acquire);                                                  \
      if (__builtin_expect(p != nullptr && hook::shape.clean(), 1)) return reinterpret_cast<decltype(&sym)>(p) args; \
    }                                                                                                                \
    return sym##_slow args;                                                                                          \
  }
#define HG_SKIP(...)
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
#undef dim3
