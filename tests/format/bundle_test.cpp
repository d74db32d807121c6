// bundle.h: entry IDs, uncompressed offload bundles (hipcc-built and crafted),
// compressed "CCOB" bundles v1/v2/v3 with zlib and zstd, .hip_fatbin splitting,
// and ELF image sizing.
#include "hipguard/bundle.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/Compression.h>

#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

// ---- Entry IDs ----------------------------------------------------------------

TEST(EntryId, HipWithFeatures) {
  auto e = parse_entry_id("hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-");
  EXPECT_EQ(e.kind, "hipv4");
  EXPECT_EQ(e.triple, "amdgcn-amd-amdhsa-");  // four fields, empty environment
  EXPECT_EQ(e.target_id, "gfx942:sramecc+:xnack-");
  EXPECT_TRUE(e.is_hip());
  EXPECT_TRUE(e.is_amdgcn());
}

TEST(EntryId, GenericTargetKeepsItsDashes) {
  auto e = parse_entry_id("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic");
  EXPECT_EQ(e.kind, "hipv4");
  EXPECT_EQ(e.triple, "amdgcn-amd-amdhsa-");
  EXPECT_EQ(e.target_id, "gfx10-3-generic");
}

TEST(EntryId, HostThreeFieldTriple) {
  // What Debian's hipcc (clang 15) writes for the dummy host entry.
  auto e = parse_entry_id("host-x86_64-unknown-linux");
  EXPECT_EQ(e.kind, "host");
  EXPECT_EQ(e.triple, "x86_64-unknown-linux");
  EXPECT_EQ(e.target_id, "");
  EXPECT_FALSE(e.is_hip());
  EXPECT_FALSE(e.is_amdgcn());
}

TEST(EntryId, HostFourFieldTriple) {
  auto e = parse_entry_id("host-x86_64-unknown-linux-gnu");
  EXPECT_EQ(e.kind, "host");
  EXPECT_EQ(e.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(e.target_id, "");
}

TEST(EntryId, OtherKinds) {
  auto hip = parse_entry_id("hip-amdgcn-amd-amdhsa--gfx906");
  EXPECT_TRUE(hip.is_hip());
  EXPECT_EQ(hip.target_id, "gfx906");
  auto omp = parse_entry_id("openmp-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_FALSE(omp.is_hip());
  EXPECT_TRUE(omp.is_amdgcn());
  auto spirv = parse_entry_id("hipv4-spirv64-amd-amdhsa--amdgcnspirv");
  EXPECT_TRUE(spirv.is_hip());
  EXPECT_FALSE(spirv.is_amdgcn());
  EXPECT_EQ(spirv.target_id, "amdgcnspirv");
  auto bare = parse_entry_id("hipv4");
  EXPECT_EQ(bare.kind, "hipv4");
  EXPECT_EQ(bare.triple, "");
  EXPECT_EQ(bare.target_id, "");
}

// ---- hipcc-built bundles ------------------------------------------------------

TEST(Bundle, HipccRawBundleMatchesIndependentReader) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec file = read_bytes(path);
  auto parsed = parse_bundle(span(file));
  ASSERT_TRUE(parsed) << code_string(parsed.error().code) << " " << parsed.error().message;
  EXPECT_FALSE(parsed->compressed);
  // Entries as read by this test's own reader (split_bundle), in the same order.
  auto expected = split_bundle(file);
  ASSERT_EQ(parsed->entries.size(), expected.size());
  uint64_t end = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& e = parsed->entries[i];
    EXPECT_EQ(e.id, expected[i].id) << "entry " << i;
    EXPECT_EQ(e.size, expected[i].payload.size()) << e.id;
    Bytes payload = entry_bytes(*parsed, span(file), e);
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), expected[i].payload.begin(), expected[i].payload.end()))
        << e.id;
    end = std::max(end, e.offset + e.size);
  }
  // hipcc --genco writes exactly the bundle: it ends at the end of the last payload.
  EXPECT_EQ(parsed->encoded_size, end);
  EXPECT_EQ(parsed->encoded_size, file.size());
  // The host entry is empty; the device entries are AMDGPU code objects, -bundle-align=4096.
  EXPECT_EQ(parsed->entries.front().parsed.kind, "host");
  EXPECT_EQ(parsed->entries.front().size, 0u);
  for (size_t i = 1; i < parsed->entries.size(); ++i) {
    const auto& e = parsed->entries[i];
    EXPECT_EQ(e.offset % 4096, 0u) << e.id;
    EXPECT_EQ(classify(entry_bytes(*parsed, span(file), e)), PayloadKind::CodeObject) << e.id;
    EXPECT_TRUE(e.parsed.is_hip() && e.parsed.is_amdgcn()) << e.id;
  }
}

