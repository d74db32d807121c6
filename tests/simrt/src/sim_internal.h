// Internal (hidden) entry points shared by the simulator's translation units.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace simrt {
hipError_t ext_module_launch(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                             uint32_t globalWorkSizeZ, uint32_t localWorkSizeX, uint32_t localWorkSizeY,
                             uint32_t localWorkSizeZ, size_t sharedMemBytes, void** kernelParams, void** extra);
}  // namespace simrt
