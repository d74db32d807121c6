// check.h / check_paths.h end to end: the AITER corpus against gfx942 and gfx950,
// hipcc-built programs against gfx90a / gfx942, selection order, and the
// per-target kernel checks on crafted code objects.
#include "hipguard/check.h"

#include "hipguard/check_paths.h"
#include "corpus_facts.h"
#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

namespace {

// LDS limits per workgroup: AMDGPU.td FeatureAddressableLocalMemorySize and CLR's
// device table (reference §6): 64 KiB gfx942, 160 KiB gfx950.
constexpr uint64_t kGfx942Lds = 65536;

// The single kernel of a corpus object: its name from hipguard, its LDS from
// the llvm-readelf table (corpus_facts.h).
uint64_t kernel_lds(const fs::path& f, std::string* name) {
  auto co = parse_code_object(span(read_bytes(f)));
  EXPECT_TRUE(co);
  if (!co || co->kernels.size() != 1) return 0;
  *name = co->kernels[0].name;
  auto it = kCorpusLds.find(f.filename().string());
  EXPECT_NE(it, kCorpusLds.end()) << f;
  return it == kCorpusLds.end() ? 0 : it->second;
}

FileReport check(const fs::path& f, std::initializer_list<const char*> targets, Depth depth = Depth::Full) {
  std::vector<TargetId> ts;
  for (const char* t : targets) ts.push_back(target(t));
  CheckFileOptions o;
  o.depth = depth;
  return check_file(f.string(), ts, o);
}

}  // namespace

// ---- AITER corpus ----------------------------------------------------------------

TEST(CorpusCheck, Gfx942ObjectsRunOnGfx942) {
  HG_REQUIRE_CORPUS();
  auto files = corpus_files("gfx942_");
  ASSERT_EQ(files.size(), 19u);
  for (const auto& f : files) {
    auto r = check(f, {"gfx942"});
    SCOPED_TRACE(f.filename().string());
    ASSERT_EQ(r.images.size(), 1u);
    const auto& img = r.images[0];
    EXPECT_EQ(img.kind, PayloadKind::CodeObject);
    ASSERT_EQ(img.verdicts.size(), 1u);
    EXPECT_TRUE(img.verdicts[0].can_run) << dump(img.diagnostics);
    EXPECT_EQ(img.verdicts[0].selection, Selection::Native);
    EXPECT_EQ(img.verdicts[0].kernels, 1u);
    EXPECT_TRUE(r.ok());
    for (const auto& d : img.diagnostics) EXPECT_NE(d.severity, Severity::Error) << format_line(d);
  }
}

TEST(CorpusCheck, Gfx942ObjectsRunOnMi300xAlias) {
  HG_REQUIRE_CORPUS();
  for (const auto& f : corpus_files("gfx942_")) {
    auto r = check(f, {"mi300x", "mi325x"});
    EXPECT_TRUE(r.ok()) << f.filename() << "\n" << dump(all_diags(r));
  }
}

TEST(CorpusCheck, Gfx950AndGfx1250ObjectsAreHG202OnGfx942) {
  HG_REQUIRE_CORPUS();
  auto files = corpus_files("gfx950_");
  auto more = corpus_files("gfx1250_");
  ASSERT_EQ(files.size(), 19u);
  ASSERT_EQ(more.size(), 4u);
  files.insert(files.end(), more.begin(), more.end());
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    auto r = check(f, {"gfx942"});
    ASSERT_EQ(r.images.size(), 1u);
    const auto& img = r.images[0];
    EXPECT_FALSE(img.verdicts[0].can_run);
    EXPECT_EQ(img.verdicts[0].selection, Selection::None);
    auto d = find_diags(img.diagnostics, Code::kProcessorMismatch);
    ASSERT_EQ(d.size(), 1u) << dump(img.diagnostics);
    EXPECT_EQ(d[0]->target, "gfx942");
    EXPECT_EQ(d[0]->severity, Severity::Error);
    std::string name = f.filename().string();
    EXPECT_NE(d[0]->message.find(name.substr(0, name.find('_'))), std::string::npos) << d[0]->message;
    EXPECT_FALSE(r.ok());
    // Structurally these objects are fine: only the target verdict fails.
    EXPECT_TRUE(img.structurally_ok) << dump(img.diagnostics);
  }
}

TEST(CorpusCheck, Gfx950LdsOverGfx942LimitIsHG301) {
  HG_REQUIRE_CORPUS();
  size_t over = 0, at_limit = 0;
  for (const auto& f : corpus_files("gfx950_")) {
    SCOPED_TRACE(f.filename().string());
    std::string kernel;
    uint64_t lds = kernel_lds(f, &kernel);
    auto r = check(f, {"gfx942"});
    ASSERT_EQ(r.images.size(), 1u);
    auto d = find_diags(r.images[0].diagnostics, Code::kLdsOverLimit);
    if (lds > kGfx942Lds) {
      ++over;
      ASSERT_EQ(d.size(), 1u) << dump(r.images[0].diagnostics);
      EXPECT_EQ(d[0]->kernel, kernel);
      EXPECT_EQ(d[0]->target, "gfx942");
      EXPECT_EQ(d[0]->value, lds);
      EXPECT_EQ(d[0]->limit, kGfx942Lds);
      EXPECT_NE(d[0]->message.find(std::to_string(lds)), std::string::npos) << d[0]->message;
      EXPECT_NE(d[0]->message.find("65536"), std::string::npos) << d[0]->message;
      EXPECT_FALSE(d[0]->fix.empty());
    } else {
      if (lds == kGfx942Lds) ++at_limit;
      EXPECT_TRUE(d.empty()) << "LDS " << lds << " fits gfx942\n" << dump(r.images[0].diagnostics);
    }
  }
  // llvm-readelf: 12 gfx950 objects declare more than 64 KiB (11 x 163840 and one 66048),
  // and four declare exactly 65536.
  EXPECT_EQ(over, 12u);
  EXPECT_EQ(at_limit, 4u);
}

