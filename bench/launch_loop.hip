// P3: launches one kernel N times through hipLaunchKernel (argv[1], default 100000).
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel(int* p) {
  if (p) p[0] = 1;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  void* args[] = {nullptr};
  int* p = nullptr;
  args[0] = &p;
  int failures = 0;
  for (long i = 0; i < n; ++i)
    failures += hipLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(1), dim3(64), args, 0, 0) != hipSuccess;
  printf("%ld launches, %d failed\n", n, failures);
  return 0;
}