TEST(Bundle, EntryOrderIsFileOrder) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec file = read_bytes(path);
  auto parts = split_bundle(file);
  ASSERT_GE(parts.size(), 3u);
  // Reverse the table: the parser must not sort.
  std::vector<BundlePart> reversed(parts.rbegin(), parts.rend());
  ByteVec b = make_bundle(reversed);
  auto parsed = parse_bundle(span(b));
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->entries.size(), reversed.size());
  for (size_t i = 0; i < reversed.size(); ++i) EXPECT_EQ(parsed->entries[i].id, reversed[i].id);
}

TEST(Bundle, EntryIdTrailingNulsAreTrimmed) {
  // comgr trims trailing NULs from entry IDs; some writers pad them.
  ByteVec co = make_code_object({});
  ByteVec b = make_bundle(
      {{"host-x86_64-unknown-linux-gnu", {}}, {std::string("hipv4-amdgcn-amd-amdhsa--gfx942\0\0", 34), co}});
  auto parsed = parse_bundle(span(b));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->entries[1].id, "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_EQ(parsed->entries[1].parsed.target_id, "gfx942");
}

TEST(Bundle, DataBeyondTheBundleIsAllowed) {
  ByteVec b = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object({})}});
  size_t size = b.size();
  b.resize(size + 5000, 0xab);
  auto parsed = parse_bundle(span(b));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->encoded_size, size);
}

TEST(Bundle, ExecutableFatbinSection) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  auto r = check_file(path, {});
  ASSERT_TRUE(r.hip) << dump(all_diags(r));
  ASSERT_EQ(r.images.size(), 1u) << "one bundle in .hip_fatbin";
  // Order as read with an independent reader (python struct over .hip_fatbin) while
  // writing this test; clang-offload-bundler writes the device IDs sorted.
  std::vector<std::string> expected = {"host-x86_64-unknown-linux", "hipv4-amdgcn-amd-amdhsa--gfx1030",
                                       "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx940"};
  EXPECT_EQ(r.images[0].entry_ids, expected);
  EXPECT_EQ(r.images[0].kind, PayloadKind::OffloadBundle);
  // No targets: every amdgcn entry is parsed and structurally sound.
  EXPECT_TRUE(r.images[0].structurally_ok) << dump(r.images[0].diagnostics);
  EXPECT_EQ(r.images[0].code_objects.size(), 3u);
}

TEST(Bundle, SplitSectionWithSeveralBundles) {
  // .hip_fatbin of a program linked from several TUs: bundles back to back,
  // each 4096-aligned, zero padding between them and at the end.
  ByteVec a =
      make_bundle({{"host-x86_64-unknown-linux-gnu", {}}, {"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object({})}});
  CodeObjectSpec s2;
  s2.kernels[0].name = "second";
  ByteVec b =
      make_bundle({{"host-x86_64-unknown-linux-gnu", {}}, {"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object(s2)}});
  ByteVec section = a;
  section.resize((section.size() + 4095) / 4096 * 4096, 0);
  size_t second = section.size();
  section.insert(section.end(), b.begin(), b.end());
  section.push_back(0);  // hipcc-built programs end the section with one NUL
  auto parts = split_fatbin_section(span(section));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].offset, 0u);
  EXPECT_EQ(parts[1].offset, second);
  ASSERT_TRUE(parts[0].bundle);
  ASSERT_TRUE(parts[1].bundle);
  EXPECT_EQ(parts[1].bundle->entries.size(), 2u);
}

TEST(Bundle, SplitSectionStopsAtMalformedBundle) {
  ByteVec section = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object({})}});
  section.resize((section.size() + 4095) / 4096 * 4096, 0);
  ByteVec bad(kBundleMagic.begin(), kBundleMagic.end());
  append<uint64_t>(bad, 1000);  // 1000 entries in a 32-byte bundle
  section.insert(section.end(), bad.begin(), bad.end());
  auto parts = split_fatbin_section(span(section));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[0].bundle);
  ASSERT_FALSE(parts[1].bundle);
  EXPECT_EQ(parts[1].bundle.error().code, Code::kMalformedBundle);
}

// ---- Malformed uncompressed bundles → HG104 --------------------------------------

