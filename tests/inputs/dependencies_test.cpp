// dependencies.h: glibc's search order, sysroot containment, hostile dynamic sections, and check_paths'
// hook, on small ELF files built here with the system's gcc.
#include "hipguard/dependencies.h"
#include "hipguard/check_paths.h"
#include "print_code.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace hipguard;

namespace {

class Deps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("gcc --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gcc to build the test libraries";
    char tmpl[] = "/tmp/hipguard-deps-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    write("src/lib.c", "int f(void) { return 0; }\n");
    write("src/main.c", "int main(void) { return 0; }\n");
    // A library whose .hip_fatbin section holds GPU code (here: bytes hipguard reads as a broken bundle).
    write("src/gpu.c",
          "__attribute__((section(\".hip_fatbin\"), used)) const char fatbin[64] = "
          "\"__CLANG_OFFLOAD_BUNDLE__\";\nint g(void) { return 1; }\n");
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  std::string at(const std::string& rel) const { return root_ + "/" + rel; }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(at(rel)).parent_path());
    std::ofstream(at(rel)) << text;
  }
  // gcc SOURCE -> REL: a library with `soname` (or a program when soname is empty), linked against `needs`
  // (paths below the root), with `flags` (rpath options).
  void build(const std::string& rel, const std::string& soname, const std::vector<std::string>& needs,
             const std::string& flags = "", const std::string& source = "src/lib.c") {
    fs::create_directories(fs::path(at(rel)).parent_path());
    std::string cmd = "gcc -o '" + at(rel) + "' '" + at(soname.empty() ? "src/main.c" : source) + "'";
    cmd += " -nostdlib";  // no libc.so.6 to find in the test root
    cmd += soname.empty() ? " -Wl,-e,main" : " -shared -fPIC -Wl,-soname," + soname;
    cmd += " -Wl,--no-as-needed";
    for (const auto& n : needs) cmd += " '" + at(n) + "'";
    cmd += " " + flags + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  Dependencies deps(const std::string& rel, DependencyOptions o = {}) {
    if (o.sysroot.empty()) o.sysroot = root_;
    return find_dependencies(at(rel), o);
  }
  static std::vector<std::string> names(const Dependencies& d) {
    std::vector<std::string> out;
    for (const auto& o : d.objects)
      if (o.kind != Dependency::Kind::KernelFile) out.push_back(o.name);
    return out;
  }
  static const Dependency* find(const Dependencies& d, const std::string& name) {
    for (const auto& o : d.objects)
      if (o.name == name) return &o;
    return nullptr;
  }
  static std::vector<Code> codes(const Dependencies& d) {
    std::vector<Code> out;
    for (const auto& x : d.diagnostics) out.push_back(x.code);
    return out;
  }
  std::string root_;
};

// $ORIGIN in DT_RUNPATH is the program's directory; a library's DT_NEEDED does not see the
// program's DT_RUNPATH (not inherited: HG120 names the library, who needs it and where it looked),
// but does see its DT_RPATH (inherited).
TEST_F(Deps, RunpathIsNotInheritedRpathIs) {
  build("app/lib/libb.so", "libb.so", {});
  build("app/lib/liba.so", "liba.so", {"app/lib/libb.so"});
  build("app/bin/runpath", "", {"app/lib/liba.so"}, "-Wl,-rpath,'$ORIGIN/../lib' -Wl,--enable-new-dtags");
  build("app/bin/rpath", "", {"app/lib/liba.so"}, "-Wl,-rpath,'$ORIGIN/../lib' -Wl,--disable-new-dtags");

  Dependencies r = deps("app/bin/runpath");
  const Dependency* a = find(r, "liba.so");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->path, at("app/lib/liba.so"));
  EXPECT_EQ(a->needed_by, at("app/bin/runpath"));
  EXPECT_EQ(find(r, "libb.so"), nullptr);
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kLibraryNotFound});
  EXPECT_NE(r.diagnostics[0].message.find("libb.so, needed by liba.so"), std::string::npos) << r.diagnostics[0].message;
  EXPECT_NE(r.diagnostics[0].message.find(root_ + "/usr/lib/x86_64-linux-gnu"), std::string::npos);
  EXPECT_EQ(r.diagnostics[0].file, at("app/lib/liba.so"));

  Dependencies p = deps("app/bin/rpath");
  EXPECT_EQ(names(p), (std::vector<std::string>{"liba.so", "libb.so"}));
  EXPECT_TRUE(p.diagnostics.empty());
}

