// GPU discovery from KFD topology fixtures (tests/fixtures/sysfs, written in
// amdkfd's node_show() format) and the environment variables ROCr honours.
#include "hipguard/devices.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using namespace hipguard;

namespace {

const std::string kFixtures = HIPGUARD_FIXTURES_DIR "/sysfs";

// The runtime variables of one test, passed to discover_devices (which reads no environment).
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto& [k, v] : vars) vars_[k] = v;
  }
  operator EnvLookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace

TEST(Devices, PropertiesFileKeysAndCpuNodes) {
  KfdNode n = parse_kfd_properties(
      "cpu_cores_count 0\nsimd_count 1216\nlds_size_in_kb 64\nwave_front_size 64\n"
      "gfx_target_version 90402\ncapability 67158144\nbogus\nunknown_key 7\n");
  EXPECT_EQ(n.simd_count, 1216u);
  EXPECT_EQ(n.lds_size_in_kb, 64u);
  EXPECT_EQ(n.gfx_target_version, 90402u);
  EXPECT_EQ(n.capability, 67158144u);
  EXPECT_EQ(parse_kfd_properties("gfx_target_version 99999999999999999999999\n").gfx_target_version, 0u)
      << "overflowing values are ignored";
}

TEST(Devices, Mi300xMi355xMi210) {
  Env env({});
  auto mi300x = discover_devices(kFixtures + "/mi300x", env);
  ASSERT_EQ(mi300x.size(), 1u) << "the CPU node (simd_count 0) is not a GPU";
  EXPECT_EQ(mi300x[0].target.str(), "gfx942:sramecc+:xnack-") << "the driver's default without HSA_XNACK";
  EXPECT_EQ(mi300x[0].target.xnack, Feature::Off);
  EXPECT_EQ(mi300x[0].lds_bytes, 65536u);
  EXPECT_EQ(mi300x[0].target.lds_bytes, 65536u) << "the checks use the GPU's own figure";
  EXPECT_EQ(mi300x[0].node, 1u);
  auto mi355x = discover_devices(kFixtures + "/mi355x", env);
  ASSERT_EQ(mi355x.size(), 1u);
  EXPECT_EQ(mi355x[0].target.processor, "gfx950");
  EXPECT_EQ(mi355x[0].lds_bytes, 163840u);
  auto mi210 = discover_devices(kFixtures + "/mi210", env);
  ASSERT_EQ(mi210.size(), 1u);
  EXPECT_EQ(mi210[0].target.str(), "gfx90a:sramecc-:xnack-") << "capability bit 26 clear: sramecc off";
  EXPECT_TRUE(discover_devices(kFixtures + "/does-not-exist", env).empty());
}

TEST(Devices, XnackSrameccAndOverrideFromTheEnvironment) {
  {
    Env env({{"HSA_XNACK", "1"}});
    EXPECT_EQ(discover_devices(kFixtures + "/mi300x", env)[0].target.str(), "gfx942:sramecc+:xnack+");
  }
  {
    Env env({{"HSA_XNACK", "0"}, {"HSA_ENABLE_SRAMECC", "0"}});
    EXPECT_EQ(discover_devices(kFixtures + "/mi300x", env)[0].target.str(), "gfx942:sramecc-:xnack-");
  }
  {
    // HSA_OVERRIDE_GFX_VERSION replaces the version of every GPU (libhsakmt).
    Env env({{"HSA_OVERRIDE_GFX_VERSION", "9.0.10"}});
    auto d = discover_devices(kFixtures + "/mi300x", env);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].target.processor, "gfx90a");
  }
}

TEST(Devices, VisibleDevicesSelectAndRenumber) {
  {
    Env env({});
    auto all = discover_devices(kFixtures + "/mixed", env);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].target.processor, "gfx942");
    EXPECT_EQ(all[1].target.processor, "gfx90a");
    EXPECT_EQ(all[1].index, 1u);
  }
  {
    Env env({{"HIP_VISIBLE_DEVICES", "1"}});
    auto d = discover_devices(kFixtures + "/mixed", env);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].target.processor, "gfx90a");
    EXPECT_EQ(d[0].index, 0u) << "HIP renumbers the visible devices from 0";
    EXPECT_EQ(d[0].node, 2u);
  }
  {
    Env env({{"ROCR_VISIBLE_DEVICES", "1,0"}, {"HIP_VISIBLE_DEVICES", "1"}});
    auto d = discover_devices(kFixtures + "/mixed", env);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].target.processor, "gfx942") << "HIP indexes into what ROCR left, in its order";
  }
  {
    Env env({{"CUDA_VISIBLE_DEVICES", "0,7,1"}});
    auto d = discover_devices(kFixtures + "/mixed", env);
    ASSERT_EQ(d.size(), 1u) << "the list stops at the first invalid index";
  }
}

// A hostile topology never hangs, never reads without end, never shrinks the
// LDS limit through an overflow: a FIFO or a device as "properties" is
// skipped, an absurd lds_size_in_kb is ignored.
TEST(Devices, HostileTopologyIsSkippedNotFollowed) {
  namespace fs = std::filesystem;
  Env env({});
  fs::path root = fs::temp_directory_path() / ("hipguard-kfd-" + std::to_string(getpid()));
  fs::path nodes = root / "class/kfd/kfd/topology/nodes";
  fs::create_directories(nodes / "1");
  fs::create_directories(nodes / "2");
  fs::create_directories(nodes / "3");
  ASSERT_EQ(mkfifo((nodes / "1" / "properties").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", nodes / "2" / "properties");
  // 2^54 + 1 KiB: times 1024 it wraps to 1 KiB.
  std::ofstream(nodes / "3" / "properties") << "simd_count 1216\ngfx_target_version 90402\ncapability 67158144\n"
                                               "lds_size_in_kb 18014398509481985\n";
  auto devices = discover_devices(root.string(), env);
  fs::remove_all(root);
  ASSERT_EQ(devices.size(), 1u) << "only node 3 is a readable GPU";
  EXPECT_EQ(devices[0].target.processor, "gfx942");
  EXPECT_EQ(devices[0].lds_bytes, 0u) << "ignored, not 1 KiB";
  EXPECT_EQ(lds_limit(devices[0].target, *find_processor("gfx942")), 65536u);
}
