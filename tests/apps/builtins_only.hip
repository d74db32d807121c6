// A kernel that needs no ROCm device library (only compiler builtins), so
// Debian's hipcc can build it with -nogpulib for targets it ships no device
// libraries for (gfx1100).
#include <hip/hip_runtime.h>

__global__ void fill(int* p, int v) { p[__builtin_amdgcn_workitem_id_x()] = v; }
