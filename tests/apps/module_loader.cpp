// Loads each file given on the command line with hipModuleLoad (the way AITER
// loads its .co files), then asks for the kernel named after "--kernel" if given.
// Prints every result code.
#include <hip/hip_runtime_api.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const char* kernel = nullptr;
  int loaded = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
      kernel = argv[++i];
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
      }
    }
  }
  printf("module_loader: %d loaded\n", loaded);
  return 0;
}
