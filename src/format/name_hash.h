// The hash of sets of symbol names (internal): DenseMap/DenseSet<llvm::StringRef, NameHash>.
#pragma once

#include <llvm/ADT/DenseMapInfo.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/xxhash.h>

namespace hipguard {

// Mangled kernel names run to hundreds of bytes; llvm::hash_value reads them
// a byte at a time and cost a strict registration as much as the sort it
// replaced. xxHash64 reads 32 bytes per round.
struct NameHash : llvm::DenseMapInfo<llvm::StringRef> {
  static unsigned getHashValue(llvm::StringRef s) {
    uint64_t h = llvm::xxHash64(s);
    return static_cast<unsigned>(h ^ (h >> 32));
  }
};

}  // namespace hipguard
