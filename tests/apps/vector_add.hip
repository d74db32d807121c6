// A minimal HIP program: one kernel, one device function, one launch.
// Prints each HIP call's result so tests can compare runs with and without the shim.
#include <hip/hip_runtime.h>

#include <cstdio>

// noinline: stays a separate device function (STT_FUNC, not a kernel) in the code object.
__device__ __attribute__((noinline)) float scale(float x) { return 2.0f * x; }

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = scale(a[i]) + b[i];
}

int main() {
  printf("vector_add: main reached\n");
  const int n = 256;
  float* d = nullptr;
  hipError_t e = hipMalloc(&d, 3 * n * sizeof(float));
  printf("hipMalloc: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  hipLaunchKernelGGL(vector_add, dim3(n / 64), dim3(64), 0, 0, d, d + n, d + 2 * n, n);
  e = hipGetLastError();
  printf("hipLaunchKernel: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  return 0;
}
