// Plain C++ host (no HIP link): dlopen's a HIP library the way Python imports a
// HIP extension, then calls into it.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: dlopen_host LIBRARY\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 3;
  }
  auto run = reinterpret_cast<int (*)()>(dlsym(h, "kernels_lib_run"));
  if (!run) {
    fprintf(stderr, "no kernels_lib_run\n");
    return 4;
  }
  printf("dlopen_host: kernels_lib_run returned %d\n", run());
  return 0;
}
