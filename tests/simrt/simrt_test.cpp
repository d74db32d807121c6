// Tests of the simulated HIP runtime (tests/simrt): its exports and version
// nodes, its decisions on the hipcc-built programs in tests/apps and on the
// real corpus, and its API behaviour called directly on crafted inputs.
#include <gtest/gtest.h>
#include <hip/hip_runtime_api.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim_api.h"
#include "sim_parse.h"

extern char** environ;

namespace fs = std::filesystem;

namespace {

// The in-process (direct API) tests see these simulated devices.
constexpr const char* kDirectGpus = "gfx942:sramecc+:xnack-,gfx950:sramecc+:xnack-,gfx90a:sramecc-:xnack-";
constexpr int kGfx942 = 0, kGfx950 = 1, kGfx90a = 2;

// ---- process runner ---------------------------------------------------------------
struct ProcResult {
  int status = -1;
  std::string out, err;
};

ProcResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<std::string> drop;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      std::string k = kv.substr(0, kv.find('='));
      if (k.rfind("HIPGUARD_", 0) == 0 || k == "LD_PRELOAD" || k == "LD_LIBRARY_PATH" || k == "AMD_LOG_LEVEL")
        drop.push_back(k);
    }
    for (const auto& k : drop) unsetenv(k.c_str());
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    int ready = poll(fds, 2, 60000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      fprintf(stderr, "run: no output from %s for 60 s (or poll failed: %s)\n", argv[0].c_str(), strerror(errno));
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        bufs[i]->append(buf, n);
      }
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::string capture(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

std::map<std::string, std::string> sim_env(const std::string& gpus, const std::string& clr = "") {
  std::map<std::string, std::string> env{{"LD_LIBRARY_PATH", SIMRT_LIB_DIR}};
  if (!gpus.empty()) env["HIPGUARD_SIM_GPUS"] = gpus;
  if (!clr.empty()) env["HIPGUARD_SIM_CLR"] = clr;
  return env;
}

std::string app(const std::string& name) { return std::string(SIMRT_APPS_DIR) + "/" + name; }

#define REQUIRE_APP(name)                                                       \
  do {                                                                          \
    if (std::string(SIMRT_APPS_DIR).empty() || !fs::exists(app(name)))          \
      GTEST_SKIP() << "HIP test program " << (name) << " not built (no hipcc)"; \
  } while (0)

// "hipLaunchKernel: 209 (hipErrorNoBinaryForGpu)" -> 209
int reported(const std::string& out, const std::string& what) {
  std::regex re(what + R"(: (-?\d+) \()");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return -1000;
  return std::stoi(m[1]);
}

// ---- readelf helpers ------------------------------------------------------------------
// name -> version node of defined dynamic symbols ("name@@node" / "name@node").
std::map<std::string, std::string> defined_versions(const std::string& lib) {
  std::map<std::string, std::string> out;
  std::istringstream in(capture(std::string(SIMRT_READELF) + " --dyn-syms -W '" + lib + "'"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    std::string w;
    while (ls >> w) f.push_back(w);
    if (f.size() < 8 || f[6] == "UND" || f[3] != "FUNC") continue;
    std::string sym = f[7];
    size_t at = sym.find('@');
    if (at == std::string::npos) continue;
    std::string node = sym.substr(sym.find_first_not_of('@', at));
    out[sym.substr(0, at)] = node;
  }
  return out;
}

// symbol -> version node of every line of an API table (HG_API / SIM_API).
std::map<std::string, std::string> table_nodes(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::regex re(R"(^(HG|SIM)_API\(([A-Za-z0-9_]+), *(hip_[0-9.]+)[,)])");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re)) out[m[2]] = m[3];
  }
  return out;
}

