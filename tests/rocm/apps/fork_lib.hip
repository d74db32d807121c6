// A HIP shared library for threads_host (tests/apps/threads_host.cpp) under a real runtime without a
// GPU: kernels_lib_run makes the calls that reach the shim's checks there (a kernel's attributes,
// which check its fat binary in full, and hipLaunchKernel itself: without a GPU the runtime's
// __hipPushCallConfiguration fails first and <<<>>> never calls it). Their results are the runtime's.
#include <hip/hip_runtime.h>

__global__ void lib_kernel(int* p) { p[threadIdx.x] = static_cast<int>(threadIdx.x); }

extern "C" int kernels_lib_run() {
  hipFuncAttributes attr{};
  hipError_t e = hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(lib_kernel));
  int* d = nullptr;
  void* args[] = {&d};
  hipError_t l = hipLaunchKernel(reinterpret_cast<const void*>(lib_kernel), dim3(1), dim3(64), args, 0, nullptr);
  return static_cast<int>(e != hipSuccess ? e : l);
}
