// hipguard run: the command with the shim preloaded; with --report, the job's
// report file held open (report_file.h) until the command is done, then completed.
#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hipguard/settings.h"
#include "report/report_file.h"

namespace hipguard {
namespace {

volatile sig_atomic_t g_child = 0;

// SIGTERM/SIGHUP sent to hipguard alone (a CI timeout) go to the command; the
// report is completed once it is gone. SIGINT from a terminal reaches both.
extern "C" void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

}  // namespace

int launch(char** argv, const std::string& report) {
  if (!report.empty()) setenv(variable(Setting::Report), report.c_str(), 1);
  // "%p": a file per process, each written by the process itself.
  if (report.empty() || is_per_process_path(report)) {
    execvp(argv[0], argv);
    fprintf(stderr, "hipguard: cannot run %s: %s\n", argv[0], strerror(errno));
    return 127;
  }
  ReportFile file;
  if (Status opened = file.open(report, llvm::json::Object{{"program", "hipguard run"}, {"launcher", true}}); !opened) {
    fprintf(stderr, "hipguard: cannot write the report: %s\n", opened.error().message.c_str());
    return 2;
  }
  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "hipguard: cannot run %s: %s\n", argv[0], strerror(errno));
    return 127;
  }
  if (child == 0) {
    execvp(argv[0], argv);
    fprintf(stderr, "hipguard: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  g_child = child;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  for (int sig : {SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  signal(SIGINT, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  bool xml = is_junit_path(report);
  Status written = file.finish({}, xml);
  if (!written)
    fprintf(stderr, "hipguard: the report %s is incomplete: %s\n", report.c_str(), written.error().message.c_str());
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return code == 0 && !written ? 2 : code;  // a report that did not reach its reader fails the job
}

}  // namespace hipguard
