// Helpers shared by the tests in tests/checks: where the inputs are, the Guard
// settings. The builders of crafted inputs and the file helpers are in tests/support.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "hipguard/bundle.h"
#include "bundle.h"
#include "files.h"
#include "guard_config.h"

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

// The process's guard takes its configuration once per process: every test in
// this binary that uses it has the same one (gfx942, strict, info). A test that
// needs other settings builds a guard of its own (Guard(GuardConfig)).
inline void configure_guard_for_tests() {
  hgtest::init_guard({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_LOG_LEVEL", "info"}});
}

}  // namespace checks
