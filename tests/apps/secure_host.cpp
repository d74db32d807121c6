// Registers a fat binary through libhipguard.so loaded with dlopen, the way a
// setuid/setgid program would get the shim (glibc ignores LD_PRELOAD paths in
// secure-execution mode). Prints whether the kernel marked the process
// AT_SECURE, so the test can tell a real secure run from one it could not set up.
//   secure_host SHIM FATBIN_FILE
#include <dlfcn.h>
#include <sys/auxv.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

struct FatbinWrapper {  // __CudaFatBinaryWrapper layout used by HIP: magic "HIPF", version 1
  uint32_t magic;
  uint32_t version;
  const void* binary;
  const void* unused;
};

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: secure_host SHIM FATBIN_FILE\n");
    return 2;
  }
  printf("secure_host: AT_SECURE=%lu\n", getauxval(AT_SECURE));
  std::ifstream in(argv[2], std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 3;
  }
  void* shim = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!shim) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 4;
  }
  auto reg = reinterpret_cast<void** (*)(const void*)>(dlsym(shim, "__hipRegisterFatBinary"));
  if (!reg) {
    fprintf(stderr, "no __hipRegisterFatBinary in the shim\n");
    return 5;
  }
  static FatbinWrapper w{0x48495046u, 1, nullptr, nullptr};
  w.binary = bytes.data();
  reg(&w);
  fflush(stdout);
  return 0;
}
