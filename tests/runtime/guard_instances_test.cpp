// Several guards in one process, each on its own settings (Guard(GuardConfig)):
// what one registers, finds and decides is its own, and none touches the
// process's guard, launch gate or launch cache.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "check_util.h"
#include "runtime/guard.h"
#include "runtime/kernel_table.h"  // launch_known_clean

using namespace hipguard;

namespace {

using checks::kApps;

Guard make_guard(const char* target, const char* mode) {
  return Guard(
      hgtest::guard_config({{"HIPGUARD_TARGET", target}, {"HIPGUARD_MODE", mode}, {"HIPGUARD_LOG_LEVEL", "info"}}));
}

}  // namespace

TEST(GuardInstances, EachDecidesOnItsOwnSettings) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int handle, host, host_absent;
  unsigned process_gate = g_launch_gate.load();

  Guard warn_gfx90a = make_guard("gfx90a:xnack-", "warn");
  Guard strict_gfx90a = make_guard("gfx90a:xnack+", "strict");
  Guard strict_gfx942 = make_guard("gfx942", "strict");
  Guard strict_gfx942_too = make_guard("gfx942", "strict");

  // Registration: only the gfx942 guards find no code object for their GPU,
  // and each says so itself (its own set of lines said).
  testing::internal::CaptureStderr();
  for (Guard* g : {&warn_gfx90a, &strict_gfx90a}) {
    EXPECT_EQ(hgtest::register_fatbin(*g, &w, &handle).action, Action::Forward);
    EXPECT_TRUE(g->said().findings.empty()) << hgtest::lines(g->said().findings);
  }
  for (Guard* g : {&strict_gfx942, &strict_gfx942_too}) {
    EXPECT_EQ(hgtest::check_fatbin(*g, &w).action, Action::Exit);
    EXPECT_EQ(hgtest::count_said(g->said().findings, Code::kNoCodeObject, Severity::Error, "gfx942"), 1u)
        << hgtest::lines(g->said().findings);
  }
  testing::internal::GetCapturedStderr();

  // A kernel the code object lacks (HG409) is refused at launch in strict
  // mode; the warn guard forwards it. A kernel it has is forwarded by both.
  testing::internal::CaptureStderr();
  for (Guard* g : {&warn_gfx90a, &strict_gfx90a}) {
    EXPECT_EQ(g->on_register_function(&handle, &host, "_Z10vector_addPKfS0_Pfi").action, Action::Forward);
    EXPECT_EQ(g->on_register_function(&handle, &host_absent, "_Z9absent_v2v").action, Action::Forward);
  }
  EXPECT_EQ(warn_gfx90a.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_EQ(warn_gfx90a.on_launch(&host_absent, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_EQ(strict_gfx90a.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward);
  Decision refused = strict_gfx90a.on_launch(&host_absent, 0, "hipLaunchKernel");
  testing::internal::GetCapturedStderr();
  std::vector<Diagnostic> said = strict_gfx90a.said().findings;
  EXPECT_EQ(refused.action, Action::Refuse) << hgtest::lines(said);
  EXPECT_EQ(refused.hip_error, kHipErrorInvalidDeviceFunction);
  EXPECT_EQ(hgtest::count_said(said, Code::kLaunchWithFindings, Severity::Error, "", "_Z9absent_v2v"), 1u)
      << hgtest::lines(said);
  EXPECT_NE(hgtest::lines(said).find("HG409"), std::string::npos) << hgtest::lines(said);
  said = warn_gfx90a.said().findings;
  EXPECT_EQ(hgtest::count_said(said, Code::kLaunchWithFindings, Severity::Error, "", "_Z9absent_v2v"), 1u)
      << "warn mode says it too: " << hgtest::lines(said);
  // The refusal is this thread's last error, as the runtime's would be: its decision says so, for
  // the shim, which keeps the thread's last error (no guard keeps one for all). A forward sets none.
  EXPECT_TRUE(refused.sets_last_error);
  EXPECT_FALSE(warn_gfx90a.on_launch(&host_absent, 0, "hipLaunchKernel").sets_last_error);
  EXPECT_FALSE(strict_gfx90a.on_launch(&host, 0, "hipLaunchKernel").sets_last_error);

  // The process's guard saw none of it: its gate is as it was, and no kernel
  // of these guards entered the launch cache the shim's wrappers read.
  // (Run alone, as ctest runs it: in one process with the other tests, the
  // process's guard may have raised kGateFindings already.)
  if (!(process_gate & kGateFindings)) EXPECT_EQ(g_launch_gate.load(), process_gate);
  EXPECT_FALSE(launch_known_clean(&host, 0)) << "launched clean by two guards, yet not in the process's cache";

  for (Guard* g : {&warn_gfx90a, &strict_gfx90a}) g->on_unregister_fatbin(&handle);
}

namespace {
std::atomic<int> g_probes{0};
int count_probe(void*, const void*) {
  g_probes.fetch_add(1, std::memory_order_relaxed);
  return 0;  // the runtime accepts the kernel
}
}  // namespace

// The probe has a lock of its own beside the registry's: fat binaries
// registered, launched (probed) and unregistered from several threads at once,
// while another thread registers and unregisters fat binaries never launched,
// probe each launched kernel exactly once, and a kernel's second launch never.
// ThreadSanitizer runs it too (scripts/sanitize.sh thread).
TEST(GuardInstances, ProbeAndRegistryFromManyThreads) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  Guard g = make_guard("gfx90a:xnack-", "warn");
  ProbeFunctions fns;
  fns.func_get_attributes = count_probe;
  g.set_probe_functions(fns);
  g_probes = 0;
  constexpr int kLaunchers = 3, kCycles = 200;
  static char handles[kLaunchers + 1][kCycles], hosts[kLaunchers + 1][kCycles];
  auto cycles = [&](int t, bool launch) {
    for (int i = 0; i < kCycles; ++i) {
      hgtest::register_fatbin(g, &w, &handles[t][i]);
      g.on_register_function(&handles[t][i], &hosts[t][i], "_Z10vector_addPKfS0_Pfi");
      if (launch) {
        EXPECT_EQ(g.on_launch(&hosts[t][i], 0, "hipLaunchKernel").action, Action::Forward);
        EXPECT_EQ(g.on_launch(&hosts[t][i], 0, "hipLaunchKernel").action, Action::Forward);
      }
      g.on_unregister_fatbin(&handles[t][i]);
    }
  };
  testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < kLaunchers; ++t) threads.emplace_back(cycles, t, true);
  threads.emplace_back(cycles, kLaunchers, false);
  for (auto& th : threads) th.join();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_probes.load(), kLaunchers * kCycles);
  EXPECT_TRUE(g.said().findings.empty() && g.said().consequences.empty()) << hgtest::lines(g.said().findings);
}
