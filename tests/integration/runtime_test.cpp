// The shim inside running programs, against the simulated runtime (tests/simrt):
// a stand-in for libamdhip64 that parses code objects with its own code and
// answers like ROCm's CLR. Two independent judgements meet here: the
// simulator's error codes and hipguard's explanations.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "process.h"

namespace {

const std::string kShim = HIPGUARD_SHIM;
const std::string kApps = HIPGUARD_APPS_DIR;
const std::string kSimrt = HIPGUARD_SIMRT_DIR;
const std::string kFixtures = HIPGUARD_FIXTURES_DIR;

std::string app(const std::string& name) { return kApps + "/" + name; }

// Environment for a run on the simulated runtime with `gpus`; `shim` adds LD_PRELOAD.
std::map<std::string, std::string> sim(const std::string& gpus, bool shim,
                                       std::map<std::string, std::string> extra = {}) {
  extra["LD_LIBRARY_PATH"] = kSimrt;
  extra["HIPGUARD_SIM_GPUS"] = gpus;
  if (shim) extra["LD_PRELOAD"] = kShim;
  return extra;
}

class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kApps.empty() || !exists(app("vector_add_gfx90a"))) GTEST_SKIP() << "hipcc test apps not built";
    if (!exists(kSimrt + "/libamdhip64.so.5")) GTEST_SKIP() << "simulated runtime not built";
  }
};

const std::string kMi300x = "gfx942:sramecc+:xnack-";
const std::string kMi210 = "gfx90a:sramecc-:xnack-";

}  // namespace

TEST_F(Runtime, ProbeExplainsAKernelTheRuntimeRejected) {
  char dir[] = "/tmp/hipguard-probe-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string json = std::string(dir) + "/r.json";
  ProcessResult plain = run_process({app("vector_add_gfx90a")}, sim(kMi300x, false));
  ProcessResult r = run_process({app("vector_add_gfx90a")},
                                sim(kMi300x, true, {{"HIPGUARD_TARGET", kMi300x}, {"HIPGUARD_REPORT", json}}));
  // The simulator rejects the launch (no gfx942 code object) exactly as without hipguard.
  ASSERT_NE(plain.out.find("hipLaunchKernel: 209"), std::string::npos) << plain.out;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.status, plain.status);
  // One cause, one line: HG201 at registration; the runtime's rejection (the
  // probe, HG501) and the launch (HG502) are its consequences, in the report.
  EXPECT_EQ(lines_with(r.err, "error HG201").size(), 1u) << r.err;
  EXPECT_EQ(lines_with(r.err, "hipguard: ").size(), 1u) << r.err;
  std::string doc = read_text(json);
  size_t run = doc.find("\"consequences\"");
  ASSERT_NE(run, std::string::npos) << doc;
  std::string events = doc.substr(run);
  EXPECT_NE(events.find("\"HG501\""), std::string::npos) << events;
  EXPECT_NE(events.find("returned hipError_t 98); hipguard's finding: HG201"), std::string::npos) << events;
  EXPECT_NE(events.find("\"HG502\""), std::string::npos) << events;
  // With nothing said before (a kernel whose fat binary was checked only at its
  // first launch, cause unknown to the log), the consequence is the line: see
  // KernelMissingFromTheSelectedCodeObject (HG501 carrying HG409).
  run_process({"/bin/rm", "-rf", dir});
}

