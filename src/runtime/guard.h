// The in-process guard (internal: the shim, `hipguard run` and the tests use
// it): the decision for each registration, module load, lookup and launch,
// and the protocol between it and interpose/ (the launch gate, the probe's
// runtime functions, the last-error bookkeeping). interpose/ only translates
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
// exits with status 0 the status exit_code instead (HG602). The handler does
// nothing in a process that never called HIP.
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

// A strict-mode refusal bypasses the runtime, so its last-error state never
// sees it; hipGetLastError / hipPeekAtLastError report it instead (per thread,
// like HIP's own last error). 0 when there is none.
int refused_launch_error(bool clear);
// The same for hipExtGetLastError, which reads CLR's other per-thread slot
// (tls.last_command_error_) and clears only that one.
int refused_launch_command_error(bool clear);
void note_refused_launch(int hip_error);
// The registration probe's failed lookups would stay in a runtime's sticky
// last-error state (HIP 6.x), where the program would read them as its own: the
// probe drains them and keeps the error the program had before, which
// hipGetLastError / hipPeekAtLastError report while the runtime has none newer.
int restored_last_error(bool clear);

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
// answer Forward, for callers inside C++; config() and log() may throw.) In a
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
// their per-depth records and take no lock (Guard::before_fork).
template <class F>
void fork_guarded(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

// What a registration or a module load learned before the runtime's call:
// the shim's hook carries it to the guard's call after it (on_registered_fatbin,
// on_module_loaded). Defined in state.h.
struct PendingFatbin;
struct ModuleInfo;
struct KernelState;
struct PendingDelete {
  void operator()(PendingFatbin* p) const noexcept;
  void operator()(ModuleInfo* p) const noexcept;
};
using PendingFatbinPtr = std::unique_ptr<PendingFatbin, PendingDelete>;
using PendingModulePtr = std::unique_ptr<ModuleInfo, PendingDelete>;

// Its members live one concern per file: guard.cpp (state, configuration,
// logging), registration.cpp, modules.cpp, launch_gate.cpp, probe.cpp,
// kernel_index.cpp, report_output.cpp, exit_status.cpp.
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
  // write_report() is called and when it is destroyed. What the runtime keeps
  // per thread stays per thread: a launch it refuses is what hipGetLastError
  // reports on that thread.
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
  // hipGetFuncBySymbol returned `result` and `function` (its hipFunction_t,
  // or null) for `host_function`: module launches of `function` are checked
  // as launches of the registered kernel; a failure is explained.
  // (Warn mode says nothing before it: a failure is explained after the call.)
  Decision before_get_func_by_symbol(const void* host_function) {
    return before_kernel_call(host_function, "hipGetFuncBySymbol", /*say_in_warn=*/false);
  }
  // Before a call other than a launch that makes the runtime build `key`'s kernel (a host function or a
  // hipFunction_t): hipGetFuncBySymbol, hipFuncGetAttribute(s), hipFuncSetAttribute, hipOccupancy*,
  // hipModuleOccupancy*. Its fat binary is checked in full now (first use). A kernel that cannot run:
  // strict mode refuses the call with hipErrorInvalidDeviceFunction (HG503, recorded for
  // hipGetLastError); warn mode says HG503 once per kernel (with its launches) and forwards.
  Decision before_kernel_call(const void* key, const char* api, bool say_in_warn = true);
  void on_get_func_by_symbol(const void* host_function, int result, const void* function = nullptr);

  // A launch of `key` (host function for hipLaunchKernel*, hipFunction_t for
  // module launches) with `dynamic_lds` bytes of dynamic LDS. Called only when
  // launch_needs_check() said so. `api` names the entry point for messages.
  Decision on_launch(const void* key, uint64_t dynamic_lds, const char* api);
  // The same for a launch on HIP device `device` (multi-device launches): its
  // dynamic LDS is checked against that device's limit when the device's
  // target is known (GuardConfig::device_targets), else against the smallest.
  Decision on_launch(const void* key, uint64_t dynamic_lds, const char* api, int device);
  void set_probe_functions(const ProbeFunctions& f);

  // Logs one line at `level` ("info", "warn", "error", "debug"), prefixed "hipguard: ".
  void log(std::string_view level, const std::string& line);
  bool logs_debug();  // debug lines are written: worth building

  // The findings this guard has said (each once, in order; in a forked child, those said since the
  // fork), and the runtime events whose cause was said already (HG501/HG502/HG503 as consequences:
  // the report's "run", a debug line in the log). At most 4,096 findings are kept.
  std::vector<Diagnostic> findings();
  std::vector<Diagnostic> consequences();

  // Writes the HIPGUARD_REPORT file now (also done at exit).
  void write_report();

  // The process is exiting with `status` (install_exit_status_handler): with
  // status 0 and findings at or above config().fail_on, logs HG602, writes the
  // report and ends the process with config().exit_code.
  void on_process_exit(int status);

 private:
  Guard();  // the process's (get())
  struct State;
  State& state();
  std::unique_ptr<State> own_;  // a guard of its own: its state; the process's guard: null
  // A new state's first steps, once its configuration is in: hipguard's lines
  // on stderr at the configured level, the report file opened when one is asked.
  void start(State& s);
  Decision judge(const ImageReport& report, bool registration);
  // The registration check of the readable fat binary `data` (of `wrapper`),
  // `head` a copy of its first bytes or empty; its read pages released.
  PendingFatbinPtr check_registration(const void* wrapper, Bytes data, Bytes head, const std::string& origin);
  // A copy of `data`'s first bytes (a bundle's table) read from the file it is
  // mapped from (MappedFiles::read), or empty: then read the memory.
  std::vector<uint8_t> head_from_file(Bytes data);
  // A fat binary's check stops the process: its report goes into the report file.
  void stopping_at(const ImageReport& report);
  void open_report(State& s);
  std::vector<FileReport> reported_files(State& s, RunInfo& run);  // state mutex held
  void add_run(State& s, RunInfo& run);                            // state mutex held
  void before_fork();
  void after_fork(bool child);
  void say_unclean_fork(State& s);
  [[noreturn]] void stop_for_settings();
  void report_once(const Diagnostic& d);
  // One cause, one line: a runtime event (HG501/HG502/HG503) caused by `cause`
  // is logged only when `cause` was not said already; otherwise it goes to the
  // debug log and into the report's run.consequences.
  void report_consequence(const Diagnostic& d, const Diagnostic* cause);
  void run_probe(const void* fatbin_handle);  // probes the kernels of one fat binary, once
  // A fat binary registered checked to selection only, checked in full: at its first use, where
  // its findings are said (and count for the exit status); for the report (`say` false), where they
  // are only listed: an unused kernel changes neither the log nor the exit status.
  void check_in_full(const void* fatbin_handle, bool say = true);
  bool for_the_report(const void* fatbin_handle);  // not in full, registered by this process, report not written
  // `key` indexed and its fat binary checked in full: its state, or null (a lookup's kernel).
  const KernelState* kernel_in_full(const void* key);
  // Registered kernels enter the kernel table lazily, a fat binary at a time
  // (the first launch or lookup of one of its kernels, or the report).
  void index_kernel(const void* key);                // the fat binary whose registration of `key` counts
  void index_kernels_of(const void* fatbin_handle);  // state mutex held
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