namespace {

void expect_hg104(const ByteVec& b, const char* what) {
  auto r = parse_bundle(span(b));
  ASSERT_FALSE(r) << what << ": accepted";
  EXPECT_EQ(r.error().code, Code::kMalformedBundle) << what << ": " << r.error().message;
  EXPECT_FALSE(r.error().message.empty());
  // And through the checker: a structural error, no verdict can pass.
  auto report = check_image(span(b), "crafted", {target("gfx942")});
  EXPECT_TRUE(has_code(report.diagnostics, Code::kMalformedBundle)) << what << "\n" << dump(report.diagnostics);
  EXPECT_FALSE(report.structurally_ok);
  EXPECT_FALSE(report.ok());
}

ByteVec one_entry_bundle() { return make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object({})}}); }

}  // namespace

TEST(BundleMalformed, TruncatedHeader) {
  ByteVec b(kBundleMagic.begin(), kBundleMagic.end());
  b.push_back(1);  // 25 bytes: magic and part of the count
  expect_hg104(b, "truncated header");
}

TEST(BundleMalformed, CountTooLarge) {
  ByteVec b = one_entry_bundle();
  put<uint64_t>(b, 24, 1000000);
  expect_hg104(b, "count 1e6");
  put<uint64_t>(b, 24, ~0ull);
  expect_hg104(b, "count 2^64-1");
}

TEST(BundleMalformed, CountExceedsTable) {
  // A count that fits the size heuristic but whose extra entries are garbage/truncated.
  ByteVec b = one_entry_bundle();
  put<uint64_t>(b, 24, 2);
  b.resize(32 + 24 + 31 + 10);  // table of entry 0, 10 bytes of entry 1's fixed part
  expect_hg104(b, "second entry truncated");
}

TEST(BundleMalformed, IdLengthOutOfBounds) {
  ByteVec b = one_entry_bundle();
  put<uint64_t>(b, 32 + 16, 0);
  expect_hg104(b, "ID length 0");
  put<uint64_t>(b, 32 + 16, b.size() + 1);
  expect_hg104(b, "ID length beyond the buffer");
  put<uint64_t>(b, 32 + 16, ~0ull - 8);
  expect_hg104(b, "ID length near 2^64");
}

TEST(BundleMalformed, EntryBeyondBuffer) {
  ByteVec b = one_entry_bundle();
  uint64_t off = get<uint64_t>(b, 32), size = get<uint64_t>(b, 40);
  put<uint64_t>(b, 40, b.size() - off + 1);
  expect_hg104(b, "size one byte too large");
  put<uint64_t>(b, 40, size);
  put<uint64_t>(b, 32, b.size());
  expect_hg104(b, "offset at the end");
  put<uint64_t>(b, 32, ~0ull - 16);  // offset + size overflows
  expect_hg104(b, "offset + size overflows");
}

TEST(BundleMalformed, NoMagic) {
  ByteVec b = one_entry_bundle();
  b[0] = 'X';
  auto r = parse_bundle(span(b));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kMalformedBundle);
}

// ---- Compressed bundles (CCOB) --------------------------------------------------

namespace {

// make_ccob (tests/support/ccob.h) writes the header exactly as
// hip-fatbin-and-selection.md §3, with the MD5 hash OffloadBundler writes.

bool method_available(uint16_t method) {
  return method == 0 ? llvm::compression::zlib::isAvailable() : llvm::compression::zstd::isAvailable();
}

void expect_hg105(const ByteVec& b, const char* what) {
  auto r = parse_bundle(span(b));
  ASSERT_FALSE(r) << what << ": accepted";
  EXPECT_EQ(r.error().code, Code::kMalformedCompressed) << what << ": " << r.error().message;
  auto report = check_image(span(b), "crafted", {target("gfx90a")});
  EXPECT_EQ(report.kind, PayloadKind::CompressedBundle);
  EXPECT_TRUE(has_code(report.diagnostics, Code::kMalformedCompressed)) << what << "\n" << dump(report.diagnostics);
  EXPECT_FALSE(report.ok());
}

class Ccob : public ::testing::TestWithParam<std::tuple<int, int>> {};

}  // namespace

