// HIPGUARD_* settings: parsed and validated into a GuardConfig (config.h).
#include "runtime/guard.h"
#include "runtime/address.h"
#include "base/edit_distance.h"
#include "hipguard/settings.h"

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

// The settings read one by one into a GuardConfig; each finding about them becomes a setup diagnostic.
class ConfigReader {
 public:
  ConfigReader(const EnvLookup& env, bool secure) : env_(env), secure_(secure) {}

  GuardConfig read(const std::vector<std::string>& names) {
    bool misspelled_mode = misspelled(names);
    mode(misspelled_mode);
    exit_code();
    fail_on();
    log_level();
    heap();
    // A setuid/setgid process must not write files chosen by its environment.
    if (std::string report = get(Setting::Report); !report.empty() && !secure_)
      c_.report_path = report;  // "%p" is expanded when the report is written: a forked child has its own pid
    hotswap_tool();
    if (std::string targets = get(Setting::Target); !targets.empty()) named_targets(targets);
    else device_targets();
    return std::move(c_);
  }

 private:
  std::string get(const char* name) const {
    const char* v = env_(name);
    return v ? v : "";  // empty counts as unset
  }
  std::string get(Setting s) const { return get(variable(s)); }

  void setup(Code code, std::string msg, std::string fix) {
    Diagnostic d = make_diagnostic(code, self_exe(), std::move(msg), std::move(fix));
    if (d.severity == Severity::Error) c_.config_error = true;
    c_.setup_diagnostics.push_back(std::move(d));
  }

  // One line naming the variable, the value, what is accepted (settings.def) and what hipguard does instead.
  void refuse(Setting s, const std::string& instead) {
    const std::string name = variable(s), accepted(setting(s).accepted);
    setup(Code::kBadSetting, name + "='" + get(s) + "' is not accepted (accepted: " + accepted + "): " + instead,
          "set " + name + " to one of: " + accepted);
  }

  // Misspelled variable names: said, never silently ignored. True when one of them meant HIPGUARD_MODE.
  bool misspelled(const std::vector<std::string>& names) {
    bool misspelled_mode = false;
    for (const auto& name : names) {
      auto settings = all_settings();
      if (std::any_of(settings.begin(), settings.end(), [&](const SettingInfo& v) { return name == v.variable; }))
        continue;
      std::string upper = name;
      for (char& ch : upper) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
      const char* meant = nullptr;
      for (const SettingInfo& v : settings)
        if (!meant && (upper == v.variable || edit_distance(upper, v.variable) <= 2)) meant = v.variable;
      if (!meant) continue;  // HIPGUARD_SIM_GPUS and the like belong to others
      bool mode_var = std::string_view(meant) == variable(Setting::Mode) && !env_(variable(Setting::Mode));
      misspelled_mode = misspelled_mode || mode_var;
      setup(Code::kBadSetting,
            name + " is not a hipguard variable (did you mean " + meant + "?): ignored" +
                (mode_var ? "; running in strict mode" : ""),
            "rename it to " + std::string(meant) + " (variable names are case-sensitive)");
    }
    return misspelled_mode;
  }

  // HIPGUARD_MODE; strict when it is not accepted or its name was misspelled (fail closed).
  void mode(bool misspelled_mode) {
    std::string value = llvm::StringRef(get(Setting::Mode)).lower();
    if (value.empty() || value == "warn") c_.mode = Mode::Warn;
    else if (value == "strict") c_.mode = Mode::Strict;
    else if (value == "off") c_.mode = Mode::Off;
    else {
      c_.mode = Mode::Strict;  // fail closed: a CI job that asked for something asked for checking
      refuse(Setting::Mode, "running in strict mode");
    }
    if (misspelled_mode) c_.mode = Mode::Strict;
  }

  // HIPGUARD_EXIT_CODE: 1 to 255.
  void exit_code() {
    if (std::string e = get(Setting::ExitCode); !e.empty()) {
      char* end = nullptr;
      errno = 0;
      long v = strtol(e.c_str(), &end, 10);
      bool number = end && end != e.c_str() && *end == 0 && errno == 0 && isdigit(static_cast<unsigned char>(e[0]));
      if (number && v >= 1 && v <= 255) c_.exit_code = static_cast<int>(v);
      else
        refuse(Setting::ExitCode, std::string(number && v == 0 ? "0 would let a failing process pass; " : "") +
                                      "using exit status " + std::to_string(kDefaultExitCode));
    }
  }

  // HIPGUARD_FAIL_ON, never weaker than the mode: strict fails on errors, off on nothing.
  void fail_on() {
    if (c_.mode == Mode::Strict) c_.fail_on = Severity::Error;
    if (std::string f = llvm::StringRef(get(Setting::FailOn)).lower(); !f.empty()) {
      if (f == "error") c_.fail_on = Severity::Error;
      else if (f == "warning" || f == "warn") c_.fail_on = Severity::Warning;
      else if (f == "none") {
        // Never weaker than strict mode.
      } else {
        c_.fail_on = Severity::Warning;  // the stricter choice
        refuse(Setting::FailOn, "failing the exit status on warnings and errors");
      }
    }
    if (c_.mode == Mode::Off) c_.fail_on.reset();  // off changes nothing, not even the exit status
  }

