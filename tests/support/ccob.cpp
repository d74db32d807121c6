// Compressed offload bundles ("CCOB"): the builders declared in ccob.h.
#include "ccob.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/Compression.h>
#include <llvm/Support/MD5.h>
#include <zstd.h>

#include <cstdlib>

namespace hgtest {

ByteVec ccob_header(uint16_t version, uint16_t method, uint64_t total, uint64_t uncompressed, uint64_t hash) {
  ByteVec v = {'C', 'C', 'O', 'B'};
  append<uint16_t>(v, version);
  append<uint16_t>(v, method);
  if (version == 1) {
    append<uint32_t>(v, static_cast<uint32_t>(uncompressed));
  } else if (version == 2) {
    append<uint32_t>(v, static_cast<uint32_t>(total));
    append<uint32_t>(v, static_cast<uint32_t>(uncompressed));
  } else {
    append<uint64_t>(v, total);
    append<uint64_t>(v, uncompressed);
  }
  append<uint64_t>(v, hash);
  return v;
}

ByteVec ccob_compress(const ByteVec& data, uint16_t method, bool zstd_ldm) {
  if (method == kCcobZstd && zstd_ldm) {
    ByteVec out(ZSTD_compressBound(data.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
    size_t n = ZSTD_compress2(c, out.data(), out.size(), data.data(), data.size());
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(n)) std::abort();  // a builder bug, not a finding
    out.resize(n);
    return out;
  }
  llvm::SmallVector<uint8_t, 0> packed;
  llvm::compression::compress(method == kCcobZstd ? llvm::compression::Format::Zstd : llvm::compression::Format::Zlib,
                              llvm::ArrayRef<uint8_t>(data), packed);
  return ByteVec(packed.begin(), packed.end());
}

uint64_t ccob_hash(const ByteVec& bundle) {
  llvm::MD5 md5;
  md5.update(llvm::ArrayRef<uint8_t>(bundle));
  llvm::MD5::MD5Result digest;
  md5.final(digest);
  return digest.low();
}

ByteVec make_ccob(const ByteVec& bundle, uint16_t version, uint16_t method, std::optional<uint64_t> hash,
                  bool zstd_ldm) {
  ByteVec packed = ccob_compress(bundle, method, zstd_ldm);
  ByteVec v = ccob_header(version, method, ccob_header_size(version) + packed.size(), bundle.size(),
                          hash ? *hash : ccob_hash(bundle));
  v.insert(v.end(), packed.begin(), packed.end());
  return v;
}

}  // namespace hgtest
