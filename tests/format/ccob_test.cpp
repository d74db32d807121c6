// Compressed offload bundles ("CCOB"), written here from a hipcc-built bundle
// following clang's OffloadBundler (CompressedOffloadBundle): "CCOB", u16
// version, u16 method (0 zlib, 1 zstd), then v1: u32 uncompressed size;
// v2: u32 total, u32 uncompressed; v3: u64 total, u64 uncompressed; u64 hash;
// payload. Built by tests/support/ccob.h, independently of hipguard.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <fstream>
#include <string>
#include <vector>

#include <zstd.h>

#include "hipguard/check.h"
#include "hipguard/inputs.h"
#include "bundle.h"
#include "ccob.h"
#include "check_util.h"

using namespace hipguard;

namespace {

using namespace checks;

// OffloadBundler's settings: zstd with long-distance matching (tests/support/ccob.h);
// a fixed hash, which the runtime does not verify either.
std::vector<uint8_t> bundler_ccob(const std::vector<uint8_t>& bundle, int version, int method) {
  return hgtest::make_ccob(bundle, static_cast<uint16_t>(version), static_cast<uint16_t>(method), 0x1234567890abcdefull,
                           /*zstd_ldm=*/true);
}

class Ccob : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  void SetUp() override {
    if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
    plain_ = read_bytes(kApps + "/vector_add_multi.hipfb");
  }
  std::vector<uint8_t> plain_;
};

}  // namespace

TEST_P(Ccob, TableFromAPrefixEntriesOnDemand) {
  auto [version, method] = GetParam();
  auto ccob = bundler_ccob(plain_, version, method);
  auto ref = parse_bundle(Bytes(plain_.data(), plain_.size()));
  ASSERT_TRUE(ref);
  auto b = parse_bundle(Bytes(ccob.data(), ccob.size()));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_TRUE(b->compressed);
  EXPECT_EQ(b->ccob_version, version);
  EXPECT_EQ(b->ccob_method, method);
  EXPECT_EQ(b->encoded_size, ccob.size());
  ASSERT_EQ(b->entries.size(), ref->entries.size());
  for (size_t i = 0; i < ref->entries.size(); ++i) {
    EXPECT_EQ(b->entries[i].id, ref->entries[i].id);
    EXPECT_EQ(b->entries[i].offset, ref->entries[i].offset);
    EXPECT_EQ(b->entries[i].size, ref->entries[i].size);
  }
  // Only the prefix holding the table was decoded.
  EXPECT_LT(b->storage.size(), plain_.size());
  EXPECT_GE(b->storage.size(), b->table_size);
  // Extracting the last entry decodes up to its end and yields the same bytes; the bundle, decoded
  // whole, needs its payload no more.
  Bytes told;
  b->release_read = [&](Bytes read) { told = read; };
  const BundleEntry& last = b->entries.back();
  Bytes got = entry_bytes(*b, Bytes(ccob.data(), ccob.size()), last);
  EXPECT_EQ(told.data(), b->payload.data());
  EXPECT_EQ(told.size(), b->payload.size());
  Bytes want = entry_bytes(*ref, Bytes(plain_.data(), plain_.size()), ref->entries.back());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
  // Selection through the compressed bundle is the same as through the plain one.
  auto t = parse_target("gfx90a");
  ImageReport r = check_image(Bytes(ccob.data(), ccob.size()), "x.ccob", {*t});
  EXPECT_EQ(r.kind, PayloadKind::CompressedBundle);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.verdicts[0].selected, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(r.verdicts[0].kernels, 1u);
}

