// The hash of sets of symbol names (internal): DenseMap/DenseSet<llvm::StringRef, NameHash>.
#pragma once

#include <llvm/ADT/DenseMapInfo.h>
#include <llvm/ADT/StringRef.h>

namespace hipguard {

// Mangled kernel names run to hundreds of bytes, and strict registration
// hashes each twice (rocSOLVER: 45 k names); llvm::hash_value reads them a
// byte at a time. XXH3 (xxHash 0.8) reads 16 to 64 bytes per step.
struct NameHash : llvm::DenseMapInfo<llvm::StringRef> {
  static unsigned getHashValue(llvm::StringRef s);
};

}  // namespace hipguard
