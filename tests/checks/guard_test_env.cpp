// Settings of the in-process guard tests (guard_tests), set before main: the
// guard reads its configuration once, at first use.
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace {
std::string g_report = "/tmp/hipguard-guard-tests-" + std::to_string(getpid()) + ".json";
const bool g_set = [] {
  setenv("HIPGUARD_TARGET", "gfx90a:xnack-", 1);
  setenv("HIPGUARD_MODE", "warn", 1);
  setenv("HIPGUARD_LOG_LEVEL", "info", 1);
  setenv("HIPGUARD_REPORT", g_report.c_str(), 1);  // what the report keeps must be bounded too
  atexit([] { unlink(g_report.c_str()); });       // runs after the guard's own exit handler writes it
  return true;
}();
}  // namespace
