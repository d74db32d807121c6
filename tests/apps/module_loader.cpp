// Loads each file given on the command line with hipModuleLoad (the way AITER
// loads its .co files), then asks for the kernel named after "--kernel" if given,
// and with "--launch BYTES" launches it through every module launch entry point
// with BYTES of dynamic LDS. Prints every result code.
#include <dlfcn.h>
#include <hip/hip_ext.h>
#include <hip/hip_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
// Not declared by ROCm 5.2's headers (hip_5.5); looked up like a program built
// against newer headers would bind it.
using CoopLaunch = hipError_t (*)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  hipStream_t, void**);

void launch_all(hipFunction_t f, unsigned dyn) {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  int n = 0;
  void* params[] = {&a, &b, &c, &n};
  hipError_t e = hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, dyn, nullptr, params, nullptr);
  printf("hipModuleLaunchKernel: %d\n", static_cast<int>(e));
  e = hipExtModuleLaunchKernel(f, 64, 1, 1, 64, 1, 1, dyn, nullptr, params, nullptr, nullptr, nullptr, 0);
  printf("hipExtModuleLaunchKernel: %d\n", static_cast<int>(e));
  if (auto coop = reinterpret_cast<CoopLaunch>(dlsym(RTLD_DEFAULT, "hipModuleLaunchCooperativeKernel"))) {
    e = coop(f, 1, 1, 1, 64, 1, 1, dyn, nullptr, params);
    printf("hipModuleLaunchCooperativeKernel: %d\n", static_cast<int>(e));
  }
}
}  // namespace

int main(int argc, char** argv) {
  const char* kernel = nullptr;
  const char* launch = nullptr;
  int loaded = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
      kernel = argv[++i];
      continue;
    }
    if (std::strcmp(argv[i], "--launch") == 0 && i + 1 < argc) {
      launch = argv[++i];
      continue;
    }
    hipModule_t m = nullptr;
    hipError_t e = hipModuleLoad(&m, argv[i]);
    printf("hipModuleLoad %s: %d (%s)\n", argv[i], static_cast<int>(e), hipGetErrorName(e));
    if (e == hipSuccess) {
      ++loaded;
      if (kernel) {
        hipFunction_t f = nullptr;
        e = hipModuleGetFunction(&f, m, kernel);
        printf("hipModuleGetFunction %s: %d (%s)\n", kernel, static_cast<int>(e), hipGetErrorName(e));
        if (e == hipSuccess && launch) launch_all(f, static_cast<unsigned>(strtoul(launch, nullptr, 10)));
      }
    }
  }
  printf("module_loader: %d loaded\n", loaded);
  return 0;
}