// Order: DT_RPATH, then DT_RUNPATH, then ld.so.conf (and its include globs), then the system
// directories; a candidate that is no ELF is passed over (open_verify).
TEST_F(Deps, SearchOrderAndLdSoConf) {
  build("opt/first/libx.so", "libx.so", {});
  build("opt/second/libx.so", "libx.so", {});
  build("opt/conf/liby.so", "liby.so", {});
  build("usr/lib/x86_64-linux-gnu/liby.so", "liby.so", {});
  build("usr/lib/libz.so", "libz.so", {});
  write("opt/notelf/libz.so", "not an ELF file\n");
  write("etc/ld.so.conf", "# comment\ninclude /etc/ld.so.conf.d/*.conf\n");
  write("etc/ld.so.conf.d/a.conf", "/opt/notelf\n/opt/conf  # trailing comment\n");
  build("bin/prog", "", {"opt/first/libx.so", "opt/conf/liby.so", "usr/lib/libz.so"},
        "-Wl,-rpath,/opt/second -Wl,--enable-new-dtags");
  Dependencies r = deps("bin/prog");
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  EXPECT_EQ(names(r), (std::vector<std::string>{"libx.so", "liby.so", "libz.so"}));
  EXPECT_EQ(find(r, "libx.so")->path, at("opt/second/libx.so"));  // the absolute RUNPATH, inside the root
  EXPECT_EQ(find(r, "liby.so")->path, at("opt/conf/liby.so"));    // ld.so.conf before the system directories
  EXPECT_EQ(find(r, "libz.so")->path, at("usr/lib/libz.so"));     // not the non-ELF file of ld.so.conf
}

// Paths never leave the sysroot: ".." stops at it, absolute symlinks start again inside it.
TEST_F(Deps, SysrootContainment) {
  write("etc/passwd", "inside\n");
  fs::create_directory_symlink("../../../../../../../../etc", at("escape"));
  fs::create_directories(at("usr/lib"));
  fs::create_symlink("/etc/passwd", at("usr/lib/abs"));
  EXPECT_EQ(resolve_in_root(root_, "/../../../../etc/passwd"), at("etc/passwd"));
  EXPECT_EQ(resolve_in_root(root_, "/escape/passwd"), at("etc/passwd"));
  EXPECT_EQ(resolve_in_root(root_, "/usr/lib/abs"), at("etc/passwd"));
  EXPECT_EQ(resolve_in_root(root_, "/etc/shadow"), "");  // the host's is never used
  fs::create_symlink("loop", at("loop"));
  EXPECT_EQ(resolve_in_root(root_, "/loop"), "");

  // A library behind an absolute symlink, needed through an absolute DT_RUNPATH.
  build("real/libs.so", "libs.so", {});
  fs::create_directories(at("opt/abs"));
  fs::create_symlink("/real/libs.so", at("opt/abs/libs.so"));
  build("bin/prog", "", {"real/libs.so"}, "-Wl,-rpath,/../../opt/abs -Wl,--enable-new-dtags");
  Dependencies r = deps("bin/prog");
  ASSERT_NE(find(r, "libs.so"), nullptr);
  EXPECT_EQ(find(r, "libs.so")->path, at("real/libs.so"));
}

// A DT_NEEDED cycle ends; a library reached twice is listed once; a long chain stops at max_objects.
TEST_F(Deps, CycleAndLimit) {
  // liba needs libb needs liba: libb is linked against a first liba without needs.
  build("usr/lib/liba.so", "liba.so", {});
  build("usr/lib/libb.so", "libb.so", {"usr/lib/liba.so"});
  build("usr/lib/liba.so", "liba.so", {"usr/lib/libb.so"});
  build("bin/prog", "", {"usr/lib/liba.so", "usr/lib/libb.so"});
  Dependencies r = deps("bin/prog");
  EXPECT_EQ(names(r), (std::vector<std::string>{"liba.so", "libb.so"}));
  EXPECT_TRUE(r.diagnostics.empty());

  DependencyOptions o;
  o.max_objects = 2;  // the program and liba
  Dependencies capped = deps("bin/prog", o);
  EXPECT_EQ(names(capped), std::vector<std::string>{"liba.so"});
  EXPECT_EQ(codes(capped), std::vector<Code>{Code::kDependencyLimit});
}

