// libhipguard.so: LD_PRELOAD shim. One wrapper per line of hip_api.def, with
// libamdhip64's signature and symbol version (hipguard.map): it asks the core
// (Guard) what to do through the line's hook and forwards to the real runtime.
// The shim is also the one place that reads the environment for the guard.
#include <dlfcn.h>
#include <link.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hip_abi.h"
#include "runtime/guard.h"
#include "runtime/kernel_table.h"

using hipguard::Action;
using hipguard::Decision;
using hipguard::Guard;
using hipguard::guarded;

namespace {

using hipguard::kHipErrorNotInitialized;
using hipguard::kHipErrorNotSupported;
using hipguard::kHipSuccess;

// The HIP runtime version selection follows: the real file name behind the
// loaded libamdhip64 (libamdhip64.so.6 -> libamdhip64.so.6.4.43484). Unknown
// (not loaded yet, or a name without major.minor): the newest, the strictest.
void runtime_version(hipguard::GuardConfig& config) {
  std::string loaded;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (!info->dlpi_name || !strstr(info->dlpi_name, "libamdhip64.so")) return 0;
        *static_cast<std::string*>(data) = info->dlpi_name;
        return 1;
      },
      &loaded);
  if (loaded.empty()) return;
  std::string real = loaded;
  if (char* resolved = realpath(loaded.c_str(), nullptr)) {
    real = resolved;
    free(resolved);
  }
  if (const hipguard::RuntimeInfo* r = hipguard::runtime_for_library(real)) {
    config.machine.runtime = r;
    config.runtime_source = real;
  }
}

// The guard, configured from this process's environment at the shim's first
// call into it, whichever wrapper that is (hipcc's registration constructors
// may run before or after the shim's own constructor).
Guard& guard() {
  static Guard& g = []() -> Guard& {
    std::vector<std::string> names;  // HIPGUARD_* in any case: misspellings are said
    for (char** e = environ; e && *e; ++e)
      if (strncasecmp(*e, "HIPGUARD_", 9) == 0)
        if (const char* eq = strchr(*e, '=')) names.emplace_back(*e, static_cast<size_t>(eq - *e));
    hipguard::GuardConfig config = hipguard::config_from(
        [](const char* name) -> const char* { return getenv(name); }, getauxval(AT_SECURE) != 0, names);
    runtime_version(config);
    return Guard::init(std::move(config));
  }();
  return g;
}

// Logs the line `message()` builds: building it may throw too.
template <class Message>
void log_line(const char* level, Message message) {
  guarded([&] { guard().log(level, message()); });
}

// ---------------------------------------------------------------- the real runtime

