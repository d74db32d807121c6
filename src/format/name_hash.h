// A cheap hash for sets of symbol names (internal): DenseMap/DenseSet<llvm::StringRef, NameHash>.
#pragma once

#include <llvm/ADT/DenseMapInfo.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <cstring>

namespace hipguard {

// Mangled kernel names run to hundreds of bytes; llvm::hash_value reads them
// a byte at a time and cost a strict registration as much as the sort it
// replaced. Eight bytes per step (FxHash's rotate, xor, multiply) suffice for
// a table whose hits are confirmed by comparing the names.
struct NameHash : llvm::DenseMapInfo<llvm::StringRef> {
  static unsigned getHashValue(llvm::StringRef s) {
    constexpr uint64_t kMul = 0x517cc1b727220a95ull;
    uint64_t h = s.size();
    size_t i = 0;
    auto step = [&](uint64_t w) { h = (((h << 5) | (h >> 59)) ^ w) * kMul; };
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      step(w);
    }
    if (i < s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      step(w);
    }
    return static_cast<unsigned>(h ^ (h >> 32));
  }
};

}  // namespace hipguard
