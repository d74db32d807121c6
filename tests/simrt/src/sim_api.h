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

// HIP 7.x types (layout as in HIP 7.2's hip_runtime_api.h).
struct ihipLibrary_sim;
struct ihipKernel_sim;
using hipLibrary_sim = ihipLibrary_sim*;
using hipKernel_sim = ihipKernel_sim*;  // a hipFunction_t, as in CLR
struct hipFunctionLaunchParams_sim {
  hipFunction_t function;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  hipStream_t hStream;
  void** kernelParams;
};
struct HIP_LAUNCH_CONFIG_sim {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  hipStream_t hStream;
  void* attrs;
  unsigned int numAttrs;
};
// hipGraphNodeParams: type (hipGraphNodeTypeKernel is 0 since HIP 5.3), then a
// union whose kernel member is a hipKernelNodeParams.
constexpr int kSimGraphNodeTypeKernel = 0;
struct hipGraphNodeParams_sim {
  hipGraphNodeParams_sim() : reserved1{} {}  // dim3's constructor makes the union's non-trivial
  int type = 0;
  int reserved0[3] = {};
  union {
    long long reserved1[29];
    hipKernelNodeParams kernel;
  };
  long long reserved2 = 0;
};
static_assert(sizeof(hipGraphNodeParams_sim) == 256 && offsetof(hipGraphNodeParams_sim, kernel) == 16);
static_assert(offsetof(HIP_LAUNCH_CONFIG_sim, sharedMemBytes) == 24);
static_assert(offsetof(hipFunctionLaunchParams_sim, sharedMemBytes) == 32);

extern "C" {
void** __hipRegisterFatBinary(const void* data);
void __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction, const char* deviceName,
                           unsigned int threadLimit, uint3* tid, uint3* bid, dim3* blockDim, dim3* gridDim, int* wSize);
void __hipRegisterVar(void** modules, void* var, char* hostVar, char* deviceVar, int ext, size_t size, int constant,
                      int global);
void __hipUnregisterFatBinary(void** modules);
hipError_t hipGetFuncBySymbol(hipFunction_t* functionPtr, const void* symbolPtr);
hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                            void** kernelParams);
hipError_t hipLaunchKernelExC(const hipLaunchConfig_sim* config, const void* fPtr, void** args);
hipError_t hipExtModuleLaunchKernel(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                                    uint32_t globalWorkSizeZ, uint32_t localWorkSizeX, uint32_t localWorkSizeY,
                                    uint32_t localWorkSizeZ, size_t sharedMemBytes, hipStream_t hStream,
                                    void** kernelParams, void** extra, hipEvent_t startEvent, hipEvent_t stopEvent,
                                    uint32_t flags);
hipError_t hipModuleLoadFatBinary(hipModule_t* module, const void* fatbin);
hipError_t hipLibraryLoadData(hipLibrary_sim* library, const void* code, hipJitOption* jitOptions,
                              void** jitOptionsValues, unsigned int numJitOptions, int* libraryOptions,
                              void** libraryOptionValues, unsigned int numLibraryOptions);
hipError_t hipLibraryLoadFromFile(hipLibrary_sim* library, const char* fileName, hipJitOption* jitOptions,
                                  void** jitOptionsValues, unsigned int numJitOptions, int* libraryOptions,
                                  void** libraryOptionValues, unsigned int numLibraryOptions);
hipError_t hipLibraryUnload(hipLibrary_sim library);
hipError_t hipLibraryGetKernel(hipKernel_sim* pKernel, hipLibrary_sim library, const char* name);
hipError_t hipModuleLaunchCooperativeKernelMultiDevice(hipFunctionLaunchParams_sim* launchParamsList,
                                                       unsigned int numDevices, unsigned int flags);
hipError_t hipDrvLaunchKernelEx(const HIP_LAUNCH_CONFIG_sim* config, hipFunction_t f, void** params, void** extra);
hipError_t hipGraphAddNode(hipGraphNode_t* pGraphNode, hipGraph_t graph, const hipGraphNode_t* pDependencies,
                           size_t numDependencies, hipGraphNodeParams_sim* nodeParams);
hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams_sim* nodeParams);
hipError_t hipGraphExecNodeSetParams(hipGraphExec_t graphExec, hipGraphNode_t node, hipGraphNodeParams_sim* nodeParams);
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t* device);
hipError_t hipGetProcAddress(const char* symbol, void** pfn, int hipVersion, uint64_t flags, void* symbolStatus);
hipError_t hipGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags, void* driverStatus);
hipError_t hipGetDriverEntryPoint_spt(const char* symbol, void** funcPtr, unsigned long long flags, void* driverStatus);
}
