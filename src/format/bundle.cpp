// Offload bundles: the __CLANG_OFFLOAD_BUNDLE__ container, its CCOB-compressed form, entry IDs and payload kinds.
#include "hipguard/bundle.h"

#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader (libzstd is linked statically)
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include "format/bytes.h"
#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

constexpr size_t kBundleHeader = 32;  // magic + u64 count
constexpr size_t kEntryFixed = 24;    // u64 offset, u64 size, u64 id length
constexpr uint64_t kMaxEntryIdLength = 4096;

ParseError bundle_error(std::string msg) { return {Code::kMalformedBundle, std::move(msg)}; }
ParseError ccob_error(std::string msg) { return {Code::kMalformedCompressed, std::move(msg)}; }

// Parses a bundle table from `data`, the first bytes of a bundle that is
// `total` bytes long (data.size() <= total; equal for uncompressed bundles).
// Entries are bounds-checked against `total`. When the table runs past `data`
// but not past `total`, sets *need_more and fails: the caller decodes more.
Result<Bundle> parse_table(Bytes data, uint64_t total, bool* need_more) {
  if (need_more) *need_more = false;
  auto short_read = [&](std::string msg) -> Result<Bundle> {
    if (need_more && data.size() < total) *need_more = true;
    return bundle_error(std::move(msg));
  };
  if (data.size() < kBundleHeader)
    return short_read("offload bundle header truncated: " + std::to_string(data.size()) + " bytes, need 32");
  uint64_t count = read_le<uint64_t>(data, 24);
  // Each entry needs at least 24 bytes of table: bounds the count before any allocation.
  if (count > (total - kBundleHeader) / kEntryFixed)
    return bundle_error("offload bundle claims " + std::to_string(count) + " entries, more than its " +
                        std::to_string(total) + " bytes can hold");
  Bundle b;
  b.entries.reserve(std::min<uint64_t>(count, 4096));
  uint64_t pos = kBundleHeader;
  uint64_t end = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (!fits(data, pos, kEntryFixed))
      return short_read("entry " + std::to_string(i) + " of the bundle table is truncated");
    BundleEntry e;
    e.offset = read_le<uint64_t>(data, pos);
    e.size = read_le<uint64_t>(data, pos + 8);
    uint64_t id_len = read_le<uint64_t>(data, pos + 16);
    pos += kEntryFixed;
    if (id_len == 0 || id_len > kMaxEntryIdLength || pos + id_len > total)
      return bundle_error("entry " + std::to_string(i) + " has an ID length of " + std::to_string(id_len) +
                          " bytes, outside the table");
    if (!fits(data, pos, id_len)) return short_read("entry " + std::to_string(i) + " ID is truncated");
    e.id.assign(reinterpret_cast<const char*>(data.data() + pos), id_len);
    while (!e.id.empty() && e.id.back() == '\0') e.id.pop_back();  // comgr trims trailing NULs too
    pos += id_len;
    if (e.offset > total || e.size > total - e.offset)
      return bundle_error("entry '" + e.id + "' spans bytes " + std::to_string(e.offset) + "+" +
                          std::to_string(e.size) + ", beyond the " + std::to_string(total) + " bytes of the bundle");
    e.parsed = parse_entry_id(e.id);
    end = std::max(end, e.offset + e.size);
    b.entries.push_back(std::move(e));
  }
  b.encoded_size = std::max<uint64_t>(end, pos);
  b.table_size = pos;
  return b;
}

Result<Bundle> parse_plain(Bytes data) { return parse_table(data, data.size(), nullptr); }

// The window log streaming may use: the claimed uncompressed size rounded up
// to a power of two (a compressor that knows its input size never uses more).
int zstd_window_log(uint64_t claimed) {
  int window_log = 10;
  while (window_log < 31 && (uint64_t{1} << window_log) < claimed) ++window_log;
  return window_log;
}

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

