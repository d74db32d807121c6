// A HIP shared library (its constructor registers a fat binary), loaded with
// dlopen by dlopen_host, which itself does not link the HIP runtime.
#include <hip/hip_runtime.h>

__global__ void lib_kernel(int* p) { p[threadIdx.x] = static_cast<int>(threadIdx.x); }

extern "C" int kernels_lib_run() {
  int* d = nullptr;
  hipError_t e = hipMalloc(&d, 64 * sizeof(int));
  if (e != hipSuccess) return static_cast<int>(e);
  hipLaunchKernelGGL(lib_kernel, dim3(1), dim3(64), 0, 0, d);
  return static_cast<int>(hipGetLastError());
}
