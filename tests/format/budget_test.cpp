// Parser budgets (issue 12, docs/limits.md): hostile inputs generated here, each
// checked for its diagnostic (with the number and the limit) and for the memory
// the parser spends on it, measured in a forked child (peak RSS growth).
//
// Set HIPGUARD_BUDGET_INPUTS_DIR=<dir> to also write the hostile inputs there
// (for measuring the CLI: /usr/bin/time -v hipguard check <dir>/<file>).
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "hipguard/code_object.h"
#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

// Sanitizer builds (CI runs this suite under ASan/UBSan): no address-space
// limit (the shadow memory needs terabytes of it), and the RSS allowance is
// larger, for the allocator's quarantine and redzones. Before the budgets the
// same inputs took 1.5 to 8 GB.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HG_BUDGET_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HG_BUDGET_SANITIZED 1
#endif
#endif
#ifndef HG_BUDGET_SANITIZED
#define HG_BUDGET_LIMIT_AS 1
#endif

namespace {

#ifdef HG_BUDGET_SANITIZED
constexpr long kSmallMiB = 768, kLargeMiB = 1024;
#else
constexpr long kSmallMiB = 64, kLargeMiB = 128;
#endif

// Runs fn in a forked child and returns the growth of the child's peak RSS in
// MiB, or -1 when the child died (crash, std::bad_alloc past the address-space
// limit). Without a sanitizer the child's address space is capped at 4 GiB
// more than it has, so a regression fails here instead of exhausting the machine.
template <class F>
long child_peak_growth_mib(F&& fn) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
#ifdef HG_BUDGET_LIMIT_AS
    struct rlimit lim {};
    lim.rlim_cur = lim.rlim_max = 6ull << 30;
    setrlimit(RLIMIT_AS, &lim);
#endif
    struct rusage before {
    }, after{};
    getrusage(RUSAGE_SELF, &before);
    fn();
    getrusage(RUSAGE_SELF, &after);
    long growth = (after.ru_maxrss - before.ru_maxrss) / 1024;
    if (write(fds[1], &growth, sizeof growth) != sizeof growth) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  long growth = -1;
  if (read(fds[0], &growth, sizeof growth) != sizeof growth) growth = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return growth;
}

void maybe_write(const ByteVec& v, const char* name) {
  const char* dir = std::getenv("HIPGUARD_BUDGET_INPUTS_DIR");
  if (!dir || !*dir) return;
  std::ofstream out(fs::path(dir) / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
}

size_t count_code(const std::vector<Diagnostic>& ds, Code c) { return find_diags(ds, c).size(); }

// ---- Hostile input 1: a ~150 KB CCOB that decompresses to 4 GiB -------------
//
// A zstd frame written by hand (RFC 8878): a raw block with the bundle table
// and a gfx942 code object, then RLE blocks of zeros, 128 KiB each for 4 bytes.
// The header (v3) claims the true size, 4 GiB: the stream really yields it.
ByteVec zstd_bomb_ccob(uint64_t total) {
  const uint64_t kBlock = 128 << 10;
  ByteVec co = make_code_object(CodeObjectSpec{});
  std::string id = "hipv4-amdgcn-amd-amdhsa--gfx942";
  ByteVec head;
  append_str(head, kBundleMagic);
  append<uint64_t>(head, 1);
  append<uint64_t>(head, 4096);
  append<uint64_t>(head, total - 4096);
  append<uint64_t>(head, id.size());
  append_str(head, id);
  head.resize(4096, 0);
  head.insert(head.end(), co.begin(), co.end());
  EXPECT_LT(head.size(), kBlock);
  ByteVec z = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38};  // magic; no content size, no checksum; window 128 KiB
  auto block = [&](bool last, unsigned type, uint64_t size) {
    uint32_t h = (last ? 1u : 0u) | (type << 1) | static_cast<uint32_t>(size << 3);
    z.push_back(h & 0xff), z.push_back(h >> 8 & 0xff), z.push_back(h >> 16 & 0xff);
  };
  block(false, 0, head.size());
  z.insert(z.end(), head.begin(), head.end());
  for (uint64_t done = head.size(); done < total;) {
    uint64_t n = std::min(kBlock, total - done);
    done += n;
    block(done == total, 1, n);
    z.push_back(0);
  }
  ByteVec v = ccob_header(3, kCcobZstd, 32 + z.size(), total, /*hash=*/0);
  v.insert(v.end(), z.begin(), z.end());
  return v;
}

