// The shim on real programs: hipcc-built test apps and the AITER corpus,
// run under LD_PRELOAD=libhipguard.so with Debian's real libamdhip64 (no GPU:
// registration runs, device calls fail). Expectations come from how the apps
// were built (tests/apps/CMakeLists.txt) and from llvm-readelf-16's reading of
// the corpus, not from hipguard itself.
#include <dirent.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process.h"
#include "runtime/runtime_exports.h"

namespace {

const std::string kShim = HIPGUARD_SHIM;
const std::string kCli = HIPGUARD_CLI;
const std::string kApps = HIPGUARD_APPS_DIR;
const std::string kCorpus = std::string(HIPGUARD_CORPUS_DIR) + "/aiter";
const std::string kReadelf = HIPGUARD_READELF;
const std::string kSimrt = HIPGUARD_SIMRT_DIR;

std::string app(const std::string& name) { return kApps + "/" + name; }

#define REQUIRE_APP(name)                                                                               \
  do {                                                                                                  \
    if (kApps.empty() || !exists(app(name))) GTEST_SKIP() << "hipcc test app " << name << " not built"; \
  } while (0)

#define REQUIRE_CORPUS()                                                                              \
  do {                                                                                                \
    if (!exists(kCorpus)) GTEST_SKIP() << "corpus not found at " << kCorpus << " (../shared/corpus)"; \
  } while (0)

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

std::map<std::string, std::string> shim_env(std::map<std::string, std::string> extra) {
  extra["LD_PRELOAD"] = kShim;
  return extra;
}

std::vector<std::string> corpus_files() {
  std::vector<std::string> files;
  if (DIR* d = opendir(kCorpus.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 3 && n.substr(n.size() - 3) == ".co") files.push_back(kCorpus + "/" + n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Kernel symbol and group_segment_fixed_size of each kernel, read by llvm-readelf.
struct ReadelfKernel {
  std::string symbol;  // without ".kd"
  uint64_t lds = 0;
};
std::vector<ReadelfKernel> readelf_kernels(const std::string& file) {
  ProcessResult r = run_process({kReadelf, "--notes", file});
  std::vector<ReadelfKernel> out;
  std::regex sym_re(R"(^\s*\.symbol:\s+(\S+)\.kd\s*$)");
  std::regex lds_re(R"(^\s*-?\s*\.group_segment_fixed_size:\s+(\d+)\s*$)");
  std::istringstream in(r.out);
  // Keys of one kernel map come in alphabetical order: group_segment... before symbol.
  uint64_t pending_lds = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, lds_re)) pending_lds = std::stoull(m[1]);
    if (std::regex_match(line, m, sym_re)) out.push_back({m[1], pending_lds});
  }
  return out;
}

std::string basename_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }

}  // namespace

TEST(ShimApp, ReportsMissingCodeObjectForTarget) {
  REQUIRE_APP("vector_add_multi");
  ProcessResult plain = run_process({app("vector_add_multi")});
  ProcessResult r = run_process({app("vector_add_multi")}, shim_env({{"HIPGUARD_TARGET", "gfx942"}}));
  EXPECT_EQ(r.status, 0) << r.err;
  // Said at registration: the launch never reaches the shim here (no GPU), as
  // on a ROCm 5.x runtime, which aborts at initialisation for such a fat
  // binary (docs/performance.md, "why lazy selection is not the fix").
  // Warn mode changes nothing the program sees.
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.out.find("vector_add: main reached"), std::string::npos);
  auto hits = lines_with(r.err, "hipguard: error HG201 [gfx942:sramecc+:xnack-]");
  ASSERT_EQ(hits.size(), 1u) << r.err;
  // Names the program, and lists what the bundle holds (the --offload-arch values it was built with).
  EXPECT_NE(hits[0].find(app("vector_add_multi")), std::string::npos) << hits[0];
  for (const char* held : {"gfx90a:xnack-", "gfx940", "gfx1030"})
    EXPECT_NE(hits[0].find(held), std::string::npos) << held;
  EXPECT_NE(hits[0].find("--offload-arch=gfx942"), std::string::npos) << hits[0];
}

TEST(ShimApp, SilentWhenTargetIsPresent) {
  REQUIRE_APP("vector_add_multi");
  for (const char* target : {"gfx90a", "gfx90a:xnack-", "gfx940", "gfx1030", "mi250x"}) {
    ProcessResult r = run_process({app("vector_add_multi")}, shim_env({{"HIPGUARD_TARGET", target}}));
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.err.find("hipguard:"), std::string::npos) << target << ": " << r.err;
  }
}