// Undefined dynamic references "name@node".
std::map<std::string, std::string> undefined_versions(const std::string& bin) {
  std::map<std::string, std::string> out;
  std::istringstream in(capture(std::string(SIMRT_READELF) + " --dyn-syms -W '" + bin + "'"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    std::string w;
    while (ls >> w) f.push_back(w);
    if (f.size() < 8 || f[6] != "UND") continue;
    size_t at = f[7].find('@');
    if (at == std::string::npos) continue;
    out[f[7].substr(0, at)] = f[7].substr(at + 1);
  }
  return out;
}

// ---- crafted inputs ----------------------------------------------------------------------
struct Msgpack {
  std::vector<uint8_t> b;
  void map(uint32_t n) {
    b.push_back(0xde);
    b.push_back(n >> 8);
    b.push_back(n & 0xff);
  }
  void arr(uint32_t n) {
    b.push_back(0xdc);
    b.push_back(n >> 8);
    b.push_back(n & 0xff);
  }
  void str(const std::string& s) {
    b.push_back(0xd9);
    b.push_back(static_cast<uint8_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
  }
  void u(uint64_t v) {
    b.push_back(0xcf);
    for (int i = 7; i >= 0; --i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
};

struct CraftKernel {
  std::string name;
  uint64_t lds;
  uint64_t max_flat = 1024;
};

void put(std::vector<uint8_t>& v, size_t off, uint64_t x, int n) {
  for (int i = 0; i < n; ++i) v[off + i] = static_cast<uint8_t>(x >> (8 * i));
}

// A minimal AMDGPU HSA ELF64 with one NT_AMDGPU_METADATA note.
std::vector<uint8_t> craft_elf(uint32_t e_flags, const std::vector<CraftKernel>& kernels, uint8_t abi = 2) {
  Msgpack m;
  m.map(2);
  m.str("amdhsa.version");
  m.arr(2);
  m.u(1);
  m.u(1);
  m.str("amdhsa.kernels");
  m.arr(static_cast<uint32_t>(kernels.size()));
  for (const auto& k : kernels) {
    m.map(5);
    m.str(".name");
    m.str(k.name);
    m.str(".symbol");
    m.str(k.name + ".kd");
    m.str(".group_segment_fixed_size");
    m.u(k.lds);
    m.str(".max_flat_workgroup_size");
    m.u(k.max_flat);
    m.str(".args");  // something to skip
    m.arr(1);
    m.map(1);
    m.str(".size");
    m.u(8);
  }
  std::vector<uint8_t> note(12 + 8);
  put(note, 0, 7, 4);
  put(note, 4, m.b.size(), 4);
  put(note, 8, 32, 4);
  memcpy(note.data() + 12, "AMDGPU", 7);
  note.insert(note.end(), m.b.begin(), m.b.end());
  while (note.size() % 8) note.push_back(0);

  std::vector<uint8_t> elf(64, 0);
  memcpy(elf.data(),
         "\x7f"
         "ELF",
         4);
  elf[4] = 2;
  elf[5] = 1;
  elf[6] = 1;
  elf[7] = 64;
  elf[8] = abi;
  put(elf, 16, 3, 2);    // ET_DYN
  put(elf, 18, 224, 2);  // EM_AMDGPU
  put(elf, 20, 1, 4);
  put(elf, 48, e_flags, 4);
  put(elf, 52, 64, 2);
  elf.insert(elf.end(), note.begin(), note.end());
  size_t shoff = elf.size();
  put(elf, 40, shoff, 8);
  put(elf, 58, 64, 2);
  put(elf, 60, 2, 2);
  std::vector<uint8_t> sh(128, 0);
  put(sh, 64 + 4, 7, 4);             // SHT_NOTE
  put(sh, 64 + 24, 64, 8);           // offset
  put(sh, 64 + 32, note.size(), 8);  // size
  put(sh, 64 + 48, 4, 8);            // align
  elf.insert(elf.end(), sh.begin(), sh.end());
  return elf;
}

std::vector<uint8_t> craft_bundle(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& entries) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> all = entries;
  all.insert(all.begin(), {"host-x86_64-unknown-linux-gnu-", {}});
  size_t table = 32;
  for (const auto& e : all) table += 24 + e.first.size();
  std::vector<uint8_t> b(32, 0);
  memcpy(b.data(), "__CLANG_OFFLOAD_BUNDLE__", 24);
  put(b, 24, all.size(), 8);
  size_t off = (table + 4095) / 4096 * 4096;
  std::vector<size_t> offs;
  for (const auto& e : all) {
    offs.push_back(e.second.empty() ? table : off);
    if (!e.second.empty()) off = (off + e.second.size() + 4095) / 4096 * 4096;
  }
  for (size_t i = 0; i < all.size(); ++i) {
    size_t p = b.size();
    b.resize(p + 24);
    put(b, p, offs[i], 8);
    put(b, p + 8, all[i].second.size(), 8);
    put(b, p + 16, all[i].first.size(), 8);
    b.insert(b.end(), all[i].first.begin(), all[i].first.end());
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].second.empty()) continue;
    if (b.size() < offs[i]) b.resize(offs[i], 0);
    b.insert(b.end(), all[i].second.begin(), all[i].second.end());
  }
  return b;
}

constexpr uint32_t kAnyAny = 0x500;  // sramecc any | xnack any

struct Wrapper {
  uint32_t magic = 0x48495046;
  uint32_t version = 1;
  const void* binary = nullptr;
  const void* dummy = nullptr;
};

// A registered fat binary with host-pointer keys for its kernels.
struct Registered {
  std::vector<uint8_t> blob;
  Wrapper wrapper;
  void** handle = nullptr;
  std::vector<std::unique_ptr<char>> keys;
  const void* key(size_t i) const { return keys[i].get(); }
};

std::unique_ptr<Registered> register_fatbin(std::vector<uint8_t> blob, const std::vector<std::string>& names) {
  auto r = std::make_unique<Registered>();
  r->blob = std::move(blob);
  r->wrapper.binary = r->blob.data();
  r->handle = __hipRegisterFatBinary(&r->wrapper);
  for (const auto& n : names) {
    r->keys.emplace_back(new char(0));
    __hipRegisterFunction(r->handle, r->keys.back().get(), const_cast<char*>(n.c_str()), n.c_str(), -1, nullptr,
                          nullptr, nullptr, nullptr, nullptr);
  }
  return r;
}

std::string corpus_dir() { return std::string(SIMRT_CORPUS_DIR) + "/aiter"; }

std::vector<std::string> corpus_files() {
  std::vector<std::string> out;
  if (!fs::is_directory(corpus_dir())) return out;
  for (const auto& e : fs::directory_iterator(corpus_dir()))
    if (e.path().extension() == ".co") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// ======================================================================================
// Exports
// ======================================================================================

TEST(Exports, SonameAndSymlink) {
  std::string dyn = capture(std::string(SIMRT_READELF) + " -d '" SIMRT_LIB "'");
  EXPECT_NE(dyn.find("Library soname: [libamdhip64.so.5]"), std::string::npos) << dyn;
  EXPECT_EQ(fs::path(SIMRT_LIB).filename(), "libamdhip64.so.5");
  fs::path link = fs::path(SIMRT_LIB_DIR) / "libamdhip64.so";
  ASSERT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::canonical(link), fs::canonical(SIMRT_LIB));
  // Never the real runtime, hipguard's core or LLVM.
  for (const char* bad : {"amdhip64", "hipguard", "LLVM", "amd_comgr", "hsa-runtime"}) {
    std::istringstream in(dyn);
    std::string line;
    while (std::getline(in, line))
      if (line.find("NEEDED") != std::string::npos) EXPECT_EQ(line.find(bad), std::string::npos) << line;
  }
}

TEST(Exports, VersionNodesMatchRealLibrary) {
  if (std::string(SIMRT_REAL_AMDHIP64).empty()) GTEST_SKIP() << "the real libamdhip64.so.5 is not installed";
  auto mine = defined_versions(SIMRT_LIB);
  auto real = defined_versions(SIMRT_REAL_AMDHIP64);
  ASSERT_GT(mine.size(), 20u);
  ASSERT_GT(real.size(), 100u);
  // Functions newer than ROCm 5.2: the nodes of the API tables (CLR hip_hcc.map.in).
  auto newer = table_nodes(HIPGUARD_API_TABLE);
  for (const char* t : {SIMRT_EXTRA_TABLE, SIMRT_EXPORTS_TABLE})
    for (const auto& [name, node] : table_nodes(t)) newer[name] = node;
  ASSERT_GT(newer.size(), 60u);
  for (const auto& [name, node] : mine) {
    auto r = real.find(name);
    if (r != real.end()) {
      EXPECT_EQ(node, r->second) << name;
    } else {
      auto n = newer.find(name);
      ASSERT_NE(n, newer.end()) << name << " is exported but neither in ROCm 5.2 nor in an API table";
      EXPECT_EQ(node, n->second) << name;
    }
  }
  for (const char* must :
       {"__hipRegisterFatBinary", "__hipRegisterFunction", "__hipUnregisterFatBinary", "__hipPushCallConfiguration",
        "__hipPopCallConfiguration", "hipLaunchKernel", "hipLaunchKernel_spt", "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel", "hipLaunchCooperativeKernel", "hipGetFuncBySymbol", "hipFuncGetAttributes",
        "hipModuleLoad", "hipModuleLoadData", "hipModuleLoadDataEx", "hipModuleGetFunction", "hipModuleUnload"})
    EXPECT_TRUE(mine.count(must)) << must;
}

TEST(Exports, VersionNodeChain) {
  std::string v = capture(std::string(SIMRT_READELF) + " -V -W '" SIMRT_LIB "'");
  // "Name: hip_4.3" followed by "Parent 1: hip_4.2".
  std::regex def(R"(Name: (hip_[0-9.]+)\s*\n\s*0x[0-9a-f]+: Parent 1: (hip_[0-9.]+))");
  std::map<std::string, std::string> parent;
  for (std::sregex_iterator it(v.begin(), v.end(), def), end; it != end; ++it) parent[(*it)[1]] = (*it)[2];
  const std::vector<std::string> chain = {"hip_4.2", "hip_4.3", "hip_4.4", "hip_4.5", "hip_5.0", "hip_5.1",
                                          "hip_5.2", "hip_5.3", "hip_5.5", "hip_5.6", "hip_6.0", "hip_6.1",
                                          "hip_6.2", "hip_6.4", "hip_6.5", "hip_7.1", "hip_7.2"};
  for (size_t i = 1; i < chain.size(); ++i) EXPECT_EQ(parent[chain[i]], chain[i - 1]) << chain[i] << "\n" << v;
  if (!std::string(SIMRT_REAL_AMDHIP64).empty()) {
    // The 5.2 part of the chain is the real library's.
    std::string rv = capture(std::string(SIMRT_READELF) + " -V -W '" SIMRT_REAL_AMDHIP64 "'");
    for (std::sregex_iterator it(rv.begin(), rv.end(), def), end; it != end; ++it)
      EXPECT_EQ(parent[(*it)[1]], (*it)[2]) << (*it)[1];
  }
}

// Everything hipguard interposes (interpose/hip_api.def) is exported by the
// simulator under the same node, and so is every line of simrt_extra.def.
TEST(Exports, EveryApiTableLineIsExported) {
  auto mine = defined_versions(SIMRT_LIB);
  for (const char* table : {HIPGUARD_API_TABLE, SIMRT_EXTRA_TABLE}) {
    auto lines = table_nodes(table);
    ASSERT_GT(lines.size(), 20u) << table;
    for (const auto& [name, node] : lines) {
      auto it = mine.find(name);
      ASSERT_NE(it, mine.end()) << name << " (" << table << ") is not exported by " << SIMRT_LIB;
      EXPECT_EQ(it->second, node) << name;
    }
  }
}

TEST(Exports, EverythingTheAppsImportIsProvided) {
  if (std::string(SIMRT_APPS_DIR).empty()) GTEST_SKIP() << "HIP test programs not built (no hipcc)";
  auto mine = defined_versions(SIMRT_LIB);
  int checked = 0;
  for (const char* a : {"vector_add_gfx90a", "vector_add_gfx940", "vector_add_multi", "vector_add_xnack_on",
                        "big_lds_gfx90a", "libkernels_lib.so", "module_loader", "api_paths", "graph_host"}) {
    if (!fs::exists(app(a))) continue;
    for (const auto& [name, node] : undefined_versions(app(a))) {
      if (node.rfind("hip_", 0) != 0) continue;
      ++checked;
      auto it = mine.find(name);
      ASSERT_NE(it, mine.end()) << a << " imports " << name << "@" << node;
      EXPECT_EQ(it->second, node) << a << " imports " << name;
    }
  }
  EXPECT_GT(checked, 0);
}

// Every function HIP 6.4's libamdhip64.so.6 exports (hip_6.4_exports.def,
// generated from it) is exported by the simulator under the same node, so a
// program built against the real runtime never fails with a symbol lookup error.
TEST(Exports, EveryHip64ExportIsExported) {
  auto mine = defined_versions(SIMRT_LIB);
  auto real = table_nodes(SIMRT_EXPORTS_TABLE);
  ASSERT_GT(real.size(), 400u) << SIMRT_EXPORTS_TABLE;
  for (const auto& [name, node] : real) {
    auto it = mine.find(name);
    EXPECT_NE(it, mine.end()) << name << "@" << node << " is not exported by " << SIMRT_LIB;
    if (it != mine.end()) EXPECT_EQ(it->second, node) << name;
  }
}

// A plain program that builds and launches a graph (graph_host, linked against
// libamdhip64): what the simulator simulates succeeds, the rest says hipErrorNotSupported.
TEST(Apps, GraphProgramRunsOnTheSimulator) {
  REQUIRE_APP("graph_host");
  ProcResult r = run({app("graph_host")}, sim_env("gfx90a:sramecc-:xnack-"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("graph_host: done"), std::string::npos) << r.out;
  for (const char* api : {"hipStreamCreate", "hipGraphCreate", "hipGraphInstantiate", "hipGraphLaunch",
                          "hipStreamSynchronize", "hipGraphExecDestroy", "hipGraphDestroy", "hipStreamDestroy"})
    EXPECT_EQ(reported(r.out, api), hipSuccess) << api << "\n" << r.out;
  for (const char* api : {"hipGraphAddEmptyNode", "hipGraphGetNodes"})
    EXPECT_EQ(reported(r.out, api), hipErrorNotSupported) << api << "\n" << r.out;
}

// ======================================================================================
// hipcc-built programs under the simulator
// ======================================================================================

TEST(Apps, NoDevicesBehavesLikeRocm52WithoutGpu) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcResult r = run({app("vector_add_gfx90a")}, sim_env(""));
  ASSERT_EQ(r.status, 0) << r.err;
  // What the installed ROCm 5.2 prints on this GPU-less machine.
  EXPECT_EQ(reported(r.out, "hipMalloc"), hipErrorInvalidDevice) << r.out;
  EXPECT_EQ(reported(r.out, "hipLaunchKernel"), hipErrorInvalidDevice) << r.out;
  EXPECT_TRUE(r.err.empty()) << "the simulator must be silent without HIPGUARD_SIM_LOG: " << r.err;
}

TEST(Apps, VectorAddGfx90aLaunchesOnGfx90a) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcResult r = run({app("vector_add_gfx90a")}, sim_env("gfx90a:sramecc-:xnack-"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(reported(r.out, "hipMalloc"), hipSuccess) << r.out;
  EXPECT_EQ(reported(r.out, "hipLaunchKernel"), hipSuccess) << r.out;
  EXPECT_NE(r.out.find("hipLaunchKernel: 0 (hipSuccess)"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(Apps, VectorAddGfx90aFailsOnGfx942) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcResult r = run({app("vector_add_gfx90a")}, sim_env("gfx942:sramecc+:xnack-"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(reported(r.out, "hipMalloc"), hipSuccess) << r.out;
  // CLR-6.2 ihipLaunchKernel: hipErrorNoBinaryForGpu (reference §4, §6).
  EXPECT_NE(r.out.find("hipLaunchKernel: 209 (hipErrorNoBinaryForGpu)"), std::string::npos) << r.out;
}

TEST(Apps, VectorAddGfx90aFailsOnGfx942ClrNew) {
  REQUIRE_APP("vector_add_gfx90a");
  ProcResult r = run({app("vector_add_gfx90a")}, sim_env("gfx942:sramecc+:xnack-", "new"));
  ASSERT_EQ(r.status, 0) << r.err;
  // CLR-new: digest error on first use, passed through by hipLaunchKernel.
  EXPECT_EQ(reported(r.out, "hipLaunchKernel"), hipErrorInvalidImage) << r.out;
}

TEST(Apps, ClrNewDigestStopsAtFirstDeviceOnly) {
  REQUIRE_APP("vector_add_gfx90a");
  // Device 0 (current) has a code object: the digest succeeds and the launch too.
  ProcResult ok = run({app("vector_add_gfx90a")}, sim_env("gfx90a:sramecc-:xnack-,gfx942:sramecc+:xnack-", "new"));
  EXPECT_EQ(reported(ok.out, "hipLaunchKernel"), hipSuccess) << ok.out;
  // Device 0 has none: hipErrorInvalidImage even though device 1 would match.
  ProcResult bad = run({app("vector_add_gfx90a")}, sim_env("gfx942:sramecc+:xnack-,gfx90a:sramecc-:xnack-", "new"));
  EXPECT_EQ(reported(bad.out, "hipLaunchKernel"), hipErrorInvalidImage) << bad.out;
  ProcResult bad62 = run({app("vector_add_gfx90a")}, sim_env("gfx942:sramecc+:xnack-,gfx90a:sramecc-:xnack-"));
  EXPECT_EQ(reported(bad62.out, "hipLaunchKernel"), hipErrorNoBinaryForGpu) << bad62.out;
}

TEST(Apps, VectorAddMultiFeatureRule) {
  REQUIRE_APP("vector_add_multi");
  // The bundle has gfx90a:xnack-, gfx940 and gfx1030.
  struct Case {
    const char* gpu;
    int expect;
  } cases[] = {
      {"gfx90a:sramecc+:xnack+", hipErrorNoBinaryForGpu},  // xnack- entry must match exactly
      {"gfx90a:sramecc-:xnack+", hipErrorNoBinaryForGpu},
      {"gfx90a:sramecc+:xnack-", hipSuccess},  // sramecc unspecified matches either value
      {"gfx90a:sramecc-:xnack-", hipSuccess},
      {"gfx940:sramecc+:xnack+", hipSuccess},
      {"gfx1030", hipSuccess},
      {"gfx942:sramecc+:xnack-", hipErrorNoBinaryForGpu},
      {"gfx1100", hipErrorNoBinaryForGpu},
  };
  for (const auto& c : cases) {
    ProcResult r = run({app("vector_add_multi")}, sim_env(c.gpu));
    EXPECT_EQ(reported(r.out, "hipLaunchKernel"), c.expect) << c.gpu << "\n" << r.out << r.err;
  }
}

TEST(Apps, XnackOnBuild) {
  REQUIRE_APP("vector_add_xnack_on");
  ProcResult on = run({app("vector_add_xnack_on")}, sim_env("gfx90a:sramecc-:xnack+"));
  EXPECT_EQ(reported(on.out, "hipLaunchKernel"), hipSuccess) << on.out;
  ProcResult off = run({app("vector_add_xnack_on")}, sim_env("gfx90a:sramecc-:xnack-"));
  EXPECT_EQ(reported(off.out, "hipLaunchKernel"), hipErrorNoBinaryForGpu) << off.out;
}

TEST(Apps, Gfx940Build) {
  REQUIRE_APP("vector_add_gfx940");
  ProcResult ok = run({app("vector_add_gfx940")}, sim_env("gfx940:sramecc+:xnack-"));
  EXPECT_EQ(reported(ok.out, "hipLaunchKernel"), hipSuccess) << ok.out;
  // gfx942 is a different processor: no code object.
  ProcResult bad = run({app("vector_add_gfx940")}, sim_env("gfx942:sramecc+:xnack-"));
  EXPECT_EQ(reported(bad.out, "hipLaunchKernel"), hipErrorNoBinaryForGpu) << bad.out;
}

TEST(Apps, BigLdsFitsGfx90a) {
  REQUIRE_APP("big_lds_gfx90a");
  ProcResult r = run({app("big_lds_gfx90a")}, sim_env("gfx90a:sramecc+:xnack-", ""));
  EXPECT_EQ(reported(r.out, "hipLaunchKernel"), hipSuccess) << r.out;
  // The simulator saw the 48 KiB of static LDS in the metadata.
  auto env = sim_env("gfx90a:sramecc+:xnack-");
  env["HIPGUARD_SIM_LOG"] = "1";
  ProcResult logged = run({app("big_lds_gfx90a")}, env);
  EXPECT_NE(logged.err.find("simrt: "), std::string::npos) << logged.err;
  EXPECT_NE(logged.err.find("_Z7lds_48kPf"), std::string::npos) << logged.err;
}

TEST(Apps, LogOnlyWhenAsked) {
  REQUIRE_APP("vector_add_gfx90a");
  auto env = sim_env("gfx942:sramecc+:xnack-");
  env["HIPGUARD_SIM_LOG"] = "1";
  ProcResult r = run({app("vector_add_gfx90a")}, env);
  EXPECT_NE(r.err.find("simrt: "), std::string::npos);
  EXPECT_NE(r.err.find("no compatible code object for amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"), std::string::npos)
      << r.err;
  std::istringstream in(r.err);
  std::string line;
  while (std::getline(in, line)) EXPECT_EQ(line.rfind("simrt: ", 0), 0u) << line;
  // Same stdout as without logging.
  ProcResult quiet = run({app("vector_add_gfx90a")}, sim_env("gfx942:sramecc+:xnack-"));
  EXPECT_EQ(r.out, quiet.out);
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
}

TEST(Apps, DlopenedHipLibrary) {
  REQUIRE_APP("libkernels_lib.so");
  REQUIRE_APP("dlopen_host");
  for (const auto& [gpu, want] : {std::pair<std::string, hipError_t>{"gfx90a:sramecc-:xnack-", hipSuccess},
                                  {"gfx942:sramecc+:xnack-", hipErrorNoBinaryForGpu}}) {
    ProcResult r = run({app("dlopen_host"), app("libkernels_lib.so")}, sim_env(gpu));
    const std::string seen = "on " + gpu + ": status " + std::to_string(r.status) + "\nstdout: " + r.out +
                             "\nstderr: " + r.err.substr(0, 4000);
    EXPECT_EQ(r.status, 0) << seen;
    EXPECT_NE(r.out.find("kernels_lib_run returned " + std::to_string(want)), std::string::npos) << seen;
  }
}

TEST(Apps, ModuleLoaderHipfb) {
  REQUIRE_APP("module_loader");
  REQUIRE_APP("vector_add_gfx90a.hipfb");
  const std::string k = "_Z10vector_addPKfS0_Pfi";
  ProcResult ok =
      run({app("module_loader"), "--kernel", k, app("vector_add_gfx90a.hipfb")}, sim_env("gfx90a:sramecc-:xnack-"));
  EXPECT_EQ(reported(ok.out, "hipModuleLoad [^:]*"), hipSuccess) << ok.out;
  EXPECT_EQ(reported(ok.out, "hipModuleGetFunction " + k), hipSuccess) << ok.out;
  ProcResult unknown = run({app("module_loader"), "--kernel", "no_such_kernel", app("vector_add_gfx90a.hipfb")},
                           sim_env("gfx90a:sramecc-:xnack-"));
  EXPECT_EQ(reported(unknown.out, "hipModuleGetFunction no_such_kernel"), hipErrorNotFound) << unknown.out;
  ProcResult bad = run({app("module_loader"), app("vector_add_gfx90a.hipfb")}, sim_env("gfx942:sramecc+:xnack-"));
  EXPECT_EQ(reported(bad.out, "hipModuleLoad [^:]*"), hipErrorNoBinaryForGpu) << bad.out;
  ProcResult bad_new =
      run({app("module_loader"), app("vector_add_gfx90a.hipfb")}, sim_env("gfx942:sramecc+:xnack-", "new"));
  EXPECT_EQ(reported(bad_new.out, "hipModuleLoad [^:]*"), hipErrorInvalidImage) << bad_new.out;
  if (fs::exists(app("vector_add_multi.hipfb"))) {
    ProcResult multi = run({app("module_loader"), "--kernel", k, app("vector_add_multi.hipfb")}, sim_env("gfx1030"));
    EXPECT_EQ(reported(multi.out, "hipModuleGetFunction " + k), hipSuccess) << multi.out;
  }
}

TEST(Apps, ModuleLoaderMissingAndBadFiles) {
  REQUIRE_APP("module_loader");
  fs::path dir = fs::temp_directory_path() / ("simrt_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "empty.co").close();
  std::ofstream(dir / "garbage.co") << "this is not a code object, not even close";
  ProcResult r = run(
      {app("module_loader"), (dir / "missing.co").string(), (dir / "empty.co").string(), (dir / "garbage.co").string()},
      sim_env("gfx942:sramecc+:xnack-"));
  fs::remove_all(dir);
  EXPECT_EQ(reported(r.out, "missing.co"), hipErrorFileNotFound) << r.out;
  EXPECT_EQ(reported(r.out, "empty.co"), hipErrorInvalidImage) << r.out;
  EXPECT_EQ(reported(r.out, "garbage.co"), hipErrorInvalidImage) << r.out;
  EXPECT_NE(r.out.find("module_loader: 0 loaded"), std::string::npos) << r.out;
}

void corpus_on(const std::string& gpu, const std::string& clr, const std::string& loads_prefix) {
  auto files = corpus_files();
  std::vector<std::string> argv = {app("module_loader")};
  argv.insert(argv.end(), files.begin(), files.end());
  ProcResult r = run(argv, sim_env(gpu, clr));
  ASSERT_EQ(r.status, 0) << r.err;
  int loaded = 0;
  for (const auto& f : files) {
    std::string base = fs::path(f).filename();
    int code = reported(r.out, "hipModuleLoad [^\n]*" + std::regex_replace(base, std::regex(R"([.])"), R"(\.)"));
    if (base.rfind(loads_prefix, 0) == 0) {
      EXPECT_EQ(code, hipSuccess) << base << " on " << gpu;
      ++loaded;
    } else {
      EXPECT_EQ(code, hipErrorNoBinaryForGpu) << base << " on " << gpu;
    }
  }
  EXPECT_NE(r.out.find("module_loader: " + std::to_string(loaded) + " loaded"), std::string::npos) << r.out;
  EXPECT_GT(loaded, 0);
}

TEST(Apps, CorpusOnGfx942) {
  REQUIRE_APP("module_loader");
  if (corpus_files().empty()) GTEST_SKIP() << "corpus absent: " << corpus_dir();
  corpus_on("gfx942:sramecc+:xnack-", "", "gfx942_");
  corpus_on("gfx942:sramecc-:xnack+", "new", "gfx942_");  // the corpus declares sramecc/xnack "any"
}

TEST(Apps, CorpusOnGfx950AndGfx1250) {
  REQUIRE_APP("module_loader");
  if (corpus_files().empty()) GTEST_SKIP() << "corpus absent: " << corpus_dir();
  corpus_on("gfx950:sramecc+:xnack-", "", "gfx950_");
  corpus_on("gfx1250", "", "gfx1250_");
}

TEST(Apps, CorpusKernelLookup) {
  REQUIRE_APP("module_loader");
  if (corpus_files().empty()) GTEST_SKIP() << "corpus absent: " << corpus_dir();
  for (const auto& f : corpus_files()) {
    if (fs::path(f).filename().string().rfind("gfx942_", 0) != 0) continue;
    auto bytes = read_file(f);
    simrt::CodeObjectInfo info;
    std::string err;
    ASSERT_TRUE(simrt::parse_code_object(bytes.data(), bytes.size(), &info, &err)) << f << ": " << err;
    ASSERT_FALSE(info.kernels.empty()) << f;
    const std::string k = info.kernels[0].name;
    ProcResult r = run({app("module_loader"), "--kernel", k, f}, sim_env("gfx942:sramecc+:xnack-"));
    EXPECT_EQ(reported(r.out, "hipModuleGetFunction " + std::regex_replace(k, std::regex(R"([.$])"), R"(\$&)")),
              hipSuccess)
        << r.out;
    break;
  }
}

// ======================================================================================
// Parser (the simulator's own, independent of hipguard's core)
// ======================================================================================

TEST(Parse, TargetIds) {
  auto t = simrt::parse_target_id("gfx942:sramecc+:xnack-");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->processor, "gfx942");
  EXPECT_EQ(t->sramecc, '+');
  EXPECT_EQ(t->xnack, '-');
  EXPECT_EQ(t->str(), "gfx942:sramecc+:xnack-");
  EXPECT_FALSE(simrt::parse_target_id("gfx942:xnack-:xnack+"));
  EXPECT_FALSE(simrt::parse_target_id("gfx942:foo+"));
  EXPECT_FALSE(simrt::parse_target_id(":xnack+"));
  EXPECT_FALSE(simrt::parse_target_id("gfx942:xnack"));
  auto g = simrt::hip_entry_target("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->processor, "gfx10-3-generic");
  EXPECT_FALSE(simrt::hip_entry_target("host-x86_64-unknown-linux-gnu-"));
  EXPECT_FALSE(simrt::hip_entry_target("openmp-amdgcn-amd-amdhsa--gfx90a"));
  simrt::TargetId dev{"gfx90a", '+', '-'};
  EXPECT_TRUE(simrt::features_compatible({"gfx90a", 0, 0}, dev));
  EXPECT_TRUE(simrt::features_compatible({"gfx90a", 0, '-'}, dev));
  EXPECT_FALSE(simrt::features_compatible({"gfx90a", 0, '+'}, dev));
  EXPECT_FALSE(simrt::features_compatible({"gfx90a", '-', 0}, dev));
}

TEST(Parse, ProcessorTable) {
  EXPECT_EQ(simrt::find_processor_by_mach(0x3f)->name, std::string("gfx90a"));
  EXPECT_EQ(simrt::find_processor_by_mach(0x4c)->name, std::string("gfx942"));
  EXPECT_EQ(simrt::find_processor_by_mach(0x4f)->lds, 163840u);
  EXPECT_EQ(simrt::find_processor("gfx1250")->lds, 327680u);
  EXPECT_EQ(simrt::find_processor("gfx942")->lds, 65536u);
  EXPECT_EQ(simrt::find_processor_by_mach(0x5f)->name, std::string("gfx9-4-generic"));
  EXPECT_EQ(simrt::find_processor_by_mach(0x40)->name, std::string("gfx940"));
}

TEST(Parse, CraftedElfAndBundle) {
  auto elf = craft_elf(0x4c | 0xc00 | 0x200, {{"k1", 1024}, {"k2", 70000}});
  simrt::CodeObjectInfo info;
  std::string err;
  ASSERT_TRUE(simrt::parse_code_object(elf.data(), elf.size(), &info, &err)) << err;
  EXPECT_EQ(info.target.str(), "gfx942:sramecc+:xnack-");
  ASSERT_EQ(info.kernels.size(), 2u);
  EXPECT_EQ(info.kernels[1].name, "k2");
  EXPECT_EQ(info.kernels[1].symbol, "k2.kd");
  EXPECT_EQ(info.kernels[1].group_segment_fixed_size, 70000u);
  EXPECT_EQ(simrt::elf_size(elf.data(), elf.size()), elf.size());
  auto b = craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", elf}});
  std::vector<simrt::BundleEntry> entries;
  ASSERT_TRUE(simrt::parse_bundle(b.data(), b.size(), &entries, &err)) << err;
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].id, "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_EQ(entries[1].size, elf.size());
  EXPECT_EQ(entries[1].offset % 4096, 0u);
}

TEST(Parse, CorpusMetadata) {
  auto files = corpus_files();
  if (files.empty()) GTEST_SKIP() << "corpus absent: " << corpus_dir();
  bool saw_160k = false;
  for (const auto& f : files) {
    auto bytes = read_file(f);
    simrt::CodeObjectInfo info;
    std::string err;
    ASSERT_TRUE(simrt::parse_code_object(bytes.data(), bytes.size(), &info, &err)) << f << ": " << err;
    ASSERT_TRUE(info.processor) << f;
    EXPECT_EQ(fs::path(f).filename().string().rfind(std::string(info.processor->name) + "_", 0), 0u) << f;
    EXPECT_TRUE(info.has_metadata) << f;
    EXPECT_FALSE(info.kernels.empty()) << f;
    for (const auto& k : info.kernels) {
      EXPECT_FALSE(k.name.empty()) << f;
      if (k.group_segment_fixed_size == 163840) saw_160k = true;
    }
  }
  EXPECT_TRUE(saw_160k) << "the corpus README promises 160 KiB kernels";
}

TEST(Parse, MutatedInputsNeverCrash) {
  auto elf = craft_elf(0x4c | 0x500, {{"k1", 1024}, {"k2", 70000}});
  auto bundle = craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", elf}, {"hipv4-amdgcn-amd-amdhsa--gfx90a", elf}});
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> v = (iter % 2) ? elf : bundle;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) v[rng() % v.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) v.resize(rng() % v.size());
    std::string err;
    simrt::CodeObjectInfo info;
    simrt::parse_code_object(v.data(), v.size(), &info, &err);
    simrt::elf_size(v.data(), v.size());
    std::vector<simrt::BundleEntry> entries;
    if (simrt::parse_bundle(v.data(), v.size(), &entries, &err))
      for (const auto& e : entries) {
        if (!e.size) continue;  // empty entries (the host one) are never read
        ASSERT_LE(e.offset + e.size, v.size());
        simrt::parse_code_object(v.data() + e.offset, e.size, &info, &err);
      }
    std::vector<simrt::KernelInfo> ks;
    simrt::parse_metadata_msgpack(v.data(), v.size(), &ks, &err);
  }
}

// ======================================================================================
// Direct API calls (this process links the simulator; devices = kDirectGpus)
// ======================================================================================

class Direct : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(hipSetDevice(kGfx942), hipSuccess);
    (void)hipGetLastError();
  }
};

TEST_F(Direct, Devices) {
  int n = 0;
  EXPECT_EQ(hipGetDeviceCount(&n), hipSuccess);
  EXPECT_EQ(n, 3);
  hipDeviceProp_t p;
  ASSERT_EQ(hipGetDeviceProperties(&p, kGfx950), hipSuccess);
  EXPECT_STREQ(p.gcnArchName, "gfx950:sramecc+:xnack-");
  EXPECT_EQ(p.sharedMemPerBlock, 163840u);
  EXPECT_EQ(hipSetDevice(3), hipErrorInvalidDevice);
  int d = -1;
  EXPECT_EQ(hipGetDevice(&d), hipSuccess);
  EXPECT_EQ(d, kGfx942);
  EXPECT_STREQ(hipGetErrorName(hipErrorNoBinaryForGpu), "hipErrorNoBinaryForGpu");
  EXPECT_STREQ(hipGetErrorString(hipErrorIllegalState), "hipErrorIllegalState");
}

TEST_F(Direct, MemoryAndLastError) {
  void* p = nullptr;
  ASSERT_EQ(hipMalloc(&p, 64), hipSuccess);
  char src[64] = "hello";
  EXPECT_EQ(hipMemcpy(p, src, sizeof src, hipMemcpyHostToDevice), hipSuccess);
  char dst[64] = {};
  EXPECT_EQ(hipMemcpy(dst, p, sizeof dst, hipMemcpyDeviceToHost), hipSuccess);
  EXPECT_STREQ(dst, "hello");
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(hipFree(p), hipSuccess);
  EXPECT_EQ(hipFree(src), hipErrorInvalidValue);
  // Sticky: a later success does not clear it; hipGetLastError does.
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(hipPeekAtLastError(), hipErrorInvalidValue);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidValue);
  EXPECT_EQ(hipGetLastError(), hipSuccess);
}

TEST_F(Direct, CallConfiguration) {
  EXPECT_EQ(__hipPushCallConfiguration(dim3(4, 2, 1), dim3(64, 1, 1), 128, nullptr), hipSuccess);
  dim3 g, b;
  size_t shm = 0;
  hipStream_t s = reinterpret_cast<hipStream_t>(1);
  EXPECT_EQ(__hipPopCallConfiguration(&g, &b, &shm, &s), hipSuccess);
  EXPECT_EQ(g.x, 4u);
  EXPECT_EQ(g.y, 2u);
  EXPECT_EQ(b.x, 64u);
  EXPECT_EQ(shm, 128u);
  EXPECT_EQ(s, nullptr);
}

TEST_F(Direct, ModuleLaunchLdsRules) {
  auto elf = craft_elf(0x4c | kAnyAny, {{"small", 1024, 256}, {"big", 70000}});
  hipModule_t m = nullptr;
  ASSERT_EQ(hipModuleLoadData(&m, elf.data()), hipSuccess);  // excess LDS is not a load error
  hipFunction_t small = nullptr, big = nullptr;
  ASSERT_EQ(hipModuleGetFunction(&small, m, "small"), hipSuccess);
  EXPECT_EQ(hipModuleGetFunction(&big, m, "nope"), hipErrorNotFound);
  EXPECT_EQ(hipModuleGetFunction(&big, m, ""), hipErrorInvalidValue);
  EXPECT_EQ(hipModuleGetFunction(&big, nullptr, "big"), hipErrorInvalidResourceHandle);
  ASSERT_EQ(hipModuleGetFunction(&big, m, "big"), hipSuccess);

  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), hipSuccess);
  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 64, 1, 1, 65536, nullptr, nullptr, nullptr), hipSuccess);
  // Dynamic LDS above the device's: hipErrorInvalidValue (module path).
  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 64, 1, 1, 65537, nullptr, nullptr, nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipExtModuleLaunchKernel(small, 64, 1, 1, 64, 1, 1, 65537, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
            hipErrorInvalidValue);
  EXPECT_EQ(hipModuleLaunchCooperativeKernel(small, 1, 1, 1, 64, 1, 1, 65537, nullptr, nullptr),
            hipErrorCooperativeLaunchTooLarge);
  // Static LDS above the device's: hipErrorIllegalState at dispatch.
  EXPECT_EQ(hipModuleLaunchKernel(big, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), hipErrorIllegalState);
  EXPECT_EQ(hipExtModuleLaunchKernel(big, 64, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
            hipErrorIllegalState);
  // Launch configuration.
  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 2048, 1, 1, 0, nullptr, nullptr, nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 512, 1, 1, 0, nullptr, nullptr, nullptr), hipErrorLaunchFailure);
  void* params[1] = {nullptr};
  void* extra[1] = {nullptr};
  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 64, 1, 1, 0, nullptr, params, extra), hipErrorInvalidValue);
  EXPECT_EQ(hipModuleUnload(m), hipSuccess);
  EXPECT_EQ(hipModuleLaunchKernel(small, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr),
            hipErrorInvalidResourceHandle);
  EXPECT_EQ(hipModuleUnload(m), hipErrorInvalidResourceHandle);
}

