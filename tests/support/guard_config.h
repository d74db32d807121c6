// The in-process guard's configuration for a test, from HIPGUARD_* values
// given here (the guard reads no environment: the shim reads it in a real
// process), and the guard's call pairs as the shim's hooks make them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/config.h"
#include "runtime/guard.h"
#include "print_code.h"

namespace hgtest {

inline hipguard::GuardConfig guard_config(const std::map<std::string, std::string>& vars) {
  return hipguard::config_from(
      [&vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      /*secure=*/false);
}

// A test with a guard of its own (Guard(GuardConfig)), made before and destroyed after each test:
// no test sees what another registered or said, whatever the order (--gtest_shuffle). Only the tests
// of the process-wide launch gate and cache (the shim's fast path) use the process's guard.
class OwnGuardTest : public ::testing::Test {
 protected:
  explicit OwnGuardTest(hipguard::GuardConfig config) : config_(std::move(config)) {}
  void SetUp() override { guard_ = std::make_unique<hipguard::Guard>(config_); }
  void TearDown() override {
    guard_.reset();  // writes its report, if its settings name one
    if (!config_.report_path.empty()) std::remove(config_.report_path.c_str());
  }
  hipguard::Guard& guard() { return *guard_; }

 private:
  hipguard::GuardConfig config_;
  std::unique_ptr<hipguard::Guard> guard_;
};

// Configures the process's guard (the first call in a process wins).
inline hipguard::Guard& init_guard(const std::map<std::string, std::string>& vars) {
  return hipguard::Guard::init(guard_config(vars));
}

// __hipRegisterFatBinary as the shim's hook drives the guard: the check, then
// the registration under `handle` (what the check found goes from one call to the other).
inline hipguard::Decision register_fatbin(hipguard::Guard& g, const void* wrapper, const void* handle) {
  hipguard::PendingFatbinPtr pending;
  hipguard::Decision d = g.on_register_fatbin(wrapper, pending);
  g.on_registered_fatbin(handle, std::move(pending));
  return d;
}
// The check alone (the runtime refused, or the test asks only for the decision).
inline hipguard::Decision check_fatbin(hipguard::Guard& g, const void* wrapper) {
  hipguard::PendingFatbinPtr pending;
  return g.on_register_fatbin(wrapper, pending);
}

// hipModuleLoadData: the check, then the loaded `module`.
inline hipguard::Decision load_module_data(hipguard::Guard& g, const void* image, const void* module) {
  hipguard::PendingModulePtr pending;
  hipguard::Decision d = g.on_module_load_data(image, pending);
  g.on_module_loaded(module, std::move(pending));
  return d;
}
inline hipguard::Decision check_module_data(hipguard::Guard& g, const void* image) {
  hipguard::PendingModulePtr pending;
  return g.on_module_load_data(image, pending);
}
inline hipguard::Decision check_module_file(hipguard::Guard& g, const char* path) {
  hipguard::PendingModulePtr pending;
  return g.on_module_load_file(path, pending);
}

// The findings `g` said after the first `mark` (moved past them): what the guard says, asked of it
// (Guard::said), not read from its log.
inline std::vector<hipguard::Diagnostic> said_since(hipguard::Guard& g, size_t& mark) {
  std::vector<hipguard::Diagnostic> all = g.said().findings;
  std::vector<hipguard::Diagnostic> out(all.begin() + std::min(mark, all.size()), all.end());
  mark = all.size();
  return out;
}

// How many of `said` have `code` and `severity`, a target that starts with `target` and, when given,
// `kernel`.
inline size_t count_said(const std::vector<hipguard::Diagnostic>& said, hipguard::Code code,
                         hipguard::Severity severity, std::string_view target = {}, std::string_view kernel = {}) {
  size_t n = 0;
  for (const auto& d : said)
    n += d.code == code && d.severity == severity && std::string_view(d.target).starts_with(target) &&
         (kernel.empty() || d.kernel == kernel);
  return n;
}

// `said` as log lines, for a failed expectation's message.
inline std::string lines(const std::vector<hipguard::Diagnostic>& said) {
  std::string out;
  for (const auto& d : said) out += hipguard::format_line(d) + "\n";
  return out.empty() ? "(nothing said)" : out;
}

}  // namespace hgtest