namespace {
// The hipcc-built bundle with two other processors' entries of 12 MiB each after its first entry:
// plain (parsed: `ref`) and as a CCOB of the given version and method.
struct LargeBundle {
  LargeBundle(const std::vector<uint8_t>& bundle, int version, int method) {
    std::vector<hgtest::BundlePart> parts = hgtest::split_bundle(bundle);
    uint32_t x = 1;
    for (const char* processor : {"gfx1100", "gfx1030"}) {
      hgtest::ByteVec filler(12 << 20);
      for (auto& byte : filler) x = x * 1664525u + 1013904223u, byte = static_cast<uint8_t>((x >> 24) & 0x3f);
      parts.insert(parts.begin() + 1, {std::string("hipv4-amdgcn-amd-amdhsa--") + processor, filler});
    }
    plain = hgtest::make_bundle(parts);
    ccob = hgtest::make_ccob(plain, static_cast<uint16_t>(version), static_cast<uint16_t>(method));
    if (auto parsed = parse_bundle(plain_bytes())) ref.emplace(std::move(*parsed));
  }
  Bytes plain_bytes() const { return Bytes(plain.data(), plain.size()); }
  Bytes ccob_bytes() const { return Bytes(ccob.data(), ccob.size()); }
  // Whether entry `i` of `b` (parsed from the CCOB) has the bytes it has in the plain bundle.
  bool same(Bundle& b, size_t i) {
    Bytes got = entry_bytes(b, ccob_bytes(), b.entries[i]);
    Bytes want = entry_bytes(*ref, plain_bytes(), ref->entries[i]);
    return got.size() == want.size() && std::equal(got.begin(), got.end(), want.begin());
  }
  hgtest::ByteVec plain, ccob;
  std::optional<Bundle> ref;
};
}  // namespace

// An entry of a bundle much larger than the decoder's window is decoded alone, from a stream kept
// open from entry to entry: ROCm 7.2's librccl.so.1.0 holds one 1.19 GB bundle whose gfx942 entry
// ends 1.0 GB in, all of which was held to reach it. Here two other processors' entries of 12 MiB
// each come before the hipcc-built code objects (zlib's window: 32 KiB; zstd, LLVM's level: 2 MiB).
TEST_P(Ccob, EntryBeyondTheWindowIsDecodedAlone) {
  auto [version, method] = GetParam();
  LargeBundle large(plain_, version, method);
  const hgtest::ByteVec &plain = large.plain, &ccob = large.ccob;
  auto b = parse_bundle(large.ccob_bytes());
  ASSERT_TRUE(large.ref && b) << (b ? "" : b.error().message);
  const size_t entries = large.ref->entries.size();
  ASSERT_EQ(b->entries.size(), entries);
  // In file order: each entry alone; the last one ends the bundle, where the stream must end too.
  for (size_t i = 0; i < entries; ++i) {
    const BundleEntry& e = b->entries[i];
    EXPECT_TRUE(large.same(*b, i)) << e.id;
    if (e.size == 0) continue;
    EXPECT_EQ(b->storage_offset, e.offset) << e.id << ": the entry alone is held";
    EXPECT_LE(b->storage.capacity(), e.size) << e.id << ": the entry alone is held";
  }
  // Backwards, each step back restarts the stream, until the streams have decoded the bundle four
  // times over: then it is decoded whole, once, so that no order costs more than about five.
  for (int round = 0; round < 3; ++round)
    for (size_t i = entries; i-- > 0;) EXPECT_TRUE(large.same(*b, i)) << b->entries[i].id;
  EXPECT_EQ(b->storage_offset, 0u);
  EXPECT_EQ(b->storage.size(), plain.size());
  EXPECT_GE(b->streamed, 4 * plain.size());
  EXPECT_LT(b->streamed, 5 * plain.size());
  // A stream cut before the bundle's end yields the entries before the cut, not the last one.
  hgtest::ByteVec cut(ccob.begin(), ccob.end() - 64);
  if (version == 1) {  // v1 has no total size: the payload is what the buffer holds
    auto c = parse_bundle(Bytes(cut.data(), cut.size()));
    ASSERT_TRUE(c);
    EXPECT_FALSE(entry_bytes(*c, Bytes(cut.data(), cut.size()), c->entries[1]).empty());
    EXPECT_TRUE(entry_bytes(*c, Bytes(cut.data(), cut.size()), c->entries.back()).empty());
  }
}

