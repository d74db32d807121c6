// Calls HIP through whatever is preloaded while every malloc called from
// libhipguard.so's own code fails (with HIPGUARD_HEAP=malloc, its operator new
// then throws std::bad_alloc), then the same calls again with allocations
// working, and prints each result: alloc_fail_host IMAGE KERNEL. Each round
// also forks, and its child loads the image. Without the shim nothing fails.
// No HIP link.
#include <dlfcn.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" void* __libc_malloc(size_t);

namespace {
uintptr_t g_shim_lo = 0, g_shim_hi = 0;  // libhipguard.so's mapping
std::atomic<bool> g_fail{false};

void find_shim() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) -> int {
        if (!info->dlpi_name || !strstr(info->dlpi_name, "libhipguard")) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          if (!g_shim_lo || lo < g_shim_lo) g_shim_lo = lo;
          if (hi > g_shim_hi) g_shim_hi = hi;
        }
        return 1;
      },
      nullptr);
}

using Fn = int (*)(...);
template <class F>
F hip(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// A junk image of its own for each round: at another address, so that each round's is said.
char g_junk[2][64];

void calls(const std::vector<char>& image, const char* kernel, const char* round, char* junk) {
  void* module = nullptr;
  void* function = nullptr;
  int r = hip<int (*)(void**, const void*)>("hipModuleLoadData")(&module, image.data());
  printf("%s hipModuleLoadData: %d\n", round, r);
  r = hip<int (*)(void**, void*, const char*)>("hipModuleGetFunction")(&function, module, kernel);
  printf("%s hipModuleGetFunction: %d\n", round, r);
  r = hip<int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**)>(
      "hipModuleLaunchKernel")(function, 1, 1, 1, 64, 1, 1, 1024, nullptr, nullptr, nullptr);
  printf("%s hipModuleLaunchKernel: %d\n", round, r);
  void* pfn = nullptr;
  r = hip<int (*)(const char*, void**, int, uint64_t, void*)>("hipGetProcAddress")("hipModuleLaunchKernel", &pfn, 600,
                                                                                   0, nullptr);
  printf("%s hipGetProcAddress: %d %s\n", round, r, pfn ? "found" : "null");
  memset(junk, 'x', sizeof g_junk[0]);
  r = hip<int (*)(void**, const void*)>("hipModuleLoadData")(&module, junk);
  printf("%s hipModuleLoadData(junk): %d\n", round, r);
  printf("%s hipGetLastError: %d\n", round, hip<int (*)()>("hipGetLastError")());
  // fork() with the shim's allocations failing: parent and child go on; the child loads the image.
  pid_t pid = fork();
  if (pid == 0) _exit(hip<int (*)(void**, const void*)>("hipModuleLoadData")(&module, image.data()) == 0 ? 0 : 1);
  int status = -1;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) status = WEXITSTATUS(status);
  printf("%s fork: child exit %d\n", round, status);
}
}  // namespace

// Fails the allocations libhipguard.so's code asks for while armed.
extern "C" void* malloc(size_t n) {
  if (g_fail.load(std::memory_order_relaxed)) {
    auto caller = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
    if (caller >= g_shim_lo && caller < g_shim_hi) {
      errno = ENOMEM;
      return nullptr;
    }
  }
  return __libc_malloc(n);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: alloc_fail_host IMAGE KERNEL\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  find_shim();
  g_fail = true;
  calls(image, argv[2], "failing", g_junk[0]);
  g_fail = false;
  calls(image, argv[2], "working", g_junk[1]);
  return 0;
}
