// Selection as each HIP runtime version does it: the version table, generic names with device features (HG213), one
// process's batch lookup (HG212).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ccob.h"
#include "check_util.h"
#include "code_object.h"
#include "hipguard/check.h"
#include "hipguard/runtime_version.h"

using namespace hipguard;
using hgtest::make_bundle;

namespace {

const std::string kHip = "hipv4-amdgcn-amd-amdhsa--";

// A one-kernel code object for `mach` (EF_AMDGPU_MACH); generic ones are code object v6, generic version 1.
hgtest::ByteVec code_object(uint32_t mach, const std::string& processor, bool generic = false) {
  hgtest::CodeObjectSpec spec;
  spec.mach = mach;
  spec.target = "amdgcn-amd-amdhsa--" + processor;
  if (generic) spec.version = 6, spec.generic_version = 1;
  return hgtest::make_code_object(spec);
}
const hgtest::ByteVec& gfx906() {
  static auto co = code_object(0x02f, "gfx906");
  return co;
}
const hgtest::ByteVec& gfx90a() {
  static auto co = code_object(0x03f, "gfx90a");
  return co;
}
const hgtest::ByteVec& gfx9_generic() {
  static auto co = code_object(0x051, "gfx9-generic", true);
  return co;
}

std::vector<TargetId> targets(const std::vector<std::string>& names) {
  std::vector<TargetId> out;
  for (const auto& n : names) {
    auto t = parse_target(n);
    EXPECT_TRUE(t) << t.error().message;
    if (t) out.push_back(*t);
  }
  return out;
}

ImageReport check(const hgtest::ByteVec& data, const std::vector<std::string>& names, const char* runtime,
                  bool one_process = false) {
  Machine m;
  m.runtime = runtime ? parse_runtime(runtime) : nullptr;
  m.one_process = one_process;
  static std::vector<TargetId> ts;  // check_image keeps a reference for the report's lifetime
  ts = targets(names);
  return check_image(Bytes(data.data(), data.size()), "bundle", ts, "", Depth::Full, m);
}

const Diagnostic* find(const ImageReport& r, Code code, const std::string& target = "") {
  for (const auto& d : r.diagnostics)
    if (d.code == code && (target.empty() || d.target == target)) return &d;
  return nullptr;
}

}  // namespace

TEST(RuntimeVersion, VersionsMapToTheirRange) {
  unsigned v = 0;
  ASSERT_TRUE(parse_runtime("6.4.3", &v));
  EXPECT_EQ(v, 60400003u);  // HIP_VERSION = major*10000000 + minor*100000 + patch
  EXPECT_EQ(parse_runtime("6.4")->name, "6.4");
  EXPECT_EQ(parse_runtime("7")->name, "7.0");
  EXPECT_EQ(parse_runtime("7.1")->name, "7.0");
  EXPECT_EQ(parse_runtime("6.2.4")->name, "5.6");
  EXPECT_EQ(parse_runtime("5.2")->name, "5.0");
  for (const char* bad : {"", "x", "6.", "6.4.", "6.4.3.1", "0", "6,4", "-6"})
    EXPECT_EQ(parse_runtime(bad), nullptr) << bad;
  EXPECT_EQ(&default_runtime(), &all_runtimes().back());
  EXPECT_EQ(runtime_label(default_runtime()), "HIP 7.x");
  EXPECT_EQ(runtime_label(*parse_runtime("6.4")), "HIP 6.4");
}

TEST(RuntimeVersion, LibraryFileNameGivesTheVersion) {
  EXPECT_EQ(runtime_for_library("/usr/lib/x86_64-linux-gnu/libamdhip64.so.6.4.43484")->name, "6.4");
  EXPECT_EQ(runtime_for_library("/opt/rocm-7.0.2/lib/libamdhip64.so.7.0.70002")->name, "7.0");
  EXPECT_EQ(runtime_for_library("libamdhip64.so.6"), nullptr);  // the link name: the major only
  EXPECT_EQ(runtime_for_library("libamdhip64.so"), nullptr);
  EXPECT_EQ(runtime_for_library("libfoo.so.6.4.1"), nullptr);
  std::string version;
  EXPECT_EQ(runtime_for_library("libamdhip64.so.6.3.42131", &version)->name, "5.6");  // no generic before 6.4
  EXPECT_EQ(version, "6.3");                                                          // what messages and --runtime say
}