// A DT_NEEDED string offset outside DT_STRSZ: HG121, nothing read from it, no crash.
TEST_F(Deps, BadStringOffset) {
  build("usr/lib/liba.so", "liba.so", {});
  build("usr/lib/libbad.so", "libbad.so", {"usr/lib/liba.so"});
  build("bin/prog", "", {"usr/lib/libbad.so"});  // linked before the damage (ld refuses it after)
  // Patch the DT_NEEDED value of libbad.so (ELF64: .dynamic entries are 16 bytes: tag, value).
  std::fstream f(at("usr/lib/libbad.so"), std::ios::in | std::ios::out | std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  uint64_t shoff, count = 0;
  uint16_t shentsize, shnum;
  memcpy(&shoff, &bytes[0x28], 8), memcpy(&shentsize, &bytes[0x3a], 2), memcpy(&shnum, &bytes[0x3c], 2);
  for (uint16_t i = 0; i < shnum; ++i) {
    const char* sh = &bytes[shoff + uint64_t(i) * shentsize];
    uint32_t type;
    uint64_t off, size;
    memcpy(&type, sh + 4, 4), memcpy(&off, sh + 0x18, 8), memcpy(&size, sh + 0x20, 8);
    if (type != 6) continue;  // SHT_DYNAMIC
    for (uint64_t e = off; e + 16 <= off + size; e += 16) {
      int64_t tag;
      memcpy(&tag, &bytes[e], 8);
      if (tag != 1) continue;  // DT_NEEDED
      uint64_t bad = 0x7fffffff;
      f.seekp(static_cast<std::streamoff>(e + 8)), f.write(reinterpret_cast<const char*>(&bad), 8), ++count;
    }
  }
  f.close();
  ASSERT_GT(count, 0u);
  Dependencies r = deps("bin/prog");
  EXPECT_EQ(names(r), std::vector<std::string>{"libbad.so"});
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kDependencyUnreadable});
  EXPECT_EQ(r.diagnostics[0].file, at("usr/lib/libbad.so"));

  // Truncated before its dynamic section: PT_DYNAMIC points past the end (LLVM 16's
  // dynamicEntries() would read it unchecked).
  build("usr/lib/libcut.so", "libcut.so", {"usr/lib/liba.so"});
  build("bin/cut", "", {"usr/lib/libcut.so"});
  fs::resize_file(at("usr/lib/libcut.so"), 4096);
  Dependencies cut = deps("bin/cut");
  EXPECT_EQ(names(cut), std::vector<std::string>{"libcut.so"});
  ASSERT_EQ(codes(cut), std::vector<Code>{Code::kDependencyUnreadable});
  EXPECT_NE(cut.diagnostics[0].message.find("PT_DYNAMIC"), std::string::npos) << cut.diagnostics[0].message;
}

// rocBLAS's Tensile directory (Debian's <libdir>/rocblas/<version>/library, of the soname's major):
// its code object files, whatever their processor (check_paths judges them as a library); a
// hipBLASLt without its directory: HG123.
TEST_F(Deps, TensileDirectories) {
  build("usr/lib/x86_64-linux-gnu/librocblas.so.4", "librocblas.so.4", {});
  for (const char* f : {"Kernels.so-000-gfx90a-xnack+.hsaco", "T_gfx90a.co", "T_gfx90a.dat", "T_gfx1100.co"})
    write(std::string("usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/") + f, "x");
  write("usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/gfx1200/T_gfx1200.co",
        "x");  // rocBLAS's per-processor directory
  write("usr/lib/x86_64-linux-gnu/rocblas/3.0.0/library/T_gfx90a.co", "an older major: not librocblas.so.4's");
  build("usr/lib/x86_64-linux-gnu/libhipblaslt.so.1", "libhipblaslt.so.1", {});
  build("bin/prog", "", {"usr/lib/x86_64-linux-gnu/librocblas.so.4", "usr/lib/x86_64-linux-gnu/libhipblaslt.so.1"});
  DependencyOptions o;
  o.processors = {"gfx90a:sramecc+:xnack-", "gfx1200"};
  Dependencies r = deps("bin/prog", o);
  std::vector<std::string> kernels;
  for (const auto& d : r.objects)
    if (d.kind == Dependency::Kind::KernelFile) {
      kernels.push_back(d.name);
      EXPECT_EQ(d.needed_by, at("usr/lib/x86_64-linux-gnu/librocblas.so.4"));
      EXPECT_EQ(d.path.find(at("usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/")), 0u) << d.path;
    }
  EXPECT_EQ(kernels, (std::vector<std::string>{"Kernels.so-000-gfx90a-xnack+.hsaco", "T_gfx1100.co", "T_gfx90a.co",
                                               "T_gfx1200.co"}));
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing});
  EXPECT_EQ(r.diagnostics[0].file, at("usr/lib/x86_64-linux-gnu/libhipblaslt.so.1"));
  EXPECT_NE(r.diagnostics[0].message.find("hipblaslt/library"), std::string::npos) << r.diagnostics[0].message;
}

