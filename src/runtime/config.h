// The guard's settings: HIPGUARD_* parsed once into a GuardConfig (config.cpp)
// from a lookup its caller gives (the shim passes getenv); nothing here reads
// the environment itself.
//
// The variables, what each accepts and what holds without it: include/hipguard/settings.def; what
// each means: the README's table. Values are case-insensitive and an empty value counts as unset; a
// value that is not accepted is an error (HG601, HG206) and hipguard takes the stricter choice (see
// config_from). HSA_TOOLS_LIB is read only to say when it loads the HotSwap tool (HG210). In a
// setuid/setgid (AT_SECURE) process HIPGUARD_REPORT and HIPGUARD_SYSFS_ROOT are ignored: the
// environment chooses no file to write or read.
#pragma once

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
  // The HIP runtime (the shim sets it from the loaded libamdhip64's file name;
  // null: the newest, default_runtime()) and whether `targets` are this
  // process's GPUs: true for the KFD's GPUs and for HIPGUARD_TARGET entries that
  // each name one configuration (gfx90a:xnack+,gfx90a:xnack-); false when an
  // entry stands for several alternatives (gfx906: MI50 sramecc+ or Radeon VII sramecc-).
  Machine machine;
  std::string runtime_source;  // where machine.runtime comes from (the library's file name), for the log
  // HIP device index -> index into `targets`, or -1: known when the targets are
  // the machine's GPUs (KFD discovery), empty with HIPGUARD_TARGET.
  std::vector<int> device_targets;
  std::string report_path;  // HIPGUARD_REPORT as given ("%p" expanded at write time); empty: none
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

// The configuration from `env`, validated: names and values are matched
// case-insensitively; a value that is not accepted adds an error (HG601, or
// HG206 for a HIPGUARD_TARGET item) that names the variable, the value and what
// is accepted, and the stricter choice is taken (an unknown mode is strict, an
// unusable exit code keeps 86). When HIPGUARD_TARGET is unset the GPUs come from
// the KFD topology under HIPGUARD_SYSFS_ROOT (or /sys), seen through the
// runtime variables `env` gives (discover_devices). `secure` (AT_SECURE):
// HIPGUARD_REPORT and HIPGUARD_SYSFS_ROOT are ignored. `names`: the names of
// the environment's variables that start with HIPGUARD_ in any case; one that
// is a misspelling of a hipguard variable (another case, or at most two edits
// away, e.g. HIPGUARD_MDOE) is an HG601 too, and one meant as HIPGUARD_MODE
// makes the mode strict when HIPGUARD_MODE itself is unset.
GuardConfig config_from(const EnvLookup& env, bool secure, const std::vector<std::string>& names = {});

}  // namespace hipguard
