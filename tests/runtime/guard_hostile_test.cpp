// The in-process guard against what a host program may do to it: free a name
// it registered, hand hipModuleLoad a FIFO or a device, truncate a file while
// it is read, map a file whose path is longer than any line buffer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/guard.h"
#include "hipguard/check_paths.h"
#include "check_util.h"
#include "runtime/kernel_table.h"  // launch_known_clean

using namespace hipguard;
namespace fs = std::filesystem;

namespace {

using checks::kApps;

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("hipguard-" + tag + "-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

// A guard of each test's own with guard_test_env.cpp's settings (warn mode, gfx90a:xnack-).
class GuardHostile : public hgtest::OwnGuardTest {
 protected:
  GuardHostile() : OwnGuardTest(checks::warn_gfx90a_with_report()) {}
};

TEST_F(GuardHostile, RegisteredNamesAreCopied) {
  // The runtime copies the device name of __hipRegisterFunction; so must the
  // guard. Before: it kept the pointer and read it at the first launch (a
  // heap use-after-free under ASan; garbage names and wrong findings in Release).
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int handle, host;
  Guard& g = guard();
  hgtest::register_fatbin(g, &w, &handle);
  // A name the code object lacks: its launch is explained by name (HG409).
  char* name = strdup("_Z14not_in_the_objv");
  g.on_register_function(&handle, &host, name);
  memset(name, 'Z', strlen(name));
  free(name);
  testing::internal::CaptureStderr();
  g.on_launch(&host, 0, "hipLaunchKernel");
  testing::internal::GetCapturedStderr();
  std::vector<Diagnostic> said = g.said().findings;
  EXPECT_EQ(hgtest::count_said(said, Code::kLaunchWithFindings, Severity::Error, "", "_Z14not_in_the_objv"), 1u)
      << hgtest::lines(said);
  EXPECT_NE(hgtest::lines(said).find("HG409"), std::string::npos) << hgtest::lines(said);
  EXPECT_EQ(hgtest::lines(said).find("ZZZZZZZZ"), std::string::npos) << hgtest::lines(said);
  g.on_unregister_fatbin(&handle);  // before the bundle is freed (the exit report reads what is registered)
}

TEST_F(GuardHostile, ModuleLoadOfFifoOrDeviceIsForwardedUntouched) {
  // Before: hipModuleLoad of a FIFO hung the host (the guard read it, taking
  // the data the runtime should get); of /dev/zero, aborted it.
  fs::path dir = temp_dir("fifo");
  fs::path fifo = dir / "module.co";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int fd = open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // a writer with data waiting
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd,
                  "\x7f"
                  "ELF",
                  4),
            4);
  Guard& g = guard();
  EXPECT_EQ(hgtest::check_module_file(g, fifo.c_str()).action, Action::Forward);
  char buf[8];
  EXPECT_EQ(read(fd, buf, sizeof buf), 4) << "the data is still there for the runtime";
  close(fd);
  for (const char* dev : {"/dev/zero", "/dev/null", "/dev/urandom"})
    EXPECT_EQ(hgtest::check_module_file(g, dev).action, Action::Forward) << dev;
  fs::remove_all(dir);
}

TEST_F(GuardHostile, ModuleFilesAreCopiedSoTruncationCannotFault) {
  // Before: files over 64 MiB were mapped, and one truncated while checked
  // raised SIGBUS in the host. The shim now copies (FileData::Access::CopyAlways)
  // and the copy outlives any truncation.
  fs::path dir = temp_dir("trunc");
  fs::path file = dir / "big.co";
  {
    std::ofstream out(file, std::ios::binary);
    out.seekp(static_cast<std::streamoff>(FileData::kCopyLimit + 4096));
    out.put('x');
  }
  auto data = FileData::open(file.string(), FileData::Access::CopyAlways);
  ASSERT_TRUE(data);
  ASSERT_EQ(truncate(file.c_str(), 0), 0);
  uint64_t sum = 0;
  for (uint8_t b : data->bytes()) sum += b;  // every page touched after the truncation
  EXPECT_EQ(sum, static_cast<uint64_t>('x'));
  // The shim's path: the same file, truncated, then loaded: no finding, no fault.
  EXPECT_EQ(hgtest::check_module_file(guard(), file.c_str()).action, Action::Forward);
  fs::remove_all(dir);
}

