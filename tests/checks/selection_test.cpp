// Code-object selection rules, on bundles assembled here from real code
// objects (hipcc output and the corpus) in the layout OffloadBundler writes:
// magic, u64 count, {u64 offset, u64 size, u64 id length, id}..., payloads.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "hipguard/check.h"
#include "check_util.h"

using namespace hipguard;

namespace {

using namespace checks;

TargetVerdict verdict(const std::vector<uint8_t>& data, const std::string& target, ImageReport* out = nullptr) {
  auto t = parse_target(target);
  EXPECT_TRUE(t) << t.error().message;
  ImageReport r = check_image(Bytes(data.data(), data.size()), "bundle", {*t});
  TargetVerdict v = r.verdicts.at(0);
  if (out) *out = std::move(r);
  return v;
}

bool has_code(const ImageReport& r, Code c) {
  for (const auto& d : r.diagnostics)
    if (d.code == c) return true;
  return false;
}

const std::string kHip = "hipv4-amdgcn-amd-amdhsa--";

}  // namespace

TEST(Selection, FirstCompatibleEntryInFileOrderWins) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto any = app_code_object("vector_add_multi.hipfb", "gfx90a");
  ASSERT_FALSE(any.empty());
  // Same code object under two IDs; the device matches both. CLR/comgr take the first in file order.
  auto b1 = make_bundle({{"host-x86_64-unknown-linux-gnu", {}}, {kHip + "gfx90a", any}, {kHip + "gfx90a:xnack-", any}});
  auto v1 = verdict(b1, "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(v1.selected, kHip + "gfx90a");
  EXPECT_EQ(v1.selection, Selection::Native);
  auto b2 = make_bundle({{kHip + "gfx90a:xnack-", any}, {kHip + "gfx90a", any}});
  EXPECT_EQ(verdict(b2, "gfx90a:sramecc+:xnack-").selected, kHip + "gfx90a:xnack-");
  // An xnack+ device skips the xnack- entry and takes the unspecified one.
  EXPECT_EQ(verdict(b2, "gfx90a:xnack+").selected, kHip + "gfx90a");
}

TEST(Selection, FeatureMismatchNamesTheSettingAndTheWorkaround) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  ASSERT_FALSE(co.empty());
  auto b = make_bundle({{kHip + "gfx90a:sramecc-:xnack+", co}});
  ImageReport r;
  auto v = verdict(b, "gfx90a:sramecc-:xnack-", &r);
  EXPECT_EQ(v.selection, Selection::None);
  EXPECT_FALSE(v.can_run);
  ASSERT_TRUE(has_code(r, Code::kFeatureMismatch));
  for (const auto& d : r.diagnostics)
    if (d.code == Code::kFeatureMismatch) {
      EXPECT_NE(d.message.find("xnack+"), std::string::npos);
      EXPECT_NE(d.fix.find("HSA_XNACK=1"), std::string::npos);
    }
  // sramecc cannot be switched at run time: no HSA_XNACK advice for it.
  auto b2 = make_bundle({{kHip + "gfx90a:sramecc+", co}});
  ImageReport r2;
  verdict(b2, "gfx90a:sramecc-:xnack-", &r2);
  ASSERT_TRUE(has_code(r2, Code::kFeatureMismatch));
  for (const auto& d : r2.diagnostics)
    if (d.code == Code::kFeatureMismatch) EXPECT_EQ(d.fix.find("HSA_XNACK"), std::string::npos) << d.fix;
}

