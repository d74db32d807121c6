// Helpers shared by check_tests and guard_tests: where the inputs are, the Guard
// settings. The builders of crafted inputs and the file helpers are beside it.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <memory>

#include "hipguard/bundle.h"
#include "bundle.h"
#include "files.h"
#include "guard_config.h"
#include "print_code.h"

namespace checks {

inline const std::string kApps = HIPGUARD_APPS_DIR;
inline const std::string kCorpus = std::string(HIPGUARD_CORPUS_DIR) + "/aiter";

using hgtest::exists;
using hgtest::make_bundle;
using hgtest::read_bytes;

// The code object of a hipcc-built bundle in the apps directory, by exact entry target ID.
inline std::vector<uint8_t> app_code_object(const std::string& file, const std::string& target_id) {
  std::vector<uint8_t> bundle = read_bytes(kApps + "/" + file);
  auto b = hipguard::parse_bundle(hipguard::Bytes(bundle.data(), bundle.size()));
  if (!b) return {};
  for (const auto& e : b->entries)
    if (e.parsed.target_id == target_id) {
      hipguard::Bytes co = hipguard::entry_bytes(*b, hipguard::Bytes(bundle.data(), bundle.size()), e);
      return std::vector<uint8_t>(co.begin(), co.end());
    }
  return {};
}

// The settings of guard_tests (guard_test_env.cpp, the process's guard), for a guard of a test's own:
// gfx90a:xnack-, warn, info, a report (what the report keeps must stay bounded too).
inline hipguard::GuardConfig warn_gfx90a_with_report() {
  static const std::string report = "/tmp/hipguard-own-guard-" + std::to_string(getpid()) + ".json";
  return hgtest::guard_config({{"HIPGUARD_TARGET", "gfx90a:xnack-"},
                               {"HIPGUARD_MODE", "warn"},
                               {"HIPGUARD_LOG_LEVEL", "info"},
                               {"HIPGUARD_REPORT", report}});
}

// The settings of check_tests' guard tests: gfx942, strict, info.
inline hipguard::GuardConfig strict_gfx942() {
  return hgtest::guard_config(
      {{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_LOG_LEVEL", "info"}});
}

}  // namespace checks
