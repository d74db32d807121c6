// A compressed bundle's payload decoded: a prefix of it or all of it into one buffer
// (decompress_prefix), or front to back by a stream kept open from entry to entry (CcobStream).
#include "format/ccob_decode.h"

#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader (libzstd is linked statically)
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "format/bytes.h"
#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

ParseError ccob_error(std::string msg) { return {Code::kMalformedCompressed, std::move(msg)}; }

// Decodes the whole payload in one call into a buffer of the declared size, as
// LLVM's CompressedOffloadBundle::decompress does (llvm::compression::zstd::
// decompress: ZSTD_decompress into UncompressedSize bytes). One-shot decoding
// keeps its history in that buffer, so the frame's window costs nothing; the
// buffer is the claim, which parse_compressed bounded (kMaxDecompressedBytes,
// kMaxCompressionRatio), and is left uninitialised (DecodedBytes) so pages the frame does not
// write are never touched. Fails when the frame is broken or its output is not
// the declared size (all of it is decoded here, so that is known at once).
Status decompress_declared(Bytes input, uint64_t claimed, DecodedBytes& out) {
  // Bytes that are no frame header (of any format this libzstd reads) fail before the buffer is taken.
  if (ZSTD_getFrameContentSize(input.data(), input.size()) == ZSTD_CONTENTSIZE_ERROR)
    return ccob_error("zstd: the payload does not start with a zstd frame");
  try {
    out.resize(std::max<uint64_t>(claimed, 1));
  } catch (const std::exception&) {
    out = DecodedBytes();
    return ccob_error("out of memory");
  }
  size_t n = ZSTD_decompress(out.data(), claimed, input.data(), input.size());
  // A failed decode keeps none of the claim (a frame that lies about its size).
  if (ZSTD_isError(n)) return out = DecodedBytes(), ccob_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != claimed)
    return out = DecodedBytes(),
           ccob_error("zstd frame yields " + std::to_string(n) + " bytes, the header says " + std::to_string(claimed));
  out.resize(n);
  return ok();
}

// Whether decoding the whole frame at once (decompress_declared: no window) holds no more
// memory than streaming its first `want` bytes: the streaming decoder keeps a window of up to
// the frame's window size besides them, as large as what is left to decode for rocBLAS's
// bundles (--long: 128 MiB windows), so the whole 158 MB was cheaper than a 100 MB prefix.
bool whole_is_cheaper(Bytes input, uint64_t want, uint64_t claimed) {
  ZSTD_frameHeader h{};
  if (ZSTD_getFrameHeader(&h, input.data(), input.size()) != 0 || h.frameType != ZSTD_frame) return false;
  if (h.frameContentSize != claimed) return false;  // a frame that does not say the claimed size: streamed
  return claimed - want <= std::min<uint64_t>(want, h.windowSize);
}

// The output of a streamed decompression. It grows with what the stream
// really yields: a header that claims gigabytes costs memory only if the
// compressed data delivers them. What `input` can plausibly yield (kLikelyRatio times its size) is
// reserved at once, so that growing does not copy: a 158 MB rocBLAS bundle held the 128 MB it had
// and the 158 MB it grew to at the same time.
constexpr uint64_t kLikelyRatio = 32;  // real bundles: 5-28x (zstd -19, rocSPARSE)
struct GrowingOutput {
  GrowingOutput(DecodedBytes& to, uint64_t wanted, uint64_t input_size) : out(to), want(wanted) {
    uint64_t likely = input_size > want / kLikelyRatio ? want : input_size * kLikelyRatio;
    try {
      if (out.capacity() < likely) out.reserve(likely);
    } catch (const std::exception&) {
      // No address space for it: grown as the bytes arrive, copied each time.
    }
  }
  DecodedBytes& out;
  uint64_t want;           // bytes wanted
  uint64_t produced = 0;   // bytes written to out so far
  uint64_t consumed = 0;   // bytes of the input read so far
  bool no_memory = false;  // room() could not grow: the decoders stop with "out of memory"
  // Free bytes at out.data() + produced, grown (doubling, at most to `want`) when none are left.
  uint64_t room() {
    try {
      if (out.size() == produced && out.size() < want)
        out.resize(std::min<uint64_t>(want, std::max<uint64_t>(out.size() * 2, 1 << 16)));
    } catch (const std::exception&) {
      no_memory = true;  // never thrown into the shim's host
    }
    return out.size() - produced;
  }
};

// Decodes the whole payload as decompress_declared does, as the output of a decompress_prefix.
Status zstd_whole(Bytes input, uint64_t claimed, GrowingOutput& g) {
  // The frame alone, as streaming reads it: a v1 bundle's payload runs to the end of its container
  // (the padding and the bundles after it), which ZSTD_decompress would take for more frames.
  size_t frame = ZSTD_findFrameCompressedSize(input.data(), input.size());
  if (!ZSTD_isError(frame)) input = input.first(frame);
  if (Status whole = decompress_declared(input, claimed, g.out); !whole) return whole;
  g.produced = g.out.size();
  g.consumed = input.size();
  return ok();
}