TEST(ShimApp, StrictModeStopsBeforeMain) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult r =
      run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "mi300x"}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(r.status, 86);
  EXPECT_EQ(r.out.find("main reached"), std::string::npos) << r.out;
  EXPECT_EQ(lines_with(r.err, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u) << r.err;
  EXPECT_NE(r.err.find("strict mode: stopping"), std::string::npos);

  ProcessResult custom =
      run_process({app("vector_add_gfx90a")},
                  shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_EXIT_CODE", "42"}}));
  EXPECT_EQ(custom.status, 42);

  // Strict with a present target runs normally.
  ProcessResult ok =
      run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx90a"}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(ok.status, 0);
  EXPECT_NE(ok.out.find("main reached"), std::string::npos);
}

TEST(ShimApp, XnackMismatchExplainsTheSetting) {
  REQUIRE_APP("vector_add_xnack_on");
  ProcessResult r = run_process({app("vector_add_xnack_on")}, shim_env({{"HIPGUARD_TARGET", "gfx90a:xnack-"}}));
  auto hits = lines_with(r.err, "error HG203 [gfx90a:sramecc+:xnack-]");
  ASSERT_EQ(hits.size(), 1u) << r.err;
  EXPECT_NE(hits[0].find("xnack+"), std::string::npos);
  EXPECT_NE(hits[0].find("HSA_XNACK=1"), std::string::npos) << hits[0];
  // The same binary on an xnack+ device is fine.
  ProcessResult ok = run_process({app("vector_add_xnack_on")}, shim_env({{"HIPGUARD_TARGET", "gfx90a:xnack+"}}));
  EXPECT_EQ(ok.err.find("hipguard:"), std::string::npos) << ok.err;
}

TEST(ShimApp, NoTargetNoGpuSaysChecksWereSkippedOnce) {
  REQUIRE_APP("vector_add_multi");
  char dir[] = "/tmp/hipguard-sysfs-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  ProcessResult r = run_process({app("vector_add_multi")}, shim_env({{"HIPGUARD_SYSFS_ROOT", dir}}));
  rmdir(dir);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(count(r.err, "note HG204"), 1u) << r.err;
  EXPECT_NE(r.err.find("HIPGUARD_TARGET=gfx942"), std::string::npos);
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
}

TEST(ShimApp, BadTargetIsReported) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult r = run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx9999,gfx90a"}}));
  EXPECT_EQ(r.status, 0);
  auto hits = lines_with(r.err, "HG206");
  ASSERT_EQ(hits.size(), 1u) << r.err;
  EXPECT_NE(hits[0].find("gfx9999"), std::string::npos);
  // The valid entry is still used: gfx90a is present, so nothing else is said.
  EXPECT_EQ(lines_with(r.err, "HG201").size(), 0u) << r.err;
}

TEST(ShimModules, CorpusAgainstGfx942) {
  REQUIRE_CORPUS();
  if (kApps.empty() || !exists(app("module_loader"))) GTEST_SKIP() << "module_loader not built";
  auto files = corpus_files();
  ASSERT_GT(files.size(), 10u);
  std::vector<std::string> argv = {app("module_loader")};
  argv.insert(argv.end(), files.begin(), files.end());
  ProcessResult plain = run_process(argv);
  ProcessResult r = run_process(argv, shim_env({{"HIPGUARD_TARGET", "gfx942"}}));
  EXPECT_EQ(r.status, plain.status);
  EXPECT_EQ(r.out, plain.out) << "warn mode must return exactly what the runtime returns";
  size_t lds_reports = 0, at_limit = 0;
  for (const auto& f : files) {
    std::string name = basename_of(f);
    std::string prefix = name.substr(0, name.find('_'));  // gfx942 / gfx950 / gfx1250 (corpus README)
    auto mentions = lines_with(r.err, f);
    auto kernels = readelf_kernels(f);
    ASSERT_FALSE(kernels.empty()) << "llvm-readelf found no kernel in " << f;
    if (prefix == "gfx942") {
      EXPECT_TRUE(mentions.empty()) << name << " should pass on gfx942:\n" << r.err;
      continue;
    }
    EXPECT_EQ(lines_with(r.err, "error HG202 [gfx942:sramecc+:xnack-] " + f + ":").size(), 1u) << name;
    for (const auto& k : kernels) {
      auto lds_lines = lines_with(r.err, "error HG301 [gfx942:sramecc+:xnack-] " + f + " kernel '" + k.symbol + "'");
      if (k.lds > 65536) {
        ++lds_reports;
        ASSERT_EQ(lds_lines.size(), 1u) << name << " kernel " << k.symbol << " declares " << k.lds << "\n" << r.err;
        EXPECT_NE(lds_lines[0].find("declares " + std::to_string(k.lds) + " bytes"), std::string::npos) << lds_lines[0];
        EXPECT_NE(lds_lines[0].find("at most 65536 bytes"), std::string::npos) << lds_lines[0];
      } else {
        if (k.lds == 65536) ++at_limit;
        EXPECT_TRUE(lds_lines.empty()) << name << " declares " << k.lds << " bytes, within the limit";
      }
    }
  }
  EXPECT_GT(lds_reports, 0u);
  EXPECT_GT(at_limit, 0u) << "the corpus has kernels at exactly 65536 bytes";
}

TEST(ShimModules, StrictRefusesOnlyBadModules) {
  REQUIRE_CORPUS();
  if (kApps.empty() || !exists(app("module_loader"))) GTEST_SKIP() << "module_loader not built";
  std::string good, bad;
  for (const auto& f : corpus_files()) {
    if (good.empty() && basename_of(f).rfind("gfx942_", 0) == 0) good = f;
    if (bad.empty() && basename_of(f).rfind("gfx950_", 0) == 0) bad = f;
  }
  ASSERT_FALSE(good.empty() || bad.empty());
  ProcessResult plain = run_process({app("module_loader"), good});
  ProcessResult r = run_process({app("module_loader"), good, bad},
                                shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}}));
  // The good module reaches the real runtime and gets its answer unchanged.
  auto good_line = lines_with(plain.out, "hipModuleLoad " + good + ":");
  ASSERT_EQ(good_line.size(), 1u);
  EXPECT_EQ(lines_with(r.out, good_line[0]).size(), 1u) << r.out;
  // The bad one is refused by hipguard with hipErrorNoBinaryForGpu (209).
  EXPECT_EQ(lines_with(r.out, "hipModuleLoad " + bad + ": 209").size(), 1u) << r.out;
}