TEST(Selection, NativeBeatsGenericAndGenericIsTheFallback) {
  std::string path = kCorpus + "/gfx942_fmha_v3_fwd_MI300_fwd_hd128_bf16_causal_rtne.co";  // code object v6
  if (!exists(path)) GTEST_SKIP() << "corpus not found at " << kCorpus;
  auto native = read_bytes(path);
  ASSERT_EQ(native[8], 4) << "EI_ABIVERSION 4 = code object v6";
  // The same object re-labelled gfx9-4-generic, generic version 1 (e_flags bits 0-7 and 24-31).
  auto generic = native;
  generic[48] = 0x5f;
  generic[51] = 1;
  auto b = make_bundle({{kHip + "gfx9-4-generic", generic}, {kHip + "gfx942", native}});
  auto v = verdict(b, "gfx942:sramecc+:xnack-");
  EXPECT_EQ(v.selection, Selection::Native) << "native beats generic even when generic comes first";
  EXPECT_EQ(v.selected, kHip + "gfx942");
  // gfx950 is a member of gfx9-4-generic: it falls back to the generic entry.
  ImageReport r;
  auto g = verdict(b, "gfx950", &r);
  EXPECT_EQ(g.selection, Selection::Generic);
  EXPECT_EQ(g.selected, kHip + "gfx9-4-generic");
  EXPECT_TRUE(g.can_run);
  // gfx90a has no generic family: nothing fits.
  EXPECT_EQ(verdict(b, "gfx90a").selection, Selection::None);
  // A generic object with generic version 0 is refused by the loader.
  generic[51] = 0;
  auto b0 = make_bundle({{kHip + "gfx9-4-generic", generic}});
  ImageReport r0;
  auto v0 = verdict(b0, "gfx950", &r0);
  EXPECT_FALSE(v0.can_run);
  EXPECT_TRUE(has_code(r0, Code::kGenericTooOld));
}

TEST(Selection, IsaCompatibleSiblingSuggestsOverrideAsWorkaround) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx1030");
  ASSERT_FALSE(co.empty());
  auto b = make_bundle({{kHip + "gfx1030", co}});
  ImageReport r;
  verdict(b, "gfx1031", &r);
  ASSERT_TRUE(has_code(r, Code::kNoCodeObject));
  for (const auto& d : r.diagnostics)
    if (d.code == Code::kNoCodeObject) {
      EXPECT_NE(d.fix.find("HSA_OVERRIDE_GFX_VERSION=10.3.0"), std::string::npos) << d.fix;
      EXPECT_NE(d.message.find("(nearest: gfx1030)"), std::string::npos) << d.message;
    }
  // No such advice across families (gfx942 device, gfx1030 code).
  ImageReport r2;
  verdict(b, "gfx942", &r2);
  for (const auto& d : r2.diagnostics) EXPECT_EQ(d.fix.find("HSA_OVERRIDE_GFX_VERSION"), std::string::npos);
}

TEST(Selection, SpirvEntryIsTheLastResort) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  std::vector<uint8_t> spirv = {0x03, 0x02, 0x23, 0x07};  // SPIR-V magic; never parsed as a code object
  auto b = make_bundle({{"hipv4-spirv64-amd-amdhsa--amdgcnspirv", spirv}, {kHip + "gfx90a", co}});
  EXPECT_EQ(verdict(b, "gfx90a").selection, Selection::Native);
  ImageReport r;
  auto v = verdict(b, "gfx942", &r);
  EXPECT_EQ(v.selection, Selection::Spirv);
  EXPECT_EQ(v.selected, "hipv4-spirv64-amd-amdhsa--amdgcnspirv");
  EXPECT_TRUE(has_code(r, Code::kSpirvFallback));
  EXPECT_FALSE(has_code(r, Code::kNoCodeObject));
}

TEST(Selection, OpenmpAndHostEntriesAreNotHipCandidates) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  auto b = make_bundle({{"openmp-amdgcn-amd-amdhsa--gfx90a", co}, {"host-x86_64-unknown-linux-gnu", {}}});
  ImageReport r;
  auto v = verdict(b, "gfx90a", &r);
  EXPECT_EQ(v.selection, Selection::None) << "the uncompressed path (comgr lookup) only takes hip/hipv4 entries";
  EXPECT_TRUE(has_code(r, Code::kNoCodeObject));
}

