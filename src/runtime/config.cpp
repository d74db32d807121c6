// HIPGUARD_* settings: parsed and validated into a GuardConfig (config.h).
#include "runtime/guard.h"
#include "runtime/address.h"
#include "base/edit_distance.h"

#include <llvm/ADT/StringRef.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace hipguard {

namespace {

constexpr const char* kVariables[] = {"HIPGUARD_MODE",      "HIPGUARD_TARGET", "HIPGUARD_EXIT_CODE",
                                      "HIPGUARD_FAIL_ON",   "HIPGUARD_LOG_LEVEL", "HIPGUARD_REPORT",
                                      "HIPGUARD_SYSFS_ROOT", "HIPGUARD_SHIM"};
}  // namespace

GuardConfig config_from(const EnvLookup& env, bool secure, const std::vector<std::string>& names) {
  GuardConfig c;
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";  // empty counts as unset
  };
  auto setup = [&](std::string_view code, std::string msg, std::string fix) {
    Diagnostic d = make_diagnostic(code, self_exe(), std::move(msg), std::move(fix));
    if (d.severity == Severity::Error) c.config_error = true;
    c.setup_diagnostics.push_back(std::move(d));
  };
  // One line naming the variable, the value, what is accepted and what hipguard does instead.
  auto refuse = [&](const char* name, const std::string& value, const std::string& accepted, const std::string& instead) {
    setup(code::kBadSetting, std::string(name) + "='" + value + "' is not accepted (accepted: " + accepted + "): " + instead,
          "set " + std::string(name) + " to one of: " + accepted);
  };

  // Misspelled variable names: said, never silently ignored.
  bool misspelled_mode = false;
  for (const auto& name : names) {
    std::string upper = name;
    for (char& ch : upper) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
    const char* meant = nullptr;
    bool known = false;
    for (const char* v : kVariables) {
      if (name == v) known = true;
      else if (!meant && (upper == v || edit_distance(upper, v) <= 2)) meant = v;
    }
    if (known || !meant) continue;  // HIPGUARD_SIM_GPUS and the like belong to others
    bool mode_var = std::string_view(meant) == "HIPGUARD_MODE" && !env("HIPGUARD_MODE");
    misspelled_mode = misspelled_mode || mode_var;
    setup(code::kBadSetting,
          name + " is not a hipguard variable (did you mean " + meant + "?): ignored" +
              (mode_var ? "; running in strict mode" : ""),
          "rename it to " + std::string(meant) + " (variable names are case-sensitive)");
  }

  std::string mode = llvm::StringRef(get("HIPGUARD_MODE")).lower();
  if (mode.empty() || mode == "warn") c.mode = Mode::Warn;
  else if (mode == "strict") c.mode = Mode::Strict;
  else if (mode == "off") c.mode = Mode::Off;
  else {
    c.mode = Mode::Strict;  // fail closed: a CI job that asked for something asked for checking
    refuse("HIPGUARD_MODE", get("HIPGUARD_MODE"), "warn, strict, off (any case)", "running in strict mode");
  }
  if (misspelled_mode) c.mode = Mode::Strict;

  if (std::string e = get("HIPGUARD_EXIT_CODE"); !e.empty()) {
    char* end = nullptr;
    errno = 0;
    long v = strtol(e.c_str(), &end, 10);
    bool number = end && end != e.c_str() && *end == 0 && errno == 0 && isdigit(static_cast<unsigned char>(e[0]));
    if (number && v >= 1 && v <= 255) c.exit_code = static_cast<int>(v);
    else
      refuse("HIPGUARD_EXIT_CODE", e, "a decimal exit status from 1 to 255",
             std::string(number && v == 0 ? "0 would let a failing process pass; " : "") + "using exit status " +
                 std::to_string(kDefaultExitCode));
  }

  if (c.mode == Mode::Strict) c.fail_on = Severity::Error;
  if (std::string f = llvm::StringRef(get("HIPGUARD_FAIL_ON")).lower(); !f.empty()) {
    if (f == "error") c.fail_on = Severity::Error;
    else if (f == "warning" || f == "warn") c.fail_on = Severity::Warning;
    else if (f == "none") {
      // Never weaker than strict mode.
    } else {
      c.fail_on = Severity::Warning;  // the stricter choice
      refuse("HIPGUARD_FAIL_ON", get("HIPGUARD_FAIL_ON"), "error, warning, none (any case)",
             "failing the exit status on warnings and errors");
    }
  }

  if (c.mode == Mode::Off) c.fail_on.reset();  // off changes nothing, not even the exit status

  if (std::string l = llvm::StringRef(get("HIPGUARD_LOG_LEVEL")).lower(); !l.empty()) {
    static const std::pair<const char*, LogLevel> kLevels[] = {
        {"trace", LogLevel::Trace}, {"debug", LogLevel::Debug}, {"info", LogLevel::Info},
        {"warn", LogLevel::Warn},   {"warning", LogLevel::Warn}, {"error", LogLevel::Error},
        {"err", LogLevel::Error},   {"off", LogLevel::Off},      {"none", LogLevel::Off},
        // AMD_LOG_LEVEL's numbers (CLR: 0 none, 1 error, 2 warning, 3 info, 4 debug, 5 extra debug).
        {"0", LogLevel::Off},       {"1", LogLevel::Error},      {"2", LogLevel::Warn},
        {"3", LogLevel::Info},      {"4", LogLevel::Debug},      {"5", LogLevel::Trace}};
    bool found = false;
    for (const auto& [name, level] : kLevels)
      if (l == name) c.log_level = level, found = true;
    if (!found)
      refuse("HIPGUARD_LOG_LEVEL", get("HIPGUARD_LOG_LEVEL"),
             "trace, debug, info, warn, error, off (any case), or AMD_LOG_LEVEL's 0 (off) to 5 (trace)",
             "logging at info");
  }

  // A setuid/setgid process must not write files chosen by its environment.
  if (std::string report = get("HIPGUARD_REPORT"); !report.empty() && !secure) {
    c.report_path = report;  // "%p" is expanded when the report is written: a forked child has its own pid
  }

  // HSA_TOOLS_LIB: a space-separated list of tool libraries ROCr loads.
  for (const char* tool : {"libhsa-hotswap.so", "libamd_comgr_hotswap_tool.so"})
    if (std::string tools = get("HSA_TOOLS_LIB"); c.hotswap_tool.empty() && tools.find(tool) != std::string::npos)
      c.hotswap_tool = tool;

  std::string targets = get("HIPGUARD_TARGET");
  if (!targets.empty()) {
    size_t pos = 0;
    c.machine.one_process = true;
    while (pos <= targets.size()) {
      size_t comma = targets.find(',', pos);
      std::string item = targets.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? targets.size() + 1 : comma + 1;
      std::string err;
      if (item.empty()) err = "empty entry";
      else if (item.find_first_of(" \t;") != std::string::npos) err = "separate targets with ',' and no spaces";
      if (err.empty())
        if (auto ts = resolve_target(item, &err); !ts.empty()) {
          if (ts.size() > 1) c.machine.one_process = false;  // alternatives, not GPUs side by side
          c.targets.insert(c.targets.end(), ts.begin(), ts.end());
          continue;
        }
      setup(code::kBadTarget, "HIPGUARD_TARGET entry '" + item + "' is not a target: " + err,
            "use a comma-separated list of target IDs such as gfx942, gfx942:sramecc+:xnack- or product names such "
            "as mi300x");
    }
    c.target_source = "HIPGUARD_TARGET";
    if (c.targets.empty())
      setup(code::kDeviceChecksSkipped,
            "HIPGUARD_TARGET='" + targets + "' has no valid entry: device checks skipped, structural checks only" +
                (c.mode == Mode::Strict ? " (strict mode stops the program instead)" : ""),
            "set HIPGUARD_TARGET to valid targets (gfx942, mi300x, ...)");
  } else {
    // A setuid/setgid process reads the real sysfs only, not files its environment names.
    std::string sysfs = secure ? "/sys" : get("HIPGUARD_SYSFS_ROOT");
    if (sysfs.empty()) sysfs = "/sys";
    c.machine.one_process = true;
    for (const Device& d : discover_devices(sysfs, env)) {
      if (!find_processor(d.target.processor)) continue;
      TargetId t = d.target;
      t.alias = "GPU " + std::to_string(d.index);  // messages say which GPU a problem concerns
      if (d.index < 1024) {
        if (c.device_targets.size() <= static_cast<size_t>(d.index)) c.device_targets.resize(d.index + 1, -1);
        c.device_targets[d.index] = static_cast<int>(c.targets.size());
      }
      c.targets.push_back(t);
      c.target_source += (c.target_source.empty() ? "" : ", ") + ("GPU " + std::to_string(d.index) + " (KFD node " +
                                                                   std::to_string(d.node) + ")");
    }
    if (c.targets.empty())
      setup(code::kDeviceChecksSkipped,
            "no AMD GPU found and HIPGUARD_TARGET not set: device checks skipped, structural checks only",
            "set HIPGUARD_TARGET=gfx942 (or mi300x, mi355x, ...) to check against a GPU this machine lacks");
  }
  return c;
}

}  // namespace hipguard
