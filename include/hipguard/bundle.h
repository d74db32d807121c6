// Payload framing: the HIP fat binary wrapper, clang offload bundles
// (uncompressed and compressed "CCOB"), bundle entry IDs.
//
// Sources: clang CGCUDANV.cpp (wrapper), clang OffloadBundler.cpp /
// llvm Object/OffloadBundle.cpp (bundle and CCOB layouts), ROCm CLR
// hip_fatbin.cpp / rocclr elf.cpp (how the runtime sizes what it is given).
// All integers are little-endian.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hipguard/result.h"
#include "hipguard/target.h"

namespace hipguard {

// Bytes a decoder writes: grown without zero-filling first (resize() leaves them as they are), so a
// page is touched only when the decoder writes it and nothing is written twice.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  using std::allocator<T>::allocator;
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using DecodedBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

using Bytes = std::span<const uint8_t>;

// __CudaFatBinaryWrapper as emitted by clang for HIP (24 bytes on LP64).
struct FatbinWrapper {
  uint32_t magic;        // kHipFatbinMagic
  uint32_t version;      // must be 1
  const void* binary;    // offload bundle, compressed bundle or raw ELF code object
  const void* reserved;  // null for HIPF
};
inline constexpr uint32_t kHipFatbinMagic = 0x48495046;  // "HIPF" read as a LE u32
// "HIPK": a kpack fat binary (CLR hip_platform.cpp, symbols::kHipkMagic): `binary`
// points to MessagePack metadata, the code objects live in an archive beside
// the program. Current CLR registers it; hipguard does not read the archive.
inline constexpr uint32_t kHipkMagic = 0x4B504948;
inline constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";  // 24 bytes, no NUL
inline constexpr std::string_view kCompressedMagic = "CCOB";

enum class PayloadKind {
  OffloadBundle,     // __CLANG_OFFLOAD_BUNDLE__
  CompressedBundle,  // CCOB
  CodeObject,        // ELF, e_machine EM_AMDGPU
  Unknown,
};
std::string_view to_string(PayloadKind k);

// Looks at the first bytes only (needs >= 24 bytes for a bundle, 20 for ELF).
PayloadKind classify(Bytes head);

// A parsed bundle entry ID: "<kind>-<triple>[-<target id>]".
struct BundleEntryId {
  std::string kind;       // host, hip, hipv4, openmp, hcc
  std::string triple;     // amdgcn-amd-amdhsa-, x86_64-unknown-linux-gnu, spirv64-amd-amdhsa-
  std::string target_id;  // gfx942:sramecc+:xnack-, gfx10-3-generic, amdgcnspirv; may be empty
  bool is_hip() const { return kind == "hip" || kind == "hipv4" || kind == "hcc"; }
  bool is_amdgcn() const { return triple.rfind("amdgcn-", 0) == 0; }
};
BundleEntryId parse_entry_id(std::string_view id);

struct BundleEntry {
  std::string id;  // the raw entry ID string
  BundleEntryId parsed;
  uint64_t offset = 0;  // from the start of the (decompressed) bundle
  uint64_t size = 0;    // bytes
};

// Decoded bytes kept outside memory: written in order, then mapped read-only, so that only the pages
// a parser reads are resident (the CLI's: an unlinked temporary file, hipguard/inputs.h). Never throws.
class DecodedSpill {
 public:
  virtual ~DecodedSpill() = default;
  // False: not written (no space left); the spill is then given up.
  virtual bool append(Bytes data) = 0;
  // What append() wrote, mapped; false when it cannot be. bytes() is valid after a true map().
  virtual bool map() = 0;
  virtual Bytes bytes() const = 0;
};

// Where entry_bytes decodes a compressed bundle's entry of at least `above` bytes that it holds
// alone, and a bundle of at least `whole_above` bytes decoded whole after out-of-order requests
// (bundle.cpp kStreamedFactor): into what `create` returns, or into memory where it returns null
// (no spill can be had). Default: none, always memory (the shim writes no file in its host process).
struct EntrySpill {
  uint64_t above = 0;
  std::function<std::unique_ptr<DecodedSpill>()> create;
  uint64_t whole_above = UINT64_MAX;
};
// Set before any bundle is read (the CLI's commands); not thread-safe against entry_bytes.
void set_entry_spill(EntrySpill spill);

class CcobStream;  // src/format/ccob_decode.h
struct CcobStreamDeleter {
  void operator()(CcobStream* s) const;
};

struct Bundle {
  bool compressed = false;
  uint16_t ccob_version = 0;         // 1, 2 or 3 when compressed
  uint16_t ccob_method = 0;          // 0 zlib, 1 zstd (llvm::compression::Format)
  uint64_t encoded_size = 0;         // bytes the bundle occupies in its container
  uint64_t table_size = 0;           // bytes of header + entry table (of the decompressed bundle)
  std::vector<BundleEntry> entries;  // in file order
  // Compressed bundles: the compressed payload (a view into the input), the
  // uncompressed size from the header, and decoded bytes of the bundle from
  // storage_offset on: the table once parsed, then the entry entry_bytes last
  // extracted (or the whole bundle), with the decoder kept open after it.
  Bytes payload;
  uint64_t payload_read = 0;  // bytes of the payload the decoder has read
  uint64_t uncompressed_size = 0;
  DecodedBytes storage;
  std::unique_ptr<DecodedSpill> spilled;  // or there (EntrySpill), when storage is empty
  uint64_t storage_offset = 0;
  std::unique_ptr<CcobStream, CcobStreamDeleter> stream;
  uint64_t streamed = 0;  // bytes the streams before `stream` decoded (past 4x the bundle: decoded whole)
  // Told the payload's bytes a stream has read so far, every 16 MiB decoded and at its end, and the
  // whole payload once the bundle is decoded whole (check_file: a mapped file's pages are dropped
  // behind the decoder); may be empty. Not told of the table's prefix.
  std::function<void(Bytes read)> release_read;
  uint64_t release_mark = 0;  // the stream's position when release_read was last told
  bool whole_failed = false;  // decoding the whole bundle failed (damage): entries are streamed alone
};

// Parser limits (docs/limits.md). The CLI and the shim use the same parser, so
// the same limits; a size or count over a limit is a diagnostic (HG105 for an
// impossible claim, HG111 for one over hipguard's budget), never an allocation.
//
// Upper bound on the decompressed size of a CCOB; larger claims are refused (HG105).
inline constexpr uint64_t kMaxDecompressedBytes = 4ull << 30;
// A CCOB may claim at most kMaxCompressionRatio times its compressed payload
// (real bundles: zlib 5-14x, zstd 6-28x, rocSPARSE), or kCompressionRatioFloor
// bytes whatever its payload (small bundles compress better); else HG111.
inline constexpr uint64_t kMaxCompressionRatio = 1024;
inline constexpr uint64_t kCompressionRatioFloor = 16ull << 20;
// Bytes of code objects parsed per bundle: at most this many times the
// bundle's (decompressed) size; entries with the same offset and size are
// parsed once. Past it, an entry is not parsed (HG111).
inline constexpr uint64_t kMaxParsedBytesFactor = 2;
// The uncompressed size a CCOB of `payload_bytes` compressed bytes may claim.
inline constexpr uint64_t max_claimed_uncompressed(uint64_t payload_bytes) {
  uint64_t by_ratio = payload_bytes > kMaxDecompressedBytes / kMaxCompressionRatio
                          ? kMaxDecompressedBytes
                          : payload_bytes * kMaxCompressionRatio;
  return by_ratio > kCompressionRatioFloor ? by_ratio : kCompressionRatioFloor;
}

// Parses the bundle (either kind) at the start of `data`. `data` may extend
// beyond the bundle; encoded_size says where it ends. Every table field is
// bounds-checked against `data` (uncompressed) or the header's uncompressed
// size (CCOB: only the prefix holding the table is decoded, streaming).
// Errors: HG104 (uncompressed), HG105 (CCOB), HG111 (a CCOB that claims more
// than max_claimed_uncompressed of its payload).
Result<Bundle> parse_bundle(Bytes data);

// The table of an uncompressed bundle `total` bytes long, from a copy of its
// first bytes `head` (the shim reads them from the file the bundle is mapped
// from, so that its pages are not faulted in). Entries are bounds-checked
// against `total`, as parse_bundle does against its data. When the table runs
// past `head`, fails with *need_more set: parse the bundle itself.
Result<Bundle> parse_bundle_table(Bytes head, uint64_t total, bool* need_more);

// Bytes of the entry's payload: a view into `data` for uncompressed bundles;
// for compressed ones decoded (only when an entry is asked for) into
// bundle.storage: the whole bundle where that holds no more memory than the
// decoder's window and the entry, else the entry alone, from a stream kept
// open from entry to entry (entries asked for in file order decode the bundle
// once; one before the stream's position restarts it). Empty when the entry
// cannot be produced. Views stay valid until the next call.
Bytes entry_bytes(Bundle& bundle, Bytes data, const BundleEntry& entry);

// Size of a raw ELF code object from its headers alone, the way the ROCm
// runtime computes it (rocclr amd::Elf::getElfSize): the larger of the end of
// the section header table and the end of the last section by offset.
// Returns nullopt when the headers are not readable within `data` or
// the arithmetic overflows.
std::optional<uint64_t> elf_image_size(Bytes data);

// Splits a .hip_fatbin section (several bundles back to back, each usually
// 4096-aligned) into bundles. Stops at trailing padding.
struct SectionBundle {
  uint64_t offset;  // in the section
  Result<Bundle> bundle;
};
std::vector<SectionBundle> split_fatbin_section(Bytes section);

}  // namespace hipguard