TEST_F(GuardHostile, AddressChecksReadMapsLinesOfAnyLength) {
  // A mapped file whose path is longer than 512 bytes, crafted so that the
  // part after byte 511 of its /proc/self/maps line reads like a mapping of
  // its own: a readable range where nothing is mapped. Before: maps was read
  // with a 512-byte buffer, the tail taken for a line, and a strict-mode
  // hipModuleLoadData of an address there read unmapped memory (SIGSEGV).
  fs::path dir = temp_dir("maps");
  fs::path file = dir / "f";
  { std::ofstream(file) << std::string(4096, 'a'); }
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  // Four pages reserved, the last three given back: the file goes in the
  // first, and the three after it are a hole.
  void* r = mmap(nullptr, 4 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(r, MAP_FAILED);
  munmap(static_cast<char*>(r) + 4096, 3 * 4096);
  void* m = mmap(r, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  close(fd);
  ASSERT_EQ(m, r);
  uintptr_t lo = reinterpret_cast<uintptr_t>(m);
  auto line_of = [&](uintptr_t addr, uintptr_t* next_lo) {
    std::ifstream maps("/proc/self/maps");
    std::string line, found;
    *next_lo = 0;
    while (std::getline(maps, line)) {
      uintptr_t a = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
      if (!found.empty() && !*next_lo) *next_lo = a;
      if (a == addr) found = line;
    }
    return found;
  };
  uintptr_t next = 0;
  std::string line = line_of(lo, &next);
  ASSERT_FALSE(line.empty());
  uintptr_t hole = lo + 4096;
  if (next != 0 && next < hole + 2 * 4096) GTEST_SKIP() << "no unmapped page after the test mapping";
  ASSERT_EQ(readable_extent(reinterpret_cast<void*>(hole), 1 << 20), 0u) << "the hole is unmapped";
  char forged[96];
  snprintf(forged, sizeof forged, "%lx-%lx r--p 00000000 00:00 0 ", static_cast<unsigned long>(hole),
           static_cast<unsigned long>(hole + 4096));
  // Rename so that the forged text starts at byte 511 of the line: the prefix
  // (addresses, offset, device, inode, padding) is what precedes the path.
  size_t prefix = line.find(dir.string());
  ASSERT_NE(prefix, std::string::npos) << line;
  size_t path_start = prefix + dir.string().size() + 1;  // after "<dir>/"
  ASSERT_LT(path_start, 511u - 1);
  std::string filler(511 - path_start, 'p');
  // Path components are at most 255 bytes: put the filler in directories.
  fs::path target = dir;
  std::string rest = filler;
  while (rest.size() > 200) {
    target /= rest.substr(0, 199);  // 199 + '/' = 200 bytes of the line
    rest = rest.substr(200);
  }
  fs::create_directories(target);
  fs::path crafted = target / (rest + forged + std::string(40, 'q'));
  ASSERT_EQ(rename(file.c_str(), crafted.c_str()), 0);
  std::string now = line_of(lo, &next);
  ASSERT_EQ(now.find(forged), 511u) << now;
  EXPECT_EQ(readable_extent(reinterpret_cast<void*>(hole), 1 << 20), 0u) << "the forged range is not memory";
  EXPECT_EQ(readable_extent(m, 1 << 20) >= 4096, true) << "the real mapping still is";
  munmap(m, 4096);
  fs::remove_all(dir);
}

// The launch fast path is a property of the kernel: a kernel checked, probed
// and clean skips the guard even while another fat binary's kernels are still
// pending (issue: any pending fat binary used to send every launch of every
// kernel down the slow path).
TEST(GuardLaunchPath, CleanKernelsSkipTheGuardWhileOthersArePending) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int launched, pending, host_launched, host_pending, host_absent;
  Guard& g = Guard::get();
  for (auto [handle, host, name] : {std::tuple{&launched, &host_launched, "_Z10vector_addPKfS0_Pfi"},
                                    std::tuple{&pending, &host_pending, "_Z10vector_addPKfS0_Pfi"},
                                    std::tuple{&pending, &host_absent, "_Z9absent_v2v"}}) {
    if (host != &host_absent) {
      hgtest::register_fatbin(g, &w, handle);
    }
    g.on_register_function(handle, host, name);
  }
  ASSERT_TRUE(launch_needs_check(0)) << "fat binaries are pending: the process-wide gate is up";
  EXPECT_FALSE(launch_known_clean(&host_launched, 0)) << "not checked or probed yet";
  EXPECT_EQ(g.on_launch(&host_launched, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_TRUE(launch_known_clean(&host_launched, 0)) << "checked at its first launch, no finding";
  EXPECT_TRUE(launch_known_clean(&host_launched, 1024)) << "dynamic LDS within every target's limit";
  EXPECT_FALSE(launch_known_clean(&host_launched, 1ull << 20)) << "more LDS than gfx90a has: the guard decides";
  EXPECT_TRUE(launch_needs_check(0)) << "the other fat binary is still pending";
  EXPECT_FALSE(launch_known_clean(&host_pending, 0)) << "its fat binary was never launched from";
  g.on_launch(&host_absent, 0, "hipLaunchKernel");
  EXPECT_FALSE(launch_known_clean(&host_absent, 0)) << "a kernel with a finding (HG409) always takes the slow path";
  int unknown = 0;
  EXPECT_FALSE(launch_known_clean(&unknown, 0)) << "an unknown pointer";
  g.on_unregister_fatbin(&launched);
  EXPECT_FALSE(launch_known_clean(&host_launched, 0)) << "unregistered";
  g.on_unregister_fatbin(&pending);
}

// A launch indexes the fat binary of its own kernel only: a library's other
// fat binaries (rocSPARSE: 111 of them, 12 k kernels) are not put in the
// kernel table on the first launch of the program's kernel. The fat binary
// whose kernel has a finding (HG409) shows when it is indexed: the gate's
// findings bit.
TEST(GuardLaunchPath, ALaunchIndexesOnlyItsOwnFatBinary) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int clean, other, host_clean, host_other, host_absent;
  Guard& g = Guard::get();
  for (int* handle : {&clean, &other}) {
    hgtest::register_fatbin(g, &w, handle);
  }
  g.on_register_function(&clean, &host_clean, "_Z10vector_addPKfS0_Pfi");
  g.on_register_function(&other, &host_other, "_Z10vector_addPKfS0_Pfi");
  g.on_register_function(&other, &host_absent, "_Z9absent_v2v");
  auto gate = [] { return g_launch_gate.load(); };
  ASSERT_TRUE(gate() & kGateUnindexed);
  // The findings bit stays up once a kernel with findings was indexed in this process (the
  // process's guard): its transition shows only when no earlier test set it.
  const bool findings_before = gate() & kGateFindings;
  EXPECT_EQ(g.on_launch(&host_clean, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_TRUE(launch_known_clean(&host_clean, 0));
  if (!findings_before)
    EXPECT_FALSE(gate() & kGateFindings) << "the other fat binary was indexed: its HG409 kernel is known";
  EXPECT_TRUE(gate() & kGateUnindexed) << "the other fat binary is still waiting";
  g.on_launch(&host_other, 0, "hipLaunchKernel");
  EXPECT_TRUE(gate() & kGateFindings) << "a launch of its kernel indexes it";
  EXPECT_FALSE(gate() & kGateUnindexed) << "nothing is left to index";
  EXPECT_FALSE(launch_known_clean(&host_absent, 0)) << "HG409: the slow path";

  // A key that no fat binary registered indexes everything at once (not searched for again).
  static int third, host_third;
  hgtest::register_fatbin(g, &w, &third);
  g.on_register_function(&third, &host_third, "_Z10vector_addPKfS0_Pfi");
  ASSERT_TRUE(gate() & kGateUnindexed);
  int unknown = 0;
  EXPECT_EQ(g.on_launch(&unknown, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_FALSE(gate() & kGateUnindexed);
  EXPECT_FALSE(launch_known_clean(&unknown, 0));
  // The bundle is freed on return: nothing may read it afterwards (the exit report).
  for (int* handle : {&clean, &other, &third}) g.on_unregister_fatbin(handle);
}

// A stub registered again, by a fat binary whose selected code object lacks
// its kernel, keeps its first registration: the runtime drops the second
// (CLR StatCO::RegisterFunction), so its launches stay decided on the first.
TEST(GuardLaunchPath, AKernelRegisteredAgainIsDecidedOnItsFirstRegistration) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int first, second, host;
  Guard& g = Guard::get();
  hgtest::register_fatbin(g, &w, &first);
  g.on_register_function(&first, &host, "_Z10vector_addPKfS0_Pfi");
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward);
  ASSERT_TRUE(launch_known_clean(&host, 0));
  hgtest::register_fatbin(g, &w, &second);
  size_t mark = g.said().findings.size();  // the process's guard: other tests of this binary said theirs
  testing::internal::CaptureStderr();
  g.on_register_function(&second, &host, "_Z9absent_v2v");
  EXPECT_TRUE(launch_known_clean(&host, 0)) << "still the first registration's facts";
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward);
  testing::internal::GetCapturedStderr();
  for (const auto& d : hgtest::said_since(g, mark))
    EXPECT_NE(d.kernel, "_Z9absent_v2v") << "a registration the runtime drops: " << format_line(d);
  // The first unregistered, the runtime forgets the stub: nothing to decide it on.
  g.on_unregister_fatbin(&first);
  EXPECT_FALSE(launch_known_clean(&host, 0));
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_FALSE(launch_known_clean(&host, 0)) << "the second's registration was dropped";
  g.on_unregister_fatbin(&second);
}

// Two kernels whose keys share a slot of the launch cache: each launch on the
// slow path takes the slot over, and the other kernel's next launch is a miss
// (the slow path again), never the other kernel's facts.
TEST(GuardLaunchPath, LaunchCacheCollisionsFallBackToTheSlowPath) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  static int handle;
  alignas(16) static char hosts[LaunchCache::kSlots * 16 + 16];
  const void* a = &hosts[0];
  const void* b = &hosts[LaunchCache::kSlots * 16];
  ASSERT_EQ(LaunchCache::index(a), LaunchCache::index(b));
  Guard& g = Guard::get();
  hgtest::register_fatbin(g, &w, &handle);
  g.on_register_function(&handle, a, "_Z10vector_addPKfS0_Pfi");
  g.on_register_function(&handle, b, "_Z10vector_addPKfS0_Pfi");
  EXPECT_EQ(g.on_launch(a, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_TRUE(launch_known_clean(a, 0));
  EXPECT_FALSE(launch_known_clean(b, 0)) << "b was never launched: the slot holds a";
  EXPECT_EQ(g.on_launch(b, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_TRUE(launch_known_clean(b, 0));
  EXPECT_FALSE(launch_known_clean(a, 0)) << "the slot holds b now";
  EXPECT_FALSE(launch_known_clean(b, 1ull << 20)) << "b's own LDS limit, not a's";
  g.on_unregister_fatbin(&handle);
  EXPECT_FALSE(launch_known_clean(b, 0)) << "unregistered: the slot's facts are no longer b's";
}