TEST(Budget, CcobClaimingMoreThanItsRatioIsHG111WithoutDecompressing) {
  const uint64_t total = kMaxDecompressedBytes;  // 4 GiB: within the absolute cap, far past the ratio
  ByteVec v = zstd_bomb_ccob(total);
  maybe_write(v, "ccob_4gib_bomb.hipfb");
  EXPECT_LT(v.size(), 200u << 10) << "the bomb is ~150 KB";
  uint64_t payload = v.size() - 32;
  auto b = parse_bundle(span(v));
  ASSERT_FALSE(b) << "a " << v.size() << "-byte CCOB claiming 4 GiB is accepted";
  EXPECT_EQ(b.error().code, Code::kBudgetExceeded) << b.error().message;
  EXPECT_NE(b.error().message.find(std::to_string(total)), std::string::npos) << b.error().message;
  EXPECT_NE(b.error().message.find(std::to_string(max_claimed_uncompressed(payload))), std::string::npos)
      << b.error().message;

  long mib = child_peak_growth_mib([&] {
    ImageReport r = check_image(span(v), "bomb", {target("gfx942")});
    if (!has_code(r.diagnostics, Code::kBudgetExceeded) || r.ok()) _exit(3);
  });
  EXPECT_GE(mib, 0) << "the child died (out of memory, or no HG111)";
  EXPECT_LT(mib, kSmallMiB) << "MiB spent on a " << v.size() << "-byte compressed bundle";
}

TEST(Budget, CcobRatioLimitIsGenerousForRealBundles) {
  // The limit: 1024x the payload, and never below 16 MiB.
  EXPECT_EQ(max_claimed_uncompressed(0), kCompressionRatioFloor);
  EXPECT_EQ(max_claimed_uncompressed(1 << 20), (1ull << 20) * kMaxCompressionRatio);
  EXPECT_EQ(max_claimed_uncompressed(~0ull), kMaxDecompressedBytes);
  // A real-looking bomb below the floor still parses (and is checked).
  ByteVec small = zstd_bomb_ccob(8 << 20);
  auto b = parse_bundle(span(small));
  ASSERT_TRUE(b) << b.error().message;
  ImageReport r = check_image(span(small), "small", {target("gfx942")});
  EXPECT_FALSE(has_code(r.diagnostics, Code::kBudgetExceeded)) << dump(r.diagnostics);
  // Just past the floor with a ~1 KB payload: over the ratio.
  ByteVec over = zstd_bomb_ccob((16 << 20) + (128 << 10));
  auto o = parse_bundle(span(over));
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().code, Code::kBudgetExceeded);
}

// A zstd frame without a content size may ask for a window of up to 2 GiB,
// which a streaming decoder allocates up front (untouched, so not in the RSS).
// The frame is valid (LLVM's OffloadBundler decodes it in one call into the
// claimed size), so it is read, and without the window: what is allocated is
// bounded by the claimed uncompressed size. mallinfo2 counts the mapping; only
// without a sanitizer (its allocator does not report there).
TEST(Budget, ZstdWindowIsBoundedByTheClaim) {
  ByteVec head;
  append_str(head, kBundleMagic);
  append<uint64_t>(head, 0);
  ByteVec z = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 21 << 3};        // window 2^(10+21) = 2 GiB, no content size
  uint32_t h = 1u | static_cast<uint32_t>(head.size() << 3);  // last, raw
  z.push_back(h & 0xff), z.push_back(h >> 8 & 0xff), z.push_back(h >> 16 & 0xff);
  z.insert(z.end(), head.begin(), head.end());
  ByteVec v = ccob_header(3, kCcobZstd, 32 + z.size(), head.size(), /*hash=*/0);
  v.insert(v.end(), z.begin(), z.end());
  auto b = parse_bundle(span(v));
  ASSERT_TRUE(b) << "a 32-byte bundle behind a 2 GiB window: " << b.error().message;
  EXPECT_TRUE(b->entries.empty());
  EXPECT_EQ(b->storage.size(), head.size());
