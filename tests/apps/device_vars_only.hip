// Only __device__ variables, no kernel (as rocFFT's fat binary, whose kernels
// are compiled at run time): registered with __hipRegisterVar alone.
#include <hip/hip_runtime.h>

#include <cstdio>

__device__ int table[64] = {1, 2, 3};
__device__ float scale = 2.0f;

int main() {
  std::puts("main reached");
  return 0;
}