namespace {
struct NoSpillAfterTheTest {
  ~NoSpillAfterTheTest() { set_entry_spill({}); }
};
// A spill whose disk is full after `room` appends.
struct FullDisk : DecodedSpill {
  explicit FullDisk(int room) : room(room) {}
  bool append(Bytes) override { return room-- > 0; }
  bool map() override { return false; }
  Bytes bytes() const override { return {}; }
  int room;
};
}  // namespace

// The CLI's EntrySpill: an entry held alone and at least `above` bytes large is decoded into a
// temporary file and read mapped from it, so that only the pages the parser reads are resident
// (RCCL's gfx942 entry: 196 MB); a bundle decoded whole after out-of-order requests likewise. The
// payload the stream has read is handed to release_read as it goes. A spill that fails is decoded
// into memory again.
TEST_P(Ccob, LargeEntriesDecodedIntoTemporaryFiles) {
  auto [version, method] = GetParam();
  LargeBundle large(plain_, version, method);
  Bytes ccob_bytes = large.ccob_bytes();
  ASSERT_TRUE(large.ref);
  const size_t entries = large.ref->entries.size();
  NoSpillAfterTheTest reset;
  set_entry_spill(temporary_file_spill(1 << 20, 1 << 20));
  auto b = parse_bundle(ccob_bytes);
  ASSERT_TRUE(b) << b.error().message;
  std::vector<uint64_t> released;
  b->release_read = [&](Bytes read) {
    EXPECT_EQ(read.data(), b->payload.data());
    released.push_back(read.size());
  };
  for (size_t i = 0; i < entries; ++i) {
    const BundleEntry& e = b->entries[i];
    EXPECT_TRUE(large.same(*b, i)) << e.id;
    if (e.size < (1 << 20)) continue;
    EXPECT_TRUE(b->spilled) << e.id << ": in a temporary file";
    EXPECT_EQ(b->storage.capacity(), 0u) << e.id << ": not in memory";
  }
  ASSERT_FALSE(released.empty());
  EXPECT_TRUE(std::is_sorted(released.begin(), released.end()));
  EXPECT_EQ(released.back(), b->payload.size()) << "the last entry ends the payload";
  for (int round = 0; round < 3; ++round)
    for (size_t i = entries; i-- > 0;) EXPECT_TRUE(large.same(*b, i)) << b->entries[i].id;
  ASSERT_TRUE(b->spilled) << "decoded whole, into a temporary file";
  EXPECT_EQ(b->storage_offset, 0u);
  EXPECT_EQ(b->spilled->bytes().size(), large.plain.size());
  EXPECT_EQ(b->storage.capacity(), 0u);

  for (int room : {0, 3}) {  // full from the start, or part-way: each entry decoded into memory again
    set_entry_spill({1 << 20, [room] { return std::unique_ptr<DecodedSpill>(new FullDisk(room)); }});
    auto c = parse_bundle(ccob_bytes);
    ASSERT_TRUE(c);
    for (size_t i = 0; i < entries; ++i) EXPECT_TRUE(large.same(*c, i)) << c->entries[i].id << ": in memory";
    EXPECT_FALSE(c->spilled);
  }

  // check_image hands its release_read to the bundle it reads.
  set_entry_spill({});
  uint64_t told = 0;
  auto counted = [&](Bytes read) { told = std::max<uint64_t>(told, read.size()); };
  auto target = parse_target("gfx1100");
  ASSERT_TRUE(target);
  ImageReport r = check_image(ccob_bytes, "large.ccob", {*target}, "", Depth::Full, {}, nullptr, {}, counted);
  EXPECT_EQ(r.verdicts.at(0).selected, "hipv4-amdgcn-amd-amdhsa--gfx1100");
  EXPECT_GT(told, 0u) << "the payload read through the gfx1100 entry (24 MiB in)";
}

INSTANTIATE_TEST_SUITE_P(AllVersionsAndMethods, Ccob,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(0, 1)), [](const auto& info) {
                           return "v" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_zstd" : "_zlib");
                         });