// A fat binary with nothing for the GPU and no kernel (only __device__
// variables): the runtime registers it and goes on (CLR since ROCm 5.3), so
// strict mode lets the program run and warns once (HG211).
TEST_F(Runtime, StrictModeRunsAProgramWhoseFatBinaryHasNoKernels) {
  if (!exists(app("device_vars_only"))) GTEST_SKIP() << "hipcc test app device_vars_only not built";
  ProcessResult plain = run_process({app("device_vars_only")}, sim(kMi300x, false));
  ASSERT_EQ(plain.status, 0) << plain.err;
  ProcessResult r = run_process({app("device_vars_only")},
                                sim(kMi300x, true, {{"HIPGUARD_TARGET", kMi300x}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("main reached"), std::string::npos) << r.out;
  EXPECT_EQ(lines_with(r.err, "warning HG211 [" + kMi300x + "]").size(), 1u) << r.err;
  EXPECT_EQ(lines_with(r.err, "HG201").size(), 0u) << r.err;
  EXPECT_EQ(r.err.find("strict mode: stopping"), std::string::npos) << r.err;
}

TEST_F(Runtime, ProbeIsSilentWhenTheRuntimeAcceptsEverything) {
  ProcessResult r = run_process({app("vector_add_multi")},
                                sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_LOG_LEVEL", "debug"}}));
  EXPECT_NE(r.out.find("hipLaunchKernel: 0"), std::string::npos) << r.out;
  EXPECT_EQ(lines_with(r.err, "error").size(), 0u) << r.err;
  EXPECT_EQ(lines_with(r.err, "registration probe done through hipGetFuncBySymbol").size(), 1u) << r.err;
}

TEST_F(Runtime, StaticPlusDynamicLdsTheRuntimeDoesNotCheck) {
  if (!exists(app("dyn_lds_gfx90a"))) GTEST_SKIP() << "dyn_lds_gfx90a not built";
  // 48 KiB static + 20000 dynamic > 64 KiB: CLR compares only the dynamic part, so the simulator says success.
  ProcessResult plain = run_process({app("dyn_lds_gfx90a"), "20000"}, sim(kMi210, false));
  ASSERT_NE(plain.out.find("hipLaunchKernel(dynamic LDS 20000): 0"), std::string::npos) << plain.out;
  ProcessResult warn = run_process({app("dyn_lds_gfx90a"), "20000"}, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  EXPECT_EQ(warn.out, plain.out) << "warn mode returns exactly what the runtime returns";
  auto lds = lines_with(warn.err, "error HG306");
  ASSERT_EQ(lds.size(), 1u) << warn.err;
  EXPECT_NE(lds[0].find("49152 bytes of static + 20000 bytes of dynamic LDS = 69152"), std::string::npos) << lds[0];
  EXPECT_NE(lds[0].find("65536"), std::string::npos);
  EXPECT_NE(lds[0].find("at most 16384 bytes of dynamic"), std::string::npos);
  // Strict refuses the launch with hipErrorInvalidConfiguration (9) and says why.
  ProcessResult strict = run_process({app("dyn_lds_gfx90a"), "20000"},
                                     sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_NE(strict.out.find("hipLaunchKernel(dynamic LDS 20000): 9 (hipErrorInvalidConfiguration)"), std::string::npos)
      << strict.out;
  // The same through hipLaunchKernelExC (its config carries the dynamic LDS size).
  EXPECT_NE(strict.out.find("hipLaunchKernelExC(dynamic LDS 20000): 9 (hipErrorInvalidConfiguration)"),
            std::string::npos)
      << strict.out;
  EXPECT_NE(plain.out.find("hipLaunchKernelExC(dynamic LDS 20000): 0"), std::string::npos) << plain.out;
  // And through the stream-per-thread and cooperative entry points.
  for (const char* api : {"hipLaunchKernel_spt", "hipLaunchCooperativeKernel", "hipLaunchCooperativeKernel_spt"}) {
    EXPECT_NE(plain.out.find(std::string(api) + "(dynamic LDS 20000): 0"), std::string::npos) << api << plain.out;
    EXPECT_NE(strict.out.find(std::string(api) + "(dynamic LDS 20000): 9 (hipErrorInvalidConfiguration)"),
              std::string::npos)
        << api << strict.out;
  }
  // And by the hipFunction_t hipGetFuncBySymbol returned (a module launch, as AITER launches).
  const std::string by_function = "hipModuleLaunchKernel(hipGetFuncBySymbol, dynamic LDS 20000): ";
  ASSERT_NE(plain.out.find(by_function), std::string::npos) << plain.out;
  EXPECT_NE(strict.out.find(by_function + "9 (hipErrorInvalidConfiguration)"), std::string::npos) << strict.out;
  EXPECT_EQ(lines_with(strict.err, "error HG306").size(), 1u);
  // Within the limit nothing is said and nothing changes.
  ProcessResult fits = run_process({app("dyn_lds_gfx90a"), "16384"},
                                   sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_NE(fits.out.find("hipLaunchKernel(dynamic LDS 16384): 0"), std::string::npos) << fits.out;
  EXPECT_EQ(fits.err, "");
}

TEST_F(Runtime, GetFuncBySymbolFailureIsExplained) {
  if (!exists(app("dyn_lds_gfx90a"))) GTEST_SKIP() << "dyn_lds_gfx90a not built";
  // The failure's cause (HG201) was said at registration: the failed lookup is
  // its consequence, said at debug level (and in the report), not as a second error.
  ProcessResult r = run_process({app("dyn_lds_gfx90a"), "0"},
                                sim(kMi300x, true, {{"HIPGUARD_TARGET", kMi300x}, {"HIPGUARD_LOG_LEVEL", "debug"}}));
  ASSERT_NE(r.out.find("hipGetFuncBySymbol: 98"), std::string::npos) << r.out;
  EXPECT_EQ(lines_with(r.err, "error HG201").size(), 1u) << r.err;
  EXPECT_TRUE(lines_with(r.err, "error HG503").empty()) << r.err;
  auto why = lines_with(r.err, "note HG503");  // the debug line
  ASSERT_EQ(why.size(), 1u) << r.err;
  EXPECT_NE(why[0].find("hipGetFuncBySymbol failed (hipError_t 98): cause: HG201"), std::string::npos) << why[0];
}

TEST_F(Runtime, ModuleGetFunctionFailuresAreExplained) {
  if (!exists(app("module_loader"))) GTEST_SKIP() << "module_loader not built";
  std::string hipfb = app("vector_add_gfx90a.hipfb");
  // A name the module does not have: the kernels it does have are listed.
  ProcessResult r = run_process({app("module_loader"), "--kernel", "vector_add", hipfb},
                                sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  ASSERT_NE(r.out.find("hipModuleGetFunction vector_add: 500"), std::string::npos) << r.out;
  auto why = lines_with(r.err, "error HG503");
  ASSERT_EQ(why.size(), 1u) << r.err;
  EXPECT_NE(why[0].find("its kernels: _Z10vector_addPKfS0_Pfi"), std::string::npos) << why[0];
  // A device function (scale() is noinline in vector_add.hip).
  ProcessResult d = run_process({app("module_loader"), "--kernel", "_Z5scalef", hipfb},
                                sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  auto dev = lines_with(d.err, "error HG408");
  ASSERT_EQ(dev.size(), 1u) << d.err;
  EXPECT_NE(dev[0].find("device function, not a kernel"), std::string::npos);
  // The kernel itself resolves, silently.
  ProcessResult ok = run_process({app("module_loader"), "--kernel", "_Z10vector_addPKfS0_Pfi", hipfb},
                                 sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  EXPECT_NE(ok.out.find("hipModuleGetFunction _Z10vector_addPKfS0_Pfi: 0"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.err, "");
}

TEST_F(Runtime, PerGpuFindingsWithTwoGpus) {
  // KFD fixture: GPU 0 is an MI300X (gfx942), GPU 1 an MI210 (gfx90a); the simulator has the same two.
  std::map<std::string, std::string> env =
      sim(kMi300x + "," + kMi210, true, {{"HIPGUARD_SYSFS_ROOT", kFixtures + "/sysfs/mixed"}});
  ProcessResult r = run_process({app("vector_add_gfx90a")}, env);
  auto hits = lines_with(r.err, "error HG201");
  ASSERT_EQ(hits.size(), 1u) << r.err;
  EXPECT_NE(hits[0].find("[gfx942:sramecc+:xnack-]"), std::string::npos) << hits[0];
  EXPECT_NE(hits[0].find("(GPU 0)"), std::string::npos) << "says which GPU: " << hits[0];
  EXPECT_EQ(r.err.find("GPU 1"), std::string::npos) << "the gfx90a code object fits GPU 1: " << r.err;
  // Only GPU 1 visible: nothing to say.
  env["HIP_VISIBLE_DEVICES"] = "1";
  ProcessResult one = run_process({app("vector_add_gfx90a")}, env);
  EXPECT_EQ(lines_with(one.err, "HG201").size(), 0u) << one.err;
}

TEST_F(Runtime, XnackFollowsTheDriverDefaultWithoutHsaXnack) {
  // An MI210 found in the KFD topology, HSA_XNACK unset: the driver runs it
  // xnack- (noretry=1), so a code object built for gfx90a:xnack+ is rejected.
  if (!exists(app("vector_add_xnack_on"))) GTEST_SKIP() << "vector_add_xnack_on not built";
  std::map<std::string, std::string> env = sim(kMi210, true, {{"HIPGUARD_SYSFS_ROOT", kFixtures + "/sysfs/mi210"}});
  ProcessResult r = run_process({app("vector_add_xnack_on")}, env);
  EXPECT_NE(r.out.find("hipLaunchKernel: 209"), std::string::npos) << "the simulator rejects it too: " << r.out;
  auto hits = lines_with(r.err, "error HG201 [gfx90a:sramecc-:xnack-]");
  if (hits.empty()) hits = lines_with(r.err, "error HG203 [gfx90a:sramecc-:xnack-]");
  ASSERT_EQ(hits.size(), 1u) << r.err;
  EXPECT_NE(hits[0].find("(GPU 0)"), std::string::npos) << hits[0];
  EXPECT_NE(hits[0].find("HSA_XNACK=1"), std::string::npos) << "only xnack differs: " << hits[0];
  // HSA_XNACK=1 asks the driver for xnack+ (the simulated GPU follows): nothing to say.
  env["HSA_XNACK"] = "1";
  env["HIPGUARD_SIM_GPUS"] = "gfx90a:sramecc-:xnack+";
  ProcessResult on = run_process({app("vector_add_xnack_on")}, env);
  EXPECT_EQ(on.err.find("hipguard: error"), std::string::npos) << on.err;
}

TEST_F(Runtime, HsaOverrideGfxVersionChangesTheGpuHipguardChecksAgainst) {
  // ROCr reports the GPU as the overridden version; the shim follows it.
  std::map<std::string, std::string> env = sim(kMi300x, true, {{"HIPGUARD_SYSFS_ROOT", kFixtures + "/sysfs/mi300x"}});
  ProcessResult r = run_process({app("vector_add_gfx90a")}, env);
  auto hits = lines_with(r.err, "error HG201 [gfx942:sramecc+:xnack-]");
  ASSERT_EQ(hits.size(), 1u) << r.err;
  EXPECT_NE(hits[0].find("(GPU 0)"), std::string::npos) << hits[0];
  env["HSA_OVERRIDE_GFX_VERSION"] = "9.0.10";  // gfx90a
  env["HIPGUARD_SIM_GPUS"] = kMi210;           // what the overridden runtime would see
  ProcessResult o = run_process({app("vector_add_gfx90a")}, env);
  EXPECT_EQ(o.err, "") << "the gfx90a code object fits the overridden GPU";
  EXPECT_NE(o.out.find("hipLaunchKernel: 0"), std::string::npos) << o.out;
}

TEST_F(Runtime, WarnModeIsTransparent) {
  // Every app, several GPUs: with and without the shim, the same output and status.
  struct Case {
    std::string app;
    std::vector<std::string> args;
  };
  std::vector<Case> cases = {{"vector_add_gfx90a", {}}, {"vector_add_multi", {}}, {"vector_add_xnack_on", {}},
                             {"vector_add_gfx940", {}}, {"big_lds_gfx90a", {}},   {"dyn_lds_gfx90a", {"30000"}},
                             {"arch_guarded", {}}};
  for (const std::string gpus : {kMi300x, kMi210, std::string("gfx90a:sramecc-:xnack+"),
                                 std::string("gfx940:sramecc+:xnack-"), std::string("gfx1030")}) {
    for (const auto& c : cases) {
      if (!exists(app(c.app))) continue;
      std::vector<std::string> argv = {app(c.app)};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      ProcessResult plain = run_process(argv, sim(gpus, false));
      ProcessResult r = run_process(argv, sim(gpus, true, {{"HIPGUARD_TARGET", gpus}}));
      EXPECT_EQ(r.status, plain.status) << c.app << " on " << gpus;
      EXPECT_EQ(r.out, plain.out) << c.app << " on " << gpus;
    }
  }
}

TEST_F(Runtime, ModuleLaunchEntryPointsCheckStaticPlusDynamicLds) {
  // 48 KiB static + 30000 bytes dynamic > 64 KiB: the runtime never adds them up.
  std::string hipfb = app("big_lds_gfx90a.hipfb");
  if (!exists(app("module_loader")) || !exists(hipfb))
    GTEST_SKIP() << "module_loader or big_lds_gfx90a.hipfb not built";
  std::vector<std::string> argv = {app("module_loader"), "--kernel", "_Z7lds_48kPf", "--launch", "30000", hipfb};
  const char* apis[] = {"hipModuleLaunchKernel: ", "hipExtModuleLaunchKernel: ", "hipModuleLaunchCooperativeKernel: "};
  ProcessResult plain = run_process(argv, sim(kMi210, false));
  for (const char* api : apis) ASSERT_NE(plain.out.find(std::string(api) + "0"), std::string::npos) << plain.out;
  ProcessResult warn = run_process(argv, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  EXPECT_EQ(warn.out, plain.out) << "warn mode forwards every launch";
  auto hits = lines_with(warn.err, "error HG306");
  ASSERT_EQ(hits.size(), 1u) << "once per kernel: " << warn.err;
  EXPECT_NE(hits[0].find("49152 bytes of static + 30000 bytes of dynamic LDS = 79152"), std::string::npos) << hits[0];
  ProcessResult strict =
      run_process(argv, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  for (const char* api : apis)
    EXPECT_NE(strict.out.find(std::string(api) + "9"), std::string::npos)
        << api << "refused with hipErrorInvalidConfiguration: " << strict.out;
  // Within the limit, strict mode forwards.
  argv[4] = "16000";
  ProcessResult fits = run_process(argv, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  for (const char* api : apis) EXPECT_NE(fits.out.find(std::string(api) + "0"), std::string::npos) << fits.out;
  EXPECT_EQ(fits.err, "");
}

TEST_F(Runtime, KernelMissingFromTheSelectedCodeObject) {
  // arch_guarded defines only_on_gfx90a for gfx90a only; on a gfx1030 GPU the
  // selected code object lacks it and the runtime rejects it with 98.
  if (!exists(app("arch_guarded"))) GTEST_SKIP() << "arch_guarded not built";
  const std::string kGfx1030 = "gfx1030";
  ProcessResult plain = run_process({app("arch_guarded")}, sim(kGfx1030, false));
  ASSERT_NE(plain.out.find("hipLaunchKernel only_on_gfx90a: 98"), std::string::npos) << plain.out;
  ASSERT_NE(plain.out.find("hipLaunchKernel everywhere: 0"), std::string::npos) << plain.out;
  // Warn: the same results (the probe's failed lookup does not leak into the
  // program's hipGetLastError), and the cause is named.
  ProcessResult r = run_process({app("arch_guarded")}, sim(kGfx1030, true, {{"HIPGUARD_TARGET", kGfx1030}}));
  EXPECT_EQ(r.out, plain.out);
  auto probe = lines_with(r.err, "error HG501");
  ASSERT_EQ(probe.size(), 1u) << r.err;
  EXPECT_NE(probe[0].find("_Z14only_on_gfx90aPf"), std::string::npos) << probe[0];
  EXPECT_NE(probe[0].find("HG409 [gfx1030]"), std::string::npos) << probe[0];
  EXPECT_NE(probe[0].find("Kernels there: _Z10everywherePf"), std::string::npos) << probe[0];
  EXPECT_EQ(r.err.find("_Z10everywherePf'"), std::string::npos) << "the other kernel is fine: " << r.err;
  // On gfx90a both kernels are there: nothing to say.
  ProcessResult ok = run_process({app("arch_guarded")}, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  EXPECT_EQ(ok.err, "");
  // Strict: the program runs (the runtime loads the code object at the first
  // launch, not at registration); the launch of the missing kernel is refused
  // with the runtime's own error, and the exit status says a finding failed it.
  ProcessResult strict = run_process({app("arch_guarded")},
                                     sim(kGfx1030, true, {{"HIPGUARD_TARGET", kGfx1030}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(strict.status, 86) << strict.err;
  EXPECT_EQ(strict.out, plain.out);
  auto refused = lines_with(strict.err, "error HG502");
  ASSERT_EQ(refused.size(), 1u) << strict.err;
  EXPECT_NE(refused[0].find("only_on_gfx90a"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("HG409 [gfx1030]"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("strict mode: launch refused with hipErrorInvalidDeviceFunction"), std::string::npos)
      << refused[0];
  EXPECT_NE(refused[0].find("--offload-arch"), std::string::npos) << refused[0];
  EXPECT_EQ(strict.err.find("strict mode: stopping"), std::string::npos) << strict.err;
}

// The calls that make the runtime build a kernel without launching it (hipFuncGetAttributes,
// hipOccupancy*, ...: KernelCall in interpose/hip_api.def) are checked like its launch: on gfx1030 the
// selected code object lacks only_on_gfx90a. Warn: results unchanged, one HG503 naming the cause;
// strict: refused before the runtime with its own error, which hipGetLastError then returns.
TEST_F(Runtime, KernelAttributeAndOccupancyCallsAreChecked) {
  if (!exists(app("arch_guarded"))) GTEST_SKIP() << "arch_guarded not built";
  const std::string kGfx1030 = "gfx1030";
  const std::vector<std::string> argv = {app("arch_guarded"), "attributes"};
  ProcessResult plain = run_process(argv, sim(kGfx1030, false));
  ASSERT_NE(plain.out.find("hipFuncGetAttributes everywhere: 0, last error 0"), std::string::npos) << plain.out;
  ASSERT_NE(plain.out.find("hipFuncGetAttributes only_on_gfx90a: 98"), std::string::npos) << plain.out;
  ProcessResult warn = run_process(argv, sim(kGfx1030, true, {{"HIPGUARD_TARGET", kGfx1030}}));
  EXPECT_EQ(warn.out, plain.out) << "warn mode changes no result";
  auto said = lines_with(warn.err, "error HG503");
  ASSERT_EQ(said.size(), 1u) << "once per kernel: " << warn.err;
  EXPECT_NE(said[0].find("hipFuncGetAttributes of a kernel that cannot run"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("_Z14only_on_gfx90aPf"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("HG409 [gfx1030]"), std::string::npos) << said[0];
  EXPECT_EQ(warn.err.find("_Z10everywherePf'"), std::string::npos) << warn.err;
  ProcessResult strict =
      run_process(argv, sim(kGfx1030, true, {{"HIPGUARD_TARGET", kGfx1030}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_NE(strict.out.find("hipFuncGetAttributes everywhere: 0, last error 0"), std::string::npos) << strict.out;
  EXPECT_NE(strict.out.find("hipFuncGetAttributes only_on_gfx90a: 98, last error 98"), std::string::npos) << strict.out;
  EXPECT_NE(strict.out.find("hipOccupancyMaxActiveBlocksPerMultiprocessor only_on_gfx90a: 98, last error 98"),
            std::string::npos)
      << "refused before the simulator's own answer (801): " << strict.out;
  auto refused = lines_with(strict.err, "error HG503");
  ASSERT_EQ(refused.size(), 1u) << "once per kernel, as its launches: " << strict.err;
  EXPECT_NE(refused[0].find("strict mode: refused with hipErrorInvalidDeviceFunction"), std::string::npos)
      << refused[0];
  EXPECT_EQ(strict.status, 86) << strict.err;
}

TEST_F(Runtime, ReportFileJsonAndJunit) {
  char dir[] = "/tmp/hipguard-report-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string json = std::string(dir) + "/run-%p.json";
  ProcessResult r = run_process({app("vector_add_gfx90a")},
                                sim(kMi300x, true, {{"HIPGUARD_TARGET", kMi300x}, {"HIPGUARD_REPORT", json}}));
  EXPECT_EQ(r.status, 0);
  // %p became the child's pid: find the one file written.
  ProcessResult ls = run_process({"/bin/sh", "-c", std::string("ls ") + dir});
  auto files = lines_with(ls.out, "run-");
  ASSERT_EQ(files.size(), 1u) << ls.out;
  EXPECT_EQ(files[0].find("%p"), std::string::npos);
  std::string doc = read_text(std::string(dir) + "/" + files[0]);
  EXPECT_NE(doc.find("\"schema\": \"hipguard-report/1\""), std::string::npos) << doc.substr(0, 400);
  EXPECT_NE(doc.find("\"mode\": \"warn\""), std::string::npos);
  EXPECT_NE(doc.find("\"code\": \"HG201\""), std::string::npos);
  EXPECT_NE(doc.find("_Z10vector_addPKfS0_Pfi"), std::string::npos);
  EXPECT_NE(doc.find("\"launches\": 1"), std::string::npos) << "the launch was counted";
  // JUnit variant.
  std::string xml = std::string(dir) + "/run.xml";
  run_process({app("vector_add_gfx90a")}, sim(kMi300x, true, {{"HIPGUARD_TARGET", kMi300x}, {"HIPGUARD_REPORT", xml}}));
  std::string x = read_text(xml);
  EXPECT_NE(x.find("<testsuites"), std::string::npos);
  EXPECT_NE(x.find("failure type=\"HG201\""), std::string::npos) << x;
  // A symlink planted there is never followed, and nothing is written beside it (HG603 says why).
  std::string victim = std::string(dir) + "/victim";
  { std::ofstream(victim) << "keep"; }
  std::string planted = std::string(dir) + "/planted.json";
  ASSERT_EQ(symlink(victim.c_str(), planted.c_str()), 0);
  ProcessResult p = run_process({app("vector_add_gfx90a")},
                                sim(kMi300x, true, {{"HIPGUARD_TARGET", kMi300x}, {"HIPGUARD_REPORT", planted}}));
  EXPECT_EQ(read_text(victim), "keep");
  EXPECT_EQ(lines_with(p.err, "warning HG603 " + planted + ": HIPGUARD_REPORT not written").size(), 1u) << p.err;
  ProcessResult ls2 = run_process({"/bin/sh", "-c", std::string("ls ") + dir});
  EXPECT_EQ(lines_with(ls2.out, "planted.json.").size(), 0u) << "nothing beside it: " << ls2.out;
  run_process({"/bin/rm", "-rf", dir});
}

// Files in `dir` whose names contain `part`.
std::vector<std::string> files_in(const std::string& dir, const std::string& part) {
  return lines_with(run_process({"/bin/sh", "-c", "ls " + dir}).out, part);
}

TEST_F(Runtime, ReportListsEachKernelOnce) {
  // Selection at registration, the full check at the first launch: the kernel's
  // state is replaced then, and the report must not list it twice.
  char dir[] = "/tmp/hipguard-report-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string json = std::string(dir) + "/r.json";
  ProcessResult r = run_process({app("vector_add_gfx90a")},
                                sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_REPORT", json}}));
  EXPECT_NE(r.out.find("hipLaunchKernel: 0"), std::string::npos) << r.out;
  std::string doc = read_text(json);
  size_t records = 0;
  for (size_t p = 0; (p = doc.find("\"launches\":", p)) != std::string::npos; ++p) ++records;
  EXPECT_EQ(records, 1u) << doc;
  EXPECT_NE(doc.find("\"launches\": 1"), std::string::npos) << doc;
  run_process({"/bin/rm", "-rf", dir});
}

TEST_F(Runtime, ForkedChildWritesItsOwnReport) {
  if (!exists(app("dlopen_host")) || !exists(app("libkernels_lib.so"))) GTEST_SKIP() << "dlopen_host not built";
  char dir[] = "/tmp/hipguard-report-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  ProcessResult r = run_process({app("dlopen_host"), app("libkernels_lib.so")},
                                sim(kMi300x, true,
                                    {{"HIPGUARD_TARGET", kMi300x},
                                     {"HIPGUARD_REPORT", std::string(dir) + "/f-%p.json"},
                                     {"DLOPEN_HOST_FORK", "1"}}));
  ASSERT_NE(r.out.find("child status 0"), std::string::npos) << r.out << r.err;
  auto files = files_in(dir, "f-");
  ASSERT_EQ(files.size(), 2u) << "one report per process: " << r.out;
  // f-<pid>.json holds the report of process <pid>; the child's lists only
  // what it did itself (nothing: it registered nothing), not the parent's finding.
  std::string parent = r.out.substr(r.out.find("parent ") + 7);
  parent = parent.substr(0, parent.find(','));
  size_t with_finding = 0;
  for (const auto& f : files) {
    std::string pid = f.substr(2, f.find(".json") - 2);
    std::string doc = read_text(std::string(dir) + "/" + f);
    EXPECT_NE(doc.find("\"pid\": " + pid), std::string::npos) << f << ": " << doc.substr(0, 600);
    bool found = doc.find("\"code\": \"HG201\"") != std::string::npos;
    EXPECT_EQ(found, pid == parent) << f << " (parent " << parent << ")";
    with_finding += found;
  }
  EXPECT_EQ(with_finding, 1u);
  run_process({"/bin/rm", "-rf", dir});
}

TEST_F(Runtime, StrictStopWritesTheReport) {
  char dir[] = "/tmp/hipguard-report-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  ProcessResult r =
      run_process({app("vector_add_gfx90a")}, sim(kMi300x, true,
                                                  {{"HIPGUARD_TARGET", kMi300x},
                                                   {"HIPGUARD_MODE", "strict"},
                                                   {"HIPGUARD_REPORT", std::string(dir) + "/s-%p.json"}}));
  EXPECT_EQ(r.status, 86);
  EXPECT_EQ(r.out.find("main reached"), std::string::npos) << r.out;
  auto files = files_in(dir, "s-");
  ASSERT_EQ(files.size(), 1u) << "the report of the stopped program: " << r.err;
  std::string doc = read_text(std::string(dir) + "/" + files[0]);
  EXPECT_NE(doc.find("\"mode\": \"strict\""), std::string::npos) << doc.substr(0, 600);
  EXPECT_NE(doc.find("\"code\": \"HG201\""), std::string::npos) << doc.substr(0, 600);
  EXPECT_NE(doc.find("vector_add_gfx90a"), std::string::npos);
  run_process({"/bin/rm", "-rf", dir});
}

// An exception inside the shim (here std::bad_alloc: every allocation of the
// shim's own code fails) never reaches the program: each call is forwarded,
// the runtime's result returned unchanged; once allocations work, the guard does too.
// alloc_fail_host fails them through malloc, which the shim's allocations use
// with HIPGUARD_HEAP=malloc; its own heap (the default) is not touched by it,
// so there the guard works in both rounds. alloc_fail_host replaces malloc,
// which a sanitizer runtime owns: a sanitizer build runs it with an
// uninstrumented shim (uninstrumented_shim).
TEST_F(Runtime, AllocationFailureInTheShimNeverReachesTheProgram) {
  const std::string shim = uninstrumented_shim(kShim);
  if (shim.empty()) GTEST_SKIP() << "sanitizer build without HIPGUARD_PLAIN_SHIM (scripts/sanitize.sh sets it)";
  std::string hipfb = app("vector_add_gfx90a.hipfb");
  if (!exists(app("alloc_fail_host")) || !exists(hipfb)) GTEST_SKIP() << "alloc_fail_host not built";
  std::vector<std::string> argv = {app("alloc_fail_host"), hipfb, "_Z10vector_addPKfS0_Pfi"};
  ProcessResult plain = run_process(argv, sim(kMi210, false));
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_NE(plain.out.find("failing hipModuleLoadData: 0\n"), std::string::npos) << plain.out;
  // The junk image (at another address in each round) is said by each round the guard works in.
  for (auto [heap, said] : {std::pair<const char*, size_t>{"malloc", 1}, {"private", 2}}) {
    auto env = sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_HEAP", heap}});
    env["LD_PRELOAD"] = shim;
    ProcessResult r = run_process(argv, env);
    EXPECT_EQ(r.status, 0) << heap << ": " << r.err.substr(0, 4000);
    EXPECT_EQ(r.out, plain.out) << heap;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << heap << ": " << r.err.substr(0, 4000);
    EXPECT_EQ(lines_with(r.err, "hipModuleLoadData image at").size(), said) << heap << ": " << r.err.substr(0, 4000);
  }
}

TEST_F(Runtime, ConcurrentDlopenAndLaunches) {
  if (!exists(app("threads_host")) || !exists(app("libkernels_lib.so"))) GTEST_SKIP() << "threads_host not built";
  // Eight copies of the HIP library: eight fat binaries registered from eight threads at once.
  char dir[] = "/tmp/hipguard-threads-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::vector<std::string> argv = {app("threads_host"), "16", "40"};
  for (int i = 0; i < 8; ++i) {
    std::string copy = std::string(dir) + "/libk" + std::to_string(i) + ".so";
    run_process({"/bin/cp", app("libkernels_lib.so"), copy});
    argv.push_back(copy);
  }
  for (const std::string gpus : {kMi210, kMi300x}) {  // fast path, then kernels with findings
    ProcessResult plain = run_process(argv, sim(gpus, false));
    ProcessResult r = run_process(argv, sim(gpus, true, {{"HIPGUARD_TARGET", gpus}}));
    EXPECT_EQ(r.status, 0) << gpus << ": " << r.err.substr(0, 4000);
    EXPECT_EQ(r.out, plain.out);
    EXPECT_NE(r.out.find("16 threads, 640 launches, 0 forks, 0 failures"), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("ThreadSanitizer"), std::string::npos) << r.err.substr(0, 4000);
    if (gpus == kMi300x) {
      // Each library is reported (once per file, however many threads register it).
      for (int i = 0; i < 8; ++i)
        EXPECT_GE(
            lines_with(r.err, "error HG201 [" + gpus + "] " + std::string(dir) + "/libk" + std::to_string(i) + ".so")
                .size(),
            1u)
            << r.err.substr(0, 2000);
    } else {
      EXPECT_EQ(r.err, "");
    }
  }
  run_process({"/bin/rm", "-rf", dir});
}

// fork() from a threaded process whatever the settings (no HIPGUARD_REPORT): the guard's locks are
// held across it, so a child forked while another thread registers or launches never inherits a
// held lock; each child makes the first launch of a library's kernel (index, probe, checks) and
// exits. A hang is killed after 120 s (status 137). Without the handlers 3 of 12 runs hung, with
// them 0 of 40 (the forks start after the first launch: threads_host.cpp says why).
TEST_F(Runtime, ForksWhileThreadsRegisterAndLaunch) {
  if (!exists(app("threads_host")) || !exists(app("libkernels_lib.so"))) GTEST_SKIP() << "threads_host not built";
  // Two copies of the HIP library: the threads' and the one only the children launch.
  char dir[] = "/tmp/hipguard-forks-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::vector<std::string> argv = {"/usr/bin/timeout", "-s", "KILL", "120", app("threads_host"), "4", "200"};
  for (int i = 0; i < 2; ++i) {
    argv.push_back(std::string(dir) + "/libk" + std::to_string(i) + ".so");
    run_process({"/bin/cp", app("libkernels_lib.so"), argv.back()});
  }
  const std::string forks = "1000";
#ifdef HIPGUARD_SANITIZER_RUNTIME
  // A child of a threaded process inherits the parent's unjoined threads, which TSan reports as leaks.
  const char* tsan = getenv("TSAN_OPTIONS");
  const std::string tsan_options = std::string(tsan ? tsan : "") + ":report_thread_leaks=0";
#endif
  for (const std::string mode : {"warn", "strict"}) {
    auto env = sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", mode}, {"THREADS_HOST_FORKS", forks}});
#ifdef HIPGUARD_SANITIZER_RUNTIME
    env["TSAN_OPTIONS"] = tsan_options;
#endif
    ProcessResult r = run_process(argv, env);
    EXPECT_EQ(r.status, 0) << mode << ": " << r.err.substr(0, 2000);
    EXPECT_NE(r.out.find("4 threads, 800 launches, " + forks + " forks, 0 failures"), std::string::npos)
        << mode << ": " << r.out;
    // Forks outside a signal handler get every lock, however long another thread holds one.
    EXPECT_EQ(lines_with(r.err, "HG605").size(), 0u) << mode << ": " << r.err.substr(0, 2000);
  }
  run_process({"/bin/rm", "-rf", dir});
}

// fork() from a signal handler (SIGPROF every 100 us of CPU) while the program loads, looks up and
// unloads a module over and over, in and out of the guard's and the shim's heap's locks: a handler
// that interrupted its thread holding one of them must not wait for it, nor (holding one) wait for
// a thread that waits for it (OwnedMutex::lock_for_fork). One thread; three threads; and a fork
// from a handler raised inside another fork's handlers, where hipguard holds every lock. Parent and
// children go on; a child whose fork could not take every lock says HG605 and is not checked.
// Before: warn mode hung at its first such fork; a nested fork left the guard's locks held after
// the outer one. A hang is killed after 60 s (status 137).
// Sanitizer builds preload the plain shim here: a sanitizer's allocator, which an instrumented shim
// allocates from, takes its own locks in fork() and hangs such a handler without hipguard's help.
TEST_F(Runtime, ForkFromASignalHandler) {
  const std::string shim = uninstrumented_shim(kShim);
  if (shim.empty()) GTEST_SKIP() << "sanitizer build without HIPGUARD_PLAIN_SHIM (scripts/sanitize.sh sets it)";
  std::string hipfb = app("vector_add_gfx90a.hipfb");
  if (!exists(app("signal_fork_host")) || !exists(hipfb)) GTEST_SKIP() << "signal_fork_host not built";
  auto argv = [&](const char* rounds, const char* threads, const char* how) {
    return std::vector<std::string>{
        "/usr/bin/timeout", "-s", "KILL", "60", app("signal_fork_host"), hipfb, rounds, threads, how};
  };
  ProcessResult plain = run_process(argv("20000", "1", "-"), sim(kMi210, false));
  ASSERT_EQ(plain.status, 0) << plain.err;
  char report[] = "/tmp/hipguard-sigfork-XXXXXX";
  ASSERT_TRUE(mkdtemp(report));
  struct Case {
    const char *mode, *heap, *rounds, *threads, *how;
  };
  for (Case c : {Case{"warn", "private", "20000", "1", "-"}, Case{"strict", "private", "20000", "1", "-"},
                 Case{"warn", "malloc", "20000", "1", "-"}, Case{"warn", "private", "5000", "3", "-"},
                 Case{"strict", "private", "5000", "3", "-"}, Case{"warn", "private", "5000", "1", "nested"}}) {
    auto env = sim(kMi210, true,
                   {{"HIPGUARD_TARGET", kMi210},
                    {"HIPGUARD_MODE", c.mode},
                    {"HIPGUARD_HEAP", c.heap},
                    {"HIPGUARD_REPORT", std::string(report) + "/%p.json"}});
    env["LD_PRELOAD"] = shim;
    ProcessResult r = run_process(argv(c.rounds, c.threads, c.how), env);
    std::string what = std::string(c.mode) + ", " + c.heap + " heap, " + c.threads + " thread(s), " + c.how;
    EXPECT_EQ(r.status, 0) << what << " (137: hung): " << r.out << r.err.substr(0, 2000);
    int rounds = std::stoi(c.rounds) * std::stoi(c.threads);
    EXPECT_NE(r.out.find(std::to_string(rounds) + " rounds, "), std::string::npos) << what << ": " << r.out;
    EXPECT_NE(r.out.find(", 0 failed"), std::string::npos) << what << ": " << r.out;
    EXPECT_EQ(r.out.find(" 0 forks"), std::string::npos) << what << ": no signal came: " << r.out;
    for (const auto& line : lines_with(r.err, "hipguard:"))
      EXPECT_NE(line.find("HG605"), std::string::npos) << what << ": " << line;
    if (std::string(c.how) == "nested") {
      EXPECT_EQ(r.out.find(" 0 nested"), std::string::npos) << "no nested fork: " << r.out;
      // The inner fork found every lock held by the outer one: its children are not checked.
      EXPECT_GE(lines_with(r.err, "warning HG605").size(), 1u) << r.err.substr(0, 2000);
    }
  }
  run_process({"/bin/rm", "-rf", report});
}

// Strict mode (and warn mode with HIPGUARD_FAIL_ON) gives a process that saw an
// error and still exits 0 the status HIPGUARD_EXIT_CODE, like a sanitizer's
// exitcode; a program that fails keeps its own status.
TEST_F(Runtime, ExitStatusOfAProgramThatIgnoresARefusedLaunch) {
  if (!exists(app("dyn_lds_gfx90a"))) GTEST_SKIP() << "dyn_lds_gfx90a not built";
  const std::vector<std::string> over = {app("dyn_lds_gfx90a"), "20000"};
  ProcessResult plain = run_process(over, sim(kMi210, false));
  ASSERT_EQ(plain.status, 0) << "the program ignores the errors it gets";

  ProcessResult strict =
      run_process(over, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(strict.status, 86) << strict.err;
  // The program's buffered output is flushed before the status changes.
  EXPECT_NE(strict.out.find("hipLaunchKernel(dynamic LDS 20000): 9 (hipErrorInvalidConfiguration)"), std::string::npos)
      << strict.out;
  auto why = lines_with(strict.err, "error HG602");
  ASSERT_EQ(why.size(), 1u) << strict.err;
  EXPECT_NE(why[0].find("status 0"), std::string::npos) << why[0];
  EXPECT_NE(why[0].find("strict mode; first: HG306"), std::string::npos) << why[0];
  EXPECT_NE(why[0].find("exit status 86 (HIPGUARD_EXIT_CODE)"), std::string::npos) << why[0];

  ProcessResult code = run_process(
      over,
      sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "STRICT"}, {"HIPGUARD_EXIT_CODE", "42"}}));
  EXPECT_EQ(code.status, 42) << code.err;

  // A program that already fails keeps its own status, and nothing is said about it.
  ProcessResult fails = run_process({app("dyn_lds_gfx90a"), "20000", "3"},
                                    sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(fails.status, 3) << fails.err;
  EXPECT_EQ(lines_with(fails.err, "HG602").size(), 0u) << fails.err;

  // Warn mode changes nothing by default...
  ProcessResult warn = run_process(over, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}}));
  EXPECT_EQ(warn.status, 0) << warn.err;
  EXPECT_EQ(lines_with(warn.err, "error HG306").size(), 1u) << warn.err;
  EXPECT_EQ(lines_with(warn.err, "HG602").size(), 0u) << warn.err;
  // ...and fails like strict mode when asked to (the launch itself is forwarded).
  ProcessResult fail_on =
      run_process(over, sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_FAIL_ON", "Error"}}));
  EXPECT_EQ(fail_on.status, 86) << fail_on.err;
  EXPECT_EQ(fail_on.out, plain.out);
  auto fail_why = lines_with(fail_on.err, "error HG602");
  ASSERT_EQ(fail_why.size(), 1u) << fail_on.err;
  EXPECT_NE(fail_why[0].find("HIPGUARD_FAIL_ON"), std::string::npos) << fail_why[0];

  // A clean run keeps 0 and stays silent in strict mode.
  ProcessResult fits = run_process({app("dyn_lds_gfx90a"), "16384"},
                                   sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(fits.status, 0) << fits.err;
  EXPECT_EQ(fits.err, "");
}

TEST_F(Runtime, ExitStatusChangeStillWritesTheReport) {
  if (!exists(app("dyn_lds_gfx90a"))) GTEST_SKIP() << "dyn_lds_gfx90a not built";
  char dir[] = "/tmp/hipguard-exitstatus-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string report = std::string(dir) + "/run.json";
  ProcessResult r = run_process(
      {app("dyn_lds_gfx90a"), "20000"},
      sim(kMi210, true, {{"HIPGUARD_TARGET", kMi210}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_REPORT", report}}));
  std::string json = read_text(report);
  unlink(report.c_str());
  rmdir(dir);
  EXPECT_EQ(r.status, 86) << r.err;
  // Written by the exit handlers, with the refused launches counted.
  EXPECT_NE(json.find("_Z22lds_static_and_dynamicPf"), std::string::npos) << json;
  EXPECT_TRUE(std::regex_search(json, std::regex("\"blocked\": *[1-9]"))) << json;
}
