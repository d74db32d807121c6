// A fat binary with nothing for the GPU and no kernel in any entry (only
// __device__ variables, like rocFFT's): HG211, a warning, not HG201's "cannot
// run" (CLR since ROCm 5.3 goes on at HIP init; only a use of a variable fails).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ccob.h"
#include "check_util.h"
#include "hipguard/check.h"
#include "hipguard/check_paths.h"
#include "hipguard/runtime_version.h"

using namespace hipguard;
using namespace checks;

namespace {

size_t count_code(const ImageReport& r, Code c) {
  size_t n = 0;
  for (const auto& d : r.diagnostics) n += d.code == c;
  return n;
}

}  // namespace

TEST(KernelFree, NothingForTheGpuButNoKernelsRuns) {
  if (kApps.empty() || !exists(kApps + "/device_vars_only.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto vars = read_bytes(kApps + "/device_vars_only.hipfb");
  auto gfx942 = *parse_target("gfx942");
  auto gfx90a = *parse_target("gfx90a");
  for (bool compressed : {false, true}) {
    SCOPED_TRACE(compressed ? "CCOB" : "plain");
    auto data = compressed ? hgtest::make_ccob(vars, 3, 1) : vars;
    ImageReport r = check_image(Bytes(data.data(), data.size()), "vars", {gfx942, gfx90a});
    ASSERT_EQ(r.verdicts.size(), 2u);
    EXPECT_EQ(r.verdicts[0].selection, Selection::None);
    EXPECT_TRUE(r.verdicts[0].kernel_free);
    EXPECT_TRUE(r.verdicts[0].can_run);
    EXPECT_EQ(count_code(r, Code::kNoCodeObject), 0u);
    ASSERT_EQ(count_code(r, Code::kNoCodeObjectNoKernels), 1u);
    for (const auto& d : r.diagnostics)
      if (d.code == Code::kNoCodeObjectNoKernels) {
        EXPECT_EQ(d.severity, Severity::Warning);
        EXPECT_EQ(d.target, gfx942.str());
        EXPECT_NE(d.message.find("gfx1030, gfx90a"), std::string::npos) << d.message;
      }
    EXPECT_TRUE(r.ok());
    // The shim's registration depth decides the same.
    ImageReport sel = check_image(Bytes(data.data(), data.size()), "vars", {gfx942}, "", Depth::Selection);
    EXPECT_TRUE(sel.ok());
    EXPECT_EQ(count_code(sel, Code::kNoCodeObjectNoKernels), 1u);
  }
  // ROCm 5.2 and older abort at HIP init for it (CLR rocm-5.2 hip_fatbin.cpp ExtractFatBinary guarantee): HG201.
  for (const char* old : {"5.2", "5.2.21153"}) {
    Machine rocm52{parse_runtime(old)};
    ASSERT_TRUE(rocm52.runtime);
    ImageReport r = check_image(Bytes(vars.data(), vars.size()), "vars", {gfx942}, "", Depth::Full, rocm52);
    EXPECT_FALSE(r.ok()) << old;
    EXPECT_EQ(count_code(r, Code::kNoCodeObject), 1u) << old;
    EXPECT_EQ(count_code(r, Code::kNoCodeObjectNoKernels), 0u) << old;
  }
  Machine rocm53{parse_runtime("5.3")};
  EXPECT_TRUE(check_image(Bytes(vars.data(), vars.size()), "vars", {gfx942}, "", Depth::Full, rocm53).ok());
  // The same program with a kernel still cannot run on gfx942.
  auto kern = read_bytes(kApps + "/vector_add_multi.hipfb");
  ImageReport k = check_image(Bytes(kern.data(), kern.size()), "kern", {gfx942});
  EXPECT_FALSE(k.ok());
  EXPECT_EQ(count_code(k, Code::kNoCodeObject), 1u);
  EXPECT_EQ(count_code(k, Code::kNoCodeObjectNoKernels), 0u);
}

// rocFFT as Debian ships it (the ROCm root, scripts/rocm-root.sh; CMake's
// HIPGUARD_ROCM_ROOT): its fat binary has no gfx942 entry and no kernels.
TEST(KernelFree, RealRocfft) {
  const std::string root = HIPGUARD_ROCM_ROOT;
  if (!exists(root + "/.hipguard-root"))
    GTEST_SKIP() << "no ROCm root at '" << root << "' (scripts/rocm-root.sh builds it)";
  std::string lib = root + "/usr/lib/x86_64-linux-gnu/librocfft.so.0";
  ASSERT_TRUE(exists(lib)) << lib << " is missing from the ROCm root";
  auto gfx942 = *parse_target("gfx942");
  FileReport f = check_file(lib, {gfx942});
  ASSERT_FALSE(f.images.empty());
  size_t hg211 = 0;
  for (const auto& img : f.images) {
    EXPECT_EQ(count_code(img, Code::kNoCodeObject), 0u);
    hg211 += count_code(img, Code::kNoCodeObjectNoKernels);
  }
  EXPECT_GE(hg211, 1u);
  EXPECT_TRUE(f.ok());
}