TEST_P(Ccob, SameEntriesAsTheUncompressedBundle) {
  auto [version, method] = GetParam();
  if (!method_available(method)) GTEST_SKIP() << "LLVM built without " << (method ? "zstd" : "zlib");
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec plain = read_bytes(path);
  ByteVec ccob = make_ccob(plain, version, method);
  EXPECT_EQ(ccob_header(version, method, 0, 0).size(), ccob_header_size(version));  // the builder's header
  EXPECT_EQ(classify(span(ccob)), PayloadKind::CompressedBundle);

  auto ref = parse_bundle(span(plain));
  ASSERT_TRUE(ref) << ref.error().message;
  auto c = parse_bundle(span(ccob));
  ASSERT_TRUE(c) << code_string(c.error().code) << " " << c.error().message;
  EXPECT_TRUE(c->compressed);
  EXPECT_EQ(c->ccob_version, version);
  EXPECT_EQ(c->ccob_method, method);
  EXPECT_EQ(c->encoded_size, ccob.size());
  EXPECT_EQ(c->uncompressed_size, plain.size());
  ASSERT_EQ(c->entries.size(), ref->entries.size());
  for (size_t i = 0; i < ref->entries.size(); ++i) {
    EXPECT_EQ(c->entries[i].id, ref->entries[i].id);
    EXPECT_EQ(c->entries[i].offset, ref->entries[i].offset);
    EXPECT_EQ(c->entries[i].size, ref->entries[i].size);
    Bytes a = entry_bytes(*ref, span(plain), ref->entries[i]);
    Bytes b = entry_bytes(*c, span(ccob), c->entries[i]);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << c->entries[i].id;
  }
  // End to end: selection works the same on the compressed form.
  auto report = check_image(span(ccob), "ccob", {target("gfx90a"), target("gfx942")});
  EXPECT_EQ(report.kind, PayloadKind::CompressedBundle);
  ASSERT_EQ(report.verdicts.size(), 2u);
  EXPECT_TRUE(report.verdicts[0].can_run) << dump(report.diagnostics);
  EXPECT_EQ(report.verdicts[0].selected, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_FALSE(report.verdicts[1].can_run);
  EXPECT_TRUE(has_code(report.diagnostics, Code::kNoCodeObject));
}

INSTANTIATE_TEST_SUITE_P(VersionsAndMethods, Ccob,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(0, 1)), [](const auto& info) {
                           return "v" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_zstd" : "_zlib");
                         });

TEST(CcobTrailing, TotalSizeBoundsTheBundle) {
  if (!method_available(1)) GTEST_SKIP() << "LLVM built without zstd";
  ByteVec plain = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object({})}});
  for (uint16_t v : {2, 3}) {
    ByteVec ccob = make_ccob(plain, v, 1);
    size_t size = ccob.size();
    ccob.resize(size + 4096, 0);  // next bundle's padding in a .hip_fatbin
    auto c = parse_bundle(span(ccob));
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->encoded_size, size) << "v" << v;
  }
}

TEST(CcobMalformed, BadVersion) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec ccob = make_ccob(read_bytes(path), 2, 0);
  put<uint16_t>(ccob, 4, 0);
  expect_hg105(ccob, "version 0");
  put<uint16_t>(ccob, 4, 4);
  expect_hg105(ccob, "version 4");
}

TEST(CcobMalformed, BadMethod) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec ccob = make_ccob(read_bytes(path), 3, 0);
  put<uint16_t>(ccob, 6, 2);  // xz exists in newer LLVM but CCOB rejects it
  expect_hg105(ccob, "method 2");
  put<uint16_t>(ccob, 6, 0xffff);
  expect_hg105(ccob, "method 0xffff");
}

TEST(CcobMalformed, WrongMethodForPayload) {
  if (!method_available(1)) GTEST_SKIP() << "LLVM built without zstd";
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec ccob = make_ccob(read_bytes(path), 2, 0);
  put<uint16_t>(ccob, 6, 1);  // zlib stream labelled zstd
  expect_hg105(ccob, "zlib payload, zstd method");
}

TEST(CcobMalformed, BadSizes) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec plain = read_bytes(path);
  ByteVec v2 = make_ccob(plain, 2, 0);
  ByteVec b = v2;
  put<uint32_t>(b, 8, static_cast<uint32_t>(b.size() + 1));
  expect_hg105(b, "v2 total beyond the buffer");
  b = v2;
  put<uint32_t>(b, 8, 10);
  expect_hg105(b, "v2 total smaller than the header");
  b = v2;
  put<uint32_t>(b, 12, static_cast<uint32_t>(plain.size() - 1));
  expect_hg105(b, "v2 uncompressed size one too small");

  ByteVec v3 = make_ccob(plain, 3, 0);
  b = v3;
  put<uint64_t>(b, 8, ~0ull);
  expect_hg105(b, "v3 total 2^64-1");
  b = v3;
  put<uint64_t>(b, 16, 8ull << 30);
  expect_hg105(b, "v3 uncompressed 8 GiB, over the cap");

  ByteVec v1 = make_ccob(plain, 1, 0);
  b = v1;
  put<uint32_t>(b, 8, 0);
  expect_hg105(b, "v1 uncompressed size 0");
}