// Streams the first `want` bytes out of a zlib stream or zstd frame, so the
// bundle table can be read without inflating every code object. With `to_end`
// (want is the whole uncompressed size) the stream must also end there, with
// its checksum: that is how a cut v1 bundle, which has no total size, shows.
// `claimed` is the header's uncompressed size (bounds the zstd window). `*consumed` (optional):
// the bytes of `input` read, all of them for a frame decoded whole. Fails with HG105 (kMalformedCompressed).
Status decompress_prefix(uint16_t method, Bytes input, uint64_t want, uint64_t claimed, DecodedBytes& out,
                         bool to_end = false, uint64_t* consumed = nullptr) {
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

Result<Bundle> parse_compressed(Bytes data) {
  if (data.size() < 8) return ccob_error("compressed bundle header truncated");
  Bundle b;
  b.compressed = true;
  b.ccob_version = read_le<uint16_t>(data, 4);
  b.ccob_method = read_le<uint16_t>(data, 6);
  uint64_t header = 0, total = 0, uncompressed = 0;
  switch (b.ccob_version) {
    case 1: header = 20; break;
    case 2: header = 24; break;
    case 3: header = 32; break;
    default:
      return ccob_error("compressed bundle version " + std::to_string(b.ccob_version) +
                        " is unknown (1, 2 and 3 exist)");
  }
  if (data.size() < header)
    return ccob_error("compressed bundle v" + std::to_string(b.ccob_version) +
                      " header truncated: " + std::to_string(data.size()) + " bytes, need " + std::to_string(header));
  if (b.ccob_version == 1) {
    uncompressed = read_le<uint32_t>(data, 8);
    total = data.size();  // v1 has no total size: the payload is the rest of the buffer
  } else if (b.ccob_version == 2) {
    total = read_le<uint32_t>(data, 8);
    uncompressed = read_le<uint32_t>(data, 12);
  } else {
    total = read_le<uint64_t>(data, 8);
    uncompressed = read_le<uint64_t>(data, 16);
  }
  if (total < header || total > data.size())
    return ccob_error("compressed bundle total size " + std::to_string(total) + " is outside the " +
                      std::to_string(data.size()) + " bytes available (header " + std::to_string(header) + ")");
  if (uncompressed > kMaxDecompressedBytes)
    return ccob_error("compressed bundle claims " + std::to_string(uncompressed) +
                      " uncompressed bytes, over hipguard's cap of " + std::to_string(kMaxDecompressedBytes));
  if (uint64_t cap = max_claimed_uncompressed(total - header); uncompressed > cap)
    return ParseError{Code::kBudgetExceeded,
                      "compressed bundle claims " + std::to_string(uncompressed) + " uncompressed bytes from " +
                          std::to_string(total - header) + " compressed bytes; hipguard's limit is " +
                          std::to_string(cap) + " (" + std::to_string(kMaxCompressionRatio) +
                          "x the compressed size, at least " + std::to_string(kCompressionRatioFloor) + ")"};
  if (b.ccob_method != 0 && b.ccob_method != 1)
    return ccob_error("compression method " + std::to_string(b.ccob_method) + " is unknown (0 zlib, 1 zstd)");
  b.encoded_size = total;
  b.uncompressed_size = uncompressed;
  b.payload = data.subspan(header, total - header);
  // Decode only as much as the table needs: start with a page, grow while the table runs past it.
  uint64_t want = std::min<uint64_t>(uncompressed, 4096);
  for (;;) {
    Status decoded = decompress_prefix(b.ccob_method, b.payload, want, uncompressed, b.storage, false, &b.payload_read);
    if (!decoded) return ccob_error("decompression failed: " + decoded.error().message);
    Bytes inner(b.storage.data(), b.storage.size());
    if (inner.size() >= kBundleMagic.size() && classify(inner) != PayloadKind::OffloadBundle)
      return ccob_error("decompressed data is not an offload bundle");
    bool need_more = false;
    Result<Bundle> plain = parse_table(inner, uncompressed, &need_more);
    if (plain) {
      b.entries = std::move(plain->entries);
      b.table_size = plain->table_size;
      return b;
    }
    if (!need_more || want == uncompressed) return ccob_error("inside the compressed bundle: " + plain.error().message);
    want = std::min<uint64_t>(uncompressed, want * 4);
  }
}

}  // namespace

std::string_view to_string(PayloadKind k) {
  switch (k) {
    case PayloadKind::OffloadBundle: return "offload bundle";
    case PayloadKind::CompressedBundle: return "compressed offload bundle";
    case PayloadKind::CodeObject: return "code object";
    case PayloadKind::Unknown: return "unknown";
  }
  return "unknown";
}

PayloadKind classify(Bytes head) {
  if (head.size() >= kBundleMagic.size() && std::memcmp(head.data(), kBundleMagic.data(), kBundleMagic.size()) == 0)
    return PayloadKind::OffloadBundle;
  if (head.size() >= 4 && std::memcmp(head.data(), kCompressedMagic.data(), 4) == 0)
    return PayloadKind::CompressedBundle;
  // ELF magic + e_machine == EM_AMDGPU (224) at offset 18.
  if (head.size() >= 20 &&
      std::memcmp(head.data(),
                  "\x7f"
                  "ELF",
                  4) == 0 &&
      read_le<uint16_t>(head, 18) == 224)
    return PayloadKind::CodeObject;
  return PayloadKind::Unknown;
}

BundleEntryId parse_entry_id(std::string_view id) {
  BundleEntryId out;
  size_t dash = id.find('-');
  out.kind.assign(id.substr(0, dash));
  if (dash == std::string_view::npos) return out;
  std::string_view rest = id.substr(dash + 1);
  // The triple has four '-'-separated fields (env may be empty); what follows is the target ID,
  // which may itself contain '-' (gfx10-3-generic). Host triples may have only three fields.
  size_t pos = 0;
  int fields = 0;
  while (fields < 4) {
    size_t next = rest.find('-', pos);
    ++fields;
    if (next == std::string_view::npos) {
      pos = std::string_view::npos;
      break;
    }
    pos = next + 1;
  }
  if (pos == std::string_view::npos) {
    out.triple.assign(rest);
  } else {
    out.triple.assign(rest.substr(0, pos - 1));
    out.target_id.assign(rest.substr(pos));
  }
  return out;
}