TEST(CorpusCheck, EdgeObjects) {
  HG_REQUIRE_CORPUS();
  // 66048 bytes: 512 over gfx942's 64 KiB -> HG301. 65536 exactly: fits.
  auto over = check(corpus_dir() / "gfx950_fmha_v4_fwd_fwd_hd128_f4f4.co", {"gfx942"});
  ASSERT_EQ(over.images.size(), 1u);
  auto d = find_diags(over.images[0].diagnostics, Code::kLdsOverLimit);
  ASSERT_EQ(d.size(), 1u) << dump(over.images[0].diagnostics);
  EXPECT_EQ(d[0]->kernel, "_ZN5aiter28fmha_fwd_hd128_f4f4_gfx950E");
  EXPECT_EQ(d[0]->value, 66048u);
  EXPECT_EQ(d[0]->limit, 65536u);

  auto fits = check(corpus_dir() / "gfx950_bf16gemm_bf16gemm_fp32bf16_tn_128x64_bshuffle_splitk.co", {"gfx942"});
  ASSERT_EQ(fits.images.size(), 1u);
  EXPECT_FALSE(has_code(fits.images[0].diagnostics, Code::kLdsOverLimit)) << dump(fits.images[0].diagnostics);
  EXPECT_TRUE(has_code(fits.images[0].diagnostics, Code::kProcessorMismatch));
}

TEST(CorpusCheck, Gfx950ObjectsRunOnGfx950) {
  HG_REQUIRE_CORPUS();
  for (const auto& f : corpus_files("gfx950_")) {
    auto r = check(f, {"gfx950"});
    ASSERT_EQ(r.images.size(), 1u);
    EXPECT_TRUE(r.ok()) << f.filename() << "\n" << dump(r.images[0].diagnostics);
    EXPECT_EQ(r.images[0].verdicts[0].selection, Selection::Native);
    EXPECT_FALSE(has_code(r.images[0].diagnostics, Code::kLdsOverLimit));
  }
  // And through the product name.
  auto r = check(corpus_dir() / "gfx950_f4gemm_f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256.co", {"mi355x"});
  EXPECT_TRUE(r.ok()) << dump(all_diags(r));
}

TEST(CorpusCheck, Gfx942ObjectsDoNotRunOnGfx950) {
  HG_REQUIRE_CORPUS();
  // No backward compatibility between processors (AMDGPUUsage): gfx942 code is not gfx950 code.
  for (const auto& f : corpus_files("gfx942_")) {
    auto r = check(f, {"gfx950"});
    ASSERT_EQ(r.images.size(), 1u);
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(has_code(r.images[0].diagnostics, Code::kProcessorMismatch));
  }
}

TEST(CorpusCheck, Gfx1250OnGfx950ReportsLdsToo) {
  HG_REQUIRE_CORPUS();
  // 327680 bytes (320 KiB) > gfx950's 163840.
  auto r = check(corpus_dir() / "gfx1250_fmha_fwd_mxfp8_fmha_fwd_mxfp8_d128.co", {"gfx950"});
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_TRUE(has_code(r.images[0].diagnostics, Code::kProcessorMismatch));
  auto d = find_diags(r.images[0].diagnostics, Code::kLdsOverLimit);
  ASSERT_EQ(d.size(), 1u) << dump(r.images[0].diagnostics);
  EXPECT_EQ(d[0]->value, 327680u);
  EXPECT_EQ(d[0]->limit, 163840u);
}

TEST(CorpusCheck, TwoTargetsGiveTwoVerdictsInOrder) {
  HG_REQUIRE_CORPUS();
  auto r = check(corpus_dir() / "gfx950_f4gemm_f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256.co", {"gfx942", "mi355x"});
  ASSERT_EQ(r.images.size(), 1u);
  const auto& v = r.images[0].verdicts;
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].target.processor, "gfx942");
  EXPECT_FALSE(v[0].can_run);
  EXPECT_EQ(v[1].target.processor, "gfx950");
  EXPECT_TRUE(v[1].can_run);
  // Diagnostics name the target they belong to.
  for (const auto& d : r.images[0].diagnostics)
    if (d.severity == Severity::Error) EXPECT_EQ(d.target, "gfx942") << format_line(d);
}

TEST(CorpusCheck, NoTargetsMeansStructuralOnly) {
  HG_REQUIRE_CORPUS();
  for (const auto& f : corpus_files()) {
    auto r = check_file(f.string(), {});
    ASSERT_EQ(r.images.size(), 1u);
    EXPECT_TRUE(r.images[0].verdicts.empty());
    EXPECT_TRUE(r.ok()) << f.filename() << "\n" << dump(r.images[0].diagnostics);
    EXPECT_EQ(r.images[0].code_objects.size(), 1u);
  }
}

