// A kernel tuned for MI355X: 96 KiB of static LDS fits gfx950 (160 KiB per workgroup), not gfx942
// or any other gfx9 (64 KiB). Built for gfx950 alone, as a raw code object (scripts/demo.sh).
#include <hip/hip_runtime.h>

constexpr int kTile = 24 * 1024;  // floats: 98,304 bytes

__global__ void __launch_bounds__(256) tile_96k(float* out, const float* in) {
  __shared__ float tile[kTile];
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = in[blockIdx.x * kTile + i];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 97) % kTile];
}