  // HIPGUARD_LOG_LEVEL: a name or AMD_LOG_LEVEL's number.
  void log_level() {
    if (std::string l = llvm::StringRef(get(Setting::LogLevel)).lower(); !l.empty()) {
      static const std::pair<const char*, LogLevel> kLevels[] = {
          {"trace", LogLevel::Trace},
          {"debug", LogLevel::Debug},
          {"info", LogLevel::Info},
          {"warn", LogLevel::Warn},
          {"warning", LogLevel::Warn},
          {"error", LogLevel::Error},
          {"err", LogLevel::Error},
          {"off", LogLevel::Off},
          {"none", LogLevel::Off},
          // AMD_LOG_LEVEL's numbers (CLR: 0 none, 1 error, 2 warning, 3 info, 4 debug, 5 extra debug).
          {"0", LogLevel::Off},
          {"1", LogLevel::Error},
          {"2", LogLevel::Warn},
          {"3", LogLevel::Info},
          {"4", LogLevel::Debug},
          {"5", LogLevel::Trace}};
      bool found = false;
      for (const auto& [name, level] : kLevels)
        if (l == name) c_.log_level = level, found = true;
      if (!found) refuse(Setting::LogLevel, "logging at info");
    }
  }

  // HIPGUARD_HEAP: where the shim's own allocations come from. The shim's heap
  // (interpose/private_heap.cpp) reads it itself, at its first allocation;
  // here it is only validated, so that a typo is said.
  void heap() {
    std::string h = llvm::StringRef(get(Setting::Heap)).lower();
    if (!h.empty() && h != "private" && h != "malloc") refuse(Setting::Heap, "using the shim's private heap");
  }

  // A code object hot-swap tool in HSA_TOOLS_LIB (a space-separated list of tool libraries ROCr loads).
  void hotswap_tool() {
    for (const char* tool : {"libhsa-hotswap.so", "libamd_comgr_hotswap_tool.so"})
      if (std::string tools = get("HSA_TOOLS_LIB"); c_.hotswap_tool.empty() && tools.find(tool) != std::string::npos)
        c_.hotswap_tool = tool;
  }

  // HIPGUARD_TARGET: a comma-separated list of targets, one process's GPUs unless an entry names alternatives.
  void named_targets(const std::string& targets) {
    size_t pos = 0;
    c_.machine.one_process = true;
    while (pos <= targets.size()) {
      size_t comma = targets.find(',', pos);
      std::string item = targets.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? targets.size() + 1 : comma + 1;
      std::string err;
      if (item.empty()) err = "empty entry";
      else if (item.find_first_of(" \t;") != std::string::npos) err = "separate targets with ',' and no spaces";
      if (err.empty()) {
        auto ts = resolve_target(item);
        if (ts) {
          if (ts->size() > 1) c_.machine.one_process = false;  // alternatives, not GPUs side by side
          c_.targets.insert(c_.targets.end(), ts->begin(), ts->end());
          continue;
        }
        err = ts.error().message;
      }
      setup(Code::kBadTarget, "HIPGUARD_TARGET entry '" + item + "' is not a target: " + err,
            "use a comma-separated list of target IDs such as gfx942, gfx942:sramecc+:xnack- or product names such "
            "as mi300x");
    }
    c_.target_source = variable(Setting::Target);
    if (c_.targets.empty())
      setup(Code::kDeviceChecksSkipped,
            "HIPGUARD_TARGET='" + targets + "' has no valid entry: device checks skipped, structural checks only" +
                (c_.mode == Mode::Strict ? " (strict mode stops the program instead)" : ""),
            "set HIPGUARD_TARGET to valid targets (gfx942, mi300x, ...)");
  }

  // No HIPGUARD_TARGET: the GPUs of this machine (KFD topology under sysfs).
  void device_targets() {
    // A setuid/setgid process reads the real sysfs only, not files its environment names.
    std::string sysfs = secure_ ? "/sys" : get(Setting::SysfsRoot);
    if (sysfs.empty()) sysfs = "/sys";
    c_.machine.one_process = true;
    for (const Device& d : discover_devices(sysfs, env_)) {
      if (!find_processor(d.target.processor)) continue;
      TargetId t = d.target;
      t.alias = "GPU " + std::to_string(d.index);  // messages say which GPU a problem concerns
      if (d.index < 1024) {
        if (c_.device_targets.size() <= static_cast<size_t>(d.index)) c_.device_targets.resize(d.index + 1, -1);
        c_.device_targets[d.index] = static_cast<int>(c_.targets.size());
      }
      c_.targets.push_back(t);
      c_.target_source += (c_.target_source.empty() ? "" : ", ") +
                          ("GPU " + std::to_string(d.index) + " (KFD node " + std::to_string(d.node) + ")");
    }
    if (c_.targets.empty())
      setup(Code::kDeviceChecksSkipped,
            "no AMD GPU found and HIPGUARD_TARGET not set: device checks skipped, structural checks only",
            "set HIPGUARD_TARGET=gfx942 (or mi300x, mi355x, ...) to check against a GPU this machine lacks");
  }

  const EnvLookup& env_;
  bool secure_;
  GuardConfig c_;
};

}  // namespace

GuardConfig config_from(const EnvLookup& env, bool secure, const std::vector<std::string>& names) {
  return ConfigReader(env, secure).read(names);
}

}  // namespace hipguard
