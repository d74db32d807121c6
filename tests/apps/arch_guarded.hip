// A kernel defined for one GPU only: its body is compiled for the host stub and
// for gfx90a, and left out of every other device pass (a common pattern in
// libraries that guard kernels with __gfx...__ macros). The program registers it
// for every code object, so on a gfx1030 GPU the selected code object lacks it:
// hipGetFuncBySymbol and the launch fail with hipErrorInvalidDeviceFunction.
// `arch_guarded attributes` asks for each kernel's attributes and occupancy
// instead of launching it (calls that make the runtime build the kernel too).
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstring>

#if !defined(__HIP_DEVICE_COMPILE__) || defined(__gfx90a__)
__global__ void only_on_gfx90a(float* out) { out[threadIdx.x] = 2.0f; }
#else
__global__ void only_on_gfx90a(float* out);
#endif

__global__ void everywhere(float* out) { out[threadIdx.x] = 1.0f; }

// hipFuncGetAttributes and hipOccupancyMaxActiveBlocksPerMultiprocessor of one kernel, each followed by
// hipGetLastError.
void query(const char* name, const void* kernel) {
  hipFuncAttributes attr{};
  hipError_t e = hipFuncGetAttributes(&attr, kernel);
  hipError_t last = hipGetLastError();
  printf("hipFuncGetAttributes %s: %d, last error %d\n", name, static_cast<int>(e), static_cast<int>(last));
  int blocks = 0;
  e = hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 64, 0);
  last = hipGetLastError();
  printf("hipOccupancyMaxActiveBlocksPerMultiprocessor %s: %d, last error %d\n", name, static_cast<int>(e),
         static_cast<int>(last));
}

int main(int argc, char** argv) {
  printf("arch_guarded: main reached\n");
  if (argc > 1 && strcmp(argv[1], "attributes") == 0) {
    query("everywhere", reinterpret_cast<const void*>(everywhere));
    query("only_on_gfx90a", reinterpret_cast<const void*>(only_on_gfx90a));
    return 0;
  }
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
