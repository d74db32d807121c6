// C++-linkage exports. ROCm 5.2's hip_ext.h declares hipExtModuleLaunchKernel
// outside extern "C", so programs built against it reference the mangled name
// _Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j@hip_4.2
// (as exported by the installed libamdhip64.so.5).
#include "sim_internal.h"

__attribute__((visibility("default"))) hipError_t hipExtModuleLaunchKernel(
    hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY, uint32_t globalWorkSizeZ,
    uint32_t localWorkSizeX, uint32_t localWorkSizeY, uint32_t localWorkSizeZ, size_t sharedMemBytes, hipStream_t,
    void** kernelParams, void** extra, hipEvent_t, hipEvent_t, uint32_t) {
  return simrt::ext_module_launch(f, globalWorkSizeX, globalWorkSizeY, globalWorkSizeZ, localWorkSizeX, localWorkSizeY,
                                  localWorkSizeZ, sharedMemBytes, kernelParams, extra);
}

// hipHccModuleLaunchKernel: C++ linkage as ROCm 5.x exports it (hip_hcc.map.in
// extern "C++" hipHccModuleLaunchKernel*, hip_4.2; the C symbol is in
// sim_runtime.cpp); hipExtModuleLaunchKernel without flags.
__attribute__((visibility("default"))) hipError_t hipHccModuleLaunchKernel(
    hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY, uint32_t globalWorkSizeZ,
    uint32_t localWorkSizeX, uint32_t localWorkSizeY, uint32_t localWorkSizeZ, size_t sharedMemBytes, hipStream_t,
    void** kernelParams, void** extra, hipEvent_t, hipEvent_t) {
  return simrt::ext_module_launch(f, globalWorkSizeX, globalWorkSizeY, globalWorkSizeZ, localWorkSizeX, localWorkSizeY,
                                  localWorkSizeZ, sharedMemBytes, kernelParams, extra);
}
