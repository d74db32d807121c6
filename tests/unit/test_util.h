// Shared helpers for the unit tests: where the real inputs are, reading files,
// looking for diagnostics, and builders for crafted inputs (offload bundles,
// compressed bundles, minimal AMDGPU code objects).
//
// The builders write the formats from their specifications, not from hipguard's
// parser: offload bundle and CCOB layouts from clang OffloadBundler.cpp (see
// shared reference hip-fatbin-and-selection.md §2-3), ELF from the ELF-64 gABI,
// e_flags and the NT_AMDGPU_METADATA note from LLVM AMDGPUUsage.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/check.h"
#include "hipguard/diagnostic.h"
#include "hipguard/inputs.h"

namespace hgtest {

namespace fs = std::filesystem;
using ByteVec = std::vector<uint8_t>;

// ---- Where the inputs are -------------------------------------------------

inline fs::path corpus_dir() { return fs::path(HIPGUARD_CORPUS_DIR) / "aiter"; }
inline bool have_corpus() {
  std::error_code ec;
  return fs::is_directory(corpus_dir(), ec);
}
// Every .co of the corpus, sorted by name.
inline std::vector<fs::path> corpus_files(std::string_view prefix = "") {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!have_corpus()) return out;
  for (const auto& e : fs::directory_iterator(corpus_dir(), ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".co" && name.rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

#define HG_REQUIRE_CORPUS()                                                                           \
  do {                                                                                                \
    if (!::hgtest::have_corpus())                                                                     \
      GTEST_SKIP() << "AITER corpus not found at " << ::hgtest::corpus_dir()                          \
                   << " (set -DHIPGUARD_CORPUS_DIR=...; CI has it at ../shared/corpus)";              \
  } while (0)

// A hipcc-built program or bundle from tests/apps, or "" when absent.
inline std::string app(std::string_view name) {
  std::string dir = HIPGUARD_APPS_DIR;
  if (dir.empty()) return "";
  fs::path p = fs::path(dir) / name;
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : "";
}

#define HG_REQUIRE_APP(var, name)                                                                        \
  std::string var = ::hgtest::app(name);                                                                 \
  do {                                                                                                   \
    if (var.empty())                                                                                     \
      GTEST_SKIP() << "hipcc-built " << (name) << " not available (HIPGUARD_APPS_DIR='" HIPGUARD_APPS_DIR \
                   << "'; needs hipcc at configure time)";                                               \
  } while (0)

inline ByteVec read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return ByteVec(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline hipguard::Bytes span(const ByteVec& v) { return hipguard::Bytes(v.data(), v.size()); }

// A temporary file removed at scope exit.
struct TempFile {
  fs::path path;
  explicit TempFile(const ByteVec& content, std::string_view suffix = ".bin") {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("hipguard_unit_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + std::string(suffix));
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string str() const { return path.string(); }
};

// ---- Diagnostics -----------------------------------------------------------

inline std::vector<const hipguard::Diagnostic*> find_diags(const std::vector<hipguard::Diagnostic>& ds,
                                                           std::string_view code) {
  std::vector<const hipguard::Diagnostic*> out;
  for (const auto& d : ds)
    if (d.code == code) out.push_back(&d);
  return out;
}
inline bool has_code(const std::vector<hipguard::Diagnostic>& ds, std::string_view code) {
  return !find_diags(ds, code).empty();
}
inline bool has_issue(const hipguard::CodeObject& co, std::string_view code) {
  for (const auto& i : co.issues)
    if (i.code == code) return true;
  return false;
}
// Every diagnostic of a file report (file-level and per image), one per line, for failure messages.
inline std::vector<hipguard::Diagnostic> all_diags(const hipguard::FileReport& r) {
  std::vector<hipguard::Diagnostic> out = r.diagnostics;
  for (const auto& i : r.images) out.insert(out.end(), i.diagnostics.begin(), i.diagnostics.end());
  return out;
}
inline std::string dump(const std::vector<hipguard::Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += "  " + hipguard::format_line(d) + "\n";
  return s.empty() ? "  (no diagnostics)\n" : s;
}

inline hipguard::TargetId target(std::string_view text) {
  std::string err;
  auto t = hipguard::parse_target(text, &err);
  EXPECT_TRUE(t) << text << ": " << err;
  return t.value_or(hipguard::TargetId{});
}

// ---- Little-endian writing -------------------------------------------------

template <class T>
void put(ByteVec& v, size_t off, T value) {
  if (v.size() < off + sizeof(T)) v.resize(off + sizeof(T));
  std::memcpy(v.data() + off, &value, sizeof(T));
}
template <class T>
void append(ByteVec& v, T value) {
  put(v, v.size(), value);
}
inline void append_str(ByteVec& v, std::string_view s) { v.insert(v.end(), s.begin(), s.end()); }
inline void pad_to(ByteVec& v, size_t align) {
  while (v.size() % align) v.push_back(0);
}
template <class T>
T get(const ByteVec& v, size_t off) {
  T x;
  std::memcpy(&x, v.data() + off, sizeof(T));
  return x;
}

// ---- Offload bundles (clang OffloadBundler BinaryFileHandler layout) --------

struct BundlePart {
  std::string id;
  ByteVec payload;
};
// "__CLANG_OFFLOAD_BUNDLE__", u64 count, then per entry u64 offset, u64 size,
// u64 id length, id bytes; payloads at `align`-aligned offsets (hipcc: 4096).
// Empty payloads (the host entry) point at the first payload offset, as hipcc does.
inline ByteVec make_bundle(const std::vector<BundlePart>& parts, size_t align = 4096) {
  ByteVec out;
  append_str(out, hipguard::kBundleMagic);
  append<uint64_t>(out, parts.size());
  size_t table = out.size();
  for (const auto& p : parts) table += 24 + p.id.size();
  // Layout the payloads.
  std::vector<uint64_t> offsets;
  const uint64_t first = (table + align - 1) / align * align;
  uint64_t pos = first;
  for (const auto& p : parts) {
    if (p.payload.empty()) {
      offsets.push_back(first);
      continue;
    }
    pos = (pos + align - 1) / align * align;
    offsets.push_back(pos);
    pos += p.payload.size();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    append<uint64_t>(out, offsets[i]);
    append<uint64_t>(out, parts[i].payload.size());
    append<uint64_t>(out, parts[i].id.size());
    append_str(out, parts[i].id);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].payload.empty()) continue;
    out.resize(offsets[i], 0);
    out.insert(out.end(), parts[i].payload.begin(), parts[i].payload.end());
  }
  return out;
}

// Reads the entries of a bundle independently of hipguard (for comparisons).
inline std::vector<BundlePart> split_bundle(const ByteVec& b) {
  std::vector<BundlePart> out;
  uint64_t n = get<uint64_t>(b, 24);
  size_t pos = 32;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t off = get<uint64_t>(b, pos), size = get<uint64_t>(b, pos + 8), len = get<uint64_t>(b, pos + 16);
    pos += 24;
    BundlePart p;
    p.id.assign(reinterpret_cast<const char*>(b.data() + pos), len);
    pos += len;
    p.payload.assign(b.begin() + off, b.begin() + off + size);
    out.push_back(std::move(p));
  }
  return out;
}

// ---- Minimal AMDGPU code objects ---------------------------------------------

// e_flags fields (AMDGPUUsage "AMDGPU ELF Header"; code object v4+).
inline constexpr uint32_t kXnackAny = 0x100, kXnackOff = 0x200, kXnackOn = 0x300;
inline constexpr uint32_t kSrameccAny = 0x400, kSrameccOff = 0x800, kSrameccOn = 0xc00;

struct ArgSpec {
  std::string name;
  std::string value_kind;
  uint64_t offset, size;
};

struct KernelSpec {
  std::string name = "k";
  uint64_t lds = 0, private_size = 0, kernarg_size = 16, kernarg_align = 8, wavefront = 64;
  uint64_t sgpr = 16, vgpr = 8, max_flat = 256;
  std::optional<uint64_t> agpr;
  bool uses_dynamic_stack = false;
  std::optional<std::array<uint64_t, 3>> reqd;
  std::vector<ArgSpec> args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 8, 8}};
  std::set<std::string> omit;  // metadata keys to leave out
  bool metadata = true;        // has an amdhsa.kernels entry
  bool descriptor = true;      // has a "<name>.kd" STT_OBJECT symbol
  // Kernel descriptor fields; unset = agree with the metadata.
  std::optional<uint32_t> kd_lds, kd_private, kd_kernarg;
  std::optional<uint16_t> kd_properties;
};

struct CodeObjectSpec {
  uint32_t mach = 0x04c;                           // gfx942
  uint32_t features = kXnackAny | kSrameccAny;     // e_flags feature bits
  unsigned version = 5;                            // code object version; EI_ABIVERSION = version - 2
  unsigned generic_version = 0;                    // e_flags bits 24..31 (v6)
  uint16_t machine = 224;                          // EM_AMDGPU
  uint8_t osabi = 64;                              // ELFOSABI_AMDGPU_HSA
  std::string target = "amdgcn-amd-amdhsa--gfx942";
  std::vector<KernelSpec> kernels = {KernelSpec{}};
  std::vector<std::string> device_functions;       // extra STT_FUNC symbols
  bool note = true;                                // emit the NT_AMDGPU_METADATA note
  std::optional<std::string> raw_metadata;         // note payload instead of the generated msgpack
};

// Encodes the amdhsa metadata map as MessagePack (defined in test_util.cpp with llvm::msgpack).
std::string metadata_blob(const CodeObjectSpec& spec);

// An ELF64 LSB ET_DYN with sections: null, .note, .rodata (descriptors), .text,
// .symtab, .strtab, .shstrtab; section headers at the end of the file.
ByteVec make_code_object(const CodeObjectSpec& spec);

// hipcc-built bundles from tests/apps: the code object of `entry_id`, or empty.
ByteVec entry_payload(const ByteVec& bundle, std::string_view entry_id);

}  // namespace hgtest