TEST(ShimDlopen, HipLibraryOpenedByAHostThatDoesNotLinkHip) {
  REQUIRE_APP("dlopen_host");
  REQUIRE_APP("libkernels_lib.so");
  ProcessResult needed = run_process({kReadelf, "-d", app("dlopen_host")});
  ASSERT_EQ(needed.out.find("libamdhip64"), std::string::npos) << "dlopen_host must not link HIP";
  std::vector<std::string> argv = {app("dlopen_host"), app("libkernels_lib.so")};
  ProcessResult plain = run_process(argv);
  ProcessResult r = run_process(argv, shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_LOG_LEVEL", "debug"}}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.out.find("kernels_lib_run returned"), std::string::npos);
  // Registration was forwarded to the real runtime, found without dlsym(RTLD_NEXT).
  EXPECT_EQ(lines_with(r.err, "forwarding __hipRegisterFatBinary to").size(), 1u) << r.err;
  EXPECT_NE(lines_with(r.err, "forwarding __hipRegisterFatBinary to")[0].find("libamdhip64.so"), std::string::npos);
  auto hits = lines_with(r.err, "error HG201 [gfx942:sramecc+:xnack-] " + app("libkernels_lib.so"));
  ASSERT_EQ(hits.size(), 1u) << r.err;
  EXPECT_NE(hits[0].find("gfx90a"), std::string::npos);
}

// Issue 5: a setuid process must not write files its environment chooses. The
// same program registers the same fat binary twice, as root and as a setuid
// copy owned by nobody (AT_SECURE): both report HG201, only the first writes
// HIPGUARD_REPORT. Needs root and a mount without nosuid; skipped otherwise.
// A setuid program cannot preload a sanitizer runtime: a sanitizer build runs
// it with an uninstrumented shim (uninstrumented_shim).
TEST(ShimSecure, SetuidProcessWritesNoReport) {
  const std::string shim = uninstrumented_shim(kShim);
  if (shim.empty()) GTEST_SKIP() << "sanitizer build without HIPGUARD_PLAIN_SHIM (scripts/sanitize.sh sets it)";
  REQUIRE_APP("secure_host");
  REQUIRE_APP("vector_add_gfx90a.hipfb");
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setuid copy";
  const passwd* nobody = getpwnam("nobody");
  if (!nobody) GTEST_SKIP() << "no user 'nobody'";
  char dir[] = "/tmp/hipguard-secure-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  ASSERT_EQ(chmod(dir, 01777), 0);  // writable by nobody too: only AT_SECURE may stop the write
  const std::string suid = std::string(dir) + "/secure_host";
  run_process({"/bin/cp", app("secure_host"), suid});
  ASSERT_EQ(chown(suid.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  ASSERT_EQ(chmod(suid.c_str(), 04755), 0);
  const std::map<std::string, std::string> env = {{"HIPGUARD_TARGET", "gfx942"}};
  const std::string hipfb = app("vector_add_gfx90a.hipfb");

  auto plain_env = env;
  plain_env["HIPGUARD_REPORT"] = std::string(dir) + "/plain.json";
  ProcessResult plain = run_process({app("secure_host"), shim, hipfb}, plain_env);
  auto secure_env = env;
  secure_env["HIPGUARD_REPORT"] = std::string(dir) + "/secure.json";
  ProcessResult secure = run_process({suid, shim, hipfb}, secure_env);
  bool really_secure = secure.out.find("AT_SECURE=1") != std::string::npos;
  bool plain_written = exists(std::string(dir) + "/plain.json");
  bool secure_written = exists(std::string(dir) + "/secure.json");
  run_process({"/bin/rm", "-rf", dir});
  if (!really_secure)
    GTEST_SKIP() << "the setuid copy did not run AT_SECURE (nosuid mount?): " << secure.out << secure.err;

  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.out.find("AT_SECURE=0"), std::string::npos) << plain.out;
  EXPECT_EQ(lines_with(plain.err, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u) << plain.err;
  EXPECT_TRUE(plain_written) << "control: the report is written without AT_SECURE";
  EXPECT_EQ(secure.status, 0) << secure.err;
  EXPECT_EQ(lines_with(secure.err, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u)
      << "the shim ran and checked: " << secure.err;
  EXPECT_FALSE(secure_written) << "HIPGUARD_REPORT must be ignored in a setuid process";
}

TEST(ShimNonHip, SilentInProcessesThatNeverTouchHip) {
  for (std::vector<std::string> argv :
       std::vector<std::vector<std::string>>{{"/bin/true"},
                                             {"/bin/sh", "-c", "echo hello; ls / >/dev/null"},
                                             {"/usr/bin/env"},
                                             {"python3", "-c", "import json, ctypes; print(json.dumps([1, 2]))"},
                                             {"c++", "--version"}}) {
    ProcessResult plain = run_process(argv, {{"HIPGUARD_TARGET", "gfx942"}});
    ProcessResult r = run_process(argv, shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_LOG_LEVEL", "debug"}}));
    EXPECT_EQ(r.status, plain.status) << argv[0];
    EXPECT_EQ(r.err, "") << argv[0];
    if (argv[0] != "/usr/bin/env") EXPECT_EQ(r.out, plain.out) << argv[0];
  }
}

TEST(ShimExports, OnlyInterposedHipSymbolsUnderTheRuntimeVersions) {
  ProcessResult syms = run_process({kReadelf, "--dyn-syms", "-W", kShim});
  ASSERT_EQ(syms.status, 0);
  std::set<std::string> defined;
  std::istringstream in(syms.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(f >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (ndx == "UND" || ndx == "Ndx" || bind == "LOCAL" || type == "SECTION") continue;
    if (ndx == "ABS") continue;  // the version node's own definition
    defined.insert(name);
  }
  // Exactly the symbols of interpose/hip_api.def, each under its node (the
  // table's nodes are ROCm CLR hip_hcc.map.in's).
  std::set<std::string> expected;
  std::ifstream table(HIPGUARD_API_TABLE);
  ASSERT_TRUE(table) << HIPGUARD_API_TABLE;
  std::regex line_re(R"(^HG_API\(([A-Za-z0-9_]+), *(hip_[0-9.]+), *([a-z]+)[,)])");
  for (std::string line; std::getline(table, line);) {
    std::smatch m;
    if (std::regex_search(line, m, line_re)) expected.insert(m[1].str() + "@@" + m[2].str());
  }
  ASSERT_GT(expected.size(), 40u);
  EXPECT_EQ(defined, expected);
  // Where Debian's ROCm 5.2 runtime has a symbol, its node is the table's.
  const std::string real = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
  if (exists(real)) {
    ProcessResult rs = run_process({kReadelf, "--dyn-syms", "-W", real});
    size_t in_rocm52 = 0;
    for (const auto& s : expected) {
      std::string name = s.substr(0, s.find('@'));
      bool same = rs.out.find(" " + s + "\n") != std::string::npos || rs.out.find(" " + s + " ") != std::string::npos;
      bool other = rs.out.find(" " + name + "@") != std::string::npos;
      if (other) EXPECT_TRUE(same) << s << ": " << real << " has " << name << " under another node";
      in_rocm52 += same;
    }
    EXPECT_GE(in_rocm52, 25u) << "ROCm 5.2 has the hip_4.x/5.2 entry points";
  }
  ProcessResult dyn = run_process({kReadelf, "-d", kShim});
  for (const char* lib : {"libamdhip64", "libLLVM", "libstdc++", "libspdlog", "libfmt"})
    EXPECT_EQ(dyn.out.find(lib), std::string::npos) << "libhipguard.so must not depend on " << lib;
}

// The shim links LLVM's ELF, msgpack and compression readers, never its IR, bitcode or MC
// libraries: ObjectFile::createELFObjectFile or OffloadBinary::create would pull them in, and
// --gc-sections drops their code but keeps ~20 static constructors (_GLOBAL__sub_I_<file>), which
// run in every process the shim is preloaded in (R4 in docs/performance.md). Read from the shim's
// own symbol table, where those constructors stay as local symbols: the only ones allowed are the
// statically linked libstdc++'s (its sources end in .cc); LLVM's and hipguard's end in .cpp.
TEST(ShimExports, RunsNoStaticConstructorsButLibstdcxxs) {
  ProcessResult syms = run_process({kReadelf, "-sW", kShim});
  ASSERT_EQ(syms.status, 0);
  const std::regex ctor_re(R"( _GLOBAL__sub_I_(\S+))");
  size_t libstdcxx = 0;
  for (std::sregex_iterator it(syms.out.begin(), syms.out.end(), ctor_re), end; it != end; ++it) {
    const std::string file = (*it)[1];
    if (file.ends_with(".cc")) ++libstdcxx;
    else ADD_FAILURE() << "libhipguard.so runs the static constructor of " << file;
  }
  EXPECT_GT(libstdcxx, 0u) << "the shim's symbol table is stripped";
}

// The table's facts about the runtime's export map: symbols hipguard decided
// not to interpose (HG_SKIP) are not exported by the shim, and every symbol of
// Debian's ROCm 5.2 runtime whose name says it loads code, launches a kernel,
// configures a launch or hands out entry points is in the table (HG_API or
// HG_SKIP) under the runtime's node: a new path in the runtime fails here.
TEST(ShimExports, ApiTableCoversTheRuntimesLoadAndLaunchSymbols) {
  std::map<std::string, std::string> api, skip;
  std::ifstream table(HIPGUARD_API_TABLE);
  ASSERT_TRUE(table) << HIPGUARD_API_TABLE;
  std::regex line_re(R"(^HG_(API|SKIP)\(([A-Za-z0-9_]+), *(hip_[0-9.]+)[,)])");
  for (std::string line; std::getline(table, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, line_re)) continue;
    auto& into = m[1] == "API" ? api : skip;
    EXPECT_TRUE(api.count(m[2]) == 0 && skip.count(m[2]) == 0) << m[2] << " is in the table twice";
    into[m[2]] = m[3];
  }
  ASSERT_GT(skip.size(), 20u);
  ProcessResult syms = run_process({kReadelf, "--dyn-syms", "-W", kShim});
  for (const auto& [name, node] : skip) EXPECT_EQ(syms.out.find(" " + name + "@"), std::string::npos) << name;
  const std::string real = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
  if (!exists(real)) GTEST_SKIP() << real << " not installed";
  ProcessResult rs = run_process({kReadelf, "--dyn-syms", "-W", real});
  std::istringstream in(rs.out);
  size_t checked = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string num, value, size, type, bind, vis, ndx, sym;
    if (!(f >> num >> value >> size >> type >> bind >> vis >> ndx >> sym) || ndx == "UND" || type != "FUNC") continue;
    auto at = sym.find('@');
    if (at == std::string::npos) continue;
    std::string name = sym.substr(0, at), node = sym.substr(sym.find_first_not_of('@', at));
    if (!hipguard::on_a_kernel_path(name)) continue;
    ++checked;
    auto a = api.find(name);
    auto s = skip.find(name);
    ASSERT_TRUE(a != api.end() || s != skip.end())
        << name << "@" << node << " loads or launches: add it to hip_api.def";
    EXPECT_EQ(a != api.end() ? a->second : s->second, node) << name;
  }
  EXPECT_GT(checked, 30u);
}

// The versioned functions a real libamdhip64 exports: name -> version node.
static std::map<std::string, std::string> runtime_exports(const std::string& real) {
  ProcessResult rs = run_process({kReadelf, "--dyn-syms", "-W", real});
  EXPECT_EQ(rs.status, 0) << rs.err;
  std::map<std::string, std::string> exports;
  std::istringstream in(rs.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string num, value, size, type, bind, vis, ndx, sym;
    if (!(f >> num >> value >> size >> type >> bind >> vis >> ndx >> sym) || ndx == "UND" || type != "FUNC") continue;
    auto at = sym.find('@');
    if (at != std::string::npos) exports[sym.substr(0, at)] = sym.substr(sym.find_first_not_of('@', at));
  }
  return exports;
}

// Every export of a real runtime that loads code, launches, looks up or enumerates kernels, makes or
// sets graph kernel nodes, configures a launch, hands out entry points or reads the last error is an
// HG_API or HG_SKIP line of hip_api.def under the runtime's node. Returns the exports.
static std::map<std::string, std::string> expect_runtime_symbols_placed(const std::string& real) {
  std::map<std::string, std::string> table;
  std::ifstream in_table(HIPGUARD_API_TABLE);
  std::regex line_re(R"(^HG_(API|SKIP)\(([A-Za-z0-9_]+), *(hip_[0-9.]+)[,)])");
  for (std::string line; std::getline(in_table, line);) {
    std::smatch m;
    if (std::regex_search(line, m, line_re)) table[m[2]] = m[3];
  }
  std::map<std::string, std::string> exports = runtime_exports(real);
  EXPECT_GT(exports.size(), 400u) << real;
  std::string unplaced;
  size_t checked = 0;
  for (const auto& [name, node] : exports) {
    if (!hipguard::on_a_kernel_path(name)) continue;
    ++checked;
    auto t = table.find(name);
    if (t == table.end()) unplaced += "\n  " + name + "@" + node + ": not in hip_api.def";
    else if (t->second != node) unplaced += "\n  " + name + "@" + node + ": the table says " + t->second;
  }
  EXPECT_EQ(unplaced, "") << real << " has load/launch/lookup exports hip_api.def does not place:" << unplaced;
  EXPECT_GT(checked, 50u);
  return exports;
}

// The same against the real HIP 6.4 runtime of the ROCm root (scripts/rocm-root.sh); and
// tests/simrt/hip_6.4_exports.def (scripts/hip-exports.sh) is that library's export list as it is.
TEST(ShimExports, Hip64RuntimeSymbolsArePlaced) {
  const std::string root = HIPGUARD_ROCM_ROOT;
  if (root.empty() || !exists(root + "/.hipguard-root"))
    GTEST_SKIP() << "no ROCm root at '" << root << "' (scripts/rocm-root.sh)";
  const std::string real = root + "/usr/lib/x86_64-linux-gnu/libamdhip64.so.6";
  std::map<std::string, std::string> exports = expect_runtime_symbols_placed(real);
  // The simulated runtime's export list is this library's.
  std::map<std::string, std::string> listed;
  std::ifstream in_list(HIPGUARD_SIMRT_EXPORTS);
  ASSERT_TRUE(in_list) << HIPGUARD_SIMRT_EXPORTS;
  std::regex sim_re(R"(^SIM_API\(([A-Za-z0-9_]+), *(hip_[0-9.]+)\))");
  for (std::string line; std::getline(in_list, line);) {
    std::smatch m;
    if (std::regex_search(line, m, sim_re)) listed[m[1]] = m[2];
  }
  EXPECT_TRUE(listed == exports) << HIPGUARD_SIMRT_EXPORTS << " is not " << real
                                 << "'s export list: rerun scripts/hip-exports.sh";
}

// The real HIP 7.2 runtime (libamdhip64.so.7 of the ROCm 7.2 root, scripts/rocm-root.sh --stack 7.2):
// its load/launch/lookup exports are placed, and every symbol the shim exports exists there under
// the shim's version node (the program links against these nodes).
TEST(ShimExports, Hip72RuntimeSymbolsArePlaced) {
  const std::string root = HIPGUARD_ROCM72_ROOT;
  if (root.empty() || !exists(root + "/.hipguard-root"))
    GTEST_SKIP() << "no ROCm 7.2 root at '" << root << "' (scripts/rocm-root.sh --stack 7.2)";
  const std::string real = root + "/usr/lib/x86_64-linux-gnu/libamdhip64.so.7";
  std::map<std::string, std::string> exports = expect_runtime_symbols_placed(real);
  std::map<std::string, std::string> shim = runtime_exports(kShim);
  ASSERT_GT(shim.size(), 40u) << kShim;
  std::string missing;
  for (const auto& [name, node] : shim) {
    auto e = exports.find(name);
    if (e == exports.end()) missing += "\n  " + name + "@" + node + ": not exported by the runtime";
    else if (e->second != node) missing += "\n  " + name + "@" + node + ": the runtime has @" + e->second;
  }
  EXPECT_EQ(missing, "") << kShim << " exports what " << real << " does not:" << missing;
}

TEST(CliRun, RunsTheProgramUnderTheShim) {
  REQUIRE_APP("vector_add_multi");
  ProcessResult r = run_process({kCli, "run", "--target", "gfx942", "--strict", "--", app("vector_add_multi")});
  EXPECT_EQ(r.status, 86);
  EXPECT_EQ(lines_with(r.err, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u) << r.err;
  ProcessResult ok = run_process({kCli, "run", "--target", "gfx940", "--", app("vector_add_multi")});
  EXPECT_EQ(ok.status, 0);
  EXPECT_NE(ok.out.find("main reached"), std::string::npos);
  EXPECT_EQ(ok.err.find("hipguard:"), std::string::npos) << ok.err;
}

TEST(ShimApp, OffModeChangesNothingAndSaysNothing) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult plain = run_process({app("vector_add_gfx90a")});
  ProcessResult r =
      run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "off"}}));
  EXPECT_EQ(r.status, plain.status);
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err, "");
  // Nor what warn mode says of its settings: no target (HG204), a bad one (HG601).
  for (auto env :
       {shim_env({{"HIPGUARD_MODE", "off"}}), shim_env({{"HIPGUARD_TARGET", "gfx9999"}, {"HIPGUARD_MODE", "off"}})}) {
    ProcessResult quiet = run_process({app("vector_add_gfx90a")}, env);
    EXPECT_EQ(quiet.status, plain.status);
    EXPECT_EQ(quiet.err, "");
  }
}