TEST_F(Ccob, BadHeadersAndPayloadsAreHG105) {
  auto good = bundler_ccob(plain_, 3, 1);
  auto expect_hg105 = [](std::vector<uint8_t> v, const char* what) {
    auto b = parse_bundle(Bytes(v.data(), v.size()));
    ASSERT_FALSE(b) << what;
    EXPECT_EQ(b.error().code, Code::kMalformedCompressed) << what;
  };
  auto v = good;
  v[4] = 9;  // version 9
  expect_hg105(v, "unknown version");
  v = good;
  v[6] = 2;  // method 2
  expect_hg105(v, "unknown method");
  v = good;
  v[8] = 0xff, v[9] = 0xff, v[10] = 0xff;  // total size beyond the buffer
  expect_hg105(v, "total size");
  v = good;
  v[16 + 7] = 0x10;  // uncompressed size of ~1 EiB, over the cap
  expect_hg105(v, "uncompressed size cap");
  v = good;
  for (size_t i = 40; i < v.size(); ++i) v[i] ^= 0x5a;  // corrupt payload
  expect_hg105(v, "corrupt payload");
  v = std::vector<uint8_t>(good.begin(), good.begin() + 14);
  expect_hg105(v, "truncated header");
}

// fuzz_bundle finding (out of memory): a v1 header claiming ~4 GiB of
// uncompressed data in front of a small stream. Decoding must grow with what
// the stream yields, not allocate what the header claims. Since issue 12 a
// claim over 1024x the payload is refused up front (HG111, docs/limits.md);
// a lie within that ratio still costs only what the stream yields.
TEST_F(Ccob, HugeClaimedSizeCostsOnlyWhatTheStreamYields) {
  auto v = bundler_ccob(plain_, 1, 0);
  uint32_t claim = 0xffff0000u;
  std::memcpy(v.data() + 8, &claim, 4);
  auto refused = parse_bundle(Bytes(v.data(), v.size()));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kBudgetExceeded) << refused.error().message;
  claim = static_cast<uint32_t>(max_claimed_uncompressed(v.size() - 20));
  ASSERT_GT(claim, plain_.size() * 16) << "the claim within the ratio is still a big lie";
  std::memcpy(v.data() + 8, &claim, 4);
  auto b = parse_bundle(Bytes(v.data(), v.size()));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->uncompressed_size, claim);
  Bytes last = entry_bytes(*b, Bytes(v.data(), v.size()), b->entries.back());
  EXPECT_FALSE(last.empty()) << "the entries the stream does hold are still readable";
  EXPECT_LT(b->storage.capacity(), size_t{1} << 20) << "memory follows the stream, not the header";
  // Asking for bytes past the end of the stream fails cleanly.
  BundleEntry beyond = b->entries.back();
  beyond.offset = claim - 16;
  beyond.size = 16;
  EXPECT_TRUE(entry_bytes(*b, Bytes(v.data(), v.size()), beyond).empty());
  EXPECT_LT(b->storage.capacity(), size_t{1} << 20);
}

TEST_F(Ccob, SeveralFittingEntriesAreAmbiguousOnlyWhenCompressed) {
  // comgr unbundles a CCOB in hash order: with two entries that fit, the runtime's
  // pick is version dependent (HG208). Uncompressed: the first in file order, silently.
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  ASSERT_FALSE(co.empty());
  const std::string hip = "hipv4-amdgcn-amd-amdhsa--";
  auto plain = make_bundle({{hip + "gfx90a", co}, {hip + "gfx90a:xnack-", co}});
  auto gfx90a = *parse_target("gfx90a:sramecc+:xnack-");
  ImageReport u = check_image(Bytes(plain.data(), plain.size()), "plain", {gfx90a});
  for (const auto& d : u.diagnostics) EXPECT_NE(d.code, Code::kAmbiguousSelection) << d.message;
  auto packed = bundler_ccob(plain, 3, 1);
  ImageReport c = check_image(Bytes(packed.data(), packed.size()), "ccob", {gfx90a});
  ASSERT_EQ(c.verdicts.size(), 1u);
  EXPECT_TRUE(c.verdicts[0].can_run) << "a warning, not an error";
  EXPECT_EQ(c.verdicts[0].selected, hip + "gfx90a");
  size_t n = 0;
  for (const auto& d : c.diagnostics)
    if (d.code == Code::kAmbiguousSelection) {
      ++n;
      EXPECT_EQ(d.severity, Severity::Warning);
      EXPECT_NE(d.message.find("2 entries that fit"), std::string::npos) << d.message;
      EXPECT_NE(d.message.find(hip + "gfx90a:xnack-"), std::string::npos) << d.message;
    }
  EXPECT_EQ(n, 1u);
  // One fitting entry: nothing to say.
  auto single = bundler_ccob(make_bundle({{hip + "gfx90a:xnack-", co}, {hip + "gfx1030", {}}}), 2, 0);
  ImageReport s = check_image(Bytes(single.data(), single.size()), "ccob", {gfx90a});
  for (const auto& d : s.diagnostics) EXPECT_NE(d.code, Code::kAmbiguousSelection) << d.message;
}

