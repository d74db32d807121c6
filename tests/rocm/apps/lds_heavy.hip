// 18 KiB of __shared__: LDS limits occupancy, so LLVM allocates more VGPRs than the kernel uses (issue 27).
#include <hip/hip_runtime.h>

#include <cstdio>

constexpr int kRows = 18;
constexpr int kCols = 256;

// __launch_bounds__: with 256 (or 64) work-items and 18 KiB, LDS caps occupancy at 3 (or 1) waves per SIMD.
__global__ void __launch_bounds__(256) lds_heavy(float* out, const float* in) {
  __shared__ float tile[kRows * kCols];  // 18,432 bytes
  int t = threadIdx.x;
  for (int i = t; i < kRows * kCols; i += blockDim.x) tile[i] = in[i];
  __syncthreads();
  float s = 0;
  for (int r = 0; r < kRows; ++r) s += tile[r * kCols + t];
  out[blockIdx.x * blockDim.x + t] = s;
}

__global__ void __launch_bounds__(64) lds_heavy_narrow(float* out, const float* in) {
  __shared__ float tile[kRows * kCols];
  int t = threadIdx.x;
  for (int i = t; i < kRows * kCols; i += blockDim.x) tile[i] = in[i];
  __syncthreads();
  out[t] = tile[(t * 7) % (kRows * kCols)];
}

int main() {
  float *in = nullptr, *out = nullptr;
  hipError_t m = hipMalloc(&in, kRows * kCols * sizeof(float));
  if (m == hipSuccess) m = hipMalloc(&out, kCols * sizeof(float));
  hipLaunchKernelGGL(lds_heavy, dim3(1), dim3(kCols), 0, 0, out, in);
  hipError_t l = hipGetLastError();
  hipLaunchKernelGGL(lds_heavy_narrow, dim3(1), dim3(64), 0, 0, out, in);
  std::printf("lds_heavy: malloc %d, launch %d\n", static_cast<int>(m), static_cast<int>(l));
  return 0;
}