TEST(ShimApp, UnknownLogLevelKeepsTheDefault) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult r = run_process({app("vector_add_gfx90a")},
                                shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_LOG_LEVEL", "verbose"}}));
  EXPECT_EQ(lines_with(r.err, "error HG201").size(), 1u) << r.err;
  auto bad = lines_with(r.err, "error HG601");
  ASSERT_EQ(bad.size(), 1u) << "said, not silently ignored: " << r.err;
  EXPECT_NE(bad[0].find("HIPGUARD_LOG_LEVEL='verbose'"), std::string::npos) << bad[0];
  EXPECT_EQ(r.status, 0) << "warn mode: the exit status is the program's";
  ProcessResult quiet =
      run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_LOG_LEVEL", "off"}}));
  EXPECT_EQ(quiet.err, "");
}

// ---- Configuration fails closed (HG601, HG206, HG204) and the exit status (HG602)

TEST(ShimConfig, ModeIsCaseInsensitiveAndAnUnknownModeIsStrict) {
  REQUIRE_APP("vector_add_multi");
  ProcessResult upper =
      run_process({app("vector_add_multi")}, shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "STRICT"}}));
  EXPECT_EQ(upper.status, 86) << upper.err;
  EXPECT_EQ(upper.out.find("main reached"), std::string::npos);
  EXPECT_EQ(lines_with(upper.err, "HG601").size(), 0u) << upper.err;
  // A typo is said in one line and behaves as strict: stopped, even on a program with nothing wrong.
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult typo =
      run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx90a"}, {"HIPGUARD_MODE", "strcit"}}));
  auto bad = lines_with(typo.err, "error HG601");
  ASSERT_EQ(bad.size(), 1u) << typo.err;
  EXPECT_NE(bad[0].find("HIPGUARD_MODE='strcit'"), std::string::npos) << bad[0];
  EXPECT_NE(bad[0].find("warn, strict, off"), std::string::npos) << bad[0];
  EXPECT_NE(bad[0].find("running in strict mode"), std::string::npos) << bad[0];
  EXPECT_EQ(typo.status, 86) << typo.err;
  EXPECT_EQ(typo.out.find("main reached"), std::string::npos) << typo.out;
}