// decompress_prefix for a zstd frame.
Status zstd_prefix(Bytes input, uint64_t claimed, GrowingOutput& g, bool to_end) {
  // Only a current zstd frame (RFC 8878 magic) is streamed. libzstd also reads
  // the legacy v0.5-v0.7 formats, and their streaming decoders size the window
  // from the frame header, ignoring ZSTD_d_windowLogMax (a 1.9 KB v0.7 frame
  // made it allocate 94 MB, scripts/fuzz.sh); no compressor of offload bundles
  // writes them. Anything but a current frame (legacy, skippable, no frame at
  // all) is decoded whole into the claimed size, as LLVM does, which bounds it.
  if (input.size() < 4 || read_le<uint32_t>(input, 0) != ZSTD_MAGICNUMBER) return zstd_whole(input, claimed, g);
  // Decoded whole when that is cheaper; a frame broken past `want` is still streamed up to it.
  if (whole_is_cheaper(input, g.want, claimed) && zstd_whole(input, claimed, g)) return ok();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  if (!dctx) return ccob_error("out of memory");
  // Bundles use long-distance matching (windows up to 2^31), but a compressor
  // never uses a window larger than its input (zstd shrinks windowLog to the
  // source size). A frame asking for more than the claimed uncompressed size
  // fails at its header and is decoded by decompress_declared instead of
  // allocating its window (a few bytes could ask for 2 GiB).
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, zstd_window_log(claimed));
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  Status decoded = ok();
  bool window_too_large = false;
  size_t r = 1;
  while (g.produced < g.want || (to_end && r != 0)) {
    uint64_t space = g.room();
    if (g.no_memory) {
      decoded = ccob_error("out of memory");
      break;
    }
    ZSTD_outBuffer o{g.out.data() + g.produced, space, 0};
    r = ZSTD_decompressStream(dctx, &o, &in);
    g.produced += o.pos;
    if (ZSTD_isError(r)) {
      window_too_large = ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge;
      decoded = ccob_error(std::string("zstd: ") + ZSTD_getErrorName(r));
      break;
    }
    if (o.pos == 0 && in.pos == in.size) break;  // input exhausted
    if (r == 0 && g.produced < g.want) break;    // frame ended early
  }
  ZSTD_freeDCtx(dctx);
  g.consumed = in.pos;
  // Streaming writers (the zstd tool reading a pipe, --long, --ultra) leave the
  // content size out and keep their level's window however small the input.
  if (!decoded && window_too_large) return zstd_whole(input, claimed, g);
  if (!decoded) return decoded;
  if (to_end && r != 0) return ccob_error("zstd frame does not end where the uncompressed size says");
  return ok();
}

// decompress_prefix for a zlib stream.
Status zlib_prefix(Bytes input, GrowingOutput& g, bool to_end) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return ccob_error("zlib: inflateInit failed");
  z.next_in = const_cast<Bytef*>(input.data());
  Status inflated = ok();
  uint64_t fed = 0;
  bool ended = false;
  while (g.produced < g.want || (to_end && !ended)) {
    uInt chunk_in = static_cast<uInt>(std::min<uint64_t>(input.size() - fed, 1u << 30));
    z.avail_in = chunk_in;
    z.next_in = const_cast<Bytef*>(input.data() + fed);
    uint64_t space = g.room();
    if (g.no_memory) {
      inflated = ccob_error("out of memory");
      break;
    }
    z.next_out = g.out.data() + g.produced;
    z.avail_out = static_cast<uInt>(std::min<uint64_t>(space, 1u << 30));
    uInt before_out = z.avail_out;
    int r = inflate(&z, Z_NO_FLUSH);
    g.produced += before_out - z.avail_out;
    fed += chunk_in - z.avail_in;
    if (r == Z_STREAM_END) {
      ended = true;
      break;
    }
    if (r != Z_OK && r != Z_BUF_ERROR) {
      inflated = ccob_error(std::string("zlib: ") + (z.msg ? z.msg : "inflate failed"));
      break;
    }
    if (before_out == z.avail_out && chunk_in == z.avail_in) break;  // no progress: input exhausted
  }
  inflateEnd(&z);
  g.consumed = fed;
  if (!inflated) return inflated;
  if (to_end && !ended) return ccob_error("zlib stream does not end where the uncompressed size says");
  return ok();
}

}  // namespace

Status decompress_prefix(uint16_t method, Bytes input, uint64_t want, uint64_t claimed, DecodedBytes& out, bool to_end,
                         uint64_t* consumed) {
  out.clear();
  GrowingOutput g{out, want, input.size()};
  Status decoded = method == 1 ? zstd_prefix(input, claimed, g, to_end) : zlib_prefix(input, g, to_end);
  if (consumed) *consumed = std::max(*consumed, g.consumed);
  if (!decoded) return decoded;
  if (g.produced < want)
    return ccob_error("compressed data ends after " + std::to_string(g.produced) + " of " + std::to_string(want) +
                      " bytes");
  return ok();
}

int zstd_window_log(uint64_t claimed) {
  int window_log = 10;
  while (window_log < 31 && (uint64_t{1} << window_log) < claimed) ++window_log;
  return window_log;
}

