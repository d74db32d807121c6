// The exit status of a process that saw findings and exits 0 (strict mode,
// HIPGUARD_FAIL_ON): HG602, the report, then HIPGUARD_EXIT_CODE.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "hipguard/settings.h"
#include "runtime/address.h"
#include "runtime/events.h"
#include "runtime/reporting.h"

namespace hipguard {

void events::on_process_exit(Guard& guard, Reporting& out, int status) try {
  if (status != 0) return;  // a program that fails keeps its own status
  auto [failing, first] = out.sink().failing_here();
  if (failing == 0) return;
  const GuardConfig& c = out.config();
  fflush(nullptr);  // the program's buffered output first: _exit below skips stdio's own flush
  std::string why = c.mode == Mode::Strict ? "strict mode" : variable(Setting::FailOn);
  Diagnostic d = make_diagnostic(Code::kExitStatusChanged, self_exe(),
                                 "the program exited with status 0 after " + std::to_string(failing) +
                                     " finding(s) that fail it (" + why + "; first: " + first + "): exit status " +
                                     std::to_string(c.exit_code) + " (" + variable(Setting::ExitCode) + ")",
                                 "fix the findings above; a program should also check the HIP errors its calls return");
  out.log("error", format_line(d));
  guard.write_report();
  _exit(c.exit_code);
} catch (...) {
}

void install_exit_status_handler() {
  static bool done = false;
  if (done) return;
  done = true;
  // The handler lives in this library: keep it mapped even if it was dlopen'ed and is dlclose'd.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&install_exit_status_handler), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  // on_exit handlers run in reverse order of registration: registered from the
  // shim's constructor, this one runs after the program's and the HIP
  // libraries' exit handlers (the report's, and __hipUnregisterFatBinary's).
  on_exit(
      [](int status, void*) {
        if (status == 0) guarded([&] { events::on_process_exit(status); });  // nothing before the guard's state
      },
      nullptr);
}

}  // namespace hipguard
