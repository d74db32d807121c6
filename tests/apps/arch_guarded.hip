// A kernel defined for one GPU only: its body is compiled for the host stub and
// for gfx90a, and left out of every other device pass (a common pattern in
// libraries that guard kernels with __gfx...__ macros). The program registers it
// for every code object, so on a gfx1030 GPU the selected code object lacks it:
// hipGetFuncBySymbol and the launch fail with hipErrorInvalidDeviceFunction.
#include <hip/hip_runtime.h>

#include <cstdio>

#if !defined(__HIP_DEVICE_COMPILE__) || defined(__gfx90a__)
__global__ void only_on_gfx90a(float* out) { out[threadIdx.x] = 2.0f; }
#else
__global__ void only_on_gfx90a(float* out);
#endif

__global__ void everywhere(float* out) { out[threadIdx.x] = 1.0f; }

int main() {
  printf("arch_guarded: main reached\n");
  float* d = nullptr;
  hipError_t e = hipMalloc(&d, 64 * sizeof(float));
  printf("hipMalloc: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  hipLaunchKernelGGL(everywhere, dim3(1), dim3(64), 0, 0, d);
  e = hipGetLastError();
  printf("hipLaunchKernel everywhere: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  hipLaunchKernelGGL(only_on_gfx90a, dim3(1), dim3(64), 0, 0, d);
  e = hipGetLastError();
  printf("hipLaunchKernel only_on_gfx90a: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  return 0;
}
