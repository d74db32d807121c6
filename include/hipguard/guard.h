// The in-process side of hipguard: configuration from the environment, the
// targets to check against, logging, and the decision for each registration,
// module load, lookup and launch. interpose/ only translates HIP calls into
// these calls.
//
// Environment (values are case-insensitive; an empty value counts as unset; a
// value that is not accepted is an error (HG601, HG206) and hipguard takes the
// stricter choice, see config_from):
//   HIPGUARD_MODE       warn (default: log each problem once, forward unchanged)
//                       | strict (refuse bad modules and launches; end the
//                       process on a bad fat binary) | off (forward, no checks)
//   HIPGUARD_TARGET     comma-separated target IDs or product names; overrides
//                       the GPUs found in the KFD topology
//   HIPGUARD_EXIT_CODE  1..255: exit status of a strict-mode stop, and of a
//                       process that saw an error and exited 0 (default 86)
//   HIPGUARD_FAIL_ON    error | warning | none: which findings make a process
//                       that exits 0 exit with HIPGUARD_EXIT_CODE instead
//                       (default: error in strict mode, none in warn mode;
//                       never weaker than strict mode's "error")
//   HIPGUARD_LOG_LEVEL  trace|debug|info|warn|error|off, or AMD_LOG_LEVEL's
//                       numbers 0 (off) 1 (error) 2 (warn) 3 (info) 4 (debug)
//                       5 (trace) (default info)
//   HIPGUARD_REPORT     file written at exit: JSON, or JUnit XML when it ends
//                       in .xml; "%p" becomes the process ID
//   HIPGUARD_SYSFS_ROOT sysfs root for GPU discovery (tests; default /sys)
//   HSA_TOOLS_LIB       read only to say when it loads the HotSwap tool (HG210)
// In a setuid/setgid (AT_SECURE) process HIPGUARD_REPORT and
// HIPGUARD_SYSFS_ROOT are ignored: the environment chooses no file to write or read.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/devices.h"

namespace hipguard {

enum class Mode { Off, Warn, Strict };

// spdlog's numbering (its "critical", 5, is not used).
enum class LogLevel : int { Trace = 0, Debug = 1, Info = 2, Warn = 3, Error = 4, Off = 6 };

inline constexpr int kDefaultExitCode = 86;

struct GuardConfig {
  Mode mode = Mode::Warn;
  int exit_code = kDefaultExitCode;
  // The least severe finding that makes a process exiting with 0 exit with
  // exit_code instead (HIPGUARD_FAIL_ON; strict mode: at least Error). None: never.
  std::optional<Severity> fail_on;
  LogLevel log_level = LogLevel::Info;
  std::vector<TargetId> targets;  // empty: structural checks only
  std::string target_source;      // "HIPGUARD_TARGET", "GPU 0 (KFD node 1)", ...
  // HIP device index -> index into `targets`, or -1: known when the targets are
  // the machine's GPUs (KFD discovery), empty with HIPGUARD_TARGET.
  std::vector<int> device_targets;
  std::string report_path;        // HIPGUARD_REPORT as given ("%p" expanded at write time); empty: none
  // The HotSwap tool HSA_TOOLS_LIB names (libhsa-hotswap.so, libamd_comgr_hotswap_tool.so); empty: none.
  std::string hotswap_tool;
  // HG601 / HG206 (errors), HG204 (note): logged once at first use.
  std::vector<Diagnostic> setup_diagnostics;
  // Some HIPGUARD_* value was refused (an error among setup_diagnostics). Strict
  // mode then stops the process at its first fat binary or module, rather than
  // run it checked less than asked.
  bool config_error = false;

