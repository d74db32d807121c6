// A compressed bundle's payload decoded (bundle.cpp): a prefix or all of it into one buffer, or front
// to back by a stream kept open between entries (entry_bytes), so that an entry costs the decoder's
// window and its own bytes, not the bundle up to its end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hipguard/bundle.h"
#include "hipguard/result.h"

namespace hipguard {

// Streams the first `want` bytes out of a zlib stream or zstd frame, so the
// bundle table can be read without inflating every code object. With `to_end`
// (want is the whole uncompressed size) the stream must also end there, with
// its checksum: that is how a cut v1 bundle, which has no total size, shows.
// `claimed` is the header's uncompressed size (bounds the zstd window). `*consumed` (optional):
// the bytes of `input` read, all of them for a frame decoded whole. Fails with HG105 (kMalformedCompressed).
Status decompress_prefix(uint16_t method, Bytes input, uint64_t want, uint64_t claimed, DecodedBytes& out,
                         bool to_end = false, uint64_t* consumed = nullptr);

// The window log a zstd decoder may use for a frame of `claimed` bytes: the claim rounded up to a
// power of two (a compressor that knows its input size never uses more).
int zstd_window_log(uint64_t claimed);

// One zlib stream or zstd frame (the CCOB method: 0 zlib, 1 zstd), read from `payload`, which must
// outlive it. Every method fails (HG105's message) once the data is damaged or ends early; then the
// stream is spent.
class CcobStream {
 public:
  // A stream at the start of `payload`. nullptr where it cannot be streamed and must be decoded
  // whole (a zstd frame of a legacy format, or none), or no memory for the decoder. `claimed`: the
  // header's uncompressed size, which bounds the zstd window (a compressor never uses a larger one).
  static std::unique_ptr<CcobStream> open(uint16_t method, Bytes payload, uint64_t claimed);
  ~CcobStream();
  CcobStream(const CcobStream&) = delete;
  CcobStream& operator=(const CcobStream&) = delete;

  // Bytes of the decompressed bundle produced so far; bytes of the payload read so far.
  uint64_t position() const { return out_; }
  uint64_t consumed() const { return in_; }
  // Decodes `n` bytes and drops them.
  Status skip(uint64_t n);
  // Decodes the next `n` bytes into `to`.
  Status read(uint8_t* to, uint64_t n);
  // Whether the stream ends here, with its checksum (a cut v1 bundle, which has no total size, shows
  // this way): called after the bundle's last byte.
  Status finish();
  // The window the decoder keeps besides its output, in bytes (zlib: 32 KiB; zstd: the frame's).
  uint64_t window() const { return window_; }

 private:
  CcobStream() = default;
  // Up to `n` bytes into `to`; false with `error_` set on damage or early end.
  bool decode(uint8_t* to, uint64_t n, uint64_t* produced);

  uint16_t method_ = 0;
  Bytes payload_;
  struct Decoders;
  std::unique_ptr<Decoders> d_;
  uint64_t in_ = 0, out_ = 0, window_ = 0;
  bool ended_ = false;
  std::string error_;
};

}  // namespace hipguard