TEST_F(Direct, Gfx950LdsLimit) {
  auto elf = craft_elf(0x4f | kAnyAny, {{"fits", 163840}, {"over", 163841}});
  hipModule_t m = nullptr;
  EXPECT_EQ(hipModuleLoadData(&m, elf.data()), hipErrorNoBinaryForGpu);  // on gfx942
  ASSERT_EQ(hipSetDevice(kGfx950), hipSuccess);
  ASSERT_EQ(hipModuleLoadDataEx(&m, elf.data(), 0, nullptr, nullptr), hipSuccess);
  hipFunction_t fits = nullptr, over = nullptr;
  ASSERT_EQ(hipModuleGetFunction(&fits, m, "fits"), hipSuccess);
  ASSERT_EQ(hipModuleGetFunction(&over, m, "over"), hipSuccess);
  EXPECT_EQ(hipModuleLaunchKernel(fits, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), hipSuccess);
  EXPECT_EQ(hipModuleLaunchKernel(over, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), hipErrorIllegalState);
  EXPECT_EQ(hipModuleUnload(m), hipSuccess);
}

TEST_F(Direct, ModuleLoadBundles) {
  auto e90a = craft_elf(0x3f | 0x200 | 0x400, {{"k", 0}});  // gfx90a, xnack-, sramecc any
  auto e942 = craft_elf(0x4c | kAnyAny, {{"k", 0}});
  auto b = craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", e90a}});
  hipModule_t m = nullptr;
  EXPECT_EQ(hipModuleLoadData(&m, b.data()), hipErrorNoBinaryForGpu);
  ASSERT_EQ(hipSetDevice(kGfx90a), hipSuccess);
  ASSERT_EQ(hipModuleLoadData(&m, b.data()), hipSuccess);
  EXPECT_EQ(hipModuleUnload(m), hipSuccess);
  // The entry ID says gfx90a but the ELF is gfx942: chosen, then refused at
  // program build (hipErrorNoBinaryForGpu).
  auto lie = craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", e942}});
  EXPECT_EQ(hipModuleLoadData(&m, lie.data()), hipErrorNoBinaryForGpu);
  // A generic code object is not accepted by the CLR-6.2 model.
  auto gen = craft_elf(0x5f | kAnyAny | (1u << 24), {{"k", 0}}, 4);
  ASSERT_EQ(hipSetDevice(kGfx942), hipSuccess);
  EXPECT_EQ(hipModuleLoadData(&m, gen.data()), hipErrorNoBinaryForGpu);
  auto genb = craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", gen}});
  EXPECT_EQ(hipModuleLoadData(&m, genb.data()), hipErrorNoBinaryForGpu);
  // Not a code object at all.
  const char junk[128] = "junk";
  EXPECT_EQ(hipModuleLoadData(&m, junk), hipErrorInvalidImage);
  EXPECT_EQ(hipModuleLoad(&m, "/nonexistent/simrt.co"), hipErrorFileNotFound);
  EXPECT_EQ(hipModuleLoad(nullptr, "/nonexistent/simrt.co"), hipErrorInvalidValue);
}

