// P2: dlopen a library (its constructors register its fat binaries) and exit.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
  return 0;
}
