// Per-kernel checks on crafted code objects: a real hipcc-built or corpus code
// object with one field changed in place (metadata msgpack value, kernel
// descriptor word), for the cases real files do not show. Each test first
// checks the unmodified object is clean, so a finding can only come from the patch.
#include <gtest/gtest.h>
#include <llvm/Object/ELF.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/check_paths.h"
#include "check_util.h"

using namespace hipguard;

namespace {

using namespace checks;

// The gfx90a code object inside the hipcc-built vector_add_gfx90a.hipfb bundle.
std::vector<uint8_t> hipcc_code_object() { return app_code_object("vector_add_gfx90a.hipfb", "gfx90a"); }

// Replaces the msgpack value that follows the `occurrence`-th key `key` when it
// is encoded as `old_value`. Returns false (and changes nothing) otherwise.
bool patch_value(std::vector<uint8_t>& co, const std::string& key, const std::vector<uint8_t>& old_value,
                 const std::vector<uint8_t>& new_value, int occurrence = 0) {
  std::string enc(1, static_cast<char>(0xa0 | key.size()));  // fixstr header (keys are < 32 bytes)
  enc += key;
  std::string_view hay(reinterpret_cast<const char*>(co.data()), co.size());
  size_t pos = hay.find(enc);
  for (int i = 0; i < occurrence && pos != std::string_view::npos; ++i) pos = hay.find(enc, pos + 1);
  if (pos == std::string_view::npos) return false;
  size_t v = pos + enc.size();
  if (v + old_value.size() > co.size() || old_value.size() != new_value.size()) return false;
  if (!std::equal(old_value.begin(), old_value.end(), co.begin() + v)) return false;
  std::copy(new_value.begin(), new_value.end(), co.begin() + v);
  return true;
}

// File offset of symbol `name`'s bytes, found with LLVM Object (independently of hipguard's code).
size_t symbol_offset(const std::vector<uint8_t>& co, const std::string& name) {
  auto f = llvm::object::ELFFile<llvm::object::ELF64LE>::create(
      llvm::StringRef(reinterpret_cast<const char*>(co.data()), co.size()));
  if (!f) return 0;
  auto secs = f->sections();
  if (!secs) return 0;
  for (const auto& s : *secs) {
    if (s.sh_type != llvm::ELF::SHT_SYMTAB) continue;
    auto syms = f->symbols(&s);
    auto strtab = f->getStringTableForSymtab(s, *secs);
    if (!syms || !strtab) return 0;
    for (const auto& sym : *syms) {
      auto n = sym.getName(*strtab);
      if (n && *n == name) {
        auto sec = f->getSection(sym.st_shndx);
        if (!sec) return 0;
        return (*sec)->sh_offset + (sym.st_value - (*sec)->sh_addr);
      }
    }
  }
  return 0;
}

std::vector<Diagnostic> run(const std::vector<uint8_t>& co, const std::string& target) {
  auto t = parse_target(target);
  EXPECT_TRUE(t) << t.error().message;
  return check_image(Bytes(co.data(), co.size()), "crafted.co", {*t}).diagnostics;
}

std::vector<const Diagnostic*> with_code(const std::vector<Diagnostic>& ds, Code c) {
  std::vector<const Diagnostic*> out;
  for (const auto& d : ds)
    if (d.code == c) out.push_back(&d);
  return out;
}

const std::string kKernel = "_Z10vector_addPKfS0_Pfi";

class Crafted : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kApps.empty() || !exists(kApps + "/vector_add_gfx90a.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
    co_ = hipcc_code_object();
    ASSERT_FALSE(co_.empty());
    ASSERT_TRUE(run(co_, "gfx90a").empty()) << "the unmodified hipcc code object must be clean";
    kd_ = symbol_offset(co_, kKernel + ".kd");
    ASSERT_GT(kd_, 0u);
  }
  void put_u32(size_t off, uint32_t v) { std::memcpy(co_.data() + off, &v, 4); }
  uint16_t get_u16(size_t off) {
    uint16_t v;
    std::memcpy(&v, co_.data() + off, 2);
    return v;
  }
  void put_u16(size_t off, uint16_t v) { std::memcpy(co_.data() + off, &v, 2); }
  std::vector<uint8_t> co_;
  size_t kd_ = 0;
};

}  // namespace

