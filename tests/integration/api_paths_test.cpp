// Every load, lookup and launch path of HIP 7.2 that hipguard interposes
// (interpose/hip_api.def), driven by tests/apps/api_paths through the shim on
// the simulated runtime: a kernel with 48 KiB of static LDS launched with 20000
// bytes of dynamic LDS (over a 64 KiB GPU; the runtime accepts it) or with none,
// and a module built for gfx90a loaded on gfx1030 (no code object).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process.h"

namespace {

const std::string kShim = HIPGUARD_SHIM;
const std::string kApps = HIPGUARD_APPS_DIR;
const std::string kSimrt = HIPGUARD_SIMRT_DIR;
const std::string kMi210 = "gfx90a:sramecc-:xnack-";
const std::string kRdna2 = "gfx1030";

std::string app(const std::string& name) { return kApps + "/" + name; }

std::map<std::string, std::string> env(const std::string& gpus, bool shim,
                                       std::map<std::string, std::string> extra = {}) {
  extra["LD_LIBRARY_PATH"] = kSimrt;
  extra["HIPGUARD_SIM_GPUS"] = gpus;
  if (shim) {
    extra["LD_PRELOAD"] = kShim;
    if (!extra.count("HIPGUARD_TARGET")) extra["HIPGUARD_TARGET"] = gpus.substr(0, gpus.find(','));
  }
  return extra;
}

ProcessResult run(const std::string& lds, const std::map<std::string, std::string>& e, const std::string& only = "") {
  std::vector<std::string> argv = {app("api_paths"), app("dyn_lds_gfx90a.hipfb"), lds};
  if (!only.empty()) argv.insert(argv.end(), {"--only", only});
  return run_process(argv, e);
}

// "label: code..." lines of the program's output.
std::map<std::string, std::string> results(const std::string& out) {
  std::map<std::string, std::string> r;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto colon = line.find(": ");
    if (colon != std::string::npos && line.rfind("api_paths", 0) != 0)
      r[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return r;
}

// Launch paths (label in api_paths) and the entry point named in hipguard's message.
const std::vector<std::pair<std::string, std::string>> kLaunches = {
    {"hipExtLaunchKernel", "hipExtLaunchKernel"},
    {"hipLaunchByPtr", "hipLaunchByPtr"},
    {"hipLaunchCooperativeKernelMultiDevice", "hipLaunchCooperativeKernelMultiDevice"},
    {"hipExtLaunchMultiKernelMultiDevice", "hipExtLaunchMultiKernelMultiDevice"},
    {"hipGraphAddKernelNode", "hipGraphAddKernelNode"},
    {"hipGraphKernelNodeSetParams", "hipGraphKernelNodeSetParams"},
    {"hipGraphExecKernelNodeSetParams", "hipGraphExecKernelNodeSetParams"},
    {"hipGraphAddNode", "hipGraphAddNode"},
    {"hipGraphNodeSetParams", "hipGraphNodeSetParams"},
    {"hipGraphExecNodeSetParams", "hipGraphExecNodeSetParams"},
    {"hipGetProcAddress->hipLaunchKernel", "hipLaunchKernel"},
    {"hipGetProcAddress(spt)->hipLaunchKernel_spt", "hipLaunchKernel_spt"},
    {"hipGetDriverEntryPoint->hipLaunchKernel", "hipLaunchKernel"},
    {"hipGetDriverEntryPoint_spt->hipLaunchKernel_spt", "hipLaunchKernel_spt"},
    {"hipDrvLaunchKernelEx", "hipDrvLaunchKernelEx"},
    {"hipModuleLaunchCooperativeKernelMultiDevice", "hipModuleLaunchCooperativeKernelMultiDevice"},
    {"hipHccModuleLaunchKernel", "hipHccModuleLaunchKernel"},
    {"hipHccModuleLaunchKernel(C)", "hipHccModuleLaunchKernel"},
    {"hipGetProcAddress(module)->hipModuleLaunchKernel", "hipModuleLaunchKernel"},
    {"hipLibraryLoadData->hipModuleLaunchKernel", "hipModuleLaunchKernel"},
    {"hipLibraryLoadFromFile->hipModuleLaunchKernel", "hipModuleLaunchKernel"},
    {"hipLibraryLoadData->hipLibraryEnumerateKernels->hipModuleLaunchKernel", "hipModuleLaunchKernel"},
    {"hipLibraryLoadFromFile->hipLibraryEnumerateKernels->hipModuleLaunchKernel", "hipModuleLaunchKernel"},
};

class ApiPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kApps.empty() || !exists(app("api_paths")) || !exists(app("dyn_lds_gfx90a.hipfb")))
      GTEST_SKIP() << "hipcc test apps not built";
    if (!exists(kSimrt + "/libamdhip64.so.5")) GTEST_SKIP() << "simulated runtime not built";
  }
};

}  // namespace