Result<Bundle> parse_bundle_table(Bytes head, uint64_t total, bool* need_more) {
  if (head.size() > total) head = head.first(total);
  return parse_table(head, total, need_more);
}

Result<Bundle> parse_bundle(Bytes data) {
  switch (classify(data)) {
    case PayloadKind::OffloadBundle: return parse_plain(data);
    case PayloadKind::CompressedBundle: return parse_compressed(data);
    default: return bundle_error("no offload bundle magic");
  }
}

Bytes entry_bytes(Bundle& bundle, Bytes data, const BundleEntry& entry) {
  if (!bundle.compressed)
    return fits(data, entry.offset, entry.size) ? data.subspan(entry.offset, entry.size) : Bytes{};
  // Decode up to the end of this entry (parse_bundle checked it lies within the uncompressed size), or
  // twice as far as before when that is further: a check that reads every entry in turn then decodes
  // the bundle about twice, not once per entry (a stream restarts from its beginning).
  uint64_t end = entry.offset + entry.size;
  if (end > bundle.storage.size()) {
    uint64_t want = std::min(bundle.uncompressed_size, std::max<uint64_t>(end, 2 * bundle.storage.size()));
    // Decoded again into the same buffer (the shorter prefix is not kept beside the longer one). The
    // decoder's message is dropped: the caller, given no bytes, says the entry cannot be extracted (HG105).
    if (!decompress_prefix(bundle.ccob_method, bundle.payload, want, bundle.uncompressed_size, bundle.storage,
                           want == bundle.uncompressed_size)) {
      bundle.storage = DecodedBytes();  // nothing kept of what a lying header had reserved
      return {};
    }
  }
  Bytes base(bundle.storage.data(), bundle.storage.size());
  return fits(base, entry.offset, entry.size) ? base.subspan(entry.offset, entry.size) : Bytes{};
}

std::optional<uint64_t> elf_image_size(Bytes data) {
  // ELF64 header: e_shoff @40 (u64), e_shentsize @58, e_shnum @60 (u16).
  if (data.size() < 64 || data[4] != 2 /*ELFCLASS64*/ || data[5] != 1 /*LSB*/) return std::nullopt;
  uint64_t shoff = read_le<uint64_t>(data, 40);
  uint64_t shentsize = read_le<uint16_t>(data, 58);
  uint64_t shnum = read_le<uint16_t>(data, 60);
  if (shentsize != 64 && shnum != 0) return std::nullopt;
  uint64_t table_bytes = shentsize * shnum;  // <= 65535*64, cannot overflow
  if (!fits(data, shoff, table_bytes)) return std::nullopt;
  uint64_t size = shoff + table_bytes;
  uint64_t last_off = 0, last_end = 0;
  for (uint64_t i = 0; i < shnum; ++i) {
    uint64_t sh = shoff + i * 64;
    uint32_t type = read_le<uint32_t>(data, sh + 4);
    uint64_t off = read_le<uint64_t>(data, sh + 24);
    uint64_t sz = read_le<uint64_t>(data, sh + 32);
    if (off >= last_off) {
      uint64_t end = off;
      if (type != 8 /*SHT_NOBITS*/ && __builtin_add_overflow(off, sz, &end)) return std::nullopt;
      last_off = off;
      last_end = end;
    }
  }
  size = std::max(size, last_end);
  // Program headers too (the runtime ignores them; a stripped object may need them).
  uint64_t phoff = read_le<uint64_t>(data, 32);
  uint64_t phnum = read_le<uint16_t>(data, 56);
  if (phnum && fits(data, phoff, phnum * 56)) {
    for (uint64_t i = 0; i < phnum; ++i) {
      uint64_t ph = phoff + i * 56, end;
      if (__builtin_add_overflow(read_le<uint64_t>(data, ph + 8), read_le<uint64_t>(data, ph + 32), &end))
        return std::nullopt;
      size = std::max(size, end);
    }
  }
  return size;
}

std::vector<SectionBundle> split_fatbin_section(Bytes section) {
  std::vector<SectionBundle> out;
  uint64_t pos = 0;
  while (pos < section.size()) {
    Bytes rest = section.subspan(pos);
    PayloadKind kind = classify(rest);
    if (kind != PayloadKind::OffloadBundle && kind != PayloadKind::CompressedBundle) {
      // Skip alignment padding to the next bundle magic; anything else ends the scan.
      const uint8_t* p = rest.data();
      size_t i = 0;
      while (i < rest.size() && p[i] == 0) ++i;
      if (i == 0 || i == rest.size()) break;
      pos += i;
      continue;
    }
    Result<Bundle> b = parse_bundle(rest);
    uint64_t advance = b ? b->encoded_size : 0;
    out.push_back({pos, std::move(b)});
    if (advance == 0) break;  // a malformed bundle: its length is unknown
    pos += advance;
  }
  return out;
}

}  // namespace hipguard