TEST_F(Ccob, OpenmpEntriesAreCandidatesOnlyWhenCompressed) {
  // comgr's unbundler runs with HipOpenmpCompatible; the uncompressed lookup takes hip* only.
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  ASSERT_FALSE(co.empty());
  auto plain = make_bundle({{"openmp-amdgcn-amd-amdhsa--gfx90a", co}});
  auto gfx90a = *parse_target("gfx90a");
  EXPECT_EQ(check_image(Bytes(plain.data(), plain.size()), "plain", {gfx90a}).verdicts[0].selection, Selection::None);
  auto packed = bundler_ccob(plain, 2, 1);
  ImageReport c = check_image(Bytes(packed.data(), packed.size()), "ccob", {gfx90a});
  EXPECT_EQ(c.verdicts[0].selection, Selection::Native);
  EXPECT_EQ(c.verdicts[0].selected, "openmp-amdgcn-amd-amdhsa--gfx90a");
}

// What a streaming writer produces (the zstd tool reading a pipe, --long=27,
// --ultra -22): no content size, and the level's window, far larger than this
// ~60 KB bundle. LLVM's OffloadBundler (CompressedOffloadBundle::decompress)
// and comgr decode it in one call into the header's uncompressed size; the same
// bundle compressed by OffloadBundler must give the same entries and verdict.
TEST_F(Ccob, StreamedZstdWithoutContentSizeReadsLikeTheBundlersOwn) {
  auto gfx90a = *parse_target("gfx90a");
  auto gfx942 = *parse_target("gfx942");
  auto ref_ccob = bundler_ccob(plain_, 3, 1);
  ImageReport ref = check_image(Bytes(ref_ccob.data(), ref_ccob.size()), "ccob", {gfx90a, gfx942});
  ASSERT_TRUE(ref.verdicts[0].can_run);
  struct Writer {
    const char* what;
    int level, window_log;
  } writers[] = {{"zstd -3 from a pipe", 3, 0}, {"zstd --long=27 -19", 19, 27}, {"zstd --ultra -22", 22, 0}};
  for (const auto& w : writers) {
    SCOPED_TRACE(w.what);
    auto packed = hgtest::zstd_stream_compress(plain_, w.level, w.window_log);
    ASSERT_EQ(ZSTD_getFrameContentSize(packed.data(), packed.size()), ZSTD_CONTENTSIZE_UNKNOWN);
    auto ccob = hgtest::ccob_around(packed, 1, plain_.size());
    auto b = parse_bundle(Bytes(ccob.data(), ccob.size()));
    ASSERT_TRUE(b) << b.error().message;
    ASSERT_EQ(b->entries.size(), ref.entries.size());
    Bytes last = entry_bytes(*b, Bytes(ccob.data(), ccob.size()), b->entries.back());
    Bytes want(plain_.data() + b->entries.back().offset, b->entries.back().size);
    ASSERT_EQ(last.size(), want.size());
    EXPECT_TRUE(std::equal(last.begin(), last.end(), want.begin()));
    ImageReport r = check_image(Bytes(ccob.data(), ccob.size()), "ccob", {gfx90a, gfx942});
    for (const auto& d : r.diagnostics) EXPECT_NE(d.code, Code::kMalformedCompressed) << d.message;
    ASSERT_EQ(r.verdicts.size(), ref.verdicts.size());
    for (size_t i = 0; i < r.verdicts.size(); ++i) {
      EXPECT_EQ(r.verdicts[i].can_run, ref.verdicts[i].can_run);
      EXPECT_EQ(r.verdicts[i].selected, ref.verdicts[i].selected);
      EXPECT_EQ(r.verdicts[i].kernels, ref.verdicts[i].kernels);
    }
  }
}