TEST_F(Crafted, DescriptorLdsDisagreesWithMetadata) {
  put_u32(kd_ + 0, 70000);  // kernel descriptor group_segment_fixed_size; metadata still says 0
  auto ds = run(co_, "gfx90a");
  auto mismatch = with_code(ds, Code::kDescriptorMismatch);
  ASSERT_EQ(mismatch.size(), 1u);
  EXPECT_EQ(mismatch[0]->kernel, kKernel);
  EXPECT_NE(mismatch[0]->message.find("metadata says 0, kernel descriptor says 70000"), std::string::npos);
  // LDS is judged from both sources: the descriptor's 70000 bytes do not fit 64 KiB.
  auto lds = with_code(ds, Code::kLdsOverLimit);
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(*lds[0]->value, 70000u);
  EXPECT_EQ(*lds[0]->limit, 65536u);
  EXPECT_NE(lds[0]->message.find("kernel descriptor"), std::string::npos);
}

TEST_F(Crafted, DescriptorAllocatingMoreVgprsThanUsedIsNoFinding) {
  // compute_pgm_rsrc1 bits 5:0 (GRANULATED_WORKITEM_VGPR_COUNT, at descriptor
  // offset 48). LLVM raises the allocation above .vgpr_count when LDS already
  // limits occupancy (issue 27: every rocSOLVER/MAGMA/rocBLAS finding was this):
  // two granules more than the metadata's count is healthy compiler output.
  uint32_t rsrc1;
  std::memcpy(&rsrc1, co_.data() + kd_ + 48, 4);
  ASSERT_LT(rsrc1 & 0x3fu, 60u);
  put_u32(kd_ + 48, (rsrc1 & ~0x3fu) | ((rsrc1 & 0x3fu) + 2));
  EXPECT_TRUE(with_code(run(co_, "gfx90a"), Code::kDescriptorMismatch).empty());
}

TEST_F(Crafted, DescriptorAllocatingFewerVgprsThanUsed) {
  // .vgpr_count raised to 100 (a positive fixint, same size as hipcc's small
  // count) while the descriptor keeps its allocation: the hardware would give
  // the kernel fewer VGPRs than the metadata says it uses.
  std::string key = std::string(1, char(0xa0 | 11)) + ".vgpr_count";
  std::string_view hay(reinterpret_cast<const char*>(co_.data()), co_.size());
  size_t at = hay.find(key);
  ASSERT_NE(at, std::string_view::npos);
  uint8_t old = co_[at + key.size()];
  ASSERT_LT(old, 0x40) << "hipcc's .vgpr_count for vector_add is a small positive fixint";
  ASSERT_TRUE(patch_value(co_, ".vgpr_count", {old}, {100}));
  uint32_t rsrc1;
  std::memcpy(&rsrc1, co_.data() + kd_ + 48, 4);
  uint64_t allocated = ((rsrc1 & 0x3fu) + 1) * 8;
  ASSERT_LT(allocated, 100u);
  auto ds = run(co_, "gfx90a");
  auto m = with_code(ds, Code::kDescriptorMismatch);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]->severity, Severity::Warning);
  EXPECT_NE(m[0]->message.find("VGPRs: metadata says the kernel uses 100, kernel descriptor allocates only " +
                               std::to_string(allocated)),
            std::string::npos)
      << m[0]->message;
  EXPECT_NE(m[0]->message.find("granule 8"), std::string::npos) << m[0]->message;
}

