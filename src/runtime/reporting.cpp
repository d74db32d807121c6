// What the guard says: its logger (hipguard's lines on stderr), each finding once through the sink,
// the strict-mode judgement of an image.
#include "runtime/reporting.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <optional>

#include "base/write_all.h"
#include "runtime/address.h"

namespace hipguard {

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

Reporting::Reporting(const GuardConfig& config) : config_(config) {
  logger_ = std::make_shared<spdlog::logger>("hipguard", std::make_shared<StderrSink>());
  logger_->set_error_handler([](const std::string&) {});  // spdlog's default takes a std::mutex and stdio
  logger_->set_pattern("hipguard: %v");
  logger_->set_level(static_cast<spdlog::level::level_enum>(config_.log_level));
  logger_->flush_on(spdlog::level::trace);
  if (logger_->should_log(spdlog::level::warn))
    unclean_fork_line_ =
        "hipguard: " +
        format_line(make_diagnostic(Code::kUncleanFork, self_exe(),
                                    "forked while another thread held hipguard's lock, or from a "
                                    "signal handler inside hipguard: this child process is not checked",
                                    "fork from a signal handler only to exec or _exit (POSIX allows "
                                    "no more); check the program without such forks")) +
        "\n";
  // HIPGUARD_REPORT for this process ("%p" = its pid). A path that cannot be a
  // report (a directory, /dev/full, a symlink) is said once, and nothing is created.
  if (!config_.report_path.empty()) {
    sink_.set_report(config_.report_path);
    if (auto problem = sink_.open_report()) logger_->warn(format_line(*problem));
  }
}

Reporting::~Reporting() = default;

void Reporting::log(std::string_view level, const std::string& line) {
  logger_->log(spdlog::level::from_str(std::string(level)), line);
}

bool Reporting::logs_debug() const { return logger_->should_log(spdlog::level::debug); }

void Reporting::say(const Diagnostic& d) {
  std::string line = format_line(d);
  std::optional<Diagnostic> report_problem;
  if (!sink_.say(d, line, config_.fails_on(d.severity), &report_problem)) return;
  if (report_problem) logger_->warn(format_line(*report_problem));
  log(d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warn" : "info", line);
}

void Reporting::say_consequence(const Diagnostic& d, const Diagnostic* cause) {
  // At debug level, as a note: it adds nothing the user must act on.
  if (cause && sink_.add_consequence(d, format_line(*cause))) {
    Diagnostic note = d;
    note.severity = Severity::Note;
    log("debug", format_line(note));
    return;
  }
  say(d);
}

Decision Reporting::judge(const ImageReport& report, bool registration) {
  for (const auto& d : report.diagnostics) say(d);
  if (report.ok()) return {};
  if (config_.mode != Mode::Strict) return {};
  if (registration) return {Action::Exit, 0};
  // Malformed input -> invalid image; nothing usable for this GPU -> no binary for GPU.
  return {Action::Refuse, report.structurally_ok ? kHipErrorNoBinaryForGpu : kHipErrorInvalidImage};
}

void Reporting::say_unclean_fork() {
  OwnedMutex::set_unclean_fork();
  if (config_.mode != Mode::Off) write_all(2, unclean_fork_line_.data(), unclean_fork_line_.size());
}

}  // namespace hipguard
