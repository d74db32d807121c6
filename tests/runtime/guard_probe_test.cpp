// The registration probe and the launch gate through the Guard API, with the
// runtime's lookup functions replaced by fakes: covers the hipFuncGetAttributes
// fallback (runtimes before ROCm 6.2 have no hipGetFuncBySymbol) and a runtime
// without a GPU, which no test program can show here.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "runtime/guard.h"
#include "check_util.h"

using namespace hipguard;

namespace {

using checks::kApps;
int g_attr_result = 0;
int g_attr_calls = 0;
int fake_func_get_attributes(void*, const void*) {
  ++g_attr_calls;
  return g_attr_result;
}
// The runtime's sticky last error: the program's own (700) before the probe, drained after it.
int g_drained = 0;
int fake_peek_at_last_error() { return 700; }
int fake_get_last_error() { return ++g_drained, 98; }

class GuardProbe : public hgtest::OwnGuardTest {
 protected:
  GuardProbe() : OwnGuardTest(checks::strict_gfx942()) {}
};

}  // namespace

TEST_F(GuardProbe, OnlyTheLaunchedFatBinaryIsProbed) {
  // Probing makes the runtime load a fat binary's code object: only the one a
  // launch needs anyway is probed, each kernel once.
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int handle_c, handle_d, host_c, host_d;
  Guard& g = guard();
  testing::internal::CaptureStderr();
  for (auto [handle, host] : {std::pair{&handle_c, &host_c}, std::pair{&handle_d, &host_d}}) {
    hgtest::register_fatbin(g, &w, handle);
    g.on_register_function(handle, host,
                           "_Z12probe_kernelv");  // a name of its own: its lines are not deduplicated away
  }
  ProbeFunctions fns;
  fns.func_get_attributes = fake_func_get_attributes;
  g.set_probe_functions(fns);
  g_attr_result = 0;  // the runtime accepts everything
  g_attr_calls = 0;
  g.on_launch(&host_c, 0, "hipLaunchKernel");
  EXPECT_EQ(g_attr_calls, 1) << "library c only";
  g.on_launch(&host_c, 0, "hipLaunchKernel");
  EXPECT_EQ(g_attr_calls, 1) << "once";
  g.on_launch(&host_d, 0, "hipLaunchKernel");
  EXPECT_EQ(g_attr_calls, 2) << "library d at its own first launch";
  g.on_unregister_fatbin(&handle_c);
  g.on_unregister_fatbin(&handle_d);
  testing::internal::GetCapturedStderr();
  g_attr_calls = 0;
}