TEST_F(Crafted, Wave32KernelOnWave64OnlyProcessor) {
  ASSERT_TRUE(patch_value(co_, ".wavefront_size", {0x40}, {0x20}));
  put_u16(kd_ + 56, get_u16(kd_ + 56) | (1u << 10));  // ENABLE_WAVEFRONT_SIZE32
  auto ds = run(co_, "gfx90a");
  auto wave = with_code(ds, Code::kWavefrontSize);
  ASSERT_EQ(wave.size(), 1u);
  EXPECT_NE(wave[0]->message.find("wave32"), std::string::npos);
  EXPECT_NE(wave[0]->message.find("wave64 only"), std::string::npos);
  EXPECT_TRUE(with_code(ds, Code::kDescriptorMismatch).empty()) << "descriptor and metadata were patched alike";
}

TEST_F(Crafted, WaveSizeOnlyInDescriptorIsAMismatch) {
  put_u16(kd_ + 56, get_u16(kd_ + 56) | (1u << 10));
  auto ds = run(co_, "gfx90a");
  auto m = with_code(ds, Code::kDescriptorMismatch);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0]->message.find("wavefront size"), std::string::npos);
}

TEST_F(Crafted, WorkgroupSizeOverHardwareMaximum) {
  ASSERT_TRUE(patch_value(co_, ".max_flat_workgroup_size", {0xcd, 0x04, 0x00}, {0xcd, 0x08, 0x00}));  // 1024 -> 2048
  auto ds = run(co_, "gfx90a");
  auto wg = with_code(ds, Code::kWorkgroupSize);
  ASSERT_EQ(wg.size(), 1u);
  EXPECT_NE(wg[0]->message.find("2048"), std::string::npos);
}

TEST_F(Crafted, DynamicStackIsNoted) {
  ASSERT_TRUE(patch_value(co_, ".uses_dynamic_stack", {0xc2}, {0xc3}));
  auto ds = run(co_, "gfx90a");
  auto n = with_code(ds, Code::kDynamicStack);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0]->severity, Severity::Note);
  // A note alone does not make the kernel unrunnable.
  auto r = check_image(Bytes(co_.data(), co_.size()), "crafted.co", {*parse_target("gfx90a")});
  EXPECT_TRUE(r.ok());
}

TEST_F(Crafted, KernargOutsideSegmentAndMisaligned) {
  // Args of vector_add(const float*, const float*, float*, int): offsets 0, 8, 16, 24; segment 28 bytes.
  ASSERT_TRUE(patch_value(co_, ".offset", {0x18}, {0x1a}, 3));  // int at 26: ends at 30 > 28
  auto ds = run(co_, "gfx90a");
  auto k = with_code(ds, Code::kKernargLayout);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_NE(k[0]->message.find("beyond .kernarg_segment_size 28"), std::string::npos) << k[0]->message;

  std::vector<uint8_t> co2 = hipcc_code_object();
  // Pointer at 10: not dword-aligned (scalar loads drop the two low address bits), overlaps the next.
  // At 12 it would be read whole (Tensile packs pointers at 4-byte offsets): no finding for that.
  ASSERT_TRUE(patch_value(co2, ".offset", {0x08}, {0x0a}, 1));
  auto ds2 = run(co2, "gfx90a");
  auto k2 = with_code(ds2, Code::kKernargLayout);
  ASSERT_EQ(k2.size(), 2u);
  std::string all = k2[0]->message + "|" + k2[1]->message;
  EXPECT_NE(all.find("not aligned"), std::string::npos) << all;
  EXPECT_NE(all.find("overlap"), std::string::npos) << all;
}

TEST_F(Crafted, MetadataNamesAMissingDescriptor) {
  // Rename the metadata's .symbol to one that does not exist (same length).
  std::string from = kKernel + ".kd", to = kKernel + ".kx";
  std::string hay(co_.begin(), co_.end());
  size_t key = hay.find("\xa7.symbol");
  ASSERT_NE(key, std::string::npos);
  size_t at = hay.find(from, key);
  ASSERT_NE(at, std::string::npos);
  std::copy(to.begin(), to.end(), co_.begin() + at);
  auto ds = run(co_, "gfx90a");
  auto missing = with_code(ds, Code::kDescriptorMissing);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0]->message.find(to), std::string::npos);
  // ...and the real descriptor is now a kernel without metadata: reported, never guessed.
  auto orphan = with_code(ds, Code::kKernelWithoutMetadata);
  ASSERT_EQ(orphan.size(), 1u);
  EXPECT_EQ(orphan[0]->kernel, kKernel);
  auto r = check_image(Bytes(co_.data(), co_.size()), "crafted.co", {*parse_target("gfx90a")});
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.code_objects.size(), 1u);
  EXPECT_EQ(r.code_objects[0].co.kernels_without_metadata, std::vector<std::string>{kKernel});
}