// At Depth::ForTargets (hipguard check) a code object built for none of the
// targets is read only to its kernel descriptors: what each target is told
// must not change from what a check that reads its metadata says (Depth::Full,
// and ForTargets with its own processor as a second target, which the runtime
// could load it on).
TEST(CorpusCheck, ObjectsForOtherProcessorsGetTheFullChecksVerdicts) {
  HG_REQUIRE_CORPUS();
  auto key = [](const Diagnostic& d) {
    return std::string(code_string(d.code)) + "|" + d.kernel + "|" + std::to_string(d.value.value_or(0)) + "|" +
           std::to_string(d.limit.value_or(0));
  };
  size_t compared = 0;
  for (const auto& f : corpus_files()) {
    auto own = parse_code_object(span(read_bytes(f)));
    ASSERT_TRUE(own) << f;
    for (const char* other : {"gfx942", "gfx950", "gfx90a"}) {
      if (own->target.processor == other) continue;
      SCOPED_TRACE(f.filename().string() + " on " + other);
      auto shortcut = check(f, {other}, Depth::ForTargets);
      ASSERT_EQ(shortcut.images.size(), 1u);
      const ImageReport& a = shortcut.images[0];
      EXPECT_TRUE(a.code_objects.empty()) << "not loadable on the target: not listed, like an unselected entry";
      EXPECT_TRUE(has_code(a.diagnostics, Code::kProcessorMismatch));
      std::vector<std::string> ka;
      for (const auto& d : a.diagnostics)
        if (d.target == a.verdicts[0].target.str()) ka.push_back(key(d));
      for (auto full : {check(f, {other}), check(f, {other, own->target.processor.c_str()}, Depth::ForTargets)}) {
        ASSERT_EQ(full.images.size(), 1u);
        const ImageReport& b = full.images[0];
        ASSERT_EQ(b.code_objects.size(), 1u);
        EXPECT_EQ(a.verdicts[0].can_run, b.verdicts[0].can_run);
        EXPECT_EQ(a.structurally_ok, b.structurally_ok) << dump(b.diagnostics);
        std::vector<std::string> kb;
        for (const auto& d : b.diagnostics)
          if (d.target == b.verdicts[0].target.str()) kb.push_back(key(d));
        EXPECT_EQ(ka, kb) << dump(a.diagnostics) << "\n---\n" << dump(b.diagnostics);
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 42u * 3 - 19 - 19);  // every object against the two processors it is not built for, and gfx90a
}

TEST(Selection, RawObjectForAnotherProcessorIsNotReadPastItsDescriptors) {
  CodeObjectSpec s;                                              // gfx942
  s.raw_metadata = std::string("\xc1\xc1\xc1 not msgpack", 15);  // HG402 when read
  ByteVec co = make_code_object(s);
  auto other = check_image(span(co), "other", {target("gfx950")}, "", Depth::ForTargets);
  EXPECT_TRUE(has_code(other.diagnostics, Code::kProcessorMismatch)) << dump(other.diagnostics);
  EXPECT_FALSE(has_code(other.diagnostics, Code::kBadMetadata)) << dump(other.diagnostics);
  EXPECT_TRUE(other.code_objects.empty());
  EXPECT_FALSE(other.verdicts[0].can_run);
  // Asked about its own processor (alone, beside another, or with no target) it is read in full;
  // and always at Depth::Full (the shim: the GPU present may be its processor, HIPGUARD_TARGET another).
  for (auto targets : {std::vector<TargetId>{target("gfx942")},
                       std::vector<TargetId>{target("gfx950"), target("gfx942")}, std::vector<TargetId>{}}) {
    auto r = check_image(span(co), "own", targets, "", Depth::ForTargets);
    EXPECT_TRUE(has_code(r.diagnostics, Code::kBadMetadata)) << dump(r.diagnostics);
    EXPECT_EQ(r.code_objects.size(), 1u);
  }
  auto shim = check_image(span(co), "shim", {target("gfx950")});
  EXPECT_TRUE(has_code(shim.diagnostics, Code::kBadMetadata)) << dump(shim.diagnostics);
  EXPECT_EQ(shim.code_objects.size(), 1u);
  // A feature mismatch is the same processor: read in full (HSA_XNACK may make it load).
  s.features = kXnackOn | kSrameccAny;
  auto xnack = check_image(span(make_code_object(s)), "xnack", {target("gfx942:xnack-")}, "", Depth::ForTargets);
  EXPECT_TRUE(has_code(xnack.diagnostics, Code::kFeatureMismatch)) << dump(xnack.diagnostics);
  EXPECT_TRUE(has_code(xnack.diagnostics, Code::kBadMetadata)) << dump(xnack.diagnostics);
  // An error that needs no metadata to see is still said: no metadata note at all.
  CodeObjectSpec bare;
  bare.note = false;
  auto none = check_image(span(make_code_object(bare)), "no note", {target("gfx950")}, "", Depth::ForTargets);
  EXPECT_TRUE(has_code(none.diagnostics, Code::kProcessorMismatch)) << dump(none.diagnostics);
  EXPECT_TRUE(has_code(none.diagnostics, Code::kNoMetadata)) << dump(none.diagnostics);
  EXPECT_FALSE(none.structurally_ok);
  EXPECT_TRUE(none.code_objects.empty());
}

TEST(Selection, RawObjectForAnotherProcessorNamesEveryKernelOverTheLds) {
  // Of several kernels only those over the smallest limit among the targets are
  // kept, in name order (no metadata order to follow), each said for every target it does not fit.
  CodeObjectSpec s;  // gfx942
  s.kernels.clear();
  for (auto [name, lds] : std::initializer_list<std::pair<const char*, uint64_t>>{
           {"zeta", 70000}, {"alpha", 1000}, {"edge", 65536}, {"mid", 100000}, {"big", 163841}})
    s.kernels.push_back(KernelSpec{.name = name, .lds = lds});
  ByteVec co = make_code_object(s);
  auto r =
      check_image(span(co), "several", {target("gfx950"), target("gfx90a")}, "", Depth::ForTargets);  // 160, 64 KiB
  ASSERT_TRUE(r.code_objects.empty());
  auto said = [](const ImageReport& img) {
    std::vector<std::string> out;
    for (const auto* d : find_diags(img.diagnostics, Code::kLdsOverLimit))
      out.push_back(d->target.substr(0, d->target.find(':')) + " " + d->kernel + " " + std::to_string(*d->value));
    return out;
  };
  EXPECT_EQ(said(r), (std::vector<std::string>{"gfx950 big 163841", "gfx90a big 163841", "gfx90a mid 100000",
                                               "gfx90a zeta 70000"}))
      << dump(r.diagnostics);
  // The same findings as the check that reads every kernel's metadata (which says them in metadata order).
  auto full = check_image(span(co), "several", {target("gfx950"), target("gfx90a")});
  EXPECT_EQ(full.code_objects.size(), 1u);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(said(r)), sorted(said(full))) << dump(full.diagnostics);
}

// ---- hipcc-built programs -------------------------------------------------------------

TEST(AppCheck, MultiArchSelectsXnackOffEntryForGfx90a) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  auto r = check_file(path, {target("gfx90a")});
  ASSERT_EQ(r.images.size(), 1u);
  const auto& v = r.images[0].verdicts.at(0);
  EXPECT_TRUE(v.can_run) << dump(all_diags(r));
  EXPECT_EQ(v.selection, Selection::Native);
  EXPECT_EQ(v.selected, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
  EXPECT_EQ(v.kernels, 1u);
  EXPECT_TRUE(r.ok());
}

TEST(AppCheck, MultiArchHasNothingForGfx942) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  auto r = check_file(path, {target("gfx942")});
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.images[0].verdicts.at(0).selection, Selection::None);
  auto d = find_diags(r.images[0].diagnostics, Code::kNoCodeObject);
  ASSERT_EQ(d.size(), 1u) << dump(r.images[0].diagnostics);
  EXPECT_EQ(d[0]->target, "gfx942");
  // The message lists what the bundle holds (target IDs of its amdgcn entries).
  for (const char* held : {"gfx1030", "gfx90a:xnack-", "gfx940"})
    EXPECT_NE(d[0]->message.find(held), std::string::npos) << held << " missing from: " << d[0]->message;
  EXPECT_NE(d[0]->fix.find("gfx942"), std::string::npos) << d[0]->fix;
  // gfx940 is a sibling, not gfx942: no feature-mismatch finding.
  EXPECT_FALSE(has_code(r.images[0].diagnostics, Code::kFeatureMismatch));
}

