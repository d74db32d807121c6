// Entry points the simulator exports that Debian's ROCm 5.2 headers do not
// declare (compiler interface, newer ROCm), and the types they need. Shared by
// the simulator and the tests that call it directly.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>

// Types from newer HIP headers than Debian's 5.2 (layout as in CUDA/HIP 6.5).
struct hipLaunchAttribute_sim;
struct hipLaunchConfig_sim {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  hipLaunchAttribute_sim* attrs;
  unsigned int numAttrs;
};

extern "C" {
void** __hipRegisterFatBinary(const void* data);
void __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction, const char* deviceName,
                           unsigned int threadLimit, uint3* tid, uint3* bid, dim3* blockDim, dim3* gridDim,
                           int* wSize);
void __hipRegisterVar(void** modules, void* var, char* hostVar, char* deviceVar, int ext, size_t size,
                      int constant, int global);
void __hipUnregisterFatBinary(void** modules);
hipError_t hipGetFuncBySymbol(hipFunction_t* functionPtr, const void* symbolPtr);
hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes,
                                            hipStream_t stream, void** kernelParams);
hipError_t hipLaunchKernelExC(const hipLaunchConfig_sim* config, const void* fPtr, void** args);
hipError_t hipExtModuleLaunchKernel(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                                    uint32_t globalWorkSizeZ, uint32_t localWorkSizeX, uint32_t localWorkSizeY,
                                    uint32_t localWorkSizeZ, size_t sharedMemBytes, hipStream_t hStream,
                                    void** kernelParams, void** extra, hipEvent_t startEvent,
                                    hipEvent_t stopEvent, uint32_t flags);
}