// A v1 bundle has no total size: its payload runs to the end of what holds it (in a .hip_fatbin:
// the padding and the bundles after it). A frame decoded whole (here one with a window larger than
// its claim, which is not streamed) is the frame alone, as the streamed one is: the entries read.
TEST_F(Ccob, VersionOneFrameDecodedWholeEndsAtItsFrame) {
  for (int window_log : {0, 27}) {
    SCOPED_TRACE(window_log);
    auto packed = window_log ? hgtest::zstd_stream_compress(plain_, 19, window_log)
                             : hgtest::ccob_compress(plain_, hgtest::kCcobZstd, true);
    hgtest::ByteVec ccob = hgtest::ccob_header(1, hgtest::kCcobZstd, 0, plain_.size());
    ccob.insert(ccob.end(), packed.begin(), packed.end());
    ccob.resize(ccob.size() + 4096, 0);                     // the section's padding
    ccob.insert(ccob.end(), packed.begin(), packed.end());  // and what follows it
    auto b = parse_bundle(Bytes(ccob.data(), ccob.size()));
    ASSERT_TRUE(b) << b.error().message;
    Bytes last = entry_bytes(*b, Bytes(ccob.data(), ccob.size()), b->entries.back());
    Bytes want(plain_.data() + b->entries.back().offset, b->entries.back().size);
    ASSERT_EQ(last.size(), want.size());
    EXPECT_TRUE(std::equal(last.begin(), last.end(), want.begin()));
  }
}

// Decoding into the declared size still fails on a broken frame, and on one
// that yields more or less than the header says.
TEST_F(Ccob, StreamedZstdThatIsBrokenOrMisSizedIsHG105) {
  auto packed = hgtest::zstd_stream_compress(plain_, 3);
  auto hg105 = [&](const std::vector<uint8_t>& payload, uint64_t claim, const char* what) {
    auto ccob = hgtest::ccob_around(payload, 1, claim);
    auto b = parse_bundle(Bytes(ccob.data(), ccob.size()));
    if (b) {  // the table may be readable: then the last entry must not be
      EXPECT_TRUE(entry_bytes(*b, Bytes(ccob.data(), ccob.size()), b->entries.back()).empty()) << what;
      auto t = *parse_target("gfx90a");
      ImageReport r = check_image(Bytes(ccob.data(), ccob.size()), "ccob", {t});
      EXPECT_FALSE(r.ok()) << what;
      return;
    }
    EXPECT_EQ(b.error().code, Code::kMalformedCompressed) << what << ": " << b.error().message;
  };
  hg105(std::vector<uint8_t>(packed.begin(), packed.begin() + packed.size() / 2), plain_.size(), "truncated frame");
  auto corrupt = packed;
  for (size_t i = 16; i < corrupt.size(); i += 7) corrupt[i] ^= 0x5a;
  hg105(corrupt, plain_.size(), "corrupt frame");
  hg105(packed, plain_.size() - 100, "claim smaller than the frame's output");
  hg105(packed, plain_.size() + 100, "claim larger than the frame's output");
}

// zlib's window is at most 32 KiB, so any zlib writer's stream (here a 512-byte
// window, sync-flushed every 4 KiB) streams within the claim.
TEST_F(Ccob, ZlibFromAnotherWriterReadsLikeTheBundlersOwn) {
  auto gfx90a = *parse_target("gfx90a");
  auto ccob = hgtest::ccob_around(hgtest::zlib_stream_compress(plain_), 0, plain_.size());
  ImageReport r = check_image(Bytes(ccob.data(), ccob.size()), "ccob", {gfx90a});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.verdicts[0].selected, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(r.verdicts[0].kernels, 1u);
}