// The names a program asks for HIP's runtime by, or that it names itself by (DT_SONAME).
TEST(RuntimeVersion, HipRuntimeNames) {
  for (const char* name : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7.2.53211"})
    EXPECT_TRUE(is_hip_runtime_name(name)) << name;
  for (const char* name : {"libamdhip64.sox", "libamdhip64_static.a", "libhiprtc.so.6", "", "xlibamdhip64.so.6"})
    EXPECT_FALSE(is_hip_runtime_name(name)) << name;
}

// CLR 7.x TargetToGeneric asks for gfx9-generic:sramecc+:xnack- on a gfx906, which comgr rejects.
TEST(RuntimeVersion, Gfx906TakesGfx9GenericUnderHip64NotUnderHip7) {
  auto b = make_bundle({{kHip + "gfx9-generic", gfx9_generic()}});
  ImageReport r64 = check(b, {"mi50"}, "6.4");
  EXPECT_EQ(r64.verdicts[0].selection, Selection::Generic);
  EXPECT_TRUE(r64.verdicts[0].can_run);
  EXPECT_FALSE(find(r64, Code::kGenericFeaturesRejected));

  for (const char* rt : {"7.0", "7.1.0", static_cast<const char*>(nullptr)}) {  // null: the default, the newest
    ImageReport r7 = check(b, {"mi50"}, rt);
    EXPECT_EQ(r7.verdicts[0].selection, Selection::None) << (rt ? rt : "default");
    EXPECT_FALSE(r7.verdicts[0].can_run);
    const Diagnostic* d = find(r7, Code::kGenericFeaturesRejected);
    ASSERT_TRUE(d) << (rt ? rt : "default");
    EXPECT_EQ(d->severity, Severity::Error);
    EXPECT_NE(d->message.find("gfx9-generic:sramecc+:xnack-"), std::string::npos) << d->message;
    EXPECT_NE(d->message.find("--runtime 6.4"), std::string::npos) << d->message;
    EXPECT_FALSE(find(r7, Code::kNoCodeObject));
  }
  // Radeon VII (sramecc-) too; gfx900 has no sramecc and keeps the generic object under 7.x.
  EXPECT_TRUE(find(check(b, {"radeon-vii"}, "7.0"), Code::kGenericFeaturesRejected));
  ImageReport r900 = check(b, {"gfx900:xnack-"}, "7.0");
  EXPECT_EQ(r900.verdicts[0].selection, Selection::Generic);
  EXPECT_TRUE(r900.verdicts[0].can_run);
  // Before HIP 6.4 no generic code object is selected at all: HG201 says why.
  ImageReport r56 = check(b, {"mi50"}, "6.2");
  EXPECT_FALSE(r56.verdicts[0].can_run);
  const Diagnostic* d = find(r56, Code::kNoCodeObject);
  ASSERT_TRUE(d);
  EXPECT_NE(d->message.find("selects no generic code object"), std::string::npos) << d->message;
  // A native entry runs under every version.
  auto native = make_bundle({{kHip + "gfx9-generic", gfx9_generic()}, {kHip + "gfx906", gfx906()}});
  for (const char* rt : {"5.0", "6.2", "6.4", "7.0"}) {
    ImageReport rn = check(native, {"mi50"}, rt);
    EXPECT_EQ(rn.verdicts[0].selection, Selection::Native) << rt;
    EXPECT_TRUE(rn.verdicts[0].can_run) << rt;
  }
}

TEST(RuntimeVersion, RefusedGenericWithSpirvIsAWarningAndTheSpirvEntry) {
  auto b = make_bundle(
      {{kHip + "gfx9-generic", gfx9_generic()}, {"hipv4-spirv64-amd-amdhsa--amdgcnspirv", hgtest::ByteVec(64, 0)}});
  ImageReport r = check(b, {"mi50"}, "7.0");
  EXPECT_EQ(r.verdicts[0].selection, Selection::Spirv);
  const Diagnostic* d = find(r, Code::kGenericFeaturesRejected);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::Warning);
  EXPECT_TRUE(find(r, Code::kSpirvFallback));
  // HIP 5.6 (no SPIR-V, no generic): nothing.
  ImageReport old = check(b, {"mi50"}, "5.6");
  EXPECT_EQ(old.verdicts[0].selection, Selection::None);
  EXPECT_TRUE(find(old, Code::kNoCodeObject));
}