// Two GPUs, so that the multi-device launches have a good entry (device 0) and a bad one.
TEST_F(ApiPaths, StrictRefusesEveryLaunchPathOverTheLdsLimit) {
  std::string gpus = kMi210 + "," + kMi210;
  ProcessResult plain = run("20000", env(gpus, false));
  ProcessResult strict = run("20000", env(gpus, true, {{"HIPGUARD_MODE", "strict"}}));
  ASSERT_EQ(plain.status, 0) << plain.out << plain.err;
  // The program ignores the refusals and returns 0: strict mode's exit status says it saw errors (HG602).
  ASSERT_EQ(strict.status, 86) << strict.out << strict.err;
  auto p = results(plain.out), s = results(strict.out);
  for (const auto& [label, api] : kLaunches) {
    ASSERT_TRUE(p.count(label)) << label << " did not run:\n" << plain.out;
    EXPECT_EQ(p[label], "0") << label << ": the simulated runtime accepts it, as ROCm does";
    EXPECT_EQ(s[label], "9") << label << ": strict mode refuses with hipErrorInvalidConfiguration\n" << strict.out;
  }
  // A refused launch is each last-error slot's (CLR: tls.last_command_error_
  // for hipExtGetLastError, tls.last_error_ for hipGetLastError), read once each.
  EXPECT_EQ(p["hipExtLaunchKernel->hipExtGetLastError"], "0");
  EXPECT_EQ(p["hipExtLaunchKernel->hipGetLastError"], "0");
  EXPECT_EQ(s["hipExtLaunchKernel->hipExtGetLastError"], "9") << strict.out;
  EXPECT_EQ(s["hipExtLaunchKernel->hipGetLastError"], "9") << strict.out;
  // Loads, lookups and unloads of a good module go through.
  for (const char* label :
       {"hipModuleLoadFatBinary", "hipLibraryLoadData", "hipLibraryLoadData->hipLibraryGetKernel",
        "hipLibraryLoadData->hipLibraryEnumerateKernels", "hipLibraryLoadFromFile->hipLibraryEnumerateKernels",
        "hipLibraryLoadData->hipLibraryUnload", "hipLibraryLoadFromFile", "hipLibraryLoadFromFile->hipLibraryGetKernel",
        "hipLibraryLoadFromFile->hipLibraryUnload"})
    EXPECT_EQ(s[label], "0") << label;
  // The reason: static + dynamic LDS against gfx90a's 64 KiB, per entry point.
  EXPECT_FALSE(lines_with(strict.err, "49152 bytes of static + 20000 bytes of dynamic LDS = 69152").empty())
      << strict.err;
  EXPECT_FALSE(lines_with(strict.err, "strict mode: launch refused").empty()) << strict.err;
}

TEST_F(ApiPaths, WarnLogsEachPathOnceAndForwardsTheRuntimesResult) {
  // One run per path: a kernel's LDS problem is logged once per process.
  for (const auto& [label, api] : kLaunches) {
    std::string only = label.substr(0, label.find("->"));
    ProcessResult plain = run("20000", env(kMi210, false), only);
    ProcessResult warn = run("20000", env(kMi210, true), only);
    EXPECT_EQ(warn.status, plain.status) << label;
    // hipGetProcAddress lines name the library the pointer lives in; the rest is unchanged.
    auto p = results(plain.out), w = results(warn.out);
    ASSERT_TRUE(p.count(label)) << label << "\n" << plain.out;
    EXPECT_EQ(w[label], p[label]) << label;
    auto logged = lines_with(warn.err, "HG306");
    ASSERT_EQ(logged.size(), 1u) << label << "\n" << warn.err;
    EXPECT_NE(logged[0].find(api + " asks for 49152 bytes of static + 20000 bytes of dynamic LDS"), std::string::npos)
        << label << ": " << logged[0];
  }
}

TEST_F(ApiPaths, GoodLaunchesAndLoadsPrintNothing) {
  std::string gpus = kMi210 + "," + kMi210;
  for (const char* mode : {"warn", "strict"}) {
    ProcessResult plain = run("0", env(gpus, false));
    ProcessResult r = run("0", env(gpus, true, {{"HIPGUARD_MODE", mode}}));
    EXPECT_EQ(r.status, 0) << mode;
    EXPECT_EQ(r.err, "") << mode;
    auto p = results(plain.out), g = results(r.out);
    for (const auto& [label, api] : kLaunches) EXPECT_EQ(g[label], "0") << mode << " " << label;
    EXPECT_EQ(g.size(), p.size()) << r.out;
  }
}

