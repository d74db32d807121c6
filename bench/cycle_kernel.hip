// P8's code object (module_cycles): one kernel, loaded and unloaded by name.
#include <hip/hip_runtime.h>

extern "C" __global__ void cycle_kernel(int* p) {
  if (p) p[0] = 1;
}
