// HG604: the loaded HIP runtime's exports against interpose/hip_api.def (runtime_exports.h): nothing
// to say on the real runtimes the project runs (ROCm 5.2, HIP 6.4, HIP 7.2), and both kinds of
// finding on a runtime that differs.
#include "runtime/runtime_exports.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <cstring>

#include <string>
#include <string_view>
#include <vector>

#include "check_util.h"
#include "process.h"

using namespace hipguard;

namespace {

// hip_api.def, as the shim's audit takes it (interpose/process.h).
std::vector<KnownEntryPoint> table() { return shim::table_entry_points(); }

void expect_nothing_to_say(const std::string& runtime) {
  if (!checks::exists(runtime)) GTEST_SKIP() << runtime << " not there";
  Result<RuntimeExports> e = read_runtime_exports(runtime);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_GT(e->symbols.size(), 400u) << runtime;
  EXPECT_TRUE(e->defines("hip_4.2")) << runtime;
  std::vector<Diagnostic> said = audit_runtime_exports(*e, table(), runtime);
  for (const auto& d : said) ADD_FAILURE() << runtime << ": " << d.message;
}

}  // namespace

TEST(RuntimeExports, Rocm52RuntimeHasNothingToSay) {
  expect_nothing_to_say("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5");
}

TEST(RuntimeExports, Hip64RuntimeHasNothingToSay) {
  if (!checks::exists(std::string(HIPGUARD_ROCM_ROOT) + "/.hipguard-root")) GTEST_SKIP() << "no ROCm 6.4 root";
  expect_nothing_to_say(std::string(HIPGUARD_ROCM_ROOT) + "/usr/lib/x86_64-linux-gnu/libamdhip64.so.6");
}

TEST(RuntimeExports, Hip72RuntimeHasNothingToSay) {
  if (!checks::exists(std::string(HIPGUARD_ROCM72_ROOT) + "/.hipguard-root")) GTEST_SKIP() << "no ROCm 7.2 root";
  const std::string runtime = std::string(HIPGUARD_ROCM72_ROOT) + "/usr/lib/x86_64-linux-gnu/libamdhip64.so.7";
  expect_nothing_to_say(runtime);
  // Each symbol with its own node (readelf --dyn-syms: hipModuleLaunchKernel@@hip_4.2, ...).
  Result<RuntimeExports> e = read_runtime_exports(runtime);
  ASSERT_TRUE(e);
  auto node_of = [&](std::string_view name) { return e->node_of(name) ? *e->node_of(name) : "(not exported)"; };
  EXPECT_EQ(node_of("hipModuleLaunchKernel"), "hip_4.2");
  EXPECT_EQ(node_of("hipLaunchKernelExC"), "hip_6.5");
  EXPECT_EQ(node_of("hipLibraryLoadData"), "hip_7.2");
  EXPECT_EQ(node_of("hipGetProcAddress"), "hip_6.1");
  for (const char* node : {"hip_4.2", "hip_6.1", "hip_6.5", "hip_7.1", "hip_7.2"})
    EXPECT_TRUE(e->defines(node)) << node;
}