  bool fails_on(Severity s) const { return fail_on && s >= *fail_on; }
};

// A name -> value lookup such as getenv (nullptr: unset).
using EnvLookup = std::function<const char*(const char*)>;

// The configuration from `env`, validated: names and values are matched
// case-insensitively; a value that is not accepted adds an error (HG601, or
// HG206 for a HIPGUARD_TARGET item) that names the variable, the value and what
// is accepted, and the stricter choice is taken (an unknown mode is strict, an
// unusable exit code keeps 86). When HIPGUARD_TARGET is unset the GPUs come from
// the KFD topology under HIPGUARD_SYSFS_ROOT (or /sys). `secure` (AT_SECURE):
// HIPGUARD_REPORT and HIPGUARD_SYSFS_ROOT are ignored. `names`: the names of
// the environment's variables that start with HIPGUARD_ in any case; one that
// is a misspelling of a hipguard variable (another case, or at most two edits
// away, e.g. HIPGUARD_MDOE) is an HG601 too, and one meant as HIPGUARD_MODE
// makes the mode strict when HIPGUARD_MODE itself is unset.
GuardConfig config_from(const EnvLookup& env, bool secure, const std::vector<std::string>& names = {});

// config_from(getenv, AT_SECURE).
GuardConfig config_from_env();

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

// Bytes readable from `p` onwards in this process, capped at `cap`: to the end
// of the loaded object's readable segment holding `p`, else per /proc/self/maps
// (contiguous readable mappings). 0 when `p` is not mapped readable. Used
// before touching memory a HIP call hands us.
uint64_t readable_extent(const void* p, uint64_t cap);

enum class Action {
  Forward,  // call the real runtime
  Refuse,   // strict: return an error without calling the runtime
  Exit,     // strict: end the process with GuardConfig::exit_code
};

struct Verdict {
  Action action = Action::Forward;
  int hip_error = 0;  // hipError_t to return when refusing
};

// Non-zero while launches need the slow path: a registered kernel has
// findings, or the registration probe has not run yet. The shim's launch
// wrappers test this (and the dynamic LDS size) before anything else, so
// kernels without findings cost one load and a compare: no lock, no allocation.
extern std::atomic<unsigned> g_launch_gate;
inline bool launch_needs_check(uint64_t dynamic_lds_bytes) {
  return dynamic_lds_bytes != 0 || g_launch_gate.load(std::memory_order_relaxed) != 0;
}

// launch_known_clean(key, dynamic_lds) (src/kernel_table.h): the per-kernel
// fast path, when launch_needs_check() said yes: the kernel behind `key` (host
// function or hipFunction_t) was checked in full, probed, has no finding, and
// `dynamic_lds` fits every target. Lock-free (a table lookup and two loads);
// false means "take the slow path" (unknown kernel, pending check or probe,
// findings, too much LDS).

// A strict-mode refusal bypasses the runtime, so its last-error state never
// sees it; hipGetLastError / hipPeekAtLastError report it instead (per thread,
// like HIP's own last error). 0 when there is none.
int refused_launch_error(bool clear);
void note_refused_launch(int hip_error);
// The registration probe's failed lookups would stay in a runtime's sticky
// last-error state (HIP 6.x), where the program would read them as its own: the
// probe drains them and keeps the error the program had before, which
// hipGetLastError / hipPeekAtLastError report while the runtime has none newer.
int restored_last_error(bool clear);

// Real runtime entry points the probe needs (resolved by the shim).
struct ProbeFunctions {
  int (*get_func_by_symbol)(void** function, const void* symbol) = nullptr;  // hip_6.2, may be absent
  int (*func_get_attributes)(void* attr, const void* func) = nullptr;        // hip_4.2
  int (*get_last_error)() = nullptr;                                         // hip_4.2
  int (*peek_at_last_error)() = nullptr;                                     // hip_4.2
};

class Guard {
 public:
  // The process-wide guard; configuration is read on first use, so processes
  // that never call HIP never read the environment or print anything.
  static Guard& get();

  const GuardConfig& config();