// comgr lookUpCodeObject: one bare gfx90a entry serves one of two gfx90a GPUs that differ in xnack.
TEST(RuntimeVersion, MixedXnackGpusInOneProcessShareNoBareEntry) {
  auto b = make_bundle({{"host-x86_64-unknown-linux-gnu", {}}, {kHip + "gfx90a", gfx90a()}});
  std::vector<std::string> gpus = {"gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack+"};
  for (const char* rt : {"5.6", "6.4", "7.0"}) {
    ImageReport r = check(b, gpus, rt, /*one_process=*/true);
    // "xnack+" sorts before "xnack-" in CLR 7.x's std::set: the xnack+ GPU gets the entry.
    EXPECT_TRUE(r.verdicts[1].can_run) << rt;
    EXPECT_EQ(r.verdicts[1].selected, kHip + "gfx90a") << rt;
    EXPECT_FALSE(r.verdicts[0].can_run) << rt;
    EXPECT_EQ(r.verdicts[0].selection, Selection::None) << rt;
    const Diagnostic* d = find(r, Code::kBatchLookupStarved, "gfx90a:sramecc+:xnack-");
    ASSERT_TRUE(d) << rt;
    EXPECT_EQ(d->entry, kHip + "gfx90a");
    EXPECT_NE(d->message.find("gfx90a:sramecc+:xnack+"), std::string::npos) << d->message;
    EXPECT_NE(d->message.find(std::string(rt) == "7.0" ? "sorted" : "unspecified"), std::string::npos) << d->message;
  }
  // Separate machines, or HIP 5.0's own parser (each entry serves every GPU): both run.
  for (auto [rt, one] : {std::pair{"7.0", false}, std::pair{"5.0", true}}) {
    ImageReport r = check(b, gpus, rt, one);
    EXPECT_TRUE(r.verdicts[0].can_run && r.verdicts[1].can_run) << rt;
    EXPECT_FALSE(find(r, Code::kBatchLookupStarved)) << rt;
  }
  // Same xnack on both GPUs: one query, both served.
  ImageReport same = check(b, {"mi250x", "mi210"}, "7.0", true);
  EXPECT_TRUE(same.verdicts[0].can_run && same.verdicts[1].can_run);
  // Compressed: comgr's unbundler gives each entry to one requested ID as well.
  auto ccob = hgtest::make_ccob(b, 2, 0);
  ImageReport rc = check(ccob, gpus, "7.0", true);
  EXPECT_TRUE(find(rc, Code::kBatchLookupStarved, "gfx90a:sramecc+:xnack-"));
  EXPECT_TRUE(rc.verdicts[1].can_run);
}

TEST(RuntimeVersion, BatchLookupLoadsTheEntryItsQueryGot) {
  // Alone, an xnack- GPU takes the first fitting entry (bare); with an xnack+ GPU
  // beside it the bare one goes to xnack+ and xnack- gets its own variant.
  auto b = make_bundle({{kHip + "gfx90a", gfx90a()}, {kHip + "gfx90a:xnack-", gfx90a()}});
  ImageReport alone = check(b, {"gfx90a:sramecc+:xnack-"}, "7.0", true);
  EXPECT_EQ(alone.verdicts[0].selected, kHip + "gfx90a");
  ImageReport r = check(b, {"gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack+"}, "7.0", true);
  EXPECT_EQ(r.verdicts[0].selected, kHip + "gfx90a:xnack-");
  EXPECT_EQ(r.verdicts[1].selected, kHip + "gfx90a");
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(find(r, Code::kBatchLookupStarved));
}

TEST(RuntimeVersion, Hip64ReadsBundlesWithAGenericEntryItself) {
  // CLR 6.4: an uncompressed bundle with a generic entry goes to hip_code_object.cpp's parser (no batch limit).
  auto b = make_bundle({{kHip + "gfx90a", gfx90a()}, {kHip + "gfx9-generic", gfx9_generic()}});
  std::vector<std::string> gpus = {"gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack+"};
  ImageReport r64 = check(b, gpus, "6.4", true);
  EXPECT_TRUE(r64.ok());
  EXPECT_FALSE(find(r64, Code::kBatchLookupStarved));
  ImageReport r7 = check(b, gpus, "7.0", true);
  EXPECT_TRUE(find(r7, Code::kBatchLookupStarved, "gfx90a:sramecc+:xnack-"));
}