TEST_F(Direct, StaticRegistrationIsLazyAndFirstMatchWins) {
  // Registration of garbage still returns a handle: nothing is parsed yet.
  std::vector<uint8_t> junk(256, 0x5a);
  auto bad = register_fatbin(junk, {"k"});
  EXPECT_NE(bad->handle, nullptr);
  // At first use: invalid image -> CLR-6.2 hipLaunchKernel reports
  // hipErrorInvalidDeviceFunction (anything but NoBinaryForGpu).
  EXPECT_EQ(hipLaunchKernel(bad->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidDeviceFunction);
  __hipUnregisterFatBinary(bad->handle);

  // A bad wrapper is refused at registration, like CLR.
  Registered w;
  w.wrapper.magic = 0x12345678;
  w.wrapper.binary = junk.data();
  EXPECT_EQ(__hipRegisterFatBinary(&w.wrapper), nullptr);

  // First compatible entry in file order wins, not the most specific.
  auto any = craft_elf(0x4c | kAnyAny, {{"k", 100}});
  auto exact = craft_elf(0x4c | 0xc00 | 0x200, {{"k", 200}});
  auto r = register_fatbin(craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", any},
                                         {"hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", exact}}),
                           {"k"});
  hipFuncAttributes a{};
  ASSERT_EQ(hipFuncGetAttributes(&a, r->key(0)), hipSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 100u);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, 65536 - 100);
  __hipUnregisterFatBinary(r->handle);
  EXPECT_EQ(hipLaunchKernel(r->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidDeviceFunction);
}

