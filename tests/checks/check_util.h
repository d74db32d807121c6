// Helpers shared by the tests in tests/checks.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "hipguard/bundle.h"

namespace checks {

inline const std::string kApps = HIPGUARD_APPS_DIR;
inline const std::string kCorpus = std::string(HIPGUARD_CORPUS_DIR) + "/aiter";

inline bool exists(const std::string& p) {
  struct stat st;
  return !p.empty() && stat(p.c_str(), &st) == 0;
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The code object of a hipcc-built bundle in the apps directory, by exact entry target ID.
inline std::vector<uint8_t> app_code_object(const std::string& file, const std::string& target_id) {
  std::vector<uint8_t> bundle = read_file(kApps + "/" + file);
  auto b = hipguard::parse_bundle(hipguard::Bytes(bundle.data(), bundle.size()));
  if (!b) return {};
  for (const auto& e : b->entries)
    if (e.parsed.target_id == target_id) {
      hipguard::Bytes co = hipguard::entry_bytes(*b, hipguard::Bytes(bundle.data(), bundle.size()), e);
      return std::vector<uint8_t>(co.begin(), co.end());
    }
  return {};
}

// The Guard reads its configuration once per process: every Guard test in this
// binary uses the same one (gfx942, strict, info).
inline void configure_guard_for_tests() {
  setenv("HIPGUARD_TARGET", "gfx942", 1);
  setenv("HIPGUARD_MODE", "strict", 1);
  setenv("HIPGUARD_LOG_LEVEL", "info", 1);
}

}  // namespace checks
