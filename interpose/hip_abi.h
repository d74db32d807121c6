// The HIP ABI types the shim's wrappers take (hip_runtime_api.h / hip_ext.h of
// HIP 7.2, ROCm/rocm-systems projects/hip/include/hip): the shim never includes
// HIP headers so that it cannot pull in or depend on the runtime. Offsets asserted.
#pragma once

#include <cstddef>
#include <cstdint>

using hipError_t = int;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipStream_t;
struct ihipEvent_t;
struct ihipLibrary_t;
struct ihipKernel_t;
struct ihipGraph;
struct hipGraphNode;
struct hipGraphExec;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;
using hipLibrary_t = ihipLibrary_t*;
using hipKernel_t = ihipKernel_t*;  // CLR: a hipFunction_t (LibraryContainer::Kernel -> getDynFunc)
using hipGraph_t = ihipGraph*;
using hipGraphNode_t = hipGraphNode*;
using hipGraphExec_t = hipGraphExec*;
using hipJitOption = int;
using hipLibraryOption = int;
// Enums of the kernel-attribute and occupancy calls, passed by value (int-sized, as C enums are).
using hipFunction_attribute = int;
using hipFuncAttribute = int;
struct hipFuncAttributes;  // filled in by the runtime; the shim only passes the pointer on
struct uint3;
struct dim3 {  // passed by value: layout must match HIP's (three uint32_t)
  uint32_t x, y, z;
};

// hipLaunchKernelExC: mirrors cudaLaunchConfig_t.
struct hipLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  hipStream_t stream;
  void* attrs;
  unsigned int numAttrs;
};
static_assert(offsetof(hipLaunchConfig_t, dynamicSmemBytes) == 24);

struct hipLaunchParams {  // hipLaunchCooperativeKernelMultiDevice, hipExtLaunchMultiKernelMultiDevice
  void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  hipStream_t stream;
};
static_assert(offsetof(hipLaunchParams, args) == 32 && offsetof(hipLaunchParams, sharedMem) == 40 &&
              sizeof(hipLaunchParams) == 56);

struct hipFunctionLaunchParams {  // hipModuleLaunchCooperativeKernelMultiDevice
  hipFunction_t function;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  hipStream_t hStream;
  void** kernelParams;
};
static_assert(offsetof(hipFunctionLaunchParams, sharedMemBytes) == 32 &&
              offsetof(hipFunctionLaunchParams, hStream) == 40 && sizeof(hipFunctionLaunchParams) == 56);

struct HIP_LAUNCH_CONFIG {  // hipDrvLaunchKernelEx
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  hipStream_t hStream;
  void* attrs;
  unsigned int numAttrs;
};
static_assert(offsetof(HIP_LAUNCH_CONFIG, sharedMemBytes) == 24 && offsetof(HIP_LAUNCH_CONFIG, hStream) == 32);

struct hipKernelNodeParams {
  dim3 blockDim;
  void** extra;
  void* func;  // host function (or hipFunction_t)
  dim3 gridDim;
  void** kernelParams;
  unsigned int sharedMemBytes;
};
static_assert(offsetof(hipKernelNodeParams, func) == 24 && offsetof(hipKernelNodeParams, sharedMemBytes) == 56 &&
              sizeof(hipKernelNodeParams) == 64);

// hipGraphNodeParams: node type, reserved, then a union whose kernel member is
// a hipKernelNodeParams. hipGraphNodeTypeKernel is 0 in HIP >= 5.3 (ROCm 5.2's
// headers had 1; hipGraphAddNode is hip_5.5).
constexpr int kHipGraphNodeTypeKernel = 0;
struct hipGraphNodeParams {
  int type;
  int reserved0[3];
  union {
    long long reserved1[29];
    hipKernelNodeParams kernel;
  };
  long long reserved2;
};
static_assert(offsetof(hipGraphNodeParams, kernel) == 16 && sizeof(hipGraphNodeParams) == 256);

// HIP_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, hipEnablePerThreadDefaultStream
constexpr uint64_t kPerThreadDefaultStream = 2;
