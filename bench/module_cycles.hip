// P8: what a process that loads and unloads modules for a long time (a JIT
// server, Triton autotuning) keeps. N cycles of hipModuleLoadData ->
// hipModuleGetFunction -> hipModuleLaunchKernel -> hipModuleUnload of one code
// object file (cycle_kernel.hip, built with --genco), as a new module each time.
//   module_cycles FILE [N]
// Prints the cycles, the failed calls, and VmRSS after the first cycle and
// after the last (KiB, /proc/self/status): their difference is what N-1
// cycles kept.
#include <hip/hip_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

long vm_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return atol(line.c_str() + 6);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: module_cycles FILE [N]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (image.empty()) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 20000, failed = 0;
  auto cycle = [&] {
    hipModule_t m = nullptr;
    hipFunction_t f = nullptr;
    failed += hipModuleLoadData(&m, image.data()) != hipSuccess;
    failed += hipModuleGetFunction(&f, m, "cycle_kernel") != hipSuccess;
    int* p = nullptr;
    void* args[] = {&p};
    failed += hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr) != hipSuccess;
    failed += hipModuleUnload(m) != hipSuccess;
  };
  cycle();
  long first = vm_rss_kib();
  for (long i = 1; i < n; ++i) cycle();
  long last = vm_rss_kib();
  printf("%ld cycles, %ld failed calls, VmRSS %ld KiB after the first, %ld KiB after the last\n", n, failed, first,
         last);
  return failed ? 1 : 0;
}
