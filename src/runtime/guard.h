// The in-process guard (internal: the shim, `hipguard run` and the tests use
// it): the decision for each registration, module load, lookup and launch,
// and the protocol between it and interpose/ (the launch gate, the probe's
// runtime functions, what a refusal means for the thread's last error). interpose/ only translates
// HIP calls into these calls. Settings: config.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/devices.h"
#include "hipguard/owned_mutex.h"
#include "runtime/address.h"
#include "runtime/config.h"
#include "runtime/kernel_table.h"

namespace hipguard {

struct FileReport;  // hipguard/check_paths.h
struct RunInfo;     // hipguard/report.h

// HG210: the fat binary `report` holds a gfx1250 entry that CLR's HotSwap
// forwarding (HSA_TOOLS_LIB naming `tool`) hands to the tool instead of loading
// the code object selected for a gfx942 / gfx950 target. Empty when `tool` is.
std::vector<Diagnostic> hotswap_forwarding(const ImageReport& report, const std::vector<TargetId>& targets,
                                           const std::string& tool);

// Called once from the shim's constructor: registers the on_exit handler that
// gives a process which saw a finding at or above GuardConfig::fail_on and
// exits with status 0 the status exit_code instead (HG602), by way of the process's guard
// (exit_status.cpp). The handler does nothing in a process that never called HIP.
void install_exit_status_handler();

enum class Action {
  Forward,  // call the real runtime
  Refuse,   // strict: return an error without calling the runtime
  Exit,     // strict: end the process with GuardConfig::exit_code
};

// What the shim does with one HIP call (a check's per-target result is a
// TargetVerdict, check.h).
struct Decision {
  Action action = Action::Forward;
  int hip_error = 0;  // hipError_t to return when refusing
  // HIP's last error is per thread, and the shim keeps hipguard's part of it (interpose/shim.cpp,
  // the LastError hook), from these two. A strict-mode refusal of a launch, or of a call that
  // builds a kernel, bypasses the runtime, so its last-error state never sees it:
  // hipGetLastError / hipPeekAtLastError (and hipExtGetLastError, which reads CLR's other
  // per-thread slot) report it instead.
  bool sets_last_error = false;  // hip_error is this thread's last error now
  // The registration probe's failed lookups would stay in a runtime's sticky last-error state (HIP
  // 6.x), where the program would read them as its own: the probe drains them and hands back the
  // error the program had before (0: none), which hipGetLastError / hipPeekAtLastError report
  // while the runtime has none newer.
  int restored_error = 0;
};

// Non-zero while launches need the slow path: a registered kernel has
// findings, or the registration probe has not run yet. The shim's launch
// wrappers test this (and the dynamic LDS size) before anything else, so
// kernels without findings cost one load and a compare: no lock, no allocation.
extern std::atomic<unsigned> g_launch_gate;
// Its bits:
constexpr unsigned kGateProbe = 1;     // some fat binary's kernels are not probed yet
constexpr unsigned kGateFindings = 2;  // some registered kernel has findings
constexpr unsigned kGateNotCheckedInFull =
    4;                                  // some fat binary is checked to selection only (first use checks it in full)
constexpr unsigned kGateUnindexed = 8;  // some registered kernels are not in the kernel table yet
inline bool launch_needs_check(uint64_t dynamic_lds_bytes) {
  return dynamic_lds_bytes != 0 || g_launch_gate.load(std::memory_order_relaxed) != 0;
}

// launch_known_clean(key, dynamic_lds) (runtime/kernel_table.h): the
// per-kernel fast path: the kernel behind `key` (host
// function or hipFunction_t) was checked in full, probed, has no finding, and
// `dynamic_lds` fits every target. Lock-free: one slot of the launch cache and
// three loads; false means "take the slow path" (unknown kernel, not launched
// yet, another kernel in its cache slot, not checked in full or not probed, findings, too
// much LDS), which decides and remembers a clean kernel for next time.

// The launch wrappers' test: forward without asking the guard. The launch
// cache first, so that a kernel launched clean before costs the same whatever
// else is registered (docs/performance.md, P3b); then the process-wide gate,
// for kernels not in the cache yet.
inline bool launch_may_skip_guard(const void* key, uint64_t dynamic_lds_bytes) noexcept {
  return launch_known_clean(key, dynamic_lds_bytes) || !launch_needs_check(dynamic_lds_bytes);
}

// The runtime's entry points the probe needs, resolved by the shim from hip_api.def's lines; null
// when the runtime lacks one.
struct ProbeFunctions {
  int (*get_func_by_symbol)(void** function, const void* symbol) = nullptr;  // hipGetFuncBySymbol
  int (*func_get_attributes)(void* attr, const void* func) = nullptr;        // hipFuncGetAttributes
  int (*get_last_error)() = nullptr;                                         // hipGetLastError
  int (*peek_at_last_error)() = nullptr;                                     // hipPeekAtLastError
};

// Runs f(); an exception (std::bad_alloc included) becomes `fallback`. Every
// way into the guard from outside C++ (the shim's wrappers, the exit and fork
// handlers) goes through it: hipguard is never the reason a program ends.
// (Guard's deciding and recording methods also catch their own failures and
// answer Forward, for callers inside C++; config(), log(), said() and set_probe_functions() may throw.) In a
// child whose fork left hipguard's locks unusable (OwnedMutex::unclean_fork),
// f is not run: `fallback`.
template <class T, class F>
T guarded(T fallback, F&& f) noexcept {
  if (OwnedMutex::unclean_fork()) return fallback;
  try {
    return f();
  } catch (...) {
    return fallback;
  }
}
template <class F>
void guarded(F&& f) noexcept {
  if (OwnedMutex::unclean_fork()) return;
  try {
    f();
  } catch (...) {
  }
}
// The fork handlers' way in: run in an unclean child too, where they keep
// their per-depth records and take no lock (events::before_fork).
template <class F>
void fork_guarded(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

// What a registration or a module load learned before the runtime's call:
// the shim's hook carries it to the guard's call after it (on_registered_fatbin,
// on_module_loaded). Defined in registry.h.
struct PendingFatbin;
struct ModuleInfo;
struct KernelState;
struct PendingDelete {
  void operator()(PendingFatbin* p) const noexcept;
  void operator()(ModuleInfo* p) const noexcept;
};
using PendingFatbinPtr = std::unique_ptr<PendingFatbin, PendingDelete>;
using PendingModulePtr = std::unique_ptr<ModuleInfo, PendingDelete>;

struct GuardState;  // state.h

// A thin facade: each call goes to one event handler (events.h, one concern per file) with the
// parts of the guard's state it needs (state.h: the settings, Reporting, Kernels, the selection
// memo and the mapped files; guard.cpp alone holds them all).
class Guard {
 public:
  // The process's guard, the shim's. It reads no environment: its
  // configuration is passed in (init) by whoever embeds it: the shim builds it
  // from the environment, the tests directly. It keeps the process-wide launch
  // gate and cache that the shim's launch wrappers read, writes its report at
  // exit and follows fork.
  static Guard& get();
  // Sets the configuration of the process's guard, whose state is built at its
  // first use (so processes that never call HIP print nothing). The first call
  // wins; a call after the state exists changes nothing; without a call, the
  // state uses GuardConfig's defaults. Returns get().
  static Guard& init(GuardConfig config);
  // A guard of its own on `config`, beside the process's (tests build several,
  // each on its own settings): its own registrations, kernel table, findings
  // and launch gate. Nothing reads its gate but itself, it installs no exit or
  // fork handler, and it writes its report (config.report_path) when
  // write_report() is called and when it is destroyed. It shares no state with
  // another guard (but the lock of hipguard's lines on stderr and the process's unclean-fork
  // flag): what a refusal
  // means for a thread's last error is in its Decision, for whoever keeps that
  // thread's last error (the shim).
  explicit Guard(GuardConfig config);
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  const GuardConfig& config();

  // __hipRegisterFatBinary(wrapper), then its result. `wrapper` is untrusted
  // memory. The check goes from the first call to the second in `pending`.
  Decision on_register_fatbin(const void* wrapper, PendingFatbinPtr& pending);
  void on_registered_fatbin(const void* handle, PendingFatbinPtr pending);
  // __hipRegisterFunction(handle, host_function, device_name): only recorded (the kernel is
  // judged at its first use; a kernel missing from the selected code object, HG409, is refused then).
  Decision on_register_function(const void* handle, const void* host_function, const char* device_name);
  void on_unregister_fatbin(const void* handle);

  // hipModuleLoad(path) / hipModuleLoadData(Ex)(image) / hipModuleLoadFatBinary /
  // hipLibraryLoadData / hipLibraryLoadFromFile, then the loaded module (or
  // library: its handle is the key, like a module's), the check going from
  // one call to the other in `pending`. `api` names the call in messages.
  Decision on_module_load_file(const char* path, PendingModulePtr& pending);
  Decision on_module_load_data(const void* image, PendingModulePtr& pending, const char* api = "hipModuleLoadData");
  void on_module_loaded(const void* module, PendingModulePtr pending);
  void on_module_unloaded(const void* module);
  // hipModuleGetFunction / hipLibraryGetKernel: before (strict may refuse a
  // device function) and after.
  Decision before_module_get_function(const void* module, const char* name, const char* api = "hipModuleGetFunction");
  void on_module_get_function(const void* module, const char* name, const void* function, int result,
                              const char* api = "hipModuleGetFunction");
  // Before a call other than a launch that makes the runtime build `key`'s kernel (a host function or a
  // hipFunction_t): hipGetFuncBySymbol, hipFuncGetAttribute(s), hipFuncSetAttribute, hipOccupancy*,
  // hipModuleOccupancy*. Its fat binary is checked in full now (first use). A kernel that cannot run:
  // strict mode refuses the call with hipErrorInvalidDeviceFunction (HG503, the thread's last error:
  // Decision::sets_last_error); warn mode says HG503 once per kernel (with its launches) and forwards,
  // unless `say_in_warn` is false (hipGetFuncBySymbol: a failure is explained after the call).
  Decision before_kernel_call(const void* key, const char* api, bool say_in_warn = true);
  // hipGetFuncBySymbol returned `result` and `function` (its hipFunction_t,
  // or null) for `host_function`: module launches of `function` are checked
  // as launches of the registered kernel; a failure is explained.
  void on_get_func_by_symbol(const void* host_function, int result, const void* function = nullptr);

  // A launch of `key` (host function for hipLaunchKernel*, hipFunction_t for
  // module launches) with `dynamic_lds` bytes of dynamic LDS, on HIP device `device` (multi-device
  // launches; -1: not known). Called only when launch_needs_check() said so. `api` names the entry
  // point for messages. The dynamic LDS is checked against the device's limit when the device's
  // target is known (GuardConfig::device_targets), else against the smallest.
  Decision on_launch(const void* key, uint64_t dynamic_lds, const char* api, int device = -1);
  void set_probe_functions(const ProbeFunctions& f);

  // Logs one line at `level` ("info", "warn", "error", "debug"), prefixed "hipguard: ".
  void log(std::string_view level, const std::string& line);

  // The findings this guard has said (each once, in order; in a forked child, those said since the
  // fork), and the runtime events whose cause was said already (HG501/HG502/HG503 as consequences:
  // the report's "run", a debug line in the log). At most 4,096 findings are kept.
  struct Said {
    std::vector<Diagnostic> findings, consequences;
  };
  Said said();

  // Writes the HIPGUARD_REPORT file now (also done at exit).
  void write_report();

 private:
  Guard();                           // the process's (get())
  std::unique_ptr<GuardState> own_;  // a guard of its own: its state; the process's guard: null
};

// hipError_t values hipguard returns (when refusing, and from the shim when the
// runtime lacks a function) or reads (a runtime without a usable GPU):
// hip_runtime_api.h, hipError_t.
inline constexpr int kHipSuccess = 0;
inline constexpr int kHipErrorInvalidValue = 1;
inline constexpr int kHipErrorNotInitialized = 3;
inline constexpr int kHipErrorInvalidConfiguration = 9;
inline constexpr int kHipErrorInsufficientDriver = 35;
inline constexpr int kHipErrorNoDevice = 100;
inline constexpr int kHipErrorInvalidDevice = 101;
inline constexpr int kHipErrorInvalidDeviceFunction = 98;
inline constexpr int kHipErrorInvalidImage = 200;
inline constexpr int kHipErrorNoBinaryForGpu = 209;
inline constexpr int kHipErrorNotFound = 500;
inline constexpr int kHipErrorNotSupported = 801;

}  // namespace hipguard
