// Bounds-checked little-endian reads over a byte span (internal).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace hipguard {

// True when [offset, offset + length) lies inside `data`, without overflow.
inline bool fits(std::span<const uint8_t> data, uint64_t offset, uint64_t length) {
  return offset <= data.size() && length <= data.size() - offset;
}

// Reads a little-endian integer; the caller has checked fits(data, offset, sizeof(T)).
template <class T>
T read_le(std::span<const uint8_t> data, uint64_t offset) {
  T v;
  std::memcpy(&v, data.data() + offset, sizeof(T));  // hosts are little-endian (x86_64, aarch64)
  return v;
}

}  // namespace hipguard
