// P3/P5: launches one kernel N times through hipLaunchKernel.
//   launch_loop [N [LIBRARY [THREADS]]]
// N launches per thread (default 100000) on THREADS threads (default 1), after
// dlopen'ing LIBRARY ("-": none), a library whose fat binaries are registered
// and never launched from (a second translation unit, rocSPARSE, ...).
// Prints the launches and the wall time of the launch loops alone (start-up,
// dlopen and registration excluded) in ms.
#include <dlfcn.h>
#include <hip/hip_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

__global__ void empty_kernel(int* p) {
  if (p) p[0] = 1;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  if (argc > 2 && strcmp(argv[2], "-") != 0 && !dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
    return 2;
  }
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  std::atomic<long> failures{0};
  auto loop = [&] {
    void* args[] = {nullptr};
    int* p = nullptr;
    args[0] = &p;
    long f = 0;
    for (long i = 0; i < n; ++i)
      f += hipLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(1), dim3(64), args, 0, 0) != hipSuccess;
    failures += f;
  };
  std::vector<std::thread> pool;
  auto start = std::chrono::steady_clock::now();
  for (int t = 1; t < threads; ++t) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  printf("%ld launches, %ld failed, loop %.3f ms\n", n * threads, failures.load(), ms);
  return 0;
}