// A runtime newer than this hipguard (an unknown launch entry point) and one that lacks a wrapped
// entry point under a node it defines: one HG604 each, naming the symbols. A wrapped entry point
// under a node the runtime does not define (an older runtime), or one whose other spelling it
// exports (ROCm 5.2's C++-only hipExtModuleLaunchKernel), is nothing to say.
TEST(RuntimeExports, UnknownAndMissingEntryPointsAreSaid) {
  std::vector<RuntimeExports::Symbol> symbols;
  const std::vector<std::string_view> nodes = {"hip_4.2", "hip_6.0"};
  for (const auto& k : table())
    if (k.wrapped && std::count(nodes.begin(), nodes.end(), k.node) && k.name.substr(0, 2) != "_Z" &&
        k.name != "hipExtModuleLaunchKernel")  // only its C++ spelling, as ROCm 5.2
      symbols.push_back({k.name, k.node});
  symbols.push_back(
      {"_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j", "hip_4.2"});
  auto exports = [&] {
    RuntimeExports e;
    e.symbols = symbols;
    e.nodes = nodes;
    e.seal();
    return e;
  };
  ASSERT_TRUE(audit_runtime_exports(exports(), table(), "libamdhip64.so").empty());
  symbols.push_back({"hipMemcpyAsync", "hip_4.2"});                  // not on a kernel's path
  symbols.push_back({"hipLaunchKernelWithMoreOptions", "hip_6.0"});  // on one, unknown
  // Another, longer but first by name: the list is by name. Its name twice: the first one counts.
  symbols.push_back({"hipLaunchAlongerNameThanTheOtherUnknownOne", "hip_6.0"});
  symbols.push_back({"hipLaunchAlongerNameThanTheOtherUnknownOne", "hip_4.2"});
  std::erase_if(symbols, [](const auto& s) { return s.name == "hipModuleLaunchKernel"; });  // wrapped, its node defined
  RuntimeExports e = exports();
  std::vector<Diagnostic> said = audit_runtime_exports(e, table(), "libamdhip64.so");
  ASSERT_EQ(said.size(), 2u);
  for (const auto& d : said) EXPECT_EQ(d.code, Code::kRuntimeEntryPoints);
  EXPECT_NE(said[0].message.find(
                "2 entry point(s) on a kernel's path that this hipguard does not know: "
                "hipLaunchAlongerNameThanTheOtherUnknownOne@hip_6.0, hipLaunchKernelWithMoreOptions@hip_6.0;"),
            std::string::npos)
      << said[0].message;
  EXPECT_EQ(said[0].message.find("hipMemcpyAsync"), std::string::npos) << said[0].message;
  EXPECT_NE(said[1].message.find("hipModuleLaunchKernel@hip_4.2"), std::string::npos) << said[1].message;
  EXPECT_EQ(said[1].message.find("hipExtModuleLaunchKernel"), std::string::npos) << said[1].message;
}

TEST(RuntimeExports, AFileThatIsNoSharedObjectIsAnError) {
  Result<RuntimeExports> missing = read_runtime_exports("/nonexistent/libamdhip64.so");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kUnreadable);
  Result<RuntimeExports> text = read_runtime_exports(std::string(HIPGUARD_FIXTURES_DIR) + "/../../README.md");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Code::kMalformedElf);
}

// The shim reads the loaded runtime from its own memory (read_loaded_exports): the same symbols and
// nodes as the file's (read_runtime_exports, LLVM Object), for ROCm 5.2's runtime dlopen'ed here and
// for the libstdc++ of this process.
TEST(RuntimeExports, LoadedObjectReadsAsItsFile) {
  void* hip = dlopen("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", RTLD_LAZY | RTLD_LOCAL);
  size_t compared = 0;
  for (const char* part : {"libamdhip64.so.5", "libstdc++.so.6"}) {
    struct Found {
      const char* part;
      LoadedObject object{};
      const char* path = nullptr;
    } f{part};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* out = static_cast<Found*>(data);
          if (!info->dlpi_name || !strstr(info->dlpi_name, out->part)) return 0;
          out->object = {info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum};
          out->path = info->dlpi_name;
          return 1;
        },
        &f);
    if (!f.path) continue;
    Result<RuntimeExports> mem = read_loaded_exports(f.object);
    Result<RuntimeExports> file = read_runtime_exports(f.path);
    ASSERT_TRUE(mem) << f.path << ": " << mem.error().message;
    ASSERT_TRUE(file) << f.path << ": " << file.error().message;
    EXPECT_GT(mem->symbols.size(), 400u) << f.path;
    std::string differ;
    for (const auto& [n, v] : mem->symbols)
      if (!file->node_of(n) || *file->node_of(n) != v) (((differ += " mem:") += n) += "@") += v;
    for (const auto& [n, v] : file->symbols)
      if (!mem->node_of(n) || *mem->node_of(n) != v) (((differ += " file:") += n) += "@") += v;
    EXPECT_EQ(differ.substr(0, 600), "") << f.path;
    EXPECT_TRUE(mem->symbols == file->symbols) << f.path;
    EXPECT_TRUE(mem->nodes == file->nodes) << f.path;
    ++compared;
  }
  EXPECT_GE(compared, 1u) << "libstdc++ is loaded in every test process";
  if (hip) dlclose(hip);
}