struct CcobStream::Decoders {
  ZSTD_DCtx* zstd = nullptr;
  z_stream zlib{};
  bool zlib_open = false;
  ~Decoders() {
    if (zstd) ZSTD_freeDCtx(zstd);
    if (zlib_open) inflateEnd(&zlib);
  }
};

std::unique_ptr<CcobStream> CcobStream::open(uint16_t method, Bytes payload, uint64_t claimed) {
  std::unique_ptr<CcobStream> s(new (std::nothrow) CcobStream);
  if (!s) return nullptr;
  s->method_ = method;
  s->payload_ = payload;
  s->d_.reset(new (std::nothrow) Decoders);
  if (!s->d_) return nullptr;
  if (method == 0) {
    if (inflateInit(&s->d_->zlib) != Z_OK) return nullptr;
    s->d_->zlib_open = true;
    s->window_ = 32 << 10;
    return s;
  }
  // Only a current zstd frame (RFC 8878 magic) is streamed: the legacy formats' streaming decoders
  // size their window from the frame header, ignoring ZSTD_d_windowLogMax (decoded whole instead).
  ZSTD_frameHeader h{};
  if (payload.size() < 4 || read_le<uint32_t>(payload, 0) != ZSTD_MAGICNUMBER ||
      ZSTD_getFrameHeader(&h, payload.data(), payload.size()) != 0 || h.frameType != ZSTD_frame)
    return nullptr;
  s->d_->zstd = ZSTD_createDCtx();
  if (!s->d_->zstd) return nullptr;
  ZSTD_DCtx_setParameter(s->d_->zstd, ZSTD_d_windowLogMax, zstd_window_log(claimed));
  s->window_ = std::min<uint64_t>(h.windowSize, claimed);
  return s;
}

CcobStream::~CcobStream() = default;

void CcobStreamDeleter::operator()(CcobStream* s) const { delete s; }

bool CcobStream::decode(uint8_t* to, uint64_t n, uint64_t* produced) {
  *produced = 0;
  if (!error_.empty()) return false;
  while (*produced < n && !ended_) {
    uint64_t in_before = in_, out_before = *produced;
    if (d_->zstd) {
      ZSTD_outBuffer o{to + *produced, static_cast<size_t>(n - *produced), 0};
      ZSTD_inBuffer in{payload_.data(), payload_.size(), static_cast<size_t>(in_)};
      size_t r = ZSTD_decompressStream(d_->zstd, &o, &in);
      in_ = in.pos, *produced += o.pos;
      if (ZSTD_isError(r)) error_ = std::string("zstd: ") + ZSTD_getErrorName(r);
      ended_ = r == 0;
    } else {
      z_stream& z = d_->zlib;
      z.next_in = const_cast<Bytef*>(payload_.data() + in_);
      z.avail_in = static_cast<uInt>(std::min<uint64_t>(payload_.size() - in_, 1u << 30));
      z.next_out = to + *produced;
      z.avail_out = static_cast<uInt>(std::min<uint64_t>(n - *produced, 1u << 30));
      uInt avail_in = z.avail_in, avail_out = z.avail_out;
      int r = inflate(&z, Z_NO_FLUSH);
      in_ += avail_in - z.avail_in, *produced += avail_out - z.avail_out;
      if (r != Z_OK && r != Z_BUF_ERROR && r != Z_STREAM_END)
        error_ = std::string("zlib: ") + (z.msg ? z.msg : "inflate failed");
      ended_ = r == Z_STREAM_END;
    }
    if (error_.empty() && !ended_ && in_ == in_before && *produced == out_before)
      error_ = "compressed data ends after " + std::to_string(out_ + *produced) + " bytes";
    if (!error_.empty()) break;
  }
  out_ += *produced;
  return error_.empty();
}

Status CcobStream::skip(uint64_t n) {
  std::vector<uint8_t> scratch;
  try {
    scratch.resize(std::min<uint64_t>(n, 256 << 10));
  } catch (const std::exception&) {
    return ParseError{Code::kMalformedCompressed, "out of memory"};  // never thrown into the shim's host
  }
  while (n) {
    uint64_t got = 0;
    if (!decode(scratch.data(), std::min<uint64_t>(n, scratch.size()), &got))
      return ParseError{Code::kMalformedCompressed, error_};
    if (got == 0) return ParseError{Code::kMalformedCompressed, "the stream ends at byte " + std::to_string(out_)};
    n -= got;
  }
  return ok();
}

Status CcobStream::read(uint8_t* to, uint64_t n) {
  uint64_t got = 0;
  if (!decode(to, n, &got)) return ParseError{Code::kMalformedCompressed, error_};
  if (got < n) return ParseError{Code::kMalformedCompressed, "the stream ends at byte " + std::to_string(out_)};
  return ok();
}

Status CcobStream::finish() {
  uint8_t beyond = 0;
  uint64_t got = 0;
  if (!ended_ && !decode(&beyond, 1, &got)) return ParseError{Code::kMalformedCompressed, error_};
  if (got || !ended_)
    return ParseError{Code::kMalformedCompressed, "the stream does not end where the uncompressed size says"};
  return ok();
}

}  // namespace hipguard
