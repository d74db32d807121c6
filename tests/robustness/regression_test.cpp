// Regression tests for findings of the fuzzers and the robustness suite. Each
// one names the fuzz target and the fault; see docs/fuzzing.md.
#include <sys/resource.h>
#include <zstd.h>

#include <fstream>

#include "robust_util.h"

namespace hgrobust {
namespace {

bool has_issue(const hipguard::CodeObject& co, hipguard::Code code) {
  for (const auto& i : co.issues)
    if (i.code == code) return true;
  return false;
}

// fuzz_code_object / fuzz_check_image: NT_AMDGPU_METADATA whose root map has
// two keys that are themselves maps (or arrays). llvm::msgpack::Document
// stores map keys in a std::map ordered by DocNode::operator<, which reaches
// llvm_unreachable("bad map key type") for Map/Array keys
// (llvm/BinaryFormat/MsgPackDocument.h:175, LLVM 16): undefined behaviour in
// release builds (__builtin_unreachable), an abort with assertions, a UBSan
// "unreachable program point" report in the sanitizer build. hipguard reaches
// it from Document::readFromBlob in MetadataReader::read (src/format/metadata.cpp).
// Metadata like this is not valid AMDGPU metadata: expect HG402 and no crash.
// Fails (crashes) under -DHIPGUARD_SANITIZE=address until the core rejects
// such documents before handing them to llvm::msgpack::Document.
struct MsgpackCase {
  const char* name;
  std::string_view msgpack;
};
class RobustnessRegressionMsgpackKeys : public ::testing::TestWithParam<MsgpackCase> {};

TEST_P(RobustnessRegressionMsgpackKeys, MapKeysThatAreContainersAreBadMetadata) {
  ByteVec elf = make_note_only_code_object(GetParam().msgpack);
  // In a child process: the fault is a segfault in release builds.
  auto results = run_isolated(1, [&](uint64_t) -> std::string {
    Exact copy(elf.data(), elf.size());
    hipguard::Result<hipguard::CodeObject> co = hipguard::parse_code_object(copy.bytes());
    if (!co) return "parse failed: " + std::string(code_string(co.error().code)) + " " + co.error().message;
    if (!has_issue(*co, hipguard::Code::kBadMetadata)) return "no HG402 for a metadata map with container keys";
    hipguard::ImageReport r = hipguard::check_image(copy.bytes(), "regression", {target("gfx942")});
    if (r.ok()) return "check_image passes it";
    return "";
  });
  for (const auto& [i, what] : results) ADD_FAILURE() << GetParam().name << ": " << what;
}

INSTANTIATE_TEST_SUITE_P(
    Robustness, RobustnessRegressionMsgpackKeys,
    ::testing::Values(MsgpackCase{"MapKeys", std::string_view("\x82\x80\x01\x80\x02", 5)},    // {{}:1, {}:2}
                      MsgpackCase{"ArrayKeys", std::string_view("\x82\x90\x01\x90\x02", 5)},  // {[]:1, []:2}
                      MsgpackCase{"MixedKeys",
                                  std::string_view("\x83\xa1k\x01\x80\x02\x80\x03", 8)}),  // {"k":1, {}:2, {}:3}
    [](const auto& info) { return std::string(info.param.name); });

// The builder itself: a well-formed document gives a parseable object (so the
// cases above fail for the reason they name, not because of the ELF).
TEST(Robustness, RegressionBuilderSanity) {
  // {"amdhsa.kernels": []}
  std::string md =
      "\x81\xae"
      "amdhsa.kernels"
      "\x90";
  ByteVec elf = make_note_only_code_object(md);
  hipguard::Result<hipguard::CodeObject> co = hipguard::parse_code_object(span(elf));
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_EQ(co->processor ? co->processor->name : "", "gfx942");
  EXPECT_FALSE(has_issue(*co, hipguard::Code::kBadMetadata));
  EXPECT_FALSE(has_issue(*co, hipguard::Code::kNoMetadata));
}

// Peak RSS growth of this process while running fn, in MiB (child processes only:
// the peak of a fresh fork starts at the parent's size).
template <class F>
long peak_growth_mib(F&& fn) {
  struct rusage before {
  }, after{};
  getrusage(RUSAGE_SELF, &before);
  fn();
  getrusage(RUSAGE_SELF, &after);
  return (after.ru_maxrss - before.ru_maxrss) / 1024;
}

// fuzz_check_image (oom artifact, 60 s run): a msgpack array32 header
// claiming 2^32-1 elements makes llvm::msgpack::Document::readFromBlob resize
// the array to the claimed length before reading a single element
// (std::vector<DocNode>::_M_fill_insert from readFromBlob): gigabytes
// allocated and zero-filled for a 5-byte claim, or std::bad_alloc thrown
// through hipguard into the host process. The streaming pre-walk of the
// metadata (plain_msgpack, src/format/metadata.cpp) now rejects it first: expect
// HG402 and no allocation in proportion to the claim.
TEST(Robustness, RegressionMsgpackHugeArrayLength) {
  for (std::string_view md : {std::string_view("\x81\xae"
                                               "amdhsa.kernels"
                                               "\xdd\xff\xff\xff\xff",
                                               20),
                              std::string_view("\x81\xae"
                                               "amdhsa.kernels"
                                               "\xdd\x08\x00\x00\x00",
                                               20)}) {
    ByteVec elf = make_note_only_code_object(md);
    auto results = run_isolated(1, [&](uint64_t) -> std::string {
      Exact copy(elf.data(), elf.size());
      std::string problem;
      long mib = peak_growth_mib([&] {
        hipguard::Result<hipguard::CodeObject> co = hipguard::parse_code_object(copy.bytes());
        if (!co) problem = "parse failed: " + co.error().message;
        else if (!has_issue(*co, hipguard::Code::kBadMetadata))
          problem = "no HG402 for an array claiming more elements than bytes";
      });
      if (mib > 256)
        problem += (problem.empty() ? "" : "; ") + std::to_string(mib) + " MiB allocated for a " +
                   std::to_string(elf.size()) + "-byte code object";
      return problem;
    });
    for (const auto& [i, what] : results)
      ADD_FAILURE() << "array32 length " << std::hex << int(uint8_t(md[16])) << ": " << what;
  }
}

// Same family as Ccob.HugeClaimedSizeCostsOnlyWhatTheStreamYields, another
// shape: a ~100-byte CCOB v3 (zstd) whose header claims 3 GiB uncompressed and
// whose table places the selected entry at the end of those 3 GiB. Extracting
// it must cost what the stream yields, not the claim (before e23f1ff,
// entry_bytes -> decompress_prefix did out.assign(entry end, 0)). Expect an
// HG1xx error without memory in proportion to the claim.
TEST(Robustness, RegressionCcobClaimedSizeAmplification) {
  if (llvm::compression::getReasonIfUnsupported(llvm::compression::Format::Zstd)) GTEST_SKIP() << "no zstd in LLVM";
  const uint64_t claimed = 3ull << 30;
  ByteVec table;
  for (char c : std::string_view("__CLANG_OFFLOAD_BUNDLE__")) table.push_back(static_cast<uint8_t>(c));
  std::string id = "hipv4-amdgcn-amd-amdhsa--gfx942";
  append<uint64_t>(table, 1);
  append<uint64_t>(table, claimed - 4096);
  append<uint64_t>(table, 4096);
  append<uint64_t>(table, id.size());
  table.insert(table.end(), id.begin(), id.end());
  ByteVec ccob = make_ccob(table, 3, hgtest::kCcobZstd, /*hash=*/0);
  std::memcpy(ccob.data() + 16, &claimed, 8);  // v3: u64 uncompressed size at offset 16
  auto results = run_isolated(1, [&](uint64_t) -> std::string {
    Exact copy(ccob.data(), ccob.size());
    std::string problem;
    long mib = peak_growth_mib([&] {
      hipguard::ImageReport r = hipguard::check_image(copy.bytes(), "regression", {target("gfx942")});
      if (!has_structural_error(r)) problem = "no HG1xx error: " + codes(r);
    });
    if (mib > 256)
      problem += (problem.empty() ? "" : "; ") + std::to_string(mib) + " MiB allocated for a " +
                 std::to_string(ccob.size()) + "-byte compressed bundle";
    return problem;
  });
  for (const auto& [i, what] : results) ADD_FAILURE() << what;
}

// fuzz_bundle (CI, 20 s run; "budget exceeded: 94 MB held" for a 1,902-byte
// input): a CCOB (zstd) whose payload is a zstd v0.7 frame, one of the legacy
// formats libzstd still reads. Its legacy streaming decoder sizes its buffers
// from the frame's window (up to 128 MiB for v0.7) and ignores
// ZSTD_d_windowLogMax, so a few bytes made decompress_prefix allocate ~100 MB.
// Legacy frames are now decoded whole into the claimed size, as LLVM does.
// Here a real hipcc bundle travels in a v0.7 frame of raw blocks that declares
// a 128 MiB window, parsed under an address-space limit 64 MiB above the
// child's size (not in sanitizer builds, whose shadow memory the limit would
// break): expect the plain bundle's table and entry bytes.
hgtest::ByteVec zstd_v07_raw_frame(const hgtest::ByteVec& data) {
  // zstd_v07.c: magic 0xFD2FB527; frame header descriptor 0 (no dictionary ID,
  // no checksum, a window byte, no content size); window byte (log - 10) << 3;
  // blocks with a 3-byte big-endian header (type << 22 | size), raw = 1, end = 3.
  hgtest::ByteVec f = {0x27, 0xB5, 0x2F, 0xFD, 0x00, (27 - 10) << 3};
  for (size_t pos = 0; pos < data.size(); pos += 65536) {
    size_t n = std::min<size_t>(65536, data.size() - pos);
    f.insert(f.end(), {static_cast<uint8_t>(0x40 | (n >> 16)), static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
    f.insert(f.end(), data.begin() + static_cast<long>(pos), data.begin() + static_cast<long>(pos + n));
  }
  f.insert(f.end(), {0xC0, 0x00, 0x00});
  return f;
}

uint64_t vm_size_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

TEST(Robustness, RegressionCcobLegacyZstdFrameWindow) {
  fs::path hipfb = apps_dir() / "vector_add_multi.hipfb";
  if (apps_dir().empty() || !fs::exists(hipfb)) GTEST_SKIP() << "hipcc test apps not built";
  ByteVec plain = read_bytes(hipfb);
  ByteVec frame = zstd_v07_raw_frame(plain);
  ByteVec decoded(plain.size());
  size_t n = ZSTD_decompress(decoded.data(), decoded.size(), frame.data(), frame.size());
  if (ZSTD_isError(n)) GTEST_SKIP() << "this libzstd reads no v0.7 frames: " << ZSTD_getErrorName(n);
  ASSERT_EQ(decoded, plain) << "the v0.7 frame builder";
  ByteVec ccob = hgtest::ccob_around(frame, hgtest::kCcobZstd, plain.size());
  hipguard::Result<hipguard::Bundle> ref = hipguard::parse_bundle(span(plain));
  ASSERT_TRUE(ref) << ref.error().message;
  auto results = run_isolated(1, [&](uint64_t) -> std::string {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    uint64_t vm = vm_size_bytes();
    if (vm == 0) return "no VmSize in /proc/self/status";
    rlim_t limit = vm + (64ull << 20);
    struct rlimit as = {limit, limit};
    if (setrlimit(RLIMIT_AS, &as) != 0) return "setrlimit failed";
#endif
    Exact copy(ccob.data(), ccob.size());
    hipguard::Result<hipguard::Bundle> b = hipguard::parse_bundle(copy.bytes());
    if (!b) return std::string(code_string(b.error().code)) + ": " + b.error().message;
    if (b->entries.size() != ref->entries.size()) return "entry count differs from the plain bundle's";
    for (size_t i = 0; i < b->entries.size(); ++i) {
      hipguard::Bytes got = hipguard::entry_bytes(*b, copy.bytes(), b->entries[i]);
      hipguard::Bytes want = hipguard::entry_bytes(*ref, span(plain), ref->entries[i]);
      if (b->entries[i].id != ref->entries[i].id || !std::equal(got.begin(), got.end(), want.begin(), want.end()))
        return "entry " + std::to_string(i) + " differs from the plain bundle's";
    }
    return "";
  });
  for (const auto& [i, what] : results) ADD_FAILURE() << what;
}

}  // namespace
}  // namespace hgrobust
