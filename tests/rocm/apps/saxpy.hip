// A plain program built for many targets (specific, xnack variants, generic, compressed, -fgpu-rdc, v5/v6).
#include <hip/hip_runtime.h>

#include <cstdio>

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  hipLaunchKernelGGL(saxpy, dim3(4), dim3(256), 0, 0, 2.0f, nullptr, nullptr, 1024);
  hipError_t e = hipGetLastError();
  std::printf("saxpy: launch %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  return 0;
}
