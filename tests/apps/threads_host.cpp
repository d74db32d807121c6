// Many threads dlopen'ing HIP libraries and launching at once (no HIP link):
// threads_host THREADS ROUNDS LIBRARY... Each thread opens library (i % count),
// runs its kernel ROUNDS times, and closes it again. With THREADS_HOST_FORKS=N
// the main thread forks N times meanwhile (as Python's multiprocessing and
// PyTorch's DataLoader do from threaded processes): the last library is opened
// by the main thread before the threads start (and used by no thread), and each
// child launches its kernel once, its first launch there, and exits; a child
// that fails counts. (A child does not dlopen: glibc's loader lock is not reset
// at fork, so a child forked while another thread is in dlopen hangs there.)
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: threads_host THREADS ROUNDS LIBRARY...\n");
    return 2;
  }
  int threads = atoi(argv[1]), rounds = atoi(argv[2]);
  std::vector<const char*> libs(argv + 3, argv + argc);
  int forks = getenv("THREADS_HOST_FORKS") ? atoi(getenv("THREADS_HOST_FORKS")) : 0;
  int (*child_run)() = nullptr;
  if (forks > 0 && libs.size() > 1) {
    void* h = dlopen(libs.back(), RTLD_NOW | RTLD_LOCAL);
    child_run = h ? reinterpret_cast<int (*)()>(dlsym(h, "kernels_lib_run")) : nullptr;
    libs.pop_back();
  }
  std::atomic<int> failures{0}, launches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      void* h = dlopen(libs[t % libs.size()], RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        fprintf(stderr, "dlopen failed: %s\n", dlerror());
        ++failures;
        return;
      }
      auto run = reinterpret_cast<int (*)()>(dlsym(h, "kernels_lib_run"));
      for (int r = 0; run && r < rounds; ++r) {
        run();
        ++launches;
      }
      dlclose(h);
    });
  }
  // The forks start once a thread has launched: the shim resolves the runtime's functions at a
  // process's first launch with dl_iterate_phdr, whose glibc lock a child inherits held when a
  // thread was in dlopen at the fork (glibc 2.36; the program's own dl_iterate_phdr hangs there too).
  while (forks > 0 && launches.load() == 0 && failures.load() == 0) std::this_thread::yield();
  for (int f = 0; f < forks; ++f) {
    pid_t pid = fork();
    if (pid == 0) {
      if (child_run) child_run();
      _exit(child_run ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  for (auto& th : pool) th.join();
  printf("threads_host: %d threads, %d launches, %d forks, %d failures\n", threads, launches.load(), forks,
         failures.load());
  return failures ? 1 : 0;
}
