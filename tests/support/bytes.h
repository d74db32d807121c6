// Byte vectors of crafted inputs: little-endian writing and reading, spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"

namespace hgtest {

using ByteVec = std::vector<uint8_t>;

inline hipguard::Bytes span(const ByteVec& v) { return hipguard::Bytes(v.data(), v.size()); }

// Writes `value` at `off`, growing `v` as needed.
template <class T>
void put(ByteVec& v, size_t off, T value) {
  if (v.size() < off + sizeof(T)) v.resize(off + sizeof(T));
  std::memcpy(v.data() + off, &value, sizeof(T));
}
template <class T>
void append(ByteVec& v, T value) {
  put(v, v.size(), value);
}
inline void append_str(ByteVec& v, std::string_view s) { v.insert(v.end(), s.begin(), s.end()); }
inline void pad_to(ByteVec& v, size_t align) {
  while (v.size() % align) v.push_back(0);
}
template <class T>
T get(const ByteVec& v, size_t off) {
  T x;
  std::memcpy(&x, v.data() + off, sizeof(T));
  return x;
}

}  // namespace hgtest