// A Fedora or RHEL root (AlmaLinux images: /lib64 -> usr/lib64, no multiarch directory) has its glibc's
// system directories, /lib64 and /usr/lib64; a root with /lib/x86_64-linux-gnu keeps Debian's.
TEST_F(Deps, Lib64SystemDirectoriesOfARhelRoot) {
  build("usr/lib64/libz.so.1", "libz.so.1", {});
  fs::create_symlink("usr/lib64", at("lib64"));
  build("bin/prog", "", {"usr/lib64/libz.so.1"});
  Dependencies r = deps("bin/prog");
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  EXPECT_EQ(find(r, "libz.so.1")->path, at("usr/lib64/libz.so.1"));
  // $LIB is that glibc's slibdir too: lib64, not Debian's lib/x86_64-linux-gnu.
  build("opt/app/lib64/liba.so", "liba.so", {});
  build("bin/app", "", {"opt/app/lib64/liba.so"}, "-Wl,-rpath,'/opt/app/$LIB' -Wl,--enable-new-dtags");
  r = deps("bin/app");
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  EXPECT_EQ(find(r, "liba.so")->path, at("opt/app/lib64/liba.so"));
  fs::create_directories(at("lib/x86_64-linux-gnu"));
  r = deps("bin/prog");
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kLibraryNotFound});
  EXPECT_EQ(r.diagnostics[0].message.find("lib64"), std::string::npos) << r.diagnostics[0].message;
  r = deps("bin/app");
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kLibraryNotFound});
  EXPECT_NE(r.diagnostics[0].message.find("/opt/app/lib/x86_64-linux-gnu"), std::string::npos)
      << r.diagnostics[0].message;
}

// How the program is started, when known (an image's Env): LD_LIBRARY_PATH is searched after DT_RPATH
// and before DT_RUNPATH ($ORIGIN: the program's), and ROCBLAS_TENSILE_LIBPATH is rocBLAS's Tensile
// directory instead of the one beside it.
TEST_F(Deps, LibraryPathAndTensileLibpath) {
  build("opt/env/libx.so", "libx.so", {});
  build("opt/runpath/libx.so", "libx.so", {});
  build("usr/lib/x86_64-linux-gnu/librocblas.so.5", "librocblas.so.5", {});
  write("usr/lib/x86_64-linux-gnu/rocblas/5/library/T_gfx942.co", "x");
  write("opt/tensile/U_gfx942.co", "x");
  build("bin/prog", "", {"opt/env/libx.so", "usr/lib/x86_64-linux-gnu/librocblas.so.5"},
        "-Wl,-rpath,/opt/runpath -Wl,--enable-new-dtags");
  EXPECT_EQ(find(deps("bin/prog"), "libx.so")->path, at("opt/runpath/libx.so"));
  DependencyOptions o;
  o.library_path = "relative:/nowhere:$ORIGIN/../opt/env";
  o.rocblas_tensile_libpath = "/opt/tensile";
  Dependencies r = deps("bin/prog", o);
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  EXPECT_EQ(find(r, "libx.so")->path, at("opt/env/libx.so"));
  ASSERT_NE(find(r, "U_gfx942.co"), nullptr);
  EXPECT_EQ(find(r, "T_gfx942.co"), nullptr);
  o.rocblas_tensile_libpath = "/opt/none";
  r = deps("bin/prog", o);
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing});
  EXPECT_NE(r.diagnostics[0].message.find("ROCBLAS_TENSILE_LIBPATH"), std::string::npos) << r.diagnostics[0].message;
}