#ifdef HG_BUDGET_LIMIT_AS
  long mapped_mib = child_peak_growth_mib([&] {
    size_t before = mallinfo2().hblkhd;
    size_t peak = before;
    (void)parse_bundle(span(v));
    peak = std::max(peak, mallinfo2().hblkhd);
    if (peak - before > (64u << 20)) _exit(3);
  });
  EXPECT_GE(mapped_mib, 0) << "the decoder mapped its 2 GiB window";
#endif
}

// ---- Hostile input 2: 1 MB of metadata describing 10^6 empty kernels --------

std::string empty_kernels_metadata(uint32_t n) {
  std::string md =
      "\x81\xae"
      "amdhsa.kernels"
      "\xdd";
  for (int shift : {24, 16, 8, 0}) md.push_back(static_cast<char>(n >> shift & 0xff));
  md.append(n, '\x80');  // {} per kernel
  return md;
}

TEST(Budget, MillionEmptyKernelsAreCappedFindingsNotAMillionLines) {
  CodeObjectSpec s;
  s.kernels.clear();
  s.raw_metadata = empty_kernels_metadata(1000000);
  ByteVec v = make_code_object(s);
  maybe_write(v, "million_empty_kernels.co");
  auto co = parse_code_object(span(v));
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_LE(co->issues.size(), kMaxIssuesPerCodeObject + 1);
  auto over =
      std::find_if(co->issues.begin(), co->issues.end(), [](auto& i) { return i.code == Code::kBudgetExceeded; });
  ASSERT_NE(over, co->issues.end());
  EXPECT_EQ(over->value, 1000000u);
  EXPECT_EQ(over->limit, kMaxKernelsPerCodeObject);
  ASSERT_EQ(co->issues.back().code, Code::kFindingsCapped);
  EXPECT_EQ(co->issues.back().severity, Severity::Error) << "dropped errors (kernels without .name) keep failing";
  EXPECT_EQ(co->issues_dropped, kMaxKernelsPerCodeObject + 1 - kMaxIssuesPerCodeObject);

  long mib = child_peak_growth_mib([&] {
    ImageReport r = check_image(span(v), "million", {target("gfx942")});
    size_t bytes = 0;
    for (const auto& d : r.diagnostics) bytes += format_line(d).size() + 1;
    if (r.diagnostics.size() > kMaxIssuesPerCodeObject + 2 || bytes > (64 << 10) || r.ok()) _exit(3);
  });
  EXPECT_GE(mib, 0) << "the child died, or the log is not bounded";
  EXPECT_LT(mib, kSmallMiB);
}

