// Plain C++ host (no HIP link): dlopen's a HIP library the way Python imports a
// HIP extension, then calls into it.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>

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
  fflush(stdout);
  // DLOPEN_HOST_FORK=N: fork N children after using HIP, one after the other
  // (each process must write only its own report).
  if (const char* f = getenv("DLOPEN_HOST_FORK"); f && atoi(f) > 0) {
    for (int n = atoi(f), i = 0; i < n; ++i) {
      fflush(stdout);
      pid_t child = fork();
      if (child < 0) return 5;
      if (child == 0) {
        printf("dlopen_host: child %d\n", static_cast<int>(getpid()));
        return 0;  // exit(), so its atexit handlers run
      }
      int status = 0;
      waitpid(child, &status, 0);
      printf("dlopen_host: parent %d, child status %d\n", static_cast<int>(getpid()), status);
    }
  }
  // DLOPEN_HOST_END=kill|_exit|abort: end without exit handlers (the report's
  // journal must still hold what was found).
  fflush(stdout);
  if (const char* end = getenv("DLOPEN_HOST_END")) {
    if (strcmp(end, "kill") == 0) raise(SIGKILL);
    if (strcmp(end, "_exit") == 0) _exit(0);
    if (strcmp(end, "abort") == 0) abort();
  }
  return 0;
}
