// Offload bundles (clang OffloadBundler BinaryFileHandler layout): building and splitting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bytes.h"
#include "hipguard/bundle.h"

namespace hgtest {

struct BundlePart {
  std::string id;
  ByteVec payload;
};
// "__CLANG_OFFLOAD_BUNDLE__", u64 count, then per entry u64 offset, u64 size,
// u64 id length, id bytes; payloads at `align`-aligned offsets (hipcc: 4096,
// the -bundle-align the HIP driver passes). Empty payloads (the host entry)
// point at the first payload offset, as hipcc does.
inline ByteVec make_bundle(const std::vector<BundlePart>& parts, size_t align = 4096) {
  ByteVec out;
  append_str(out, hipguard::kBundleMagic);
  append<uint64_t>(out, parts.size());
  size_t table = out.size();
  for (const auto& p : parts) table += 24 + p.id.size();
  // Layout the payloads.
  std::vector<uint64_t> offsets;
  const uint64_t first = (table + align - 1) / align * align;
  uint64_t pos = first;
  for (const auto& p : parts) {
    if (p.payload.empty()) {
      offsets.push_back(first);
      continue;
    }
    pos = (pos + align - 1) / align * align;
    offsets.push_back(pos);
    pos += p.payload.size();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    append<uint64_t>(out, offsets[i]);
    append<uint64_t>(out, parts[i].payload.size());
    append<uint64_t>(out, parts[i].id.size());
    append_str(out, parts[i].id);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].payload.empty()) continue;
    out.resize(offsets[i], 0);
    out.insert(out.end(), parts[i].payload.begin(), parts[i].payload.end());
  }
  return out;
}

// Reads the entries of a bundle independently of hipguard (for comparisons).
inline std::vector<BundlePart> split_bundle(const ByteVec& b) {
  std::vector<BundlePart> out;
  uint64_t n = get<uint64_t>(b, 24);
  size_t pos = 32;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t off = get<uint64_t>(b, pos), size = get<uint64_t>(b, pos + 8), len = get<uint64_t>(b, pos + 16);
    pos += 24;
    BundlePart p;
    p.id.assign(reinterpret_cast<const char*>(b.data() + pos), len);
    pos += len;
    p.payload.assign(b.begin() + off, b.begin() + off + size);
    out.push_back(std::move(p));
  }
  return out;
}

// The payload of the entry `entry_id` (exact ID) of a bundle, or empty.
inline ByteVec entry_payload(const ByteVec& bundle, std::string_view entry_id) {
  for (auto& p : split_bundle(bundle))
    if (p.id == entry_id) return p.payload;
  return {};
}

}  // namespace hgtest