  // __hipRegisterFatBinary(wrapper), then its result. `wrapper` is untrusted memory.
  Verdict on_register_fatbin(const void* wrapper);
  void on_registered_fatbin(const void* handle);
  // __hipRegisterFunction(handle, host_function, device_name). Strict mode may
  // stop here: a kernel missing from the selected code object (HG409).
  Verdict on_register_function(const void* handle, const void* host_function, const char* device_name);
  void on_unregister_fatbin(const void* handle);

  // hipModuleLoad(path) / hipModuleLoadData(Ex)(image) / hipModuleLoadFatBinary /
  // hipLibraryLoadData / hipLibraryLoadFromFile, then the loaded module (or
  // library: its handle is the key, like a module's). `api` names the call in messages.
  Verdict on_module_load_file(const char* path);
  Verdict on_module_load_data(const void* image, const char* api = "hipModuleLoadData");
  void on_module_loaded(const void* module);
  void on_module_unloaded(const void* module);
  // hipModuleGetFunction / hipLibraryGetKernel: before (strict may refuse a
  // device function) and after.
  Verdict before_module_get_function(const void* module, const char* name, const char* api = "hipModuleGetFunction");
  void on_module_get_function(const void* module, const char* name, const void* function, int result,
                              const char* api = "hipModuleGetFunction");
  // hipGetFuncBySymbol returned `result` for `host_function`.
  void on_get_func_by_symbol(const void* host_function, int result);

  // A launch of `key` (host function for hipLaunchKernel*, hipFunction_t for
  // module launches) with `dynamic_lds` bytes of dynamic LDS. Called only when
  // launch_needs_check() said so. `api` names the entry point for messages.
  Verdict on_launch(const void* key, uint64_t dynamic_lds, const char* api);
  // The same for a launch on HIP device `device` (multi-device launches): its
  // dynamic LDS is checked against that device's limit when the device's
  // target is known (GuardConfig::device_targets), else against the smallest.
  Verdict on_launch(const void* key, uint64_t dynamic_lds, const char* api, int device);
  void set_probe_functions(const ProbeFunctions& f);

  // Logs one line at `level` ("info", "warn", "error", "debug"), prefixed "hipguard: ".
  void log(std::string_view level, const std::string& line);

  // Writes the HIPGUARD_REPORT file now (also done at exit).
  void write_report();

  // The process is exiting with `status` (install_exit_status_handler): with
  // status 0 and findings at or above config().fail_on, logs HG602, writes the
  // report and ends the process with config().exit_code.
  void on_process_exit(int status);

 private:
  Guard() = default;
  struct State;
  State& state();
  Verdict judge(const ImageReport& report, bool registration);
  void open_report(State& s);
  void journal(State& s, const Diagnostic& d);
  void before_fork();
  void after_fork(bool child);
  [[noreturn]] void stop_for_settings();
  void report_once(const Diagnostic& d);
  // One cause, one line: a runtime event (HG501/HG502/HG503) caused by `cause`
  // is logged only when `cause` was not said already; otherwise it goes to the
  // debug log and into the report's run.consequences.
  void report_consequence(const Diagnostic& d, const Diagnostic* cause);
  static constexpr size_t kMaxConsequences = 1000;
  void run_probe(const void* fatbin_handle);  // probes the kernels of one fat binary, once
  void deepen(const void* fatbin_handle);  // full check of a fat binary registered with selection only
  // Registered kernels enter the kernel table lazily (the first launch, lookup or report).
  void index_if_needed();
  void index_pending_kernels();                   // state mutex held
  void index_kernels_of(const void* fatbin_handle);  // state mutex held
};

// hipError_t values used when refusing (hip_runtime_api.h).
inline constexpr int kHipErrorInvalidValue = 1;
inline constexpr int kHipErrorInvalidConfiguration = 9;
inline constexpr int kHipErrorInvalidDeviceFunction = 98;
inline constexpr int kHipErrorInvalidImage = 200;
inline constexpr int kHipErrorNoBinaryForGpu = 209;
inline constexpr int kHipErrorNotFound = 500;

}  // namespace hipguard