TEST_F(Crafted, DeviceFunctionIsListedNotAKernel) {
  auto r = check_image(Bytes(co_.data(), co_.size()), "crafted.co", {});
  ASSERT_EQ(r.code_objects.size(), 1u);
  const auto& co = r.code_objects[0].co;
  ASSERT_EQ(co.kernels.size(), 1u);
  EXPECT_EQ(co.kernels[0].name, kKernel);
  // scale() is __attribute__((noinline)) in tests/apps/vector_add.hip.
  EXPECT_EQ(co.device_functions, std::vector<std::string>{"_Z5scalef"});
}

TEST(CraftedCorpus, RegisterFileOverflow) {
  std::string path = kCorpus + "/gfx942_flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co";
  if (!exists(path)) GTEST_SKIP() << "corpus not found at " << kCorpus;
  std::vector<uint8_t> co = read_bytes(path);
  ASSERT_TRUE(run(co, "gfx942").empty()) << "512 VGPRs (256 of them AGPRs) fit gfx942's unified file";
  ASSERT_TRUE(patch_value(co, ".vgpr_count", {0xcd, 0x02, 0x00}, {0xcd, 0x03, 0x00}));  // 512 -> 768
  auto ds = run(co, "gfx942");
  auto regs = with_code(ds, Code::kRegisterLimit);
  ASSERT_EQ(regs.size(), 1u);
  EXPECT_EQ(*regs[0]->value, 768u);
  EXPECT_EQ(*regs[0]->limit, 512u);
}

TEST(CraftedCorpus, GenericProcessorNeedsCodeObjectV6) {
  std::string path = kCorpus + "/gfx942_flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co";  // v5 (EI_ABIVERSION 3)
  if (!exists(path)) GTEST_SKIP() << "corpus not found at " << kCorpus;
  std::vector<uint8_t> co = read_bytes(path);
  ASSERT_EQ(co[8], 3);
  co[48] = 0x5f;  // e_flags low byte: EF_AMDGPU_MACH gfx9-4-generic
  auto ds = run(co, "gfx942");
  auto v = with_code(ds, Code::kCodeObjectVersion);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0]->message.find("require v6"), std::string::npos);
}

// fuzz_code_object finding: a note section whose sh_offset + sh_size wraps
// around. LLVM 16's ELFFile::notes_begin adds the two unchecked (pointer
// overflow, UB); hipguard bounds note sections itself first.
TEST_F(Crafted, NoteSectionWhoseOffsetPlusSizeWraps) {
  auto f = llvm::object::ELFFile<llvm::object::ELF64LE>::create(
      llvm::StringRef(reinterpret_cast<const char*>(co_.data()), co_.size()));
  ASSERT_TRUE(bool(f));
  auto secs = cantFail(f->sections());
  size_t shoff = f->getHeader().e_shoff;
  bool patched = false;
  for (size_t i = 0; i < secs.size(); ++i) {
    if (secs[i].sh_type != llvm::ELF::SHT_NOTE) continue;
    uint64_t offset = ~uint64_t{0} - 0x80, size = 0x100;  // offset + size wraps to 0x7f
    std::memcpy(co_.data() + shoff + i * 64 + 24, &offset, 8);
    std::memcpy(co_.data() + shoff + i * 64 + 32, &size, 8);
    patched = true;
  }
  ASSERT_TRUE(patched);
  auto ds = run(co_, "gfx90a");
  auto bad = with_code(ds, Code::kMalformedElf);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0]->message.find("outside"), std::string::npos) << bad[0]->message;
}
