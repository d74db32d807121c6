// A plain program built for many targets (specific, xnack variants, generic, compressed, -fgpu-rdc, v5/v6).
#include <hip/hip_runtime.h>

#include <cstdio>

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  // hipLaunchKernel itself, which saxpy<<<...>>> calls on a GPU: without one, the runtime's
  // __hipPushCallConfiguration fails first and the kernel's stub never calls it.
  float a = 2.0f;
  const float* x = nullptr;
  float* y = nullptr;
  int n = 1024;
  void* args[] = {&a, &x, &y, &n};
  hipError_t e = hipLaunchKernel(reinterpret_cast<const void*>(saxpy), dim3(4), dim3(256), args, 0, nullptr);
  std::printf("saxpy: launch %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  return 0;
}