TEST_F(GuardProbe, FuncGetAttributesFallbackThenLaunchGate) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int handle_a, handle_b, host_a, host_b;  // stand-ins for the runtime's handle and the kernel stubs
  Guard& g = guard();
  g_attr_calls = 0;

  testing::internal::CaptureStderr();
  EXPECT_EQ(hgtest::register_fatbin(g, &w, &handle_a).action, Action::Exit)
      << "gfx90a-only code on gfx942, strict mode";
  g.on_register_function(&handle_a, &host_a, "_Z10vector_addPKfS0_Pfi");
  ProbeFunctions fns;
  fns.func_get_attributes = fake_func_get_attributes;  // no hipGetFuncBySymbol
  fns.peek_at_last_error = fake_peek_at_last_error;
  fns.get_last_error = fake_get_last_error;
  g.set_probe_functions(fns);
  g_attr_result = 98;  // the runtime rejects the kernel
  g_drained = 0;
  Decision v = g.on_launch(&host_a, 0, "hipLaunchKernel");
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_attr_calls, 1);
  // One cause, one line: the probe's rejection and the launch are consequences
  // of the HG201 said at registration (they go into the report, not the log).
  std::vector<Diagnostic> said = g.said().findings, after = g.said().consequences;
  EXPECT_EQ(hgtest::count_said(said, Code::kNoCodeObject, Severity::Error), 1u) << hgtest::lines(said);
  EXPECT_EQ(hgtest::count_said(said, Code::kRuntimeRejected, Severity::Error) +
                hgtest::count_said(said, Code::kLaunchWithFindings, Severity::Error),
            0u)
      << hgtest::lines(said);
  EXPECT_EQ(hgtest::count_said(after, Code::kRuntimeRejected, Severity::Error), 1u) << hgtest::lines(after);
  EXPECT_EQ(hgtest::count_said(after, Code::kLaunchWithFindings, Severity::Error), 1u) << hgtest::lines(after);
  EXPECT_EQ(v.action, Action::Refuse);
  EXPECT_EQ(v.hip_error, kHipErrorInvalidDeviceFunction);
  EXPECT_TRUE(v.sets_last_error) << "hipGetLastError reports it (the shim keeps it for the thread)";
  // The probe's failed lookup left its error in the runtime: drained, and the program's own error (700)
  // handed back for the shim to report while the runtime has none newer.
  EXPECT_EQ(g_drained, 1);
  EXPECT_EQ(v.restored_error, 700);

  // A second library registered later is probed too; a runtime without a GPU switches the probe off.
  testing::internal::CaptureStderr();
  hgtest::register_fatbin(g, &w, &handle_b);
  g.on_register_function(&handle_b, &host_b, "_Z10vector_addPKfS0_Pfi");
  g_attr_result = 101;  // hipErrorInvalidDevice
  g.on_launch(&host_b, 0, "hipLaunchKernel");
  g_attr_result = 98;
  hgtest::register_fatbin(g, &w, &handle_a);
  g.on_register_function(&handle_a, &host_a, "_Z10vector_addPKfS0_Pfi");
  g.on_launch(&host_a, 0, "hipLaunchKernel");
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_attr_calls, 2) << "probed once more (library b), then off for good";
  EXPECT_EQ(hgtest::count_said(g.said().consequences, Code::kRuntimeRejected, Severity::Error), 1u)
      << "none since the probe went off";
  EXPECT_EQ(hgtest::count_said(g.said().findings, Code::kRuntimeRejected, Severity::Error), 0u);
  // Unregistering forgets the kernel: its host address may be reused.
  g.on_unregister_fatbin(&handle_a);
  EXPECT_EQ(g.on_launch(&host_a, 0, "hipLaunchKernel").action, Action::Forward);
  g.on_unregister_fatbin(&handle_b);  // before the bundle is freed (the exit report reads what is registered)
}

// A kpack fat binary (HIPK) is valid for current CLR: a note, never HG102 and
// never a strict-mode stop (the tests' guard runs in strict mode).
TEST_F(GuardProbe, KpackFatBinaryIsANoteNotAnError) {
  static const unsigned char metadata[64] = {0x80};  // an empty MessagePack map: never read
  FatbinWrapper w{kHipkMagic, 1, metadata, nullptr};
  testing::internal::CaptureStderr();
  Decision v = hgtest::check_fatbin(guard(), &w);
  testing::internal::GetCapturedStderr();
  size_t mark = 0;
  std::vector<Diagnostic> said = hgtest::said_since(guard(), mark);
  EXPECT_EQ(v.action, Action::Forward) << hgtest::lines(said);
  EXPECT_EQ(hgtest::count_said(said, Code::kKpackNotChecked, Severity::Note), 1u) << hgtest::lines(said);
  EXPECT_EQ(said.size(), 1u) << hgtest::lines(said);
  // Any other magic still is HG102.
  FatbinWrapper bad{0x12345678, 1, metadata, nullptr};
  testing::internal::CaptureStderr();
  v = hgtest::check_fatbin(guard(), &bad);
  testing::internal::GetCapturedStderr();
  said = hgtest::said_since(guard(), mark);
  EXPECT_EQ(v.action, Action::Exit) << hgtest::lines(said);
  EXPECT_EQ(hgtest::count_said(said, Code::kBadFatbinWrapper, Severity::Error), 1u) << hgtest::lines(said);
}