TEST(Budget, ManyBrokenKernelsUnderTheLimitAreCappedToo) {
  CodeObjectSpec s;
  s.kernels.clear();
  s.raw_metadata = empty_kernels_metadata(5000);
  ByteVec v = make_code_object(s);
  auto co = parse_code_object(span(v));
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_FALSE(has_issue(*co, Code::kBudgetExceeded));
  ASSERT_EQ(co->issues.size(), kMaxIssuesPerCodeObject + 1);
  EXPECT_EQ(co->issues.back().code, Code::kFindingsCapped);
  EXPECT_EQ(co->issues.back().value, 5000u);
  EXPECT_NE(co->issues.back().message.find("4900 more"), std::string::npos) << co->issues.back().message;
  ImageReport r = check_image(span(v), "many", {target("gfx942")});
  auto capped = find_diags(r.diagnostics, Code::kFindingsCapped);
  ASSERT_EQ(capped.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(capped[0]->severity, Severity::Error);
  EXPECT_EQ(capped[0]->limit, kMaxIssuesPerCodeObject);
  EXPECT_FALSE(r.ok());
}

TEST(Budget, KernelFindingsPerTargetAreCapped) {
  // 300 well-formed kernels, each over gfx942's 64 KiB of LDS: 100 HG301 and one HG112.
  CodeObjectSpec s;
  s.kernels.clear();
  for (int i = 0; i < 300; ++i) {
    KernelSpec k;
    k.name = "k" + std::to_string(i);
    k.lds = 1 << 20;
    s.kernels.push_back(k);
  }
  ByteVec v = make_code_object(s);
  ImageReport r = check_image(span(v), "lds", {target("gfx942")});
  EXPECT_EQ(count_code(r.diagnostics, Code::kLdsOverLimit), kMaxIssuesPerCodeObject) << dump(r.diagnostics);
  auto capped = find_diags(r.diagnostics, Code::kFindingsCapped);
  ASSERT_EQ(capped.size(), 1u);
  EXPECT_EQ(capped[0]->target, "gfx942");
  EXPECT_EQ(capped[0]->severity, Severity::Error);
  EXPECT_EQ(capped[0]->value, 300u);
  EXPECT_FALSE(r.ok());
}

TEST(Budget, ArgsPerKernelAndCountsVersusBytes) {
  // A kernel with more arguments than the limit: HG111 and the kernel unchecked.
  CodeObjectSpec s;
  s.kernels[0].args.clear();
  for (uint64_t i = 0; i < kMaxArgsPerKernel + 1; ++i) s.kernels[0].args.push_back({"a", "by_value", i * 4, 4});
  s.kernels[0].kernarg_size = (kMaxArgsPerKernel + 1) * 4;
  auto co = parse_code_object(span(make_code_object(s)));
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_TRUE(co->kernels.empty());
  auto i = std::find_if(co->issues.begin(), co->issues.end(), [](auto& x) { return x.code == Code::kBudgetExceeded; });
  ASSERT_NE(i, co->issues.end());
  EXPECT_EQ(i->value, kMaxArgsPerKernel + 1);
  EXPECT_EQ(i->limit, kMaxArgsPerKernel);
  // At the limit: fine.
  s.kernels[0].args.pop_back();
  s.kernels[0].kernarg_size = kMaxArgsPerKernel * 4;
  co = parse_code_object(span(make_code_object(s)));
  ASSERT_TRUE(co);
  ASSERT_EQ(co->kernels.size(), 1u);
  EXPECT_EQ(co->kernels[0].args.size(), kMaxArgsPerKernel);
  // A kernels array claiming more entries than the document has bytes: HG402 before reading any.
  CodeObjectSpec lie;
  lie.kernels.clear();
  std::string md = empty_kernels_metadata(1000);
  md[19] = '\x7f';  // claims 0x7f0003e8 kernels, holds 1000 bytes
  lie.raw_metadata = md;
  co = parse_code_object(span(make_code_object(lie)));
  ASSERT_TRUE(co);
  EXPECT_TRUE(has_issue(*co, Code::kBadMetadata));
}

// ---- Hostile input 3: 2000 bundle entries over the same bytes ---------------

// A code object with 1500 kernels of 8 arguments (~450 KB of metadata) and a
// bundle of `n` entries with distinct IDs (the triple's environment field
// differs) that all point at it, half of them at its bytes minus a few.
ByteVec overlapping_bundle(int n) {
  CodeObjectSpec s;
  s.kernels.clear();
  for (int i = 0; i < 1500; ++i) {
    KernelSpec k;
    k.name = "kernel_with_a_longer_name_" + std::to_string(i);
    k.args.clear();
    for (uint64_t a = 0; a < 8; ++a) k.args.push_back({"arg" + std::to_string(a), "global_buffer", a * 8, 8});
    k.kernarg_size = 64;
    s.kernels.push_back(k);
  }
  ByteVec co = make_code_object(s);
  ByteVec out;
  append_str(out, kBundleMagic);
  append<uint64_t>(out, n);
  std::vector<std::string> ids;
  size_t table = 32;
  for (int i = 0; i < n; ++i) {
    ids.push_back("hipv4-amdgcn-amd-amdhsa-e" + std::to_string(i) + "-gfx942");
    table += 24 + ids.back().size();
  }
  uint64_t at = (table + 4095) / 4096 * 4096;
  for (int i = 0; i < n; ++i) {
    append<uint64_t>(out, at);
    append<uint64_t>(out, co.size() - (i % 2) * (i % 64));  // odd entries: a little shorter
    append<uint64_t>(out, ids[i].size());
    append_str(out, ids[i]);
  }
  out.resize(at, 0);
  out.insert(out.end(), co.begin(), co.end());
  return out;
}

TEST(Budget, OverlappingEntriesAreParsedOnceWithinABudget) {
  ByteVec v = overlapping_bundle(2000);
  maybe_write(v, "overlapping_2000_entries.hipfb");
  ImageReport r = check_image(span(v), "overlap", {});
  // Identical (offset, size) pairs are parsed once; the bytes parsed stay within 2x the bundle.
  EXPECT_LE(r.code_objects.size(), 2 * kMaxParsedBytesFactor + 1);
  auto over = find_diags(r.diagnostics, Code::kBudgetExceeded);
  ASSERT_FALSE(over.empty()) << "no HG111 for entries past the parse budget";
  EXPECT_EQ(over[0]->limit, v.size() * kMaxParsedBytesFactor);
  EXPECT_GT(*over[0]->value, *over[0]->limit);
  EXPECT_FALSE(r.ok());

  long mib = child_peak_growth_mib([&] {
    ImageReport r2 = check_image(span(v), "overlap", {});
    if (r2.code_objects.size() > 2 * kMaxParsedBytesFactor + 1) _exit(3);
  });
  EXPECT_GE(mib, 0);
  EXPECT_LT(mib, kLargeMiB);
}

TEST(Budget, EntriesWithTheSameBytesShareOneParseAndItsVerdict) {
  // Two IDs over the same bytes, a code object with an error (a kernel without
  // its descriptor, HG406): parsed once, and a target that selects the second
  // entry still fails on the first entry's finding.
  CodeObjectSpec s;
  s.kernels[0].descriptor = false;
  ByteVec co = make_code_object(s);
  ByteVec b = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", co}, {"hipv4-amdgcn-amd-amdhsa--gfx942", {}}});
  // Point the gfx942 entry at the gfx90a entry's bytes.
  uint64_t off = get<uint64_t>(b, 32), size = get<uint64_t>(b, 40);
  size_t second = 32 + 24 + std::string("hipv4-amdgcn-amd-amdhsa--gfx90a").size();
  put<uint64_t>(b, second, off);
  put<uint64_t>(b, second + 8, size);
  ImageReport all = check_image(span(b), "same", {});
  EXPECT_EQ(all.code_objects.size(), 1u);
  EXPECT_EQ(count_code(all.diagnostics, Code::kDescriptorMissing), 1u) << dump(all.diagnostics);
  // gfx90a selects (and parses) the first entry, gfx942 the second: the same bytes, parsed once.
  ImageReport two = check_image(span(b), "same", {target("gfx90a"), target("gfx942")});
  ASSERT_EQ(two.verdicts.size(), 2u);
  EXPECT_EQ(two.code_objects.size(), 1u);
  EXPECT_EQ(two.verdicts[1].selected, "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_FALSE(two.verdicts[1].can_run) << dump(two.diagnostics);
}

}  // namespace
