// The guard itself: its configuration and state, logging and saying findings once, the strict-mode judgement of an
// image.
#include "runtime/guard.h"

#include <pthread.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "base/write_all.h"
#include "hipguard/report.h"
#include "hipguard/version.h"
#include "runtime/address.h"
#include "runtime/state.h"
#include "runtime/kernel_table.h"

namespace hipguard {

std::atomic<unsigned> g_launch_gate{0};

LaunchCache g_launch_cache;
std::atomic<bool> g_state_ready{false};

Guard& Guard::get() {
  static Guard* g = new Guard();  // never destroyed: HIP may call us from atexit handlers
  return *g;
}

namespace {
std::mutex g_config_mu;
GuardConfig* g_config = nullptr;  // init()'s, until the state takes it
}  // namespace

Guard& Guard::init(GuardConfig config) {
  std::lock_guard lock(g_config_mu);
  if (!g_config && !g_state_ready.load(std::memory_order_acquire)) g_config = new GuardConfig(std::move(config));
  return get();
}

Guard::Guard() = default;

Guard::Guard(GuardConfig config) : own_(std::make_unique<State>(nullptr, nullptr)) {
  own_->config = std::move(config);
  start(*own_);
}

// A guard of its own writes its report when it goes (the process's, at exit).
Guard::~Guard() {
  if (own_ && !own_->config.report_path.empty()) guarded([this] { write_report(); });
}

Guard::State& Guard::state() {
  if (own_) return *own_;
  static State* s = [] {
    auto* st = new State(&g_launch_gate, &g_launch_cache);
    {
      std::lock_guard lock(g_config_mu);
      if (g_config) st->config = std::move(*g_config);
    }
    Guard::get().start(*st);
    if (!st->config.report_path.empty()) atexit([] { guarded([] { Guard::get().write_report(); }); });
    // Whatever the settings: a child forked while another thread holds one of the guard's locks
    // (registering, launching) would inherit it held and hang at its first HIP call.
    pthread_atfork([] { fork_guarded([] { Guard::get().before_fork(); }); },
                   [] { fork_guarded([] { Guard::get().after_fork(false); }); },
                   [] { fork_guarded([] { Guard::get().after_fork(true); }); });
    g_state_ready.store(true, std::memory_order_release);
    return st;
  }();
  return *s;
}

const GuardConfig& Guard::config() {
  State& s = state();
  // Set-up findings (bad HIPGUARD_TARGET, no target) are said once, at first
  // use; off mode says nothing, as it checks nothing.
  std::call_once(s.setup_said, [&] {
    if (s.config.mode == Mode::Off) return;
    for (const auto& d : s.config.setup_diagnostics) report_once(d);
    if (!s.config.targets.empty()) {
      std::string list;
      for (const auto& t : s.config.targets) list += (list.empty() ? "" : ", ") + t.str();
      log("debug", std::string("hipguard ") + HIPGUARD_VERSION_STRING + ": checking against " + list + " (from " +
                       s.config.target_source + ")");
    }
    const RuntimeInfo& rt = s.config.machine.runtime ? *s.config.machine.runtime : default_runtime();
    log("debug",
        "selecting code objects as " + runtime_label(rt) + " does (" +
            (s.config.runtime_source.empty() ? std::string("runtime version not known: the newest")
                                             : s.config.runtime_source) +
            ")" +
            (s.config.machine.one_process && s.config.targets.size() > 1 ? ", the targets as one process's GPUs" : ""));
  });
  return s.config;
}

// hipguard's lines go to stderr with write(2) under log_mutex(), an OwnedMutex
// the fork handlers hold across fork(). Not spdlog's stderr sink: its lock is a
// std::mutex a child could inherit held, and its fwrite waits for stderr's
// stdio lock, which the thread a forking signal handler interrupted may hold.
namespace {
class StderrSink final : public spdlog::sinks::sink {
 public:
  void log(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(log_mutex());
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    write_all(2, line.data(), line.size());
  }
  void flush() override {}
  void set_pattern(const std::string& pattern) override {
    set_formatter(std::make_unique<spdlog::pattern_formatter>(pattern));
  }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    std::lock_guard lock(log_mutex());
    formatter_ = std::move(formatter);
  }

 private:
  std::unique_ptr<spdlog::formatter> formatter_ = std::make_unique<spdlog::pattern_formatter>();
};
}  // namespace

OwnedMutex& log_mutex() {
  static OwnedMutex m;  // constant-initialized, nothing to destroy: usable at any time
  return m;
}

void Guard::start(State& st) {
  st.logger = std::make_shared<spdlog::logger>("hipguard", std::make_shared<StderrSink>());
  st.logger->set_error_handler([](const std::string&) {});  // spdlog's default takes a std::mutex and stdio
  st.logger->set_pattern("hipguard: %v");
  st.logger->set_level(static_cast<spdlog::level::level_enum>(st.config.log_level));
  st.logger->flush_on(spdlog::level::trace);
  if (st.logger->should_log(spdlog::level::warn))
    st.unclean_fork_line =
        "hipguard: " +
        format_line(make_diagnostic(code::kUncleanFork, self_exe(),
                                    "forked while another thread held hipguard's lock, or from a "
                                    "signal handler inside hipguard: this child process is not checked",
                                    "fork from a signal handler only to exec or _exit (POSIX allows "
                                    "no more); check the program without such forks")) +
        "\n";
  if (!st.config.report_path.empty()) open_report(st);
}

void log_warning(spdlog::logger& logger, const std::string& line) { logger.warn(line); }

void Guard::log(std::string_view level, const std::string& line) {
  State& s = state();
  s.logger->log(spdlog::level::from_str(std::string(level)), line);
}

bool Guard::logs_debug() { return state().logger->should_log(spdlog::level::debug); }

void Guard::report_once(const Diagnostic& d) {
  std::string line = format_line(d);
  State& s = state();
  std::optional<Diagnostic> report_problem;
  if (!s.findings.say(d, line, s.config.fails_on(d.severity), &report_problem)) return;
  if (report_problem) log_warning(*s.logger, format_line(*report_problem));
  log(d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warn" : "info", line);
}

std::vector<Diagnostic> Guard::findings() { return state().findings.said_here(); }

std::vector<Diagnostic> Guard::consequences() { return state().findings.consequences_here(); }

void Guard::report_consequence(const Diagnostic& d, const Diagnostic* cause) {
  if (cause) {
    State& s = state();
    if (s.findings.add_consequence(
            d, format_line(*cause))) {  // at debug level, as a note: it adds nothing the user must act on
      Diagnostic note = d;
      note.severity = Severity::Note;
      log("debug", format_line(note));
      return;
    }
  }
  report_once(d);
}

Decision Guard::judge(const ImageReport& report, bool registration) {
  const GuardConfig& c = config();
  for (const auto& d : report.diagnostics) report_once(d);
  if (report.ok()) return {};
  if (c.mode != Mode::Strict) return {};
  if (registration) return {Action::Exit, 0};
  // Malformed input -> invalid image; nothing usable for this GPU -> no binary for GPU.
  return {Action::Refuse, report.structurally_ok ? kHipErrorNoBinaryForGpu : kHipErrorInvalidImage};
}

}  // namespace hipguard