TEST_F(ApiPaths, ProcAddressHandsOutTheShimsWrappers) {
  auto p = results(run("0", env(kMi210, false)).out), g = results(run("0", env(kMi210, true)).out);
  // The shim is preloaded by its file name, libhipguard.so.MAJOR.MINOR.PATCH.
  for (auto& [call, in] : g)
    if (auto at = in.find(" in libhipguard.so."); at != std::string::npos) in.resize(at + 18);
  EXPECT_EQ(p["hipGetProcAddress"], "0 in libamdhip64.so.5");
  EXPECT_EQ(g["hipGetProcAddress"], "0 in libhipguard.so");
  // Per-thread default stream: the runtime picks hipLaunchKernel_spt, so does the shim.
  EXPECT_EQ(p["hipGetProcAddress(spt)"], "0 hipLaunchKernel_spt in libamdhip64.so.5");
  EXPECT_EQ(g["hipGetProcAddress(spt)"], "0 hipLaunchKernel_spt in libhipguard.so");
  EXPECT_EQ(p["hipGetDriverEntryPoint"], "0 hipLaunchKernel in libamdhip64.so.5");
  EXPECT_EQ(g["hipGetDriverEntryPoint"], "0 hipLaunchKernel in libhipguard.so");
  EXPECT_EQ(p["hipGetDriverEntryPoint_spt"], "0 hipLaunchKernel_spt in libamdhip64.so.5");
  EXPECT_EQ(g["hipGetDriverEntryPoint_spt"], "0 hipLaunchKernel_spt in libhipguard.so");
}

TEST_F(ApiPaths, LoadsWithoutACodeObjectForTheGpu) {
  // The program has gfx1030 code; the module file only gfx90a.
  ProcessResult plain = run("0", env(kRdna2, false));
  std::string report = testing::TempDir() + "/api_paths_report.json";
  ProcessResult warn = run("0", env(kRdna2, true, {{"HIPGUARD_REPORT", report}}));
  ProcessResult strict = run("0", env(kRdna2, true, {{"HIPGUARD_MODE", "strict"}}));
  auto p = results(plain.out), w = results(warn.out), s = results(strict.out);
  // CLR: hipModuleLoadFatBinary fails at once; a library builds lazily, at its first kernel lookup.
  EXPECT_EQ(p["hipModuleLoadFatBinary"], "209");
  EXPECT_EQ(p["hipLibraryLoadData"], "0");
  EXPECT_EQ(p["hipLibraryLoadData->hipLibraryGetKernel"], "209");
  EXPECT_EQ(p["hipLibraryLoadFromFile->hipLibraryGetKernel"], "209");
  // Warn: the runtime's results unchanged (but for where hipGetProcAddress's
  // pointers live), each load explained once.
  for (auto* m : {&p, &w})
    for (auto it = m->begin(); it != m->end();)
      it = it->second.find(" in lib") != std::string::npos ? m->erase(it) : std::next(it);
  EXPECT_EQ(w, p);
  for (const std::string& origin : {std::string("hipModuleLoadFatBinary image at"),
                                    std::string("hipLibraryLoadData image at"), std::string("dyn_lds_gfx90a.hipfb:")}) {
    auto lines = lines_with(warn.err, "HG201 [gfx1030] ");
    size_t n = 0;
    for (const auto& l : lines) n += l.find(origin) != std::string::npos;
    EXPECT_EQ(n, 1u) << origin << "\n" << warn.err;
  }
  // The failed lookup's cause (HG201) was said at the load: one cause, one line.
  EXPECT_TRUE(lines_with(warn.err, "hipLibraryGetKernel failed (hipError_t 209): cause: HG201").empty()) << warn.err;
  // Strict: every load refused with hipErrorNoBinaryForGpu before the runtime sees it.
  for (const char* label : {"hipModuleLoadFatBinary", "hipLibraryLoadData", "hipLibraryLoadFromFile"})
    EXPECT_EQ(s[label], "209") << label;
  EXPECT_EQ(s.count("hipLibraryLoadData->hipLibraryGetKernel"), 0u);
  // Released on unload, kept for the report.
  std::string json = read_text(report);
  EXPECT_NE(json.find("hipLibraryLoadData image at"), std::string::npos) << json.substr(0, 2000);
  EXPECT_NE(json.find("dyn_lds_gfx90a.hipfb"), std::string::npos);
}