TEST(CcobMalformed, TruncatedHeaderAndPayload) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  ByteVec v3 = make_ccob(read_bytes(path), 3, 0);
  expect_hg105(ByteVec(v3.begin(), v3.begin() + 6), "6 bytes");
  expect_hg105(ByteVec(v3.begin(), v3.begin() + 20), "v3 header cut at 20 bytes");
  ByteVec corrupt = v3;
  for (size_t i = 40; i < 80 && i < corrupt.size(); ++i) corrupt[i] ^= 0x5a;
  expect_hg105(corrupt, "payload bytes flipped");
}

TEST(CcobMalformed, PayloadCutAfterTheTableIsHG105WhenTheEntryIsExtracted) {
  // parse_bundle decodes only the prefix holding the entry table, so a payload cut
  // short after the table parses; the damage shows when the selected entry (the
  // last one, gfx90a at 8192..12696) is decoded. That is a decompression failure
  // of the compressed bundle: HG105 (diagnostic.h: "CCOB header or decompression
  // failure"), not a malformed ELF (HG106).
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  for (uint16_t method : {0, 1}) {
    if (!method_available(method)) continue;
    ByteVec v1 = make_ccob(read_bytes(path), 1, method);
    ByteVec cut(v1.begin(), v1.end() - 20);
    auto report = check_image(span(cut), "cut", {target("gfx90a")});
    SCOPED_TRACE(method ? "zstd" : "zlib");
    EXPECT_FALSE(report.ok());
    EXPECT_FALSE(report.verdicts.at(0).can_run);
    EXPECT_TRUE(has_code(report.diagnostics, Code::kMalformedCompressed)) << dump(report.diagnostics);
    EXPECT_FALSE(has_code(report.diagnostics, Code::kMalformedElf)) << dump(report.diagnostics);
  }
}

TEST(CcobMalformed, InnerDataNotABundle) {
  ByteVec not_bundle(8192, 'x');
  expect_hg105(make_ccob(not_bundle, 2, 0), "compressed junk");
  // A damaged bundle inside: reported as HG105 (the compressed container), not HG104.
  ByteVec inner = one_entry_bundle();
  put<uint64_t>(inner, 24, 1000000);
  expect_hg105(make_ccob(inner, 3, 0), "compressed bundle with a bad count");
}

// ---- ELF image size (rocclr amd::Elf::getElfSize) ------------------------------------

TEST(ElfImageSize, HipccCodeObjectsEndAtTheirSectionHeaders) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  // llvm-readelf-16 -h on the extracted gfx90a entry: section headers at 3672,
  // 13 x 64 bytes = 4504, the entry size in the bundle table.
  ByteVec file = read_bytes(path);
  for (const auto& p : split_bundle(file)) {
    if (p.payload.empty()) continue;
    uint64_t shoff = get<uint64_t>(p.payload, 40);
    uint16_t shnum = get<uint16_t>(p.payload, 60);
    auto size = elf_image_size(span(p.payload));
    ASSERT_TRUE(size) << p.id;
    EXPECT_EQ(*size, shoff + 64ull * shnum) << p.id;
    EXPECT_EQ(*size, p.payload.size()) << p.id;
    // More data after the image does not change its size.
    ByteVec longer = p.payload;
    longer.resize(longer.size() + 10000, 0);
    EXPECT_EQ(elf_image_size(span(longer)), size) << p.id;
  }
}

TEST(ElfImageSize, RejectsUnreadableHeaders) {
  ByteVec co = make_code_object({});
  EXPECT_FALSE(elf_image_size(Bytes(co.data(), 40)));
  ByteVec b = co;
  b[4] = 1;  // ELFCLASS32
  EXPECT_FALSE(elf_image_size(span(b)));
  b = co;
  put<uint64_t>(b, 40, b.size());  // section headers beyond the data
  EXPECT_FALSE(elf_image_size(span(b)));
  b = co;
  put<uint16_t>(b, 58, 40);  // e_shentsize other than 64
  EXPECT_FALSE(elf_image_size(span(b)));
  EXPECT_EQ(elf_image_size(span(co)), co.size());
}
