// Settings of the in-process guard tests (guard_tests), passed in before main:
// the guard takes its configuration once, and builds its state at first use.
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "guard_config.h"

namespace {
std::string g_report = "/tmp/hipguard-guard-tests-" + std::to_string(getpid()) + ".json";
const bool g_set = [] {
  hgtest::init_guard({{"HIPGUARD_TARGET", "gfx90a:xnack-"},
                      {"HIPGUARD_MODE", "warn"},
                      {"HIPGUARD_LOG_LEVEL", "info"},
                      {"HIPGUARD_REPORT", g_report}});  // what the report keeps must be bounded too
  atexit([] { unlink(g_report.c_str()); });             // runs after the guard's own exit handler writes it
  return true;
}();
}  // namespace
