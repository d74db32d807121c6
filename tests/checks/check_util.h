// Helpers shared by the tests in tests/checks.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
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

inline void put64(std::vector<uint8_t>& v, uint64_t x) {
  for (int i = 0; i < 8; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}

// (entry ID, payload) in file order.
using Entry = std::pair<std::string, std::vector<uint8_t>>;

// An uncompressed offload bundle in the layout OffloadBundler writes: magic,
// u64 count, {u64 offset, u64 size, u64 id length, id}..., payloads 4096-aligned.
inline std::vector<uint8_t> make_bundle(const std::vector<Entry>& entries) {
  size_t table = 32;
  for (const auto& e : entries) table += 24 + e.first.size();
  std::vector<uint64_t> offsets;
  uint64_t pos = (table + 4095) / 4096 * 4096;  // -bundle-align=4096, as the HIP driver passes
  for (const auto& e : entries) {
    offsets.push_back(pos);
    pos = (pos + e.second.size() + 4095) / 4096 * 4096;
  }
  std::vector<uint8_t> out(hipguard::kBundleMagic.begin(), hipguard::kBundleMagic.end());
  put64(out, entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    put64(out, offsets[i]);
    put64(out, entries[i].second.size());
    put64(out, entries[i].first.size());
    out.insert(out.end(), entries[i].first.begin(), entries[i].first.end());
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    out.resize(offsets[i], 0);
    out.insert(out.end(), entries[i].second.begin(), entries[i].second.end());
  }
  return out;
}

// The Guard reads its configuration once per process: every Guard test in this
// binary uses the same one (gfx942, strict, info).
inline void configure_guard_for_tests() {
  setenv("HIPGUARD_TARGET", "gfx942", 1);
  setenv("HIPGUARD_MODE", "strict", 1);
  setenv("HIPGUARD_LOG_LEVEL", "info", 1);
}

}  // namespace checks
