// Compressed offload bundles ("CCOB"): the builders declared in ccob.h.
#include "ccob.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/Compression.h>
#include <llvm/Support/MD5.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>

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

ByteVec zstd_stream_compress(const ByteVec& data, int level, int window_log) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  if (window_log > 0) {
    ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log);
    ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
  }
  ByteVec out(ZSTD_compressBound(data.size()) + 1024);
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  // All input with ZSTD_e_continue first: a first call with ZSTD_e_end would tell zstd the size.
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  while (in.pos < in.size)
    if (ZSTD_isError(ZSTD_compressStream2(c, &o, &in, ZSTD_e_continue))) std::abort();
  ZSTD_inBuffer none{nullptr, 0, 0};
  size_t left;
  do {
    left = ZSTD_compressStream2(c, &o, &none, ZSTD_e_end);
    if (ZSTD_isError(left)) std::abort();
  } while (left != 0);
  ZSTD_freeCCtx(c);
  out.resize(o.pos);
  return out;
}

ByteVec zlib_stream_compress(const ByteVec& data) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 9, 1, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  ByteVec out(deflateBound(&z, data.size()) + data.size() / 64 + 1024);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  for (size_t pos = 0; pos < data.size(); pos += 4096) {
    z.next_in = const_cast<Bytef*>(data.data() + pos);
    z.avail_in = static_cast<uInt>(std::min<size_t>(4096, data.size() - pos));
    if (deflate(&z, Z_SYNC_FLUSH) != Z_OK) std::abort();
  }
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

ByteVec ccob_around(const ByteVec& packed, uint16_t method, uint64_t uncompressed) {
  ByteVec v = ccob_header(3, method, ccob_header_size(3) + packed.size(), uncompressed, 0);
  v.insert(v.end(), packed.begin(), packed.end());
  return v;
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
