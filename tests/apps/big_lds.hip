// A kernel whose static LDS fits gfx950 (160 KiB) but not gfx9xx/gfx10 (64 KiB)
// would not compile for those targets, so this one stays at 48 KiB: it must
// pass every check (a negative control for HG301).
#include <hip/hip_runtime.h>

#include <cstdio>

__global__ void lds_48k(float* out) {
  __shared__ float tile[12 * 1024];  // 48 KiB
  tile[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
}

int main() {
  float* d = nullptr;
  hipError_t e = hipMalloc(&d, 256 * sizeof(float));
  printf("hipMalloc: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  hipLaunchKernelGGL(lds_48k, dim3(1), dim3(256), 0, 0, d);
  e = hipGetLastError();
  printf("hipLaunchKernel: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  return 0;
}