TEST(Selection, EntryWhoseCodeObjectIsBuiltForAnotherProcessorIsRejected) {
  // The runtime selects by entry ID, then its loader checks the ELF's e_flags:
  // an entry labelled gfx942 that holds a gfx90a code object is selected and rejected.
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  ASSERT_FALSE(co.empty());
  auto b = make_bundle({{kHip + "gfx942", co}});
  ImageReport r;
  auto v = verdict(b, "gfx942:sramecc+:xnack-", &r);
  EXPECT_EQ(v.selected, kHip + "gfx942") << "selected by its label";
  EXPECT_FALSE(v.can_run);
  ASSERT_TRUE(has_code(r, Code::kProcessorMismatch));
  for (const auto& d : r.diagnostics)
    if (d.code == Code::kProcessorMismatch) {
      EXPECT_NE(d.message.find("built for gfx90a"), std::string::npos) << d.message;
      EXPECT_NE(d.message.find("e_flags"), std::string::npos) << d.message;
      EXPECT_EQ(d.entry, kHip + "gfx942");
    }
  // Labelled correctly, the same object is fine on gfx90a.
  EXPECT_TRUE(verdict(make_bundle({{kHip + "gfx90a:xnack-", co}}), "gfx90a:sramecc+:xnack-").can_run);
  // Label without features, ELF xnack+ (e_flags bits 8-9 = EF_AMDGPU_FEATURE_XNACK_ON_V4,
  // 0x300): an xnack- GPU selects it by its label and the loader refuses it (HG203).
  auto xnack_on = co;
  xnack_on[49] = static_cast<uint8_t>((xnack_on[49] & ~0x03) | 0x03);
  ImageReport rx;
  auto vx = verdict(make_bundle({{kHip + "gfx90a", xnack_on}}), "gfx90a:xnack-", &rx);
  EXPECT_FALSE(vx.can_run);
  EXPECT_TRUE(has_code(rx, Code::kFeatureMismatch));
}

TEST(Selection, HsaXnackIsSuggestedOnlyWhenXnackAloneDiffers) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx90a");
  ASSERT_FALSE(co.empty());
  // xnack and sramecc both differ: HSA_XNACK cannot fix it.
  auto b = make_bundle({{kHip + "gfx90a:sramecc-:xnack+", co}});
  ImageReport r;
  verdict(b, "gfx90a:sramecc+:xnack-", &r);
  ASSERT_TRUE(has_code(r, Code::kFeatureMismatch));
  for (const auto& d : r.diagnostics)
    if (d.code == Code::kFeatureMismatch) {
      EXPECT_EQ(d.fix.find("HSA_XNACK"), std::string::npos) << d.fix;
      EXPECT_NE(d.fix.find("--offload-arch=gfx90a:sramecc+:xnack-"), std::string::npos) << d.fix;
    }
}

TEST(Selection, RawCodeObjectOfAnIsaCompatibleSiblingSuggestsOverride) {
  // hipModuleLoad of a gfx1030 .co on a gfx1031 GPU: HG202 with the workaround.
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  auto co = app_code_object("vector_add_multi.hipfb", "gfx1030");
  ASSERT_FALSE(co.empty());
  ImageReport r;
  verdict(co, "gfx1031", &r);
  ASSERT_TRUE(has_code(r, Code::kProcessorMismatch));
  for (const auto& d : r.diagnostics)
    if (d.code == Code::kProcessorMismatch)
      EXPECT_NE(d.fix.find("HSA_OVERRIDE_GFX_VERSION=10.3.0"), std::string::npos) << d.fix;
  ImageReport r2;
  verdict(co, "gfx942", &r2);
  for (const auto& d : r2.diagnostics) EXPECT_EQ(d.fix.find("HSA_OVERRIDE_GFX_VERSION"), std::string::npos) << d.fix;
}