// CLR StatCO::RegisterFunction keeps a stub's first registration; the stub
// leaves with that fat binary (RemoveFatBinary), the dropped one does not return.
TEST_F(Direct, AStubRegisteredAgainKeepsItsFirstRegistration) {
  auto fits = craft_elf(0x4c | kAnyAny, {{"_Z1kv", 512}});
  auto too_big = craft_elf(0x4c | kAnyAny, {{"_Z1kv", 70000}});
  auto first = register_fatbin(craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", fits}}), {"_Z1kv"});
  auto second = register_fatbin(craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", too_big}}), {});
  const void* k = first->key(0);
  __hipRegisterFunction(second->handle, k, const_cast<char*>("_Z1kv"), "_Z1kv", -1, nullptr, nullptr, nullptr, nullptr,
                        nullptr);
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(64), nullptr, 0, nullptr), hipSuccess);
  __hipUnregisterFatBinary(first->handle);
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidDeviceFunction);
  __hipUnregisterFatBinary(second->handle);
}

TEST_F(Direct, StaticLaunchRules) {
  auto e942 = craft_elf(0x4c | kAnyAny, {{"_Z5smallv", 512}, {"_Z3bigv", 70000}});
  auto e90a = craft_elf(0x3f | 0x300 | 0x400, {{"_Z5smallv", 512}, {"_Z3bigv", 512}});
  auto r = register_fatbin(
      craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", e942}, {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", e90a}}),
      {"_Z5smallv", "_Z3bigv", "_Z7missingv"});
  const void* small = r->key(0);
  const void* big = r->key(1);
  const void* missing = r->key(2);
  EXPECT_EQ(hipLaunchKernel(small, dim3(2), dim3(64), nullptr, 0, nullptr), hipSuccess);
  EXPECT_EQ(hipLaunchKernel_spt(small, dim3(2), dim3(64), nullptr, 0, nullptr), hipSuccess);
  EXPECT_EQ(hipLaunchKernel(big, dim3(2), dim3(64), nullptr, 0, nullptr), hipErrorIllegalState);
  EXPECT_EQ(hipGetLastError(), hipErrorIllegalState);
  EXPECT_EQ(hipLaunchKernel(small, dim3(2), dim3(64), nullptr, 65537, nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipLaunchKernel(small, dim3(2), dim3(2048), nullptr, 0, nullptr), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipLaunchCooperativeKernel(small, dim3(2), dim3(64), nullptr, 65537, nullptr),
            hipErrorCooperativeLaunchTooLarge);
  EXPECT_EQ(hipLaunchCooperativeKernel(big, dim3(2), dim3(64), nullptr, 0, nullptr), hipErrorIllegalState);
  // Registered but not in the code object.
  EXPECT_EQ(hipLaunchKernel(missing, dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidDeviceFunction);
  // Not registered at all.
  static char unregistered;
  EXPECT_EQ(hipLaunchKernel(&unregistered, dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidDeviceFunction);

  hipFunction_t f = nullptr, f2 = nullptr;
  ASSERT_EQ(hipGetFuncBySymbol(&f, big), hipSuccess);
  ASSERT_EQ(hipGetFuncBySymbol(&f2, big), hipSuccess);
  EXPECT_EQ(f, f2);
  EXPECT_EQ(hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), hipErrorIllegalState);
  hipFuncAttributes a{};
  ASSERT_EQ(hipFuncGetAttributes(&a, big), hipSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 70000u);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, 0);
  EXPECT_EQ(hipFuncGetAttributes(nullptr, big), hipErrorInvalidValue);
  EXPECT_EQ(hipFuncGetAttributes(&a, nullptr), hipErrorInvalidDeviceFunction);

  // gfx90a:sramecc-:xnack- device: the only gfx90a entry is xnack+ -> rejected.
  ASSERT_EQ(hipSetDevice(kGfx90a), hipSuccess);
  EXPECT_EQ(hipLaunchKernel(small, dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorNoBinaryForGpu);
  EXPECT_EQ(hipGetFuncBySymbol(&f, small), hipErrorInvalidDeviceFunction);
  EXPECT_EQ(hipFuncGetAttributes(&a, small), hipErrorNoBinaryForGpu);
  // gfx950 device: no gfx950 entry.
  ASSERT_EQ(hipSetDevice(kGfx950), hipSuccess);
  EXPECT_EQ(hipLaunchKernel(small, dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorNoBinaryForGpu);
  __hipUnregisterFatBinary(r->handle);
}

TEST_F(Direct, ConcurrentCallsAreSafe) {
  auto elf = craft_elf(0x4c | kAnyAny, {{"_Z1kv", 70000}, {"_Z1jv", 0}});
  auto r = register_fatbin(craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", elf}}), {"_Z1kv", "_Z1jv"});
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        if (hipLaunchKernel(r->key(0), dim3(1), dim3(64), nullptr, 0, nullptr) != hipErrorIllegalState) ++wrong;
        if (hipLaunchKernel(r->key(1), dim3(1), dim3(64), nullptr, 0, nullptr) != hipSuccess) ++wrong;
        hipModule_t m = nullptr;
        if (hipModuleLoadData(&m, elf.data()) != hipSuccess) {
          ++wrong;
          continue;
        }
        hipFunction_t f = nullptr;
        if (hipModuleGetFunction(&f, m, (t % 2) ? "_Z1kv" : "_Z1jv") != hipSuccess) ++wrong;
        if (hipModuleUnload(m) != hipSuccess) ++wrong;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0);
  __hipUnregisterFatBinary(r->handle);
}

TEST_F(Direct, MutatedModuleFilesNeverCrash) {
  auto elf = craft_elf(0x4c | kAnyAny, {{"k1", 1024}, {"k2", 70000}});
  auto bundle = craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", elf}});
  fs::path p = fs::temp_directory_path() / ("simrt_fuzz_" + std::to_string(getpid()) + ".co");
  std::mt19937 rng(99);
  int loaded = 0;
  for (int iter = 0; iter < 600; ++iter) {
    std::vector<uint8_t> v = (iter % 2) ? elf : bundle;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 6); i < n; ++i) v[rng() % v.size()] = static_cast<uint8_t>(rng());
    if (rng() % 3 == 0) v.resize(rng() % v.size());
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), v.size());
    hipModule_t m = nullptr;
    if (hipModuleLoad(&m, p.c_str()) == hipSuccess) {
      ++loaded;
      hipFunction_t f = nullptr;
      if (hipModuleGetFunction(&f, m, "k2") == hipSuccess)
        (void)hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr);
      EXPECT_EQ(hipModuleUnload(m), hipSuccess);
    }
  }
  fs::remove(p);
  EXPECT_GT(loaded, 0);
}

