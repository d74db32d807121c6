// The guard's memory over load/unload cycles: unloaded modules and
// unregistered fat binaries release what they hold, and what the report keeps
// of them is bounded (issue: a long-running server loading and unloading
// modules must not grow because hipguard is preloaded).
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/guard.h"
#include "runtime/registry.h"
#include "check_util.h"

using namespace hipguard;

namespace {

using checks::kApps;

// Bytes of the heap in use, mmap'ed blocks included: glibc serves large blocks (a hash table's
// buckets) with mmap until a free raises its threshold, and uordblks alone would not see them.
size_t heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// A guard of each test's own with guard_test_env.cpp's settings (warn mode, a report).
class GuardMemory : public hgtest::OwnGuardTest {
 protected:
  GuardMemory() : OwnGuardTest(checks::warn_gfx90a_with_report()) {}

  // Bytes the heap grew by per cycle over `cycles` cycles, after `warm_up` cycles
  // (hash tables and deduplicated findings reach their size there).
  template <class Cycle>
  static double growth_per_cycle(size_t cycles, Cycle cycle, size_t warm_up = 2000) {
    for (size_t i = 0; i < warm_up; ++i) cycle(i);
    size_t before = heap_in_use();
    for (size_t i = warm_up; i < warm_up + cycles; ++i) cycle(i);
    size_t after = heap_in_use();
    double per_cycle = after > before ? double(after - before) / double(cycles) : 0.0;
    printf("heap growth over %zu cycles: %zu -> %zu bytes (%.1f per cycle)\n", cycles, before, after, per_cycle);
    return per_cycle;
  }
};

// A code object image, a module handle and a hipFunction_t per cycle, each at
// an address of its own (a runtime hands out fresh ones), as a server
// loading and unloading one module over and over would see.
TEST_F(GuardMemory, ModuleLoadLaunchUnloadCyclesKeepNothing) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> image = checks::app_code_object("vector_add_gfx90a.hipfb", "gfx90a");
  ASSERT_FALSE(image.empty());
  Guard& g = guard();
  std::vector<char> handles(1 << 20);  // addresses for modules and functions, never dereferenced
  double per_cycle = growth_per_cycle(20000, [&](size_t i) {
    const void* module = &handles[(2 * i) % handles.size()];
    const void* function = &handles[(2 * i + 1) % handles.size()];
    hgtest::load_module_data(g, image.data(), module);
    g.on_module_get_function(module, "_Z10vector_addPKfS0_Pfi", function, 0);
    g.on_launch(function, 0, "hipModuleLaunchKernel");
    g.on_module_unloaded(module);
  });
  EXPECT_LT(per_cycle, 8.0) << "bytes kept per module load/launch/unload cycle";
}

TEST_F(GuardMemory, FatbinRegisterUnregisterCyclesKeepNothing) {
  std::string path = kApps + "/vector_add_gfx90a.hipfb";
  if (kApps.empty() || !checks::exists(path)) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> bundle = checks::read_bytes(path);
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  Guard& g = guard();
  std::vector<char> handles(1 << 20);
  double per_cycle = growth_per_cycle(
      20000,
      [&](size_t i) {
        const void* handle = &handles[(2 * i) % handles.size()];
        const void* host = &handles[(2 * i + 1) % handles.size()];
        hgtest::register_fatbin(g, &w, handle);
        std::string name = "_Z10vector_addPKfS0_Pfi";
        g.on_register_function(handle, host, name.c_str());
        g.on_launch(host, 0, "hipLaunchKernel");
        g.on_unregister_fatbin(handle);
      },
      /*warm_up=*/Registry::kPruneAbove * 3 / 2);  // each cycle's stub is a new address: past the first prune
  EXPECT_LT(per_cycle, 8.0) << "bytes kept per fat binary register/launch/unregister cycle";
}

}  // namespace
