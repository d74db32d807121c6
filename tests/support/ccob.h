// Compressed offload bundles ("CCOB", clang OffloadBundler CompressedOffloadBundle): headers and whole files.
//
// Layout (shared reference hip-fatbin-and-selection.md §3): "CCOB", u16 version,
// u16 method (0 zlib, 1 zstd), then v1: u32 uncompressed size, u64 hash (20
// bytes); v2: u32 total size, u32 uncompressed size, u64 hash (24); v3: u64
// total, u64 uncompressed, u64 hash (32); the compressed payload follows.
// Written from the format, independently of hipguard's parser.
#pragma once

#include <cstdint>
#include <optional>

#include "bytes.h"

namespace hgtest {

inline constexpr uint16_t kCcobZlib = 0, kCcobZstd = 1;

inline uint64_t ccob_header_size(uint16_t version) { return version == 1 ? 20 : version == 2 ? 24 : 32; }

// The header alone, with the fields as given (true or not): v1 has no total,
// v1/v2 truncate total and uncompressed to 32 bits.
ByteVec ccob_header(uint16_t version, uint16_t method, uint64_t total, uint64_t uncompressed, uint64_t hash = 0);

// `data` compressed with `method` through llvm::compression (LLVM's default
// levels); zstd_ldm: zstd at level 3 with long-distance matching, through
// libzstd directly, as OffloadBundler does.
ByteVec ccob_compress(const ByteVec& data, uint16_t method, bool zstd_ldm = false);

// `data` as a streaming writer compresses it (the zstd tool reading a pipe):
// fed in pieces with the size unknown, so the frame has no content size and
// keeps the level's window; window_log > 0 sets it (--long=N), with
// long-distance matching.
ByteVec zstd_stream_compress(const ByteVec& data, int level, int window_log = 0);

// `data` as a zlib writer other than LLVM's may write it: raw deflate with a
// 512-byte window (windowBits 9), flushed every 4 KiB, in a zlib wrapper.
ByteVec zlib_stream_compress(const ByteVec& data);

// A v3 CCOB around an already compressed payload, with truthful sizes.
ByteVec ccob_around(const ByteVec& packed, uint16_t method, uint64_t uncompressed);

// The hash OffloadBundler writes: the low 64 bits of the MD5 of the bundle
// (comgr's cache key; the runtime does not verify it).
uint64_t ccob_hash(const ByteVec& bundle);

// A CCOB of `bundle` with truthful sizes; `hash` in the header, by default
// ccob_hash(bundle) as OffloadBundler writes it.
ByteVec make_ccob(const ByteVec& bundle, uint16_t version, uint16_t method, std::optional<uint64_t> hash = std::nullopt,
                  bool zstd_ldm = false);

}  // namespace hgtest