TEST(AppCheck, XnackOnBuildOnXnackOffDeviceIsHG203) {
  HG_REQUIRE_APP(path, "vector_add_xnack_on");
  auto r = check_file(path, {target("gfx90a:xnack-")});
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_FALSE(r.ok());
  auto d = find_diags(r.images[0].diagnostics, Code::kFeatureMismatch);
  ASSERT_EQ(d.size(), 1u) << dump(r.images[0].diagnostics);
  EXPECT_EQ(d[0]->entry, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
  EXPECT_NE(d[0]->message.find("xnack+"), std::string::npos) << d[0]->message;
  EXPECT_NE(d[0]->message.find("xnack-"), std::string::npos) << d[0]->message;
  EXPECT_FALSE(has_code(r.images[0].diagnostics, Code::kNoCodeObject));
  // Same program on a device whose xnack setting is not known, or is on: runs.
  EXPECT_TRUE(check_file(path, {target("gfx90a")}).ok());
  EXPECT_TRUE(check_file(path, {target("gfx90a:xnack+")}).ok());
}

TEST(AppCheck, XnackOffEntryOnXnackOnDeviceIsHG203) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  auto r = check_file(path, {target("gfx90a:xnack+")});
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_TRUE(has_code(r.images[0].diagnostics, Code::kFeatureMismatch)) << dump(r.images[0].diagnostics);
  EXPECT_FALSE(r.ok());
}

TEST(AppCheck, RawHipfbBundleAndLibrary) {
  HG_REQUIRE_APP(hipfb, "vector_add_gfx90a.hipfb");
  HG_REQUIRE_APP(lib, "libkernels_lib.so");
  auto r = check_file(hipfb, {target("mi250x"), target("mi300x")});
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_EQ(r.images[0].kind, PayloadKind::OffloadBundle);
  EXPECT_TRUE(r.images[0].verdicts[0].can_run) << dump(r.images[0].diagnostics);
  EXPECT_FALSE(r.images[0].verdicts[1].can_run);
  auto l = check_file(lib, {target("gfx90a")});
  EXPECT_TRUE(l.hip);
  EXPECT_TRUE(l.ok()) << dump(all_diags(l));
}

TEST(AppCheck, BigLdsFitsEveryGfx9) {
  HG_REQUIRE_APP(path, "big_lds_gfx90a");
  // 49152 bytes of LDS (llvm-readelf) < 64 KiB: the negative control for HG301.
  auto r = check_file(path, {target("gfx90a")});
  EXPECT_TRUE(r.ok()) << dump(all_diags(r));
  EXPECT_FALSE(has_code(all_diags(r), Code::kLdsOverLimit));
}

// ---- Selection order on crafted bundles (real hipcc code objects inside) ---------------

namespace {

ByteVec gfx90a_code_object() {
  std::string p = app("vector_add_multi.hipfb");
  if (p.empty()) return {};
  return entry_payload(read_bytes(p), "hipv4-amdgcn-amd-amdhsa--gfx90a");
}

}  // namespace

