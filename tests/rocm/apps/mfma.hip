// A matrix-core kernel (MFMA on gfx90a/gfx942, AGPRs in the unified VGPR file) and its plain twin elsewhere.
#include <hip/hip_runtime.h>

#include <cstdio>

typedef float float16_t __attribute__((ext_vector_type(16)));

__global__ void mfma_tile(float* out, const float* a, const float* b) {
  float16_t acc = {};
#if defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
  for (int k = 0; k < 64; ++k)
    acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a[threadIdx.x + k], b[threadIdx.x + k], acc, 0, 0, 0);
#else
  for (int k = 0; k < 16; ++k) acc[k] = a[threadIdx.x + k] * b[threadIdx.x + k];
#endif
  for (int i = 0; i < 16; ++i) out[threadIdx.x * 16 + i] = acc[i];
}

int main() {
  hipLaunchKernelGGL(mfma_tile, dim3(1), dim3(64), 0, 0, nullptr, nullptr, nullptr);
  std::printf("mfma: launch %d\n", static_cast<int>(hipGetLastError()));
  return 0;
}
