// NameHash: XXH3 of a symbol name, xxHash inlined here only.
#include "format/name_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hipguard {

unsigned NameHash::getHashValue(llvm::StringRef s) {
  uint64_t h = XXH3_64bits(s.data(), s.size());
  return static_cast<unsigned>(h ^ (h >> 32));
}

}  // namespace hipguard