// A Tensile directory holding only other processors' subdirectories, none for the target: their
// files are the library's (so check_paths says HG214 and what it is built for), not nothing.
TEST_F(Deps, TensileDirectoryOfOtherProcessorsOnly) {
  build("usr/lib/x86_64-linux-gnu/librocblas.so.5", "librocblas.so.5", {});
  const std::string lib = "usr/lib/x86_64-linux-gnu/rocblas/5/library/";
  for (const char* f : {"gfx90a/T_gfx90a.co", "gfx1100/T_gfx1100.hsaco", "gfx1100/T_gfx1100.dat", "notes/x.co"})
    write(lib + f, "x");
  build("bin/prog", "", {"usr/lib/x86_64-linux-gnu/librocblas.so.5"});
  DependencyOptions o;
  o.processors = {"gfx942"};
  std::vector<std::string> kernels;
  for (const auto& d : deps("bin/prog", o).objects)
    if (d.kind == Dependency::Kind::KernelFile) kernels.push_back(d.path.substr(at(lib).size()));
  EXPECT_EQ(kernels, (std::vector<std::string>{"gfx1100/T_gfx1100.hsaco", "gfx90a/T_gfx90a.co"}));

  // With a subdirectory for a target, the others are not read: gfx942 takes its own.
  write(lib + "gfx942/T_gfx942.co", "x");
  kernels.clear();
  for (const auto& d : deps("bin/prog", o).objects)
    if (d.kind == Dependency::Kind::KernelFile) kernels.push_back(d.path.substr(at(lib).size()));
  EXPECT_EQ(kernels, std::vector<std::string>{"gfx942/T_gfx942.co"});
}

// check_paths: the program has no GPU code of its own, its library has: no HG107, the library
// follows the program with needed_by; --no-deps (dependencies = false) is today's HG107.
TEST_F(Deps, CheckPathsHook) {
  build("usr/lib/libgpu.so", "libgpu.so", {}, "", "src/gpu.c");
  build("usr/lib/libplain.so", "libplain.so", {});
  build("bin/prog", "", {"usr/lib/libplain.so", "usr/lib/libgpu.so"});
  CheckPathsOptions o;
  o.jobs = 2;
  o.dependencies = true;
  o.sysroot = root_;
  CollectSink sink(false);
  check_paths({at("bin/prog")}, o, sink);
  ASSERT_EQ(sink.reports.size(), 1u);  // the program (nothing to say) and libplain (no GPU code) are skipped
  EXPECT_EQ(sink.reports[0].path, at("usr/lib/libgpu.so"));
  EXPECT_EQ(sink.reports[0].needed_by, at("bin/prog"));
  EXPECT_TRUE(sink.reports[0].hip);

  // Two programs with the same library: it is checked once, after the first; the second is no HG107.
  build("bin/prog2", "", {"usr/lib/libgpu.so"});
  CollectSink twice(false);
  check_paths({at("bin/prog"), at("bin/prog2")}, o, twice);
  ASSERT_EQ(twice.reports.size(), 1u);
  EXPECT_EQ(twice.reports[0].path, at("usr/lib/libgpu.so"));

  o.dependencies = false;
  CollectSink alone(false);
  check_paths({at("bin/prog")}, o, alone);
  ASSERT_EQ(alone.reports.size(), 1u);
  ASSERT_EQ(alone.reports[0].diagnostics.size(), 1u);
  EXPECT_EQ(alone.reports[0].diagnostics[0].code, Code::kNoHipFatbin);
}

