// hipguard as installed: `cmake --install` into a temporary prefix, moved
// elsewhere, and run from there; the shim's SONAME and dependencies; the .deb
// and .tar.gz CPack makes (dpkg-deb's reading of the package, the unpacked
// tarball run from its own directory). Where the shim comes from is read from
// /proc/self/maps of a program it was preloaded into, not from hipguard.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hipguard/version.h"
#include "process.h"

namespace fs = std::filesystem;

namespace {

const std::string kShim = HIPGUARD_SHIM;
const std::string kCli = HIPGUARD_CLI;
const std::string kApps = HIPGUARD_APPS_DIR;
const std::string kBuild = HIPGUARD_BUILD_DIR;
const std::string kReadelf = HIPGUARD_READELF;
const std::string kVersion = HIPGUARD_VERSION_STRING;
const std::string kSoname = HIPGUARD_SHIM_SONAME;

std::vector<std::string> needed(const std::string& elf) {
  std::vector<std::string> libs;
  for (const auto& line : lines_with(run_process({kReadelf, "-d", elf}).out, "(NEEDED)")) {
    auto a = line.find('['), b = line.find(']');
    if (a != std::string::npos && b != std::string::npos) libs.push_back(line.substr(a + 1, b - a - 1));
  }
  return libs;
}

bool has_debug_info(const std::string& elf) {
  return run_process({kReadelf, "-S", "-W", elf}).out.find(".debug_info") != std::string::npos;
}

// `hipguard run` of the tree at `prefix` preloads the shim of that tree: it is
// mapped into the program it runs.
void expect_runs_its_own_shim(const std::string& prefix, const std::string& libdir = "lib") {
  ProcessResult r = run_process({prefix + "/bin/hipguard", "run", "--", "/bin/cat", "/proc/self/maps"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(lines_with(r.out, prefix + "/" + libdir + "/libhipguard.so." + kVersion).empty())
      << "the shim of " << prefix << " is not mapped:\n"
      << r.out;
  EXPECT_TRUE(lines_with(r.out, kBuild + "/lib/").empty()) << "the build tree's shim is mapped:\n" << r.out;
  EXPECT_EQ(r.err, "") << "the shim says nothing in a process without HIP";
}

}  // namespace

TEST(ShimLibrary, VersionedSonameAndFewDependencies) {
  EXPECT_EQ(fs::path(kShim).filename().string(), "libhipguard.so." + kVersion);
  ProcessResult d = run_process({kReadelf, "-d", kShim});
  EXPECT_EQ(lines_with(d.out, "Library soname: [" + kSoname + "]").size(), 1u) << d.out;
  EXPECT_EQ(fs::read_symlink(kBuild + "/lib/" + kSoname).string(), "libhipguard.so." + kVersion);
  // glibc alone (libc, libm, the dynamic loader): libstdc++, libgcc, LLVM, zlib and zstd are linked
  // in. A library the shim needed would sit in the host's global scope, searched by every later
  // symbol lookup (docs/performance.md, R4), and keep the shim from loading where it is missing.
  for (const auto& lib : needed(kShim)) {
#ifdef HIPGUARD_SANITIZER_RUNTIME
    // A sanitizer build of the shim needs the sanitizer's runtime too.
    if (lib.rfind("libasan.so", 0) == 0 || lib.rfind("libubsan.so", 0) == 0 || lib.rfind("libtsan.so", 0) == 0)
      continue;
#endif
    EXPECT_TRUE(lib == "libc.so.6" || lib == "libm.so.6" || lib == "ld-linux-x86-64.so.2")
        << "libhipguard.so needs " << lib;
  }
  for (const auto& lib : needed(kCli)) EXPECT_EQ(lib.find("tinfo"), std::string::npos) << "hipguard needs " << lib;
}

TEST(Install, InstalledTreeRunsItsOwnShimFromAnyPrefix) {
  hgtest::TempDir tmp("hipguard-install");
  ASSERT_FALSE(tmp.path.empty());
  std::string prefix = tmp.path + "/first";
  ProcessResult inst = run_process({HIPGUARD_CMAKE, "--install", kBuild, "--prefix", prefix});
  ASSERT_EQ(inst.status, 0) << inst.out << inst.err;
  for (const char* f :
       {"bin/hipguard", "share/man/man1/hipguard.1", "share/bash-completion/completions/hipguard",
        "share/doc/hipguard/README.md", "share/doc/hipguard/docs/diagnostics.md", "share/doc/hipguard/docs/ci.md"})
    EXPECT_TRUE(fs::is_regular_file(prefix + "/" + f)) << f;
  EXPECT_TRUE(fs::is_regular_file(prefix + "/lib/libhipguard.so." + kVersion));
  EXPECT_EQ(fs::read_symlink(prefix + "/lib/" + kSoname).string(), "libhipguard.so." + kVersion);
  EXPECT_EQ(fs::read_symlink(prefix + "/lib/libhipguard.so").string(), kSoname);
  EXPECT_FALSE(fs::exists(prefix + "/include")) << "the headers are internal";
  EXPECT_EQ(run_process({prefix + "/bin/hipguard", "--version"}).out, "hipguard " + kVersion + "\n");
  expect_runs_its_own_shim(prefix);
  // Moved to another prefix, it still finds its own shim.
  std::string moved = tmp.path + "/elsewhere";
  fs::rename(prefix, moved);
  expect_runs_its_own_shim(moved);
  // And the installed shim does its work: a program without code for gfx942 stops before main.
  std::string app = kApps + "/vector_add_multi";
  if (kApps.empty() || !exists(app)) GTEST_SKIP() << "hipcc test app vector_add_multi not built";
  ProcessResult r = run_process({moved + "/bin/hipguard", "run", "--target", "gfx942", "--strict", "--", app});
  EXPECT_EQ(r.status, 86) << r.err;
  EXPECT_EQ(lines_with(r.err, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u) << r.err;
  EXPECT_EQ(r.out.find("main reached"), std::string::npos);
}

// The packages of scripts/package.sh, made by CPack from this build.
TEST(Package, DebAndTarball) {
  if (!exists("/usr/bin/dpkg-deb") || !exists("/usr/bin/dpkg-shlibdeps")) GTEST_SKIP() << "dpkg-dev not installed";
  hgtest::TempDir tmp("hipguard-install");
  ASSERT_FALSE(tmp.path.empty());
  ProcessResult pk =
      run_process({HIPGUARD_CPACK, "--config", kBuild + "/CPackConfig.cmake", "-G", "DEB;TGZ", "-B", tmp.path});
  ASSERT_EQ(pk.status, 0) << pk.out << pk.err;
  std::string deb = tmp.path + "/hipguard_" + kVersion + "_amd64.deb";
  ASSERT_TRUE(exists(deb)) << pk.out;
  auto field = [&](const char* name) {
    std::string v = run_process({"dpkg-deb", "-f", deb, name}).out;
    return v.substr(0, v.find_last_not_of('\n') + 1);
  };
  EXPECT_EQ(field("Package"), "hipguard");
  EXPECT_EQ(field("Version"), kVersion);
  std::string depends = field("Depends");
  for (const char* lib : {"libc6", "libstdc++6", "libgcc-s1", "libarchive13"})
    EXPECT_NE(depends.find(lib), std::string::npos) << lib << " not in Depends: " << depends;
  for (const char* lib : {"zlib1g", "libzstd1"})  // linked in statically
    EXPECT_EQ(depends.find(lib), std::string::npos) << lib << " in Depends: " << depends;
  EXPECT_EQ(depends.find("tinfo"), std::string::npos) << depends;
  EXPECT_EQ(depends.find("llvm"), std::string::npos) << depends;
  std::string contents = run_process({"dpkg-deb", "-c", deb}).out;
  for (const std::string& f : std::vector<std::string>{
           "./usr/bin/hipguard", "./usr/lib/libhipguard.so." + kVersion,
           "./usr/lib/" + kSoname + " -> libhipguard.so." + kVersion, "./usr/share/man/man1/hipguard.1",
           "./usr/share/bash-completion/completions/hipguard", "./usr/share/doc/hipguard/README.md"})
    EXPECT_NE(contents.find(f), std::string::npos) << f << " not in the package:\n" << contents;
  // Stripped; the debug info is in the dbgsym package.
  std::string x = tmp.path + "/deb";
  ASSERT_EQ(run_process({"dpkg-deb", "-x", deb, x}).status, 0);
  EXPECT_FALSE(has_debug_info(x + "/usr/bin/hipguard"));
  EXPECT_FALSE(has_debug_info(x + "/usr/lib/libhipguard.so." + kVersion));
  std::string dbg = tmp.path + "/hipguard-dbgsym_" + kVersion + "_amd64.ddeb";
  ASSERT_TRUE(exists(dbg)) << pk.out;
  EXPECT_EQ(lines_with(run_process({"dpkg-deb", "-c", dbg}).out, "./usr/lib/debug/.build-id/").size() >= 2, true);
  // The tarball: unpacked anywhere, it runs its own shim.
  std::string tgz = tmp.path + "/hipguard-" + kVersion + "-linux-x86_64.tar.gz";
  ASSERT_TRUE(exists(tgz)) << pk.out;
  ASSERT_EQ(run_process({"tar", "-xzf", tgz, "-C", tmp.path}).status, 0);
  std::string top = tmp.path + "/hipguard-" + kVersion + "-linux-x86_64";
  EXPECT_FALSE(has_debug_info(top + "/bin/hipguard"));
  expect_runs_its_own_shim(top);
}
