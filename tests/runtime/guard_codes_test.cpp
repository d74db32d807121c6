// The codes only the in-process Guard (guard.h, part of the core library) emits
// outside the shim's set-up: HG102 (bad __hipRegisterFatBinary wrapper) and
// HG408 (hipModuleGetFunction asked for a device function).
#include "runtime/guard.h"

#include <cstdlib>

#include "guard_config.h"
#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

TEST(GuardCodes, BadWrapperIsHG102AndDeviceFunctionIsHG408) {
  // A guard of this test's own: nothing another test (or an earlier repeat) said is taken as said.
  Guard g(guard_config({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "warn"}, {"HIPGUARD_LOG_LEVEL", "info"}}));

  // HG102: a wrapper whose magic is not "HIPF" (0x48495046).
  FatbinWrapper bad{0x12345678, 1, nullptr, nullptr};
  testing::internal::CaptureStderr();
  Decision v = hgtest::check_fatbin(g, &bad);
  testing::internal::GetCapturedStderr();
  size_t mark = 0;
  std::vector<Diagnostic> said = hgtest::said_since(g, mark);
  EXPECT_EQ(v.action, Action::Forward) << "warn mode never changes what the program does";
  ASSERT_EQ(hgtest::count_said(said, Code::kBadFatbinWrapper, Severity::Error), 1u) << hgtest::lines(said);
  EXPECT_NE(said.front().message.find("0x12345678"), std::string::npos) << hgtest::lines(said);
  // Version must be 1.
  FatbinWrapper bad_version{kHipFatbinMagic, 2, nullptr, nullptr};
  testing::internal::CaptureStderr();
  hgtest::check_fatbin(g, &bad_version);
  testing::internal::GetCapturedStderr();
  said = hgtest::said_since(g, mark);
  EXPECT_EQ(hgtest::count_said(said, Code::kBadFatbinWrapper, Severity::Error), 1u) << hgtest::lines(said);

  // HG408: hipModuleGetFunction asked for a device function of a loaded module.
  CodeObjectSpec s;
  s.kernels[0].name = "the_kernel";
  s.device_functions = {"_Z6helperf"};
  ByteVec image = make_code_object(s);
  testing::internal::CaptureStderr();
  int fake_module = 0;
  hgtest::load_module_data(g, image.data(), &fake_module);
  // The shim asks before forwarding (warn mode: forward anyway), then reports the result.
  EXPECT_EQ(g.before_module_get_function(&fake_module, "_Z6helperf").action, Action::Forward);
  g.on_module_get_function(&fake_module, "_Z6helperf", nullptr, 500 /* hipErrorNotFound */);
  testing::internal::GetCapturedStderr();
  said = hgtest::said_since(g, mark);
  std::vector<Diagnostic> all = said;
  for (const auto& c : g.said().consequences) all.push_back(c);
  size_t named = 0;
  for (const auto& d : all)
    if (d.code == Code::kDeviceFunction) named += d.message.find("the_kernel") != std::string::npos;
  EXPECT_EQ(named, 1u) << "HG408, listing the module's kernels: " << hgtest::lines(all);
  g.on_module_unloaded(&fake_module);
}