// The CLI: --sysroot, --no-deps, needed_by in the text and JSON outputs.
std::string run_cli(const std::string& args, int* status) {
  std::string out;
  FILE* p = popen((std::string(HIPGUARD_CLI) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int rc = pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST_F(Deps, CliOptions) {
  build("usr/lib/libgpu.so", "libgpu.so", {}, "", "src/gpu.c");
  build("bin/prog", "", {"usr/lib/libgpu.so"});
  int rc = 0;
  std::string text = run_cli("check --target gfx942 --sysroot " + root_ + " " + at("bin/prog"), &rc);
  EXPECT_NE(text.find(at("usr/lib/libgpu.so") + ", needed by " + at("bin/prog")), std::string::npos) << text;
  EXPECT_EQ(text.find("HG107"), std::string::npos) << text;
  std::string json = run_cli("check --json --sysroot " + root_ + " " + at("bin/prog"), &rc);
  EXPECT_NE(json.find("\"needed_by\": \"" + at("bin/prog") + "\""), std::string::npos) << json;
  std::string alone = run_cli("check --target gfx942 --no-deps " + at("bin/prog"), &rc);
  EXPECT_NE(alone.find("error HG107"), std::string::npos) << alone;
  EXPECT_EQ(rc, 1);
  run_cli("check --sysroot " + at("no/such/dir") + " " + at("bin/prog"), &rc);
  EXPECT_EQ(rc, 2);
  std::string inspect = run_cli("inspect --deps --sysroot " + root_ + " " + at("bin/prog"), &rc);
  EXPECT_NE(inspect.find("needed by " + at("bin/prog")), std::string::npos) << inspect;
  std::string plain = run_cli("inspect " + at("bin/prog"), &rc);
  EXPECT_EQ(plain.find("needed by"), std::string::npos) << plain;
}

// The HIP runtime a program loads in the root is named by its real file, whose name carries its version;
// with --sysroot and no --runtime the check selects as that runtime and says so (HG125), not for the newest.
TEST_F(Deps, HipRuntimeOfTheRoot) {
  build("usr/lib/libgpu.so", "libgpu.so", {}, "", "src/gpu.c");
  for (std::string version : {"6.4.43484", "6.3.42131", "7.2.53211"}) {
    std::string real = "usr/lib/libamdhip64.so." + version;
    fs::remove(at("usr/lib/libamdhip64.so.6"));
    build(real, "libamdhip64.so.6", {});
    fs::create_symlink(fs::path(real).filename(), at("usr/lib/libamdhip64.so.6"));
    build("bin/prog", "", {"usr/lib/libgpu.so", "usr/lib/libamdhip64.so.6"});
    EXPECT_EQ(deps("bin/prog").hip_runtime, at(real));
    int rc = 0;
    std::string text = run_cli("check --target gfx942 --sysroot " + root_ + " " + at("bin/prog"), &rc);
    bool older = version[0] == '6';  // said as the name says it: HIP 6.3 (which hipguard's 5.6 row covers)
    EXPECT_EQ(text.find("note HG125 " + at("bin/prog") + ": loads HIP " + version.substr(0, 3) + " in the sysroot (" +
                        at(real) + ")") != std::string::npos,
              older)
        << text;
    text = run_cli("check --target gfx942 --runtime 6.4 --sysroot " + root_ + " " + at("bin/prog"), &rc);
    EXPECT_EQ(text.find("HG125"), std::string::npos) << text;  // the user's runtime: nothing to say
  }
  EXPECT_EQ(deps("usr/lib/libgpu.so").hip_runtime, "");
}

}  // namespace

// hipBLASLt's Tensile directory (tensile_host.cpp, TensileHost::initialize): beside the library it takes
// <dir>/<processor> when that exists, as rocBLAS; HIPBLASLT_TENSILE_LIBPATH replaces the directory and
// is used as it is, without a <processor> subdirectory. A directory without any code object is HG123.
TEST_F(Deps, HipblasltTensileDirectoryAndItsVariable) {
  build("usr/lib/x86_64-linux-gnu/libhipblaslt.so.1", "libhipblaslt.so.1", {});
  const std::string lib = "usr/lib/x86_64-linux-gnu/hipblaslt/library";
  write(lib + "/gfx942/TensileLibrary_lazy_gfx942.dat", "x");
  write(lib + "/gfx942/Kernels.so-000-gfx942.hsaco", "x");
  build("bin/prog", "", {"usr/lib/x86_64-linux-gnu/libhipblaslt.so.1"});
  DependencyOptions o;
  o.processors = {"gfx942:xnack-"};
  Dependencies r = deps("bin/prog", o);
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  ASSERT_NE(find(r, "Kernels.so-000-gfx942.hsaco"), nullptr);

  o.hipblaslt_tensile_libpath = "/" + lib;  // the variable names the directory: gfx942/ is not looked into
  r = deps("bin/prog", o);
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing});
  EXPECT_EQ(find(r, "Kernels.so-000-gfx942.hsaco"), nullptr);
  EXPECT_NE(r.diagnostics[0].message.find("HIPBLASLT_TENSILE_LIBPATH"), std::string::npos) << r.diagnostics[0].message;
  EXPECT_NE(r.diagnostics[0].fix.find("HIPBLASLT_TENSILE_LIBPATH=/" + lib + "/gfx942"), std::string::npos)
      << r.diagnostics[0].fix;

  o.hipblaslt_tensile_libpath = "/" + lib + "/gfx942";
  r = deps("bin/prog", o);
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  ASSERT_NE(find(r, "Kernels.so-000-gfx942.hsaco"), nullptr);

  // hipBLASLt 0.x (ROCm 6, TensileHost::initialize): ../Tensile/library first, then hipblaslt/library.
  build("opt/r6/lib/libhipblaslt.so.0", "libhipblaslt.so.0", {});
  write("opt/r6/Tensile/library/Kernels.so-000-gfx90a.hsaco", "x");
  write("opt/r6/lib/hipblaslt/library/Kernels.so-000-gfx942.hsaco", "x");
  build("bin/r6", "", {"opt/r6/lib/libhipblaslt.so.0"}, "-Wl,-rpath,/opt/r6/lib");
  r = deps("bin/r6", DependencyOptions{});
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].message;
  EXPECT_NE(find(r, "Kernels.so-000-gfx90a.hsaco"), nullptr);
  EXPECT_EQ(find(r, "Kernels.so-000-gfx942.hsaco"), nullptr);

  // rocBLAS's directory found but without a code object file: nothing would be checked, and it fails.
  build("usr/lib/x86_64-linux-gnu/librocblas.so.5", "librocblas.so.5", {});
  write("usr/lib/x86_64-linux-gnu/rocblas/5/library/TensileLibrary_lazy_gfx942.dat", "x");
  build("bin/blas", "", {"usr/lib/x86_64-linux-gnu/librocblas.so.5"});
  r = deps("bin/blas", o);
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing});
  EXPECT_NE(r.diagnostics[0].message.find("has no code object file"), std::string::npos) << r.diagnostics[0].message;
}

