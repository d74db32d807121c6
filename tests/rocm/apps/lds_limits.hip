// Static LDS at each processor's limit per workgroup (AMDGPUUsage, "Memory Spaces"; hipguard's
// processor table): 64 KiB on gfx9 up to gfx942 and on gfx10-12, 160 KiB on gfx950, 320 KiB on gfx1250.
// Built by the 7.2 root's hipcc as raw code objects (v4, v5, v6, generic) and as a compressed bundle
// (tests/rocm/CMakeLists.txt): hipguard's own real code objects, which a clone makes from packages.
#include <hip/hip_runtime.h>

#if defined(__gfx950__)
constexpr int kLdsBytes = 160 * 1024;
#elif defined(__gfx1250__)
constexpr int kLdsBytes = 320 * 1024;
#else
constexpr int kLdsBytes = 64 * 1024;
#endif
constexpr int kFloats = kLdsBytes / 4;

__global__ void __launch_bounds__(256) lds_at_limit(float* out, const float* in) {
  __shared__ float tile[kFloats];
  for (int i = threadIdx.x; i < kFloats; i += blockDim.x) tile[i] = in[blockIdx.x * kFloats + i];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 97) % kFloats];
}

// No LDS at all: the same code object's second kernel, fine everywhere it is built for.
__global__ void no_lds(float* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }
