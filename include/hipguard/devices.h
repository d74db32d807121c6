// GPUs of this machine, read from the KFD topology in sysfs without touching
// the HIP runtime (safe inside static constructors).
//
// Sources: Linux include/uapi/linux/kfd_sysfs.h and amdkfd/kfd_topology.c
// (properties file: "name value" lines; gfx_target_version = M*10000+m*100+s;
// capability bit 26 = SRAM EDC support), ROCr amd_topology.cpp (HSA_XNACK,
// HSA_ENABLE_SRAMECC, HSA_OVERRIDE_GFX_VERSION semantics).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/target.h"

namespace hipguard {

struct KfdNode {
  unsigned node = 0;                // sysfs node number
  uint64_t gfx_target_version = 0;  // e.g. 90402
  uint64_t lds_size_in_kb = 0;
  uint64_t wave_front_size = 0;
  uint64_t simd_count = 0;  // 0 on CPU nodes
  uint64_t capability = 0;
};

// Parses one KFD "properties" file. Unknown keys are ignored, like libhsakmt.
KfdNode parse_kfd_properties(std::string_view text);

struct Device {
  unsigned index = 0;      // HIP device index among visible GPUs
  unsigned node = 0;       // KFD node number
  TargetId target;         // with explicit xnack/sramecc where known
  uint64_t lds_bytes = 0;  // from lds_size_in_kb (0 when not reported)
};

// A name -> value lookup such as getenv (nullptr: unset).
using EnvLookup = std::function<const char*(const char*)>;

// GPUs under `sysfs_root` ("/sys" on a real machine), in KFD node order,
// honouring the runtime variables `env` gives (the caller passes getenv, or
// its own values: discovery reads no environment): ROCR_VISIBLE_DEVICES,
// HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (indices), HSA_OVERRIDE_GFX_VERSION,
// HSA_XNACK and HSA_ENABLE_SRAMECC. With HSA_XNACK unset, xnack is the amdgpu
// driver's default: off (noretry=1) on gfx900, gfx906, gfx908, gfx90a,
// gfx940-942 and gfx950, left Any elsewhere.
std::vector<Device> discover_devices(const std::string& sysfs_root, const EnvLookup& env);

}  // namespace hipguard