// A rocBLAS or hipBLASLt found in a directory walk (not named) is asked for its Tensile directory
// alone: without one it is HG123; its DT_NEEDED are not followed (a walk lists what it finds).
TEST_F(Deps, WalkedKernelLibraryWithoutItsTensileDirectory) {
  build("opt/lib/libx.so", "libx.so", {});
  build("opt/lib/librocblas.so.5", "librocblas.so.5", {"opt/lib/libx.so"});
  fs::remove(at("opt/lib/libx.so"));  // what it needs is missing: not this walk's business
  auto walked = [&](const std::string& lib = "opt/lib/librocblas.so.5") {
    std::vector<std::string> files{at(lib)};
    std::vector<bool> regular{true};
    std::vector<DependencyFile> extra;
    add_dependencies(&files, &regular, {}, DependencyOptions{}, &extra);
    std::vector<Code> out;
    for (const auto& d : extra.at(0).diagnostics) out.push_back(d.code);
    EXPECT_EQ(files.size(), 1u) << "nothing is added after a walked file";
    return out;
  };
  EXPECT_EQ(walked(), std::vector<Code>{Code::kKernelDirectoryMissing});
  write("opt/lib/rocblas/library/TensileLibrary_lazy_gfx942.dat", "x");
  write("opt/lib/rocblas/library/Kernels.so-000-gfx942.hsaco", "x");
  EXPECT_EQ(walked(), std::vector<Code>{});
  // As auditwheel vendors it into a wheel's <pkg>.libs/, renamed with a hash (DT_SONAME too); a name
  // that only begins like it is not rocBLAS.
  build("opt/pkg.libs/librocblas-3e1f5c2a.so.4", "librocblas-3e1f5c2a.so.4", {});
  build("opt/pkg.libs/librocblas-extras.so", "librocblas-extras.so", {});
  EXPECT_EQ(walked("opt/pkg.libs/librocblas-3e1f5c2a.so.4"), std::vector<Code>{Code::kKernelDirectoryMissing});
  EXPECT_EQ(walked("opt/pkg.libs/librocblas-extras.so"), std::vector<Code>{});
  // Fedora's debuginfo of it is no rocBLAS either.
  build("usr/lib/debug/usr/lib64/librocblas.so.4.4.1-1.fc42.x86_64.debug", "", {});
  EXPECT_EQ(walked("usr/lib/debug/usr/lib64/librocblas.so.4.4.1-1.fc42.x86_64.debug"), std::vector<Code>{});
}
