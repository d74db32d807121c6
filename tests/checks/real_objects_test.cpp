// Per-kernel checks on real compiler output beyond the corpus: a wave32 code
// object for gfx1100 (hipcc -nogpulib; HIP has no wave64 on RDNA), and Debian's
// rocSPARSE, a library of 111 fat binaries. No false findings on real code,
// and the verdicts the issue asks for.
#include <gtest/gtest.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/MemoryBuffer.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "hipguard/check_paths.h"
#include "check_util.h"

using namespace hipguard;

namespace {

using namespace checks;
const std::string kRocsparse = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";

TargetId target(const char* t) { return *parse_target(t); }

}  // namespace

TEST(RealObjects, RdnaWave32CodeObject) {
  struct Case {
    const char* file;
    const char* proc;
    uint64_t wave;
  } cases[] = {{"fill_gfx1100.hipfb", "gfx1100", 32}};
  for (const auto& c : cases) {
    std::string path = kApps + "/" + c.file;
    if (kApps.empty() || !exists(path)) GTEST_SKIP() << "hipcc test apps not built";
    FileReport r = check_file(path, {target(c.proc)});
    ASSERT_EQ(r.images.size(), 1u);
    const ImageReport& img = r.images[0];
    EXPECT_TRUE(img.ok()) << c.file;
    EXPECT_TRUE(img.diagnostics.empty()) << c.file << ": "
                                         << (img.diagnostics.empty() ? "" : format_line(img.diagnostics[0]));
    ASSERT_EQ(img.code_objects.size(), 1u);
    const CodeObject& co = img.code_objects[0].co;
    EXPECT_EQ(co.target.processor, c.proc);
    ASSERT_EQ(co.kernels.size(), 1u);
    const KernelInfo& k = co.kernels[0];
    EXPECT_EQ(k.wavefront_size, c.wave);
    ASSERT_TRUE(k.descriptor);
    EXPECT_EQ(k.descriptor->wavefront_size32(), c.wave == 32) << "descriptor bit 10 agrees with the metadata";
    // A wave32 kernel cannot run on a wave64-only GCN part; the bundle has nothing for it anyway.
    FileReport other = check_file(path, {target("gfx90a")});
    EXPECT_FALSE(other.ok());
  }
}

TEST(RealObjects, RocsparseHas111BundlesAndSelectsGfx90aXnackOff) {
  if (!exists(kRocsparse)) GTEST_SKIP() << kRocsparse << " not installed (Debian package librocsparse0)";
  // Independent count: offload-bundle magics at 4096-aligned offsets of .hip_fatbin, found with LLVM Object.
  auto buf = llvm::MemoryBuffer::getFile(kRocsparse, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  ASSERT_TRUE(bool(buf));
  auto f = llvm::object::ELFFile<llvm::object::ELF64LE>::create((*buf)->getBuffer());
  ASSERT_TRUE(bool(f));
  size_t magics = 0;
  for (const auto& s : cantFail(f->sections())) {
    auto name = f->getSectionName(s);
    if (!name || *name != ".hip_fatbin") continue;
    auto data = cantFail(f->getSectionContents(s));
    for (size_t off = 0; off + 24 <= data.size(); off += 4096)
      if (std::memcmp(data.data() + off, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) ++magics;
  }
  EXPECT_EQ(magics, 111u);
  FileReport r = check_file(kRocsparse, {target("gfx90a:xnack-")});
  ASSERT_EQ(r.images.size(), magics);
  for (const auto& img : r.images) {
    ASSERT_EQ(img.verdicts.size(), 1u);
    EXPECT_EQ(img.verdicts[0].selected, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-") << img.location;
    EXPECT_TRUE(img.verdicts[0].can_run) << img.location;
  }
  EXPECT_TRUE(r.ok());
  // gfx942 is not in Debian's rocSPARSE (ROCm 5.3 era): every bundle says so.
  FileReport mi300 = check_file(kRocsparse, {target("mi300x")});
  size_t hg201 = 0;
  for (const auto& img : mi300.images)
    for (const auto& d : img.diagnostics) hg201 += d.code == Code::kNoCodeObject;
  EXPECT_EQ(hg201, magics);
  // Structural checks of every code object of every bundle (777, ~88 k kernels,
  // gfx803 to gfx1030, wave64 and wave32): a production library from AMD's own
  // toolchain has no descriptor/metadata disagreement and no malformed metadata.
  FileReport all = check_file(kRocsparse, {});
  size_t objects = 0, kernels = 0;
  for (const auto& img : all.images) {
    for (const auto& co : img.code_objects) {
      ++objects;
      kernels += co.co.kernels.size();
    }
    for (const auto& d : img.diagnostics)
      ADD_FAILURE() << img.location << ": " << code_string(d.code) << " " << d.message;
  }
  EXPECT_EQ(objects, 777u);
  EXPECT_GT(kernels, 80000u);
}
