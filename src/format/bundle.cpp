// Offload bundles: the __CLANG_OFFLOAD_BUNDLE__ container, its CCOB-compressed form, entry IDs and payload kinds.
#include "hipguard/bundle.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include "format/bytes.h"
#include "format/ccob_decode.h"
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

namespace {

// Whether decoding the whole bundle at once holds no more memory than streaming up to `e`: a stream
// keeps the decoder's window (zstd --long: up to 128 MiB) besides the entry's bytes. Whole, the
// bundle is decoded once whatever order its entries are asked for in (rocBLAS's 158 MB bundles);
// streamed, RCCL's 1.19 GB one costs its window and one processor's 196 MB. A frame that cannot be
// streamed (no stream), or whose window is larger than the claim (a streaming writer's frame
// without a content size, which zstd would refuse), is decoded whole, as decompress_prefix does.
bool whole_bundle_is_cheaper(const Bundle& b, const BundleEntry& e, const CcobStream* stream) {
  return !stream || b.uncompressed_size <= stream->window() + e.size;
}

// Drops the stream, counting what it decoded.
void end_stream(Bundle& b) {
  if (b.stream) b.streamed += b.stream->position();
  b.stream.reset();
}

// What the bundle holds decoded, from storage_offset on.
Bytes held(const Bundle& b) { return b.spilled ? b.spilled->bytes() : Bytes(b.storage.data(), b.storage.size()); }

void drop_held(Bundle& b) {
  b.storage = DecodedBytes();
  b.spilled.reset();
  b.storage_offset = 0;
}

// The whole bundle into storage (a frame streaming cannot read: decoded whole, as LLVM does); the
// payload, read to its end, is not needed again (release_read).
bool decode_whole(Bundle& b) {
  end_stream(b);
  b.spilled.reset();
  b.storage_offset = 0;
  bool decoded = static_cast<bool>(decompress_prefix(b.ccob_method, b.payload, b.uncompressed_size, b.uncompressed_size,
                                                     b.storage, true, &b.payload_read));
  if (decoded && b.release_read) b.release_read(b.payload);
  return decoded;
}

const EntrySpill* g_spill = nullptr;  // set_entry_spill (a pointer: the shim runs no static constructor)

// Bytes decoded between two calls of release_read: the payload's pages a stream has read are not
// held while it reads on (RCCL: 359 MB compressed, read to 1.0 GB decoded for gfx942).
constexpr uint64_t kReleaseEvery = 16ull << 20;

// Counts the payload the stream has read; tells release_read every kReleaseEvery bytes decoded, after
// a restart (which reads the payload from its start again) and at the end (`ended`).
void read_so_far(Bundle& b, bool ended = false) {
  const CcobStream& s = *b.stream;
  b.payload_read = std::max(b.payload_read, s.consumed());
  bool due = ended || s.position() < b.release_mark || s.position() - b.release_mark >= kReleaseEvery;
  if (!b.release_read || !due) return;
  b.release_mark = s.position();
  b.release_read(b.payload.first(std::min<uint64_t>(s.consumed(), b.payload.size())));
}

bool skip_to(Bundle& b, uint64_t offset) {
  CcobStream& s = *b.stream;
  while (s.position() < offset) {
    if (!s.skip(std::min(offset - s.position(), kReleaseEvery))) return false;
    read_so_far(b);
  }
  return true;
}

enum class Decoded { Yes, No, SpillFailed };

// The `size` bytes at `offset` (an entry, or the whole bundle) from the stream (which decode_for
// restarted when it was past them) into a spill, when one is given, or else into storage.
Decoded decode_range(Bundle& b, uint64_t offset, uint64_t size, std::unique_ptr<DecodedSpill> spill) {
  drop_held(b);
  if (!skip_to(b, offset)) return Decoded::No;
  DecodedBytes bounce;  // a spill's: what is decoded between two appends
  DecodedBytes& to = spill ? bounce : b.storage;
  try {
    to.resize(spill ? std::min<uint64_t>(size, 1 << 20) : size);
  } catch (const std::exception&) {
    return Decoded::No;
  }
  CcobStream& s = *b.stream;
  for (uint64_t done = 0; done < size;) {
    uint64_t n = std::min(size - done, spill ? to.size() : kReleaseEvery);
    uint8_t* at = spill ? to.data() : to.data() + done;
    if (!s.read(at, n)) return Decoded::No;
    if (spill && !spill->append(Bytes(at, n))) return Decoded::SpillFailed;
    done += n;
    read_so_far(b);
  }
  bool at_end = offset + size == b.uncompressed_size;
  if (at_end && !s.finish()) return Decoded::No;
  if (spill) {
    if (!spill->map()) return Decoded::SpillFailed;
    b.spilled = std::move(spill);
  }
  b.storage_offset = offset;
  if (at_end) read_so_far(b, true);  // (the stream is kept: freeing its window here raised rocBLAS's peak)
  return Decoded::Yes;
}

// Whether `size` decoded bytes go to a spill, by EntrySpill's `above` or `whole_above`.
using SpillLimit = uint64_t EntrySpill::*;
bool spills(uint64_t size, SpillLimit limit) {
  return g_spill && g_spill->create && g_spill->*limit && size >= g_spill->*limit;
}

// A spill for `size` decoded bytes when they go to one, else null (memory).
std::unique_ptr<DecodedSpill> spill_for(uint64_t size, SpillLimit limit) {
  return spills(size, limit) ? g_spill->create() : nullptr;
}

// `e` into storage: whole or alone (whole_bundle_is_cheaper), from a stream restarted when it is past
// the entry. Entries asked for out of order (which GPUs: each row's entries in turn; a hostile
// bundle's falling offsets) decode the bundle whole once its streams have decoded kStreamedFactor
// times its size, which bounds the work whatever the order; into a spill where one is set (RCCL's
// 1.19 GB). A damaged frame, which yields nothing decoded whole, is streamed too: the entries
// before the damage are still read; a bundle that could not be decoded whole is not tried again. A
// spill that fails part-way (no space left) is decoded again into memory.
constexpr uint64_t kStreamedFactor = 4;
bool decode_for(Bundle& b, const BundleEntry& e) {
  auto restart = [&](uint64_t offset) {
    if (b.stream && b.stream->position() <= offset) return;
    end_stream(b);
    b.stream.reset(CcobStream::open(b.ccob_method, b.payload, b.uncompressed_size).release());
  };
  auto streamed = [&](uint64_t offset, uint64_t size, SpillLimit limit) {
    Decoded d = decode_range(b, offset, size, spill_for(size, limit));
    if (d != Decoded::SpillFailed) return d == Decoded::Yes;
    restart(offset);  // the spill took the stream past `offset`
    return b.stream && decode_range(b, offset, size, nullptr) == Decoded::Yes;
  };
  restart(e.offset);
  bool spent = b.streamed / kStreamedFactor >= b.uncompressed_size;
  bool whole = !b.whole_failed && (spent || whole_bundle_is_cheaper(b, e, b.stream.get()));
  if (whole && spent && b.stream && spills(b.uncompressed_size, &EntrySpill::whole_above)) {
    restart(0);
    if (b.stream && streamed(0, b.uncompressed_size, &EntrySpill::whole_above)) return true;
  } else if (whole && decode_whole(b)) {
    return true;
  }
  b.whole_failed = b.whole_failed || whole;
  restart(e.offset);
  return b.stream && streamed(e.offset, e.size, &EntrySpill::above);
}

}  // namespace

Bytes entry_bytes(Bundle& bundle, Bytes data, const BundleEntry& entry) {
  if (!bundle.compressed)
    return fits(data, entry.offset, entry.size) ? data.subspan(entry.offset, entry.size) : Bytes{};
  // The decoder's message is dropped: the caller, given no bytes, says the entry cannot be extracted
  // (HG105).
  if (entry.size == 0 || entry.offset > bundle.uncompressed_size ||
      entry.size > bundle.uncompressed_size - entry.offset)
    return {};
  uint64_t end = entry.offset + entry.size;
  bool is_held = bundle.storage_offset <= entry.offset && end - bundle.storage_offset <= held(bundle).size();
  if (!is_held && !decode_for(bundle, entry)) {
    end_stream(bundle);
    drop_held(bundle);  // nothing kept of what a lying header had reserved
    return {};
  }
  return held(bundle).subspan(entry.offset - bundle.storage_offset, entry.size);
}

void set_entry_spill(EntrySpill spill) {
  delete g_spill;
  g_spill = spill.create ? new EntrySpill(std::move(spill)) : nullptr;
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
