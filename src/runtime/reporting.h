// What the guard says (internal): hipguard's lines on stderr, each finding once, the findings sink
// behind them (findings.h: the report file, the exit status's counts). One part of the guard's
// state (state.h); it needs no lock of the guard's: the sink and the log have their own, leaves
// (a caller may hold Kernels::mu, as a registry change that leaves a gone kernel with the sink does).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hipguard/check.h"
#include "runtime/config.h"
#include "runtime/findings.h"
#include "runtime/guard.h"

// spdlog (header-only, and heavy to compile) is included by reporting.cpp alone, which builds the
// logger and writes to it.
namespace spdlog {
class logger;
}

namespace hipguard {

class Reporting {
 public:
  // On the guard's settings, which outlive it: hipguard's lines on stderr at the configured level,
  // the report file opened when one is asked (a path that cannot be one is said, HG603).
  explicit Reporting(const GuardConfig& config);
  ~Reporting();
  Reporting(const Reporting&) = delete;
  Reporting& operator=(const Reporting&) = delete;

  // Logs one line at `level` ("info", "warn", "error", "debug"), prefixed "hipguard: ".
  void log(std::string_view level, const std::string& line);
  bool logs_debug() const;  // debug lines are written: worth building

  // Says `d` once (the sink's say-once), at its severity's level; counted for the exit status at
  // or above GuardConfig::fail_on.
  void say(const Diagnostic& d);
  // One cause, one line: a runtime event (HG501/HG502/HG503) caused by `cause` is said only when
  // `cause` was not said already; otherwise it goes to the debug log and into the report's
  // run.consequences.
  void say_consequence(const Diagnostic& d, const Diagnostic* cause);
  // The strict-mode judgement of an image: its findings said; Exit (a registration) or Refuse (a
  // module load, with the runtime's error for it) when it cannot run, else Forward.
  Decision judge(const ImageReport& report, bool registration);

  FindingsSink& sink() { return sink_; }
  const GuardConfig& config() const { return config_; }

  // In a forked child that cannot take the guard's locks: from now on the guard is not entered;
  // HG605 said with write(2) (no lock, no allocation), unless quiet.
  void say_unclean_fork();

 private:
  const GuardConfig& config_;
  std::shared_ptr<spdlog::logger> logger_;
  FindingsSink sink_;              // what was said, what the report keeps, the exit status's counts: its own lock
  std::string unclean_fork_line_;  // HG605's line, made here: a child's fork handler cannot allocate
};

// The lock of hipguard's lines on stderr (every guard's logger), held across fork() with the guard's.
OwnedMutex& log_mutex();

}  // namespace hipguard