TEST(Selection, FirstCompatibleEntryInFileOrderWins) {
  ByteVec co = gfx90a_code_object();
  if (co.empty()) GTEST_SKIP() << "needs the hipcc-built vector_add_multi.hipfb";
  // Both entries are compatible with a gfx90a device whose xnack setting is unknown.
  ByteVec b1 = make_bundle({{"host-x86_64-unknown-linux-gnu", {}},
                            {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", co},
                            {"hipv4-amdgcn-amd-amdhsa--gfx90a", co}});
  auto r1 = check_image(span(b1), "b1", {target("gfx90a")});
  EXPECT_EQ(r1.verdicts.at(0).selected, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
  ByteVec b2 = make_bundle({{"host-x86_64-unknown-linux-gnu", {}},
                            {"hipv4-amdgcn-amd-amdhsa--gfx90a", co},
                            {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", co}});
  auto r2 = check_image(span(b2), "b2", {target("gfx90a")});
  EXPECT_EQ(r2.verdicts.at(0).selected, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  // A device with xnack+ skips the incompatible first entry.
  auto r3 = check_image(span(b1), "b1", {target("gfx90a:xnack+")});
  EXPECT_EQ(r3.verdicts.at(0).selected, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_TRUE(r3.verdicts.at(0).can_run) << dump(r3.diagnostics);
}

TEST(Selection, NonHipAndHostEntriesAreNeverSelected) {
  ByteVec co = gfx90a_code_object();
  if (co.empty()) GTEST_SKIP() << "needs the hipcc-built vector_add_multi.hipfb";
  ByteVec b = make_bundle({{"openmp-amdgcn-amd-amdhsa--gfx90a", co}, {"host-x86_64-unknown-linux-gnu", {}}});
  auto r = check_image(span(b), "omp", {target("gfx90a")});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(has_code(r.diagnostics, Code::kNoCodeObject)) << dump(r.diagnostics);
}

namespace {

// A gfx9-4-generic code object (v6) from the builder, and a gfx942 one.
ByteVec generic_object(unsigned generic_version, const std::string& kernel = "g") {
  CodeObjectSpec s;
  s.mach = 0x05f;
  s.version = 6;
  s.generic_version = generic_version;
  s.target = "amdgcn-amd-amdhsa--gfx9-4-generic";
  s.kernels[0].name = kernel;
  return make_code_object(s);
}

}  // namespace

TEST(Selection, NativeBeforeGeneric) {
  CodeObjectSpec native;
  native.kernels[0].name = "n";
  ByteVec b = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", generic_object(1)},
                           {"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object(native)}});
  auto r = check_image(span(b), "mixed", {target("gfx942"), target("gfx950")});
  ASSERT_EQ(r.verdicts.size(), 2u);
  EXPECT_EQ(r.verdicts[0].selection, Selection::Native);
  EXPECT_EQ(r.verdicts[0].selected, "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_TRUE(r.verdicts[0].can_run) << dump(r.diagnostics);
  // gfx950 has no native entry: the generic one (family gfx9-4-generic) is used.
  EXPECT_EQ(r.verdicts[1].selection, Selection::Generic);
  EXPECT_EQ(r.verdicts[1].selected, "hipv4-amdgcn-amd-amdhsa--gfx9-4-generic");
  EXPECT_TRUE(r.verdicts[1].can_run) << dump(r.diagnostics);
}

TEST(Selection, GenericVersionZeroInBundleIsHG205) {
  ByteVec b = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", generic_object(0)}});
  auto r = check_image(span(b), "generic0", {target("gfx950")});
  EXPECT_EQ(r.verdicts.at(0).selection, Selection::Generic);
  EXPECT_FALSE(r.verdicts.at(0).can_run);
  EXPECT_TRUE(has_code(r.diagnostics, Code::kGenericTooOld)) << dump(r.diagnostics);
}

TEST(Selection, RawGenericCodeObject) {
  auto ok = check_image(span(generic_object(1)), "raw generic", {target("gfx942"), target("gfx950"), target("gfx90a")});
  ASSERT_EQ(ok.verdicts.size(), 3u);
  EXPECT_EQ(ok.verdicts[0].selection, Selection::Generic);
  EXPECT_TRUE(ok.verdicts[0].can_run) << dump(ok.diagnostics);
  EXPECT_TRUE(ok.verdicts[1].can_run);
  EXPECT_FALSE(ok.verdicts[2].can_run);
  EXPECT_TRUE(has_code(ok.diagnostics, Code::kProcessorMismatch));
  auto old = check_image(span(generic_object(0)), "raw generic v0", {target("gfx942")});
  EXPECT_FALSE(old.ok());
  EXPECT_TRUE(has_code(old.diagnostics, Code::kGenericTooOld)) << dump(old.diagnostics);
}

TEST(Selection, BrokenSelectedEntryFailsOnlyItsTarget) {
  CodeObjectSpec s;
  ByteVec good = make_code_object(s);
  ByteVec bad = good;
  bad.resize(100);  // truncated ELF
  ByteVec b = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", good}, {"hipv4-amdgcn-amd-amdhsa--gfx950", bad}});
  auto r = check_image(span(b), "half broken", {target("gfx942"), target("gfx950")});
  ASSERT_EQ(r.verdicts.size(), 2u);
  EXPECT_TRUE(r.verdicts[0].can_run) << dump(r.diagnostics);
  EXPECT_FALSE(r.verdicts[1].can_run);
  auto d = find_diags(r.diagnostics, Code::kMalformedElf);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(d[0]->entry, "hipv4-amdgcn-amd-amdhsa--gfx950");
}

// ---- Per-target kernel checks on crafted code objects ---------------------------------

TEST(KernelChecks, LdsOverLimitIsHG301) {
  CodeObjectSpec s;
  s.kernels[0].name = "big";
  s.kernels[0].lds = 65537;
  auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  auto d = find_diags(r.diagnostics, Code::kLdsOverLimit);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(d[0]->kernel, "big");
  EXPECT_EQ(d[0]->value, 65537u);
  EXPECT_EQ(d[0]->limit, 65536u);
  EXPECT_FALSE(r.ok());
  s.kernels[0].lds = 65536;
  EXPECT_TRUE(check_image(span(make_code_object(s)), "crafted", {target("gfx942")}).ok());
}

TEST(KernelChecks, LdsLimitIsTheSmallerOfTableAndDevice) {
  // A GPU that reports less LDS than its processor addresses (KFD lds_size_in_kb)
  // sets the limit; one that reports more (gfx10+ per-WGP figures) does not.
  CodeObjectSpec s;
  s.kernels[0].lds = 40000;
  TargetId small = target("gfx942");
  small.lds_bytes = 32768;
  auto r = check_image(span(make_code_object(s)), "crafted", {small});
  auto d = find_diags(r.diagnostics, Code::kLdsOverLimit);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(d[0]->limit, 32768u);
  TargetId big = target("gfx942");
  big.lds_bytes = 131072;
  s.kernels[0].lds = 65537;
  auto r2 = check_image(span(make_code_object(s)), "crafted", {big});
  auto d2 = find_diags(r2.diagnostics, Code::kLdsOverLimit);
  ASSERT_EQ(d2.size(), 1u) << dump(r2.diagnostics);
  EXPECT_EQ(d2[0]->limit, 65536u);
}

TEST(KernelChecks, Wave32OnWave64OnlyProcessorIsHG302) {
  // gfx9 (CDNA) runs wave64 only (AMDGPUUsage: wavefrontsize32 is a gfx10+ feature).
  CodeObjectSpec s;
  s.kernels[0].name = "w32";
  s.kernels[0].wavefront = 32;
  auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  auto d = find_diags(r.diagnostics, Code::kWavefrontSize);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(d[0]->kernel, "w32");
  EXPECT_FALSE(r.ok());
  // wave64 on gfx1250 (wave32 only).
  CodeObjectSpec g;
  g.mach = 0x049;
  g.features = kXnackAny | kSrameccAny;
  g.version = 6;
  g.target = "amdgcn-amd-amdhsa--gfx1250";
  g.kernels[0].wavefront = 64;
  auto r2 = check_image(span(make_code_object(g)), "crafted", {target("gfx1250")});
  EXPECT_TRUE(has_code(r2.diagnostics, Code::kWavefrontSize)) << dump(r2.diagnostics);
}

TEST(KernelChecks, RegisterFileIsHG303) {
  {
    // gfx90a-class: one unified file of 512 (arch VGPRs + AGPRs, at most 256 AGPRs);
    // there .vgpr_count is the total (AMDGPUAsmPrinter: align4(VGPRs) + AGPRs).
    CodeObjectSpec s;
    s.kernels[0].vgpr = 768;
    s.kernels[0].agpr = 512;
    auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
    EXPECT_TRUE(has_code(r.diagnostics, Code::kRegisterLimit)) << dump(r.diagnostics);
    EXPECT_FALSE(r.ok());
  }
  {
    CodeObjectSpec s;
    s.kernels[0].vgpr = 512;
    s.kernels[0].agpr = 256;  // exactly the unified file, as many AGPRs as allowed
    auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
    EXPECT_FALSE(has_code(r.diagnostics, Code::kRegisterLimit)) << dump(r.diagnostics);
  }
  {
    CodeObjectSpec s;
    s.kernels[0].sgpr = 200;  // far over 102 addressable + VCC/FLAT_SCRATCH/XNACK_MASK
    auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
    EXPECT_TRUE(has_code(r.diagnostics, Code::kRegisterLimit)) << dump(r.diagnostics);
  }
}

TEST(KernelChecks, RegisterLimitsOfGfx11AndGfx1250) {
  // gfx10/11: 256 addressable VGPRs and 108 SGPRs (incl. VCC etc.); gfx1250: 1024 VGPRs.
  // The limits of the HG303 findings (copied: the report dies with the call).
  auto regs = [](uint32_t mach, const std::string& proc, uint64_t vgpr, uint64_t sgpr) {
    CodeObjectSpec s;
    s.mach = mach;
    s.features = 0;  // no xnack/sramecc on these processors
    s.target = "amdgcn-amd-amdhsa--" + proc;
    s.kernels[0].wavefront = 32;
    s.kernels[0].vgpr = vgpr;
    s.kernels[0].sgpr = sgpr;
    auto r = check_image(span(make_code_object(s)), "crafted", {target(proc)});
    std::vector<uint64_t> limits;
    for (const auto* d : find_diags(r.diagnostics, Code::kRegisterLimit)) limits.push_back(d->limit.value_or(0));
    return limits;
  };
  using L = std::vector<uint64_t>;
  EXPECT_EQ(regs(0x041, "gfx1100", 256, 108), L{});
  EXPECT_EQ(regs(0x041, "gfx1100", 257, 108), L{256});
  EXPECT_EQ(regs(0x041, "gfx1100", 256, 109), L{108});
  EXPECT_EQ(regs(0x049, "gfx1250", 1024, 100), L{}) << "gfx1250 addresses 1024 VGPRs";
  EXPECT_EQ(regs(0x049, "gfx1250", 1025, 100), L{1024});
}

TEST(KernelChecks, DescriptorDisagreesWithMetadataIsHG404) {
  // The runtime sizes scratch and kernargs from the metadata; the hardware reads the descriptor.
  auto mismatches = [](const KernelSpec& k) {
    CodeObjectSpec s;
    s.kernels = {k};
    auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
    auto d = find_diags(r.diagnostics, Code::kDescriptorMismatch);
    std::string all;
    for (const auto* x : d) all += x->message + "|";
    return std::make_pair(d.size(), all);
  };
  KernelSpec agree;
  agree.private_size = 64;
  EXPECT_EQ(mismatches(agree).first, 0u);
  KernelSpec scratch = agree;
  scratch.kd_private = 128;
  auto [n1, m1] = mismatches(scratch);
  EXPECT_EQ(n1, 1u);
  EXPECT_NE(m1.find("private_segment_fixed_size (scratch bytes): metadata says 64, kernel descriptor says 128"),
            std::string::npos)
      << m1;
  KernelSpec kernarg = agree;
  kernarg.kd_kernarg = 24;  // metadata: 16
  auto [n2, m2] = mismatches(kernarg);
  EXPECT_EQ(n2, 1u);
  EXPECT_NE(m2.find("kernarg size (bytes): metadata says 16, kernel descriptor says 24"), std::string::npos) << m2;
  KernelSpec unset = agree;
  unset.kd_kernarg = 0;  // hand-assembled descriptors may leave it 0: not a contradiction
  EXPECT_EQ(mismatches(unset).first, 0u);
  KernelSpec stack = agree;
  stack.kd_properties = 0x8 | (1u << 11);  // USES_DYNAMIC_STACK in the descriptor only (code object v5)
  auto [n3, m3] = mismatches(stack);
  EXPECT_EQ(n3, 1u);
  EXPECT_NE(m3.find("uses_dynamic_stack"), std::string::npos) << m3;
}

TEST(KernelChecks, KernargHiddenArgumentsComeLast) {
  KernelSpec k;
  k.kernarg_size = 24;
  k.args = {{"a", "global_buffer", 0, 8}, {"", "hidden_block_count_x", 8, 4}, {"b", "by_value", 16, 4}};
  CodeObjectSpec s;
  s.kernels = {k};
  auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  auto d = find_diags(r.diagnostics, Code::kKernargLayout);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_NE(d[0]->message.find("argument 'b' at offset 16 is an explicit argument after hidden ones"),
            std::string::npos)
      << d[0]->message;
  // A hidden argument off dword alignment (scalar loads drop the two low address bits; at 12 it is read whole).
  k.args = {{"a", "global_buffer", 0, 8}, {"", "hidden_global_offset_x", 10, 8}};
  s.kernels = {k};
  auto r2 = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  auto d2 = find_diags(r2.diagnostics, Code::kKernargLayout);
  ASSERT_EQ(d2.size(), 1u) << dump(r2.diagnostics);
  EXPECT_NE(d2[0]->message.find("is not aligned to 4 bytes"), std::string::npos) << d2[0]->message;
  // kernarg_segment_align must be a power of two.
  k.args = {{"a", "global_buffer", 0, 8}};
  k.kernarg_align = 12;
  s.kernels = {k};
  auto r3 = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  EXPECT_TRUE(has_code(r3.diagnostics, Code::kKernargLayout)) << dump(r3.diagnostics);
}

// Severities follow the runtime: only what CLR/ROCr reject (or what cannot run
// on the hardware) fails the verdict (docs/diagnostics.md cites the source).
TEST(KernelChecks, SeveritiesTheRuntimeAgreesWith) {
  // One finding of `c` with severity `sev`, and the verdict `ok`, for a code object of these kernels.
  auto expect = [](std::vector<KernelSpec> kernels, Code c, Severity sev, bool ok, const char* why) {
    CodeObjectSpec s;
    s.kernels = std::move(kernels);
    auto r = check_image(span(make_code_object(s)), "crafted", {target("mi300x")});
    auto d = find_diags(r.diagnostics, c);
    ASSERT_EQ(d.size(), 1u) << why << dump(r.diagnostics);
    EXPECT_EQ(d[0]->severity, sev) << why;
    EXPECT_EQ(r.ok(), ok) << why << dump(r.diagnostics);
  };
  KernelSpec pad, zero, big, no_symbol, no_sgpr, unlisted;
  pad.kernarg_size = 16;
  pad.args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 8, 8}, {"pad", "by_value", 16, 8}};
  expect({pad}, Code::kKernargLayout, Severity::Warning, true,
         "AITER's fmoe 'pad' arguments past .kernarg_segment_size: CLR copies by offset and never checks; they run");
  zero.max_flat = 0;
  expect({zero}, Code::kWorkgroupSize, Severity::Error, false,
         ".max_flat_workgroup_size 0: CLR rejects the code object (rockernel.cpp postLoad)");
  big.max_flat = 2048;
  expect({big}, Code::kWorkgroupSize, Severity::Warning, true, "over 1024: nothing enforces it");
  no_symbol.omit = {".symbol"};
  expect({no_symbol}, Code::kBadKernelMetadata, Severity::Error, false, "no .symbol: CLR rejects the code object");
  no_sgpr.omit = {".sgpr_count"};
  expect({no_sgpr}, Code::kBadKernelMetadata, Severity::Warning, true, "a missing .sgpr_count is taken as 0");
  unlisted.name = "unlisted";
  unlisted.metadata = false;
  expect({KernelSpec{}, unlisted}, Code::kKernelWithoutMetadata, Severity::Warning, true,
         "a .kd symbol without metadata: the code object loads, that symbol is not a HIP kernel");
  // Code object v3: ROCr still loads it (a warning); v7: rejected.
  for (unsigned v : {3u, 7u}) {
    CodeObjectSpec old;
    old.version = v;
    if (v == 3) old.features = 0;  // v3 e_flags: one bit per feature, clear = off
    auto r = check_image(span(make_code_object(old)), "crafted", {target("gfx942:sramecc-:xnack-")});
    auto d = find_diags(r.diagnostics, Code::kCodeObjectVersion);
    ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
    EXPECT_EQ(d[0]->severity, v == 3 ? Severity::Warning : Severity::Error) << "v" << v;
    EXPECT_EQ(r.ok(), v == 3) << "v" << v;
  }
}

TEST(KernelChecks, MetadataIssuesFailTheImage) {
  CodeObjectSpec s;
  s.kernels[0].descriptor = false;
  auto r = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  EXPECT_TRUE(has_code(r.diagnostics, Code::kDescriptorMissing)) << dump(r.diagnostics);
  EXPECT_FALSE(r.structurally_ok);
  EXPECT_FALSE(r.ok());
}

// ---- check_paths.h: files --------------------------------------------------------------------

TEST(Inputs, MissingFileIsHG101) {
  auto r = check_file("/nonexistent/hipguard/file.co", {target("gfx942")});
  EXPECT_TRUE(has_code(r.diagnostics, Code::kUnreadable)) << dump(r.diagnostics);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.images.empty());
}

TEST(Inputs, NonHipFileIsHG107Error) {
  TempFile text(ByteVec{'h', 'e', 'l', 'l', 'o', '\n'}, ".txt");
  auto r = check_file(text.str(), {target("gfx942")});
  EXPECT_FALSE(r.hip);
  auto d = find_diags(r.diagnostics, Code::kNoHipFatbin);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(d[0]->severity, Severity::Error);
  EXPECT_FALSE(r.ok()) << "a named file with no GPU code fails the check: a mistyped CI path must not pass";
  // Not named explicitly (found in a directory): skipped silently.
  auto quiet = check_file(text.str(), {target("gfx942")}, /*explicit_arg=*/false);
  EXPECT_TRUE(quiet.diagnostics.empty());
}

TEST(Inputs, HostElfWithoutFatbinIsHG107) {
  HG_REQUIRE_APP(path, "dlopen_host");  // plain C++ program
  auto r = check_file(path, {});
  EXPECT_FALSE(r.hip);
  EXPECT_TRUE(has_code(r.diagnostics, Code::kNoHipFatbin)) << dump(r.diagnostics);
}

TEST(Inputs, UnknownPayloadIsHG103) {
  ByteVec junk(4096, 0x42);
  auto r = check_image(span(junk), "junk", {target("gfx942")});
  EXPECT_EQ(r.kind, PayloadKind::Unknown);
  EXPECT_TRUE(has_code(r.diagnostics, Code::kUnknownPayload)) << dump(r.diagnostics);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.structurally_ok);
}

TEST(Inputs, ExpandPathsSortsAndReportsMissing) {
  HG_REQUIRE_CORPUS();
  std::vector<PathProblem> problems;
  auto files = expand_paths({corpus_dir().string(), "/nonexistent/x.co"}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].path, "/nonexistent/x.co");
  // The corpus folder holds 42 .co files plus LICENSE and MANIFEST.tsv.
  EXPECT_EQ(files.size(), 44u);
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
}

// Paths that cannot be walked are problems, never exceptions or silent skips.
TEST(Inputs, ExpandPathsReportsLoopsLongNamesAndUnreadableDirectories) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("hipguard-paths-" + std::to_string(getpid()));
  fs::create_directories(root / "locked");
  fs::create_symlink("loop_b", root / "loop_a");
  fs::create_symlink("loop_a", root / "loop_b");
  fs::create_directory_symlink(root, root / "self");  // a symlinked directory is not walked: no endless loop
  std::ofstream(root / "f.co") << "x";
  std::string long_name = (root / std::string(300, 'n')).string();
  std::vector<PathProblem> problems;
  auto files = expand_paths({(root / "loop_a").string(), long_name, root.string()}, &problems);
  std::map<std::string, std::string> why;
  for (const auto& p : problems) why[p.path] = p.reason;
  EXPECT_NE(why[(root / "loop_a").string()].find("symbolic links"), std::string::npos)
      << why[(root / "loop_a").string()];
  EXPECT_NE(why[long_name].find("too long"), std::string::npos) << why[long_name];
  EXPECT_EQ(files, std::vector<std::string>{(root / "f.co").string()});
  if (geteuid() != 0) {  // root reads any directory
    fs::permissions(root / "locked", fs::perms::none);
    problems.clear();
    expand_paths({root.string()}, &problems);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].path, (root / "locked").string());
    fs::permissions(root / "locked", fs::perms::owner_all);
  }
  fs::remove_all(root);
}

// Only regular files are read: a FIFO would hang, a device never ends.
TEST(Inputs, FifosAndDevicesAreRefusedWithoutReading) {
  namespace fs = std::filesystem;
  fs::path fifo = fs::temp_directory_path() / ("hipguard-fifo-" + std::to_string(getpid()));
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (std::string path : {fifo.string(), std::string("/dev/zero"), std::string("/dev/null")}) {
    auto r = check_file(path, {target("gfx942")});
    auto d = find_diags(r.diagnostics, Code::kUnreadable);
    ASSERT_EQ(d.size(), 1u) << path << dump(r.diagnostics);
    EXPECT_NE(d[0]->message.find("not a regular file"), std::string::npos) << d[0]->message;
    EXPECT_FALSE(r.ok());
  }
  fs::remove(fifo);
}

// A dumped .hip_fatbin section (bundles back to back) is checked in full.
TEST(Inputs, FileOfSeveralBundlesChecksEachOne) {
  HG_REQUIRE_APP(hipfb, "vector_add_gfx90a.hipfb");
  ByteVec one = read_bytes(hipfb);
  ByteVec three;
  for (int i = 0; i < 3; ++i) {
    three.insert(three.end(), one.begin(), one.end());
    three.resize((three.size() + 4095) / 4096 * 4096, 0);  // 4096-aligned, as in a .hip_fatbin section
  }
  TempFile f(three, ".hipfb");
  auto r = check_file(f.str(), {target("mi300x")});
  EXPECT_EQ(r.images.size(), 3u) << dump(r.diagnostics);
  for (const auto& img : r.images) EXPECT_TRUE(has_code(img.diagnostics, Code::kNoCodeObject)) << dump(img.diagnostics);
}

TEST(Inputs, FileReportOkFollowsErrors) {
  HG_REQUIRE_CORPUS();
  // LICENSE found in a directory: not HIP, skipped without diagnostics.
  auto lic = check_file((corpus_dir() / "LICENSE").string(), {target("gfx942")}, false);
  EXPECT_FALSE(lic.hip);
  EXPECT_TRUE(lic.diagnostics.empty());
  EXPECT_TRUE(lic.ok());
}

TEST(Selection, SpirvEntryIsTheLastResortHG207) {
  ByteVec co = gfx90a_code_object();
  if (co.empty()) GTEST_SKIP() << "needs the hipcc-built vector_add_multi.hipfb";
  // CLR (2025+) priority: native > generic > SPIR-V (reference §4). The SPIR-V payload
  // is never parsed as ELF; any bytes do.
  ByteVec spirv_payload = {0x03, 0x02, 0x23, 0x07, 0, 0, 0, 0};  // SPIR-V magic, little-endian
  ByteVec b = make_bundle({{"host-x86_64-unknown-linux-gnu", {}},
                           {"hipv4-spirv64-amd-amdhsa--amdgcnspirv", spirv_payload},
                           {"hipv4-amdgcn-amd-amdhsa--gfx90a", co}});
  auto r = check_image(span(b), "spirv", {target("gfx90a"), target("gfx942")});
  ASSERT_EQ(r.verdicts.size(), 2u);
  EXPECT_EQ(r.verdicts[0].selection, Selection::Native) << "native wins although SPIR-V comes first";
  EXPECT_EQ(r.verdicts[1].selection, Selection::Spirv);
  EXPECT_EQ(r.verdicts[1].selected, "hipv4-spirv64-amd-amdhsa--amdgcnspirv");
  auto d = find_diags(r.diagnostics, Code::kSpirvFallback);
  ASSERT_EQ(d.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(d[0]->target, "gfx942");
  EXPECT_EQ(d[0]->severity, Severity::Warning);
  EXPECT_FALSE(has_code(r.diagnostics, Code::kNoCodeObject));
}