TEST(ShimConfig, MisspelledModeVariableIsStrict) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult r =
      run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx90a"}, {"HIPGUARD_MDOE", "strict"}}));
  auto bad = lines_with(r.err, "error HG601");
  ASSERT_EQ(bad.size(), 1u) << r.err;
  EXPECT_NE(bad[0].find("HIPGUARD_MDOE is not a hipguard variable (did you mean HIPGUARD_MODE?)"), std::string::npos)
      << bad[0];
  EXPECT_EQ(r.status, 86) << r.err;
  EXPECT_EQ(r.out.find("main reached"), std::string::npos) << r.out;
}

TEST(ShimConfig, RefusedSettingStopsAModuleLoaderInStrictMode) {
  if (kApps.empty() || !exists(app("module_loader"))) GTEST_SKIP() << "module_loader not built";
  REQUIRE_APP("vector_add_gfx90a.hipfb");
  // module_loader registers no fat binary: its first HIP call the shim sees is hipModuleLoad.
  ProcessResult r = run_process(
      {app("module_loader"), app("vector_add_gfx90a.hipfb")},
      shim_env({{"HIPGUARD_TARGET", "gfx90a,gfx9422"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_EXIT_CODE", "77"}}));
  EXPECT_EQ(lines_with(r.err, "error HG206").size(), 1u) << r.err;
  EXPECT_EQ(lines_with(r.err, "at its first module load (exit status 77)").size(), 1u) << r.err;
  EXPECT_EQ(r.status, 77) << r.err;
  EXPECT_EQ(r.out.find("hipModuleLoad"), std::string::npos) << "stopped before the load returned: " << r.out;
  // The same in warn mode: said, the valid entry used, the program runs.
  ProcessResult warn = run_process({app("module_loader"), app("vector_add_gfx90a.hipfb")},
                                   shim_env({{"HIPGUARD_TARGET", "gfx90a,gfx9422"}}));
  EXPECT_EQ(lines_with(warn.err, "error HG206").size(), 1u) << warn.err;
  EXPECT_NE(warn.out.find("hipModuleLoad"), std::string::npos) << warn.out;
}

TEST(ShimConfig, ExitCodeOutOfRangeIsAnError) {
  REQUIRE_APP("vector_add_multi");
  for (const char* v : {"300", "0", "-1", "abc"}) {
    ProcessResult r =
        run_process({app("vector_add_multi")},
                    shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_EXIT_CODE", v}}));
    auto bad = lines_with(r.err, "error HG601");
    ASSERT_EQ(bad.size(), 1u) << v << ": " << r.err;
    EXPECT_NE(bad[0].find("HIPGUARD_EXIT_CODE='" + std::string(v) + "'"), std::string::npos) << bad[0];
    EXPECT_NE(bad[0].find("from 1 to 255"), std::string::npos) << bad[0];
    EXPECT_EQ(r.status, 86) << v << ": the documented fallback, never 0";
  }
  ProcessResult ok =
      run_process({app("vector_add_multi")},
                  shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_EXIT_CODE", "7"}}));
  EXPECT_EQ(ok.status, 7) << ok.err;
}

TEST(ShimConfig, UnparsableTargetNeverMeansUncheckedInStrictMode) {
  REQUIRE_APP("vector_add_gfx90a");
  for (const char* v : {"gfx9422", " gfx942", "gfx942;gfx90a"}) {
    ProcessResult r =
        run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", v}, {"HIPGUARD_MODE", "strict"}}));
    auto bad = lines_with(r.err, "error HG206");
    ASSERT_EQ(bad.size(), 1u) << v << ": " << r.err;
    EXPECT_NE(bad[0].find("'" + std::string(v) + "'"), std::string::npos) << "names the bad item: " << bad[0];
    EXPECT_EQ(r.err.find("HIPGUARD_TARGET not set"), std::string::npos) << r.err;
    EXPECT_EQ(r.status, 86) << v << ": " << r.err;
    EXPECT_EQ(r.out.find("main reached"), std::string::npos) << v << ": the program must not run unchecked";
  }
  // Warn mode: logged, the program runs, and no contradicting "not set".
  ProcessResult warn = run_process({app("vector_add_gfx90a")}, shim_env({{"HIPGUARD_TARGET", "gfx942;gfx90a"}}));
  EXPECT_EQ(warn.status, 0) << warn.err;
  EXPECT_EQ(lines_with(warn.err, "error HG206").size(), 1u) << warn.err;
  auto none = lines_with(warn.err, "note HG204");
  ASSERT_EQ(none.size(), 1u) << warn.err;
  EXPECT_NE(none[0].find("has no valid entry"), std::string::npos) << none[0];
  EXPECT_EQ(warn.err.find("not set"), std::string::npos) << warn.err;
}

TEST(ShimConfig, NumericLogLevelsLikeAmdLogLevel) {
  REQUIRE_APP("vector_add_gfx90a");
  auto run = [](const char* level) {
    return run_process({app("vector_add_gfx90a")},
                       shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_LOG_LEVEL", level}}));
  };
  EXPECT_EQ(run("0").err, "") << "0: off";
  ProcessResult errors = run("1");
  EXPECT_EQ(lines_with(errors.err, "error HG201").size(), 1u) << errors.err;
  EXPECT_EQ(lines_with(errors.err, "registered fat binary").size(), 0u) << errors.err;
  ProcessResult debug = run("4");
  EXPECT_EQ(lines_with(debug.err, "error HG201").size(), 1u) << debug.err;
  EXPECT_GE(lines_with(debug.err, "registered fat binary").size(), 1u) << "4: debug: " << debug.err;
  EXPECT_EQ(lines_with(debug.err, "HG601").size(), 0u) << debug.err;
}

TEST(ShimConfig, StrictExitStatusOnTheRealRuntime) {
  REQUIRE_APP("dyn_lds_gfx90a");
  // Debian's libamdhip64 (no GPU): the refused launch never reaches it; the program ignores it and returns 0.
  ProcessResult r = run_process({app("dyn_lds_gfx90a"), "20000"},
                                shim_env({{"HIPGUARD_TARGET", "gfx90a"}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_NE(r.out.find("hipLaunchKernel(dynamic LDS 20000): 9"), std::string::npos) << r.out;
  EXPECT_EQ(r.status, 86) << r.err;
  EXPECT_EQ(lines_with(r.err, "error HG602").size(), 1u) << r.err;
  ProcessResult own = run_process({app("dyn_lds_gfx90a"), "20000", "3"},
                                  shim_env({{"HIPGUARD_TARGET", "gfx90a"}, {"HIPGUARD_MODE", "strict"}}));
  EXPECT_EQ(own.status, 3) << own.err;
  ProcessResult warn = run_process({app("dyn_lds_gfx90a"), "20000"}, shim_env({{"HIPGUARD_TARGET", "gfx90a"}}));
  EXPECT_EQ(warn.status, 0) << warn.err;
}

TEST(ShimConfig, NonHipProcessesStaySilentWhateverTheSettings) {
  for (std::vector<std::string> argv :
       std::vector<std::vector<std::string>>{{"/bin/true"}, {"/bin/sh", "-c", "echo hello; exit 0"}, {"/bin/false"}}) {
    ProcessResult plain = run_process(argv);
    ProcessResult r = run_process(argv, shim_env({{"HIPGUARD_MODE", "strcit"},
                                                  {"HIPGUARD_EXIT_CODE", "0"},
                                                  {"HIPGUARD_TARGET", "gfx942;x"},
                                                  {"HIPGUARD_FAIL_ON", "warning"}}));
    EXPECT_EQ(r.status, plain.status) << argv[0];
    EXPECT_EQ(r.out, plain.out) << argv[0];
    EXPECT_EQ(r.err, "") << argv[0];
  }
}

// HG210: HSA_TOOLS_LIB names the HotSwap tool and a fat binary holds a gfx1250
// entry besides the gfx942 one; said in-process, and only then, and only where
// the loaded runtime is a HotSwap build (the simulated one says it is; ROCm
// 5.2's real libamdhip64.so.5, like 6.4.3's and 7.2.4's, is not).
TEST(ShimHotSwap, ForwardedEntryIsNamedOnlyWhenTheToolIsEnabled) {
  REQUIRE_CORPUS();
  if (kApps.empty() || !exists(app("module_loader"))) GTEST_SKIP() << "module_loader not built";
  // AITER code objects for each processor, as a fat binary built for both would hold.
  std::string co942, co1250;
  for (const auto& f : corpus_files()) {
    if (co942.empty() && basename_of(f).rfind("gfx942_", 0) == 0) co942 = read_text(f);
    if (co1250.empty() && basename_of(f).rfind("gfx1250_", 0) == 0) co1250 = read_text(f);
  }
  if (co942.empty() || co1250.empty()) GTEST_SKIP() << "the corpus has no gfx942 or no gfx1250 code object";
  const std::string* payload[] = {&co942, &co1250};
  // An uncompressed offload bundle (clang's layout): magic, count, then offset / size / id per entry.
  std::vector<std::string> ids = {"hipv4-amdgcn-amd-amdhsa--gfx942", "hipv4-amdgcn-amd-amdhsa--gfx1250"};
  std::string bundle = "__CLANG_OFFLOAD_BUNDLE__";
  auto u64 = [&](uint64_t v) { bundle.append(reinterpret_cast<const char*>(&v), 8); };
  u64(ids.size());
  size_t table = bundle.size();
  for (const auto& id : ids) table += 24 + id.size();
  uint64_t first = (table + 4095) / 4096 * 4096, second = first + (co942.size() + 4095) / 4096 * 4096;
  for (size_t i = 0; i < ids.size(); ++i) {
    u64(i == 0 ? first : second);
    u64(payload[i]->size());
    u64(ids[i].size());
    bundle += ids[i];
  }
  bundle.resize(first, '\0');
  bundle += co942;
  bundle.resize(second, '\0');
  bundle += co1250;
  char dir[] = "/tmp/hipguard-hotswap-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string path = std::string(dir) + "/both.hipfb";
  {
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    fwrite(bundle.data(), 1, bundle.size(), f);
    fclose(f);
  }
  const std::map<std::string, std::string> sim = {{"LD_LIBRARY_PATH", kSimrt}, {"HIPGUARD_SIM_GPUS", "gfx942"}};
  auto with = [&](std::map<std::string, std::string> env, const std::map<std::string, std::string>& runtime) {
    env.insert(runtime.begin(), runtime.end());
    return shim_env(env);
  };
  ProcessResult on = run_process({app("module_loader"), path},
                                 with({{"HIPGUARD_TARGET", "gfx942"}, {"HSA_TOOLS_LIB", "libhsa-hotswap.so"}}, sim));
  ProcessResult off = run_process({app("module_loader"), path}, with({{"HIPGUARD_TARGET", "gfx942"}}, sim));
  ProcessResult other =
      run_process({app("module_loader"), path},
                  with({{"HIPGUARD_TARGET", "gfx942"}, {"HSA_TOOLS_LIB", "librocprofiler64.so"}}, sim));
  ProcessResult rocm52 = run_process({app("module_loader"), path},
                                     shim_env({{"HIPGUARD_TARGET", "gfx942"}, {"HSA_TOOLS_LIB", "libhsa-hotswap.so"}}));
  unlink(path.c_str());
  rmdir(dir);
  auto hits = lines_with(on.err, "warning HG210 [gfx942:sramecc+:xnack-]");
  ASSERT_EQ(hits.size(), 1u) << on.err;
  EXPECT_NE(hits[0].find("hipv4-amdgcn-amd-amdhsa--gfx1250"), std::string::npos) << hits[0];
  EXPECT_NE(hits[0].find("(hipv4-amdgcn-amd-amdhsa--gfx942)"), std::string::npos) << hits[0];
  EXPECT_NE(hits[0].find("unset HSA_TOOLS_LIB"), std::string::npos) << hits[0];
  EXPECT_EQ(lines_with(off.err, "HG210").size(), 0u) << off.err;
  EXPECT_EQ(lines_with(other.err, "HG210").size(), 0u) << other.err;
  EXPECT_EQ(on.status, off.status) << "a warning changes nothing in warn mode";
  EXPECT_EQ(lines_with(rocm52.err, "HG210").size(), 0u) << "not a HotSwap build: " << rocm52.err;
  EXPECT_NE(rocm52.out.find("hipModuleLoad"), std::string::npos) << "the program ran: " << rocm52.out << rocm52.err;
}

// LD_PRELOAD splits at spaces and colons: hipguard run must never run the
// program unchecked because of where the shim lives.
TEST(CliRun, ShimPathWithASpaceOrAColon) {
  REQUIRE_APP("vector_add_multi");
  for (const char* name : {"/tmp/hipguard shim XXXXXX", "/tmp/hipguard:shim:XXXXXX"}) {
    std::string tmpl = name;
    ASSERT_TRUE(mkdtemp(tmpl.data())) << name;
    std::string dir = tmpl;
    // A copy there cannot be preloaded: refused, loudly, and the program does not run.
    std::string copy = dir + "/libhipguard.so";
    ASSERT_EQ(run_process({"cp", kShim, copy}).status, 0);
    ProcessResult r = run_process({kCli, "run", "--target", "gfx942", "--strict", "--", app("vector_add_multi")},
                                  {{"HIPGUARD_SHIM", copy}});
    EXPECT_EQ(r.status, 2) << dir << ": " << r.err;
    EXPECT_EQ(r.out.find("main reached"), std::string::npos) << "ran unchecked: " << r.out;
    EXPECT_NE(r.err.find("cannot preload the shim"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("space or a colon"), std::string::npos) << r.err;
    // A symlink there to the shim elsewhere works: its target is preloaded.
    std::string link = dir + "/link.so";
    ASSERT_EQ(symlink(kShim.c_str(), link.c_str()), 0);
    ProcessResult via = run_process({kCli, "run", "--target", "gfx942", "--strict", "--", app("vector_add_multi")},
                                    {{"HIPGUARD_SHIM", link}});
    EXPECT_EQ(via.status, 86) << via.err;
    EXPECT_EQ(lines_with(via.err, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u) << via.err;
    unlink(link.c_str());
    unlink(copy.c_str());
    rmdir(dir.c_str());
  }
  // A shim that is not there is refused too (ld.so would only warn and run the program unchecked).
  ProcessResult missing = run_process({kCli, "run", "--strict", "--", app("vector_add_multi")},
                                      {{"HIPGUARD_SHIM", "/nonexistent/libhipguard.so"}});
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_EQ(missing.out.find("main reached"), std::string::npos);
}

TEST(CliRun, OptionsAreValidated) {
  REQUIRE_APP("vector_add_multi");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{{"--target", "gfx9422"},
                                                                             {"--target", " gfx942"},
                                                                             {"--target", "gfx942;gfx90a"},
                                                                             {"--target", "gfx942,gfx90a"},
                                                                             {"--target="},
                                                                             {"--report", ""},
                                                                             {"--stirct"}}) {
    std::vector<std::string> argv = {kCli, "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", app("vector_add_multi")});
    ProcessResult r = run_process(argv);
    EXPECT_EQ(r.status, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err;
    EXPECT_EQ(r.out.find("main reached"), std::string::npos) << r.out;
  }
  // --target=T like check's; the program's exit status passes through (here the strict stop's).
  ProcessResult eq = run_process({kCli, "run", "--target=GFX942", "--strict", "--", app("vector_add_multi")});
  EXPECT_EQ(eq.status, 86) << eq.err;
  ProcessResult code = run_process({kCli, "run", "--target=gfx942", "--strict", "--", app("vector_add_multi")},
                                   {{"HIPGUARD_EXIT_CODE", "9"}});
  EXPECT_EQ(code.status, 9) << code.err;
}