// ---- CLR-new model: run in a child process of this binary (the model is read
// once per process) -------------------------------------------------------------------

bool child_is_clr_new() {
  const char* c = getenv("HIPGUARD_SIM_CLR");
  return c && std::string(c) == "new";
}

TEST(ClrNew, RunsInChildProcess) {
  if (child_is_clr_new()) GTEST_SKIP() << "already the child";
  auto env = sim_env(kDirectGpus, "new");
  env["SIMRT_TEST_KEEP_ENV"] = "1";
  ProcResult r = run({"/proc/self/exe", "--gtest_filter=ClrNewChild.*"}, env);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[  PASSED  ]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SKIPPED"), std::string::npos) << r.out;
}

class ClrNewChild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!child_is_clr_new())
      GTEST_SKIP() << "runs only in the HIPGUARD_SIM_CLR=new child (see ClrNew.RunsInChildProcess)";
    ASSERT_EQ(hipSetDevice(kGfx942), hipSuccess);
  }
};

// Registered during static initialisation, before any HIP call, like a
// program's module constructor: lazy, so the handle is non-null in both models.
const std::unique_ptr<Registered> g_early = register_fatbin(
    craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", craft_elf(0x3f | kAnyAny, {{"_Z1kv", 0}})}}), {"_Z1kv"});

TEST_F(ClrNewChild, DigestErrorThenInvalidKernelFile) {
  auto e90a = craft_elf(0x3f | kAnyAny, {{"_Z1kv", 0}});
  const Registered* r = g_early.get();
  ASSERT_NE(r->handle, nullptr);
  EXPECT_EQ(hipLaunchKernel(r->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidImage);
  EXPECT_EQ(hipLaunchKernel(r->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidKernelFile);
  hipFunction_t f = nullptr;
  EXPECT_EQ(hipGetFuncBySymbol(&f, r->key(0)), hipErrorInvalidDeviceFunction);
  // HIP is initialised now: a new registration is digested at once and a
  // failure gives a null handle; its kernels then fail as invalid functions.
  auto late = register_fatbin(craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", e90a}}), {"_Z1kv"});
  EXPECT_EQ(late->handle, nullptr);
  EXPECT_EQ(hipLaunchKernel(late->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidDeviceFunction);
  hipModule_t m = nullptr;
  EXPECT_EQ(hipModuleLoadData(&m, r->blob.data()), hipErrorInvalidImage);
}

TEST_F(ClrNewChild, GenericFallbackAndNativeFirst) {
  auto gen = craft_elf(0x5f | kAnyAny | (1u << 24), {{"_Z1kv", 300}}, 4);
  auto gen_v0 = craft_elf(0x5f | kAnyAny, {{"_Z1kv", 300}}, 4);
  auto native = craft_elf(0x4c | kAnyAny, {{"_Z1kv", 100}});
  // Native wins even when the generic entry comes first in the file.
  auto both = register_fatbin(
      craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", gen}, {"hipv4-amdgcn-amd-amdhsa--gfx942", native}}),
      {"_Z1kv"});
  hipFuncAttributes a{};
  ASSERT_EQ(hipFuncGetAttributes(&a, both->key(0)), hipSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 100u);
  // Generic only: accepted on gfx942 and gfx950, not on gfx90a (no family).
  auto only = register_fatbin(craft_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", gen}}), {"_Z1kv"});
  ASSERT_EQ(hipFuncGetAttributes(&a, only->key(0)), hipSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 300u);
  ASSERT_EQ(hipSetDevice(kGfx950), hipSuccess);
  EXPECT_EQ(hipLaunchKernel(only->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipSuccess);
  ASSERT_EQ(hipSetDevice(kGfx90a), hipSuccess);
  EXPECT_EQ(hipLaunchKernel(only->key(0), dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidKernelFile);
  ASSERT_EQ(hipSetDevice(kGfx942), hipSuccess);
  hipModule_t m = nullptr;
  EXPECT_EQ(hipModuleLoadData(&m, gen.data()), hipSuccess);
  EXPECT_EQ(hipModuleUnload(m), hipSuccess);
  EXPECT_EQ(hipModuleLoadData(&m, gen_v0.data()), hipErrorNoBinaryForGpu);  // generic version 0
  // CLR-new hipLaunchKernel accepts a hipFunction_t in place of a host pointer.
  auto big = craft_elf(0x4c | kAnyAny, {{"big", 70000}, {"small", 0}});
  ASSERT_EQ(hipModuleLoadData(&m, big.data()), hipSuccess);
  hipFunction_t fb = nullptr, fs_ = nullptr;
  ASSERT_EQ(hipModuleGetFunction(&fb, m, "big"), hipSuccess);
  ASSERT_EQ(hipModuleGetFunction(&fs_, m, "small"), hipSuccess);
  EXPECT_EQ(hipLaunchKernel(reinterpret_cast<const void*>(fb), dim3(1), dim3(64), nullptr, 0, nullptr),
            hipErrorIllegalState);
  EXPECT_EQ(hipLaunchKernel(reinterpret_cast<const void*>(fs_), dim3(1), dim3(64), nullptr, 0, nullptr), hipSuccess);
  EXPECT_EQ(hipModuleUnload(m), hipSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  // The simulator reads its configuration once, at first use.
  // SIMRT_TEST_KEEP_ENV: a child started by ClrNew.RunsInChildProcess.
  if (!getenv("SIMRT_TEST_KEEP_ENV")) {
    setenv("HIPGUARD_SIM_GPUS", kDirectGpus, 1);
    unsetenv("HIPGUARD_SIM_CLR");
    unsetenv("HIPGUARD_SIM_LOG");
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (!child_is_clr_new()) {
    // ClrNewChild.* only make sense in the child process (ClrNew.RunsInChildProcess).
    std::string f = ::testing::GTEST_FLAG(filter);
    f += f.find('-') == std::string::npos ? "-ClrNewChild.*" : ":ClrNewChild.*";
    ::testing::GTEST_FLAG(filter) = f;
  }
  return RUN_ALL_TESTS();
}