// The loaded libamdhip64, found even when the application does not link it
// and a HIP library was dlopen'ed RTLD_LOCAL (dlsym(RTLD_NEXT) is NULL then).
// Allocates nothing: it runs outside guarded().
void* find_runtime_handle() {
  const char* path = nullptr;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (info->dlpi_name && strstr(info->dlpi_name, "libamdhip64.so")) {
          *static_cast<const char**>(data) = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &path);
  if (path) return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
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
      log_line("debug", [&] { return std::string("forwarding ") + name + " to " + info.dli_fname; });
  } else if (!optional) {
    if (void* h = find_runtime_handle()) {
      // Loaded, but older than the function (e.g. ROCm 5.2 and a HIP 7 entry
      // point a program looked up by name): the wrapper answers hipErrorNotSupported.
      dlclose(h);
      log_line("debug", [&] { return std::string("the loaded HIP runtime has no ") + name + "@" + version; });
    } else {
      log_line("error", [&] {
        return std::string("cannot find the HIP runtime's ") + name + "@" + version + "; is libamdhip64 loaded?";
      });
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

// The table's lines: an index each, a cached runtime pointer each.
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
constexpr ApiEntry kApis[] = {
#define HG_API(sym, node, ...) {#sym, #node},
#define HG_SKIP(...)
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
};
static_assert(sizeof kApis / sizeof kApis[0] == kApiCount);

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

// The runtime's function for `api`, cached; a miss is retried (the runtime may be dlopen'ed later).
template <class Fn>
Fn real(Api api) {
  void* p = g_slots[api].load(std::memory_order_acquire);
  if (__builtin_expect(!p, 0)) {
    Api other = other_spelling(api);
    p = resolve(kApis[api].name, kApis[api].node, /*optional=*/other != kApiCount);
    if (!p && other != kApiCount) p = resolve(kApis[other].name, kApis[other].node);
    if (p) g_slots[api].store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

// ---------------------------------------------------------------- helpers of the hooks

// _exit, not exit: the program's own atexit handlers and destructors must not
// run half-initialised. The report (HIPGUARD_REPORT) is the one thing written first.
[[noreturn]] void strict_exit() {
  guarded([] { guard().write_report(); });
  _exit(guarded(hipguard::kDefaultExitCode, [] { return guard().config().exit_code; }));
}

// The exit status of a process that saw errors and exits with 0 (strict mode,
// HIPGUARD_FAIL_ON): registered before the program's own exit handlers, so it runs after them.
__attribute__((constructor)) void install_exit_status() {
  guarded([] { hipguard::install_exit_status_handler(); });
}

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

// A launch the fast path did not let through: the guard decides.
Decision launch_decision(const void* key, uint64_t dynamic_lds, const char* api, int device = -1) {
  if (!hipguard::launch_needs_check(dynamic_lds)) return {};
  provide_probe_functions();
  return guard().on_launch(key, dynamic_lds, api, device);
}

// The HIP device of a multi-device launch entry (its stream's: CLR rejects null streams there), or -1.
std::atomic<void*> g_stream_get_device;
int stream_device(hipStream_t stream) {
  using Fn = hipError_t (*)(hipStream_t, int*);
  if (!stream) return -1;
  void* p = g_stream_get_device.load(std::memory_order_acquire);
  if (!p) {
    p = resolve("hipStreamGetDevice", "hip_4.2", /*optional=*/true);
    if (!p) return -1;
    g_stream_get_device.store(p, std::memory_order_release);
  }
  int device = -1;
  return reinterpret_cast<Fn>(p)(stream, &device) == kHipSuccess ? device : -1;
}

// hipLaunchByPtr launches what the last hipConfigureCall configured (CLR
// PlatformState::popExec): that call's dynamic LDS, per thread.
thread_local std::vector<size_t> t_configured_lds;

// CLR's hipGetProcAddress / hipGetDriverEntryPoint(_spt) dlsym the runtime's
// own handle (appending "_spt" for per-thread-stream requests), which hands out
// the runtime's functions and so bypasses an LD_PRELOAD shim. When the runtime
// found a function and it is one hipguard interposes, the caller gets the
// shim's wrapper instead: the same symbol, under the same version node.
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
  log_line("debug", [&] {
    return std::string(requested ? requested : "?") + ": handing out hipguard's " + api->name + " instead of the runtime's";
  });
  *pfn = mine;
}

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
    static const auto get_name = reinterpret_cast<GetName>(resolve("hipKernelGetName", "hip_7.2", /*optional=*/true));
    if (!get_name) return;
    for (unsigned int i = 0; i < n; ++i) {
      const char* name = nullptr;
      if (kernels[i] && get_name(&name, kernels[i]) == kHipSuccess && name)
        guard().on_module_get_function(library, name, kernels[i], r, api);
    }
  }
};

// hipGetFuncBySymbol: its hipFunction_t gets the kernel's facts (module launches take it); a failure is explained.
struct FuncBySymbol : Hook {
  hipFunction_t* out;
  const void* symbol;
  FuncBySymbol(hipFunction_t* o, const void* s) : out(o), symbol(s) {}
  void after(hipError_t r) const { guard().on_get_func_by_symbol(symbol, r, r == kHipSuccess && out ? *out : nullptr); }
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

// A launch strict mode refused never reached the runtime: reported here, once
// (hipGetLastError clears it, hipPeekAtLastError does not). hipExtGetLastError
// reads CLR's other slot (the last call's result), which has its own copy.
struct LastError : Hook {
  bool clear;
  bool command;
  explicit LastError(bool c, bool cmd = false) : clear(c), command(cmd) {}
  void after(hipError_t& r) const {  // the runtime's call also clears its own state
    if (command) {
      if (int refused = hipguard::refused_launch_command_error(clear)) r = refused;
      return;
    }
    int restored = hipguard::restored_last_error(clear);
    if (int refused = hipguard::refused_launch_error(clear)) r = refused;
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
#define HG_API(sym, node, kind, ret, params, args, shape)                                        \
  extern "C" ret sym params;                                                                     \
  __attribute__((noinline)) static ret sym##_slow params {                                       \
    using Fn = ret(*) params;                                                                    \
    return run<Fn>(api_##sym, hook::shape, [&](Fn fn) { return fn args; });                      \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) ret sym params {                             \
    if constexpr (decltype(hook::shape)::fast_path) {                                            \
      void* p = g_slots[api_##sym].load(std::memory_order_acquire);                              \
      if (__builtin_expect(p != nullptr && hook::shape.clean(), 1))                              \
        return reinterpret_cast<decltype(&sym)>(p) args;                                         \
    }                                                                                            \
    return sym##_slow args;                                                                      \
  }
#define HG_SKIP(...)
#include "hip_api.def"
#undef HG_SKIP
#undef HG_API
#undef dim3
