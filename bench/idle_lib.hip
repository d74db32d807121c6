// P3/P7: a HIP library whose fat binary is registered and never launched from
// (a second translation unit, a library the program loads but does not use).
#include <hip/hip_runtime.h>

__global__ void idle_kernel(int* p) {
  if (p) p[threadIdx.x] = 2;
}

extern "C" const void* idle_lib_kernel() { return reinterpret_cast<const void*>(idle_kernel); }