// Debian's ROCm 5.2 runtime (no GPU here): the paths it has are forwarded to it
// under their 5.2 version nodes and answer as without hipguard; the HIP 6/7
// entry points it lacks (found by name, through the shim) say hipErrorNotSupported.
TEST_F(ApiPaths, RealRocm52RuntimeWhereItHasThePath) {
  const std::string real = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
  if (!exists(real)) GTEST_SKIP() << real << " not installed";
  ProcessResult plain = run("20000", {});
  ProcessResult warn = run("20000", {{"LD_PRELOAD", kShim}, {"HIPGUARD_TARGET", "gfx90a"}});
  ProcessResult strict =
      run("20000", {{"LD_PRELOAD", kShim}, {"HIPGUARD_TARGET", "gfx90a"}, {"HIPGUARD_MODE", "strict"}});
  ASSERT_EQ(plain.status, 0) << plain.out << plain.err;
  auto p = results(plain.out), w = results(warn.out), s = results(strict.out);
  for (const char* label : {"hipExtLaunchKernel", "hipLaunchByPtr", "hipLaunchCooperativeKernelMultiDevice",
                            "hipExtLaunchMultiKernelMultiDevice", "hipGraphAddKernelNode",
                            "hipGraphKernelNodeSetParams", "hipGraphExecKernelNodeSetParams"}) {
    ASSERT_TRUE(p.count(label)) << label << " is in ROCm 5.2\n" << plain.out;
    EXPECT_EQ(w[label], p[label]) << label;
    EXPECT_NE(p[label], "9") << label;
  }
  // Strict refuses the over-limit launch before the runtime sees it.
  // (Not hipLaunchByPtr: without a GPU ROCm 5.2's hipConfigureCall already fails.)
  for (const char* label : {"hipExtLaunchKernel", "hipLaunchCooperativeKernelMultiDevice",
                            "hipExtLaunchMultiKernelMultiDevice", "hipGraphAddKernelNode"})
    EXPECT_EQ(s[label], "9") << label;
  for (const auto& [label, result] : w) {
    if (p.count(label)) {
      if (result.find(" in ") == std::string::npos) EXPECT_EQ(result, p[label]) << label;
    } else {
      EXPECT_EQ(result.substr(0, 3), "801") << label << ": not in ROCm 5.2";
    }
  }
  EXPECT_TRUE(lines_with(warn.err, "cannot find").empty()) << warn.err;
  EXPECT_EQ(lines_with(warn.err, "HG306").size(), 1u) << warn.err;
}

// Multi-device launches: each entry against its own device's LDS. The KFD
// fixture has two gfx90a, GPU 0 reporting 56 KiB of LDS and GPU 1 64 KiB; 48 KiB
// static + 12000 dynamic fits GPU 1 only. Each entry runs on a stream of its device.
TEST_F(ApiPaths, MultiDeviceChecksEachEntryAgainstItsDevice) {
  const std::string gpus = kMi210 + "," + kMi210;
  auto kfd = [&](const std::string& mask) {
    return std::map<std::string, std::string>{
        {"LD_LIBRARY_PATH", kSimrt},
        {"HIPGUARD_SIM_GPUS", gpus},
        {"LD_PRELOAD", kShim},
        {"HIPGUARD_MODE", "strict"},
        {"HIPGUARD_SYSFS_ROOT", std::string(HIPGUARD_FIXTURES_DIR) + "/sysfs/mi210-lds56"},
        {"API_PATHS_MULTI_MASK", mask}};
  };
  const char* multi[] = {"hipLaunchCooperativeKernelMultiDevice", "hipExtLaunchMultiKernelMultiDevice",
                         "hipModuleLaunchCooperativeKernelMultiDevice"};
  for (const char* api : multi) {
    // Only GPU 1's entry asks for the dynamic LDS: it fits there, the launch goes through.
    ProcessResult fits = run("12000", kfd("2"), api);
    EXPECT_EQ(results(fits.out)[api], "0") << api << "\n" << fits.out << fits.err;
    EXPECT_TRUE(lines_with(fits.err, "HG306").empty()) << api << "\n" << fits.err;
    // GPU 0's entry asks for it: refused, with GPU 0's limit.
    ProcessResult over = run("12000", kfd("1"), api);
    EXPECT_EQ(results(over.out)[api], "9") << api << "\n" << over.out << over.err;
    auto logged = lines_with(over.err, "error HG306");
    ASSERT_EQ(logged.size(), 1u) << over.err;
    EXPECT_NE(logged[0].find(std::string(api) + " asks for 49152 bytes of static + 12000 bytes of dynamic LDS"),
              std::string::npos)
        << logged[0];
    EXPECT_NE(logged[0].find("(GPU 0) provides 57344 bytes per workgroup"), std::string::npos) << logged[0];
  }
  // Without the shim the simulator accepts both (it never adds static and dynamic LDS).
  std::map<std::string, std::string> plain = {
      {"LD_LIBRARY_PATH", kSimrt}, {"HIPGUARD_SIM_GPUS", gpus}, {"API_PATHS_MULTI_MASK", "1"}};
  for (const char* api : multi) EXPECT_EQ(results(run("12000", plain, api).out)[api], "0") << api;
}
