// Many threads dlopen'ing HIP libraries and launching at once (no HIP link):
// threads_host THREADS ROUNDS LIBRARY... Each thread opens library (i % count),
// runs its kernel ROUNDS times, and closes it again.
#include <dlfcn.h>

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
  for (auto& th : pool) th.join();
  printf("threads_host: %d threads, %d launches, %d failures\n", threads, launches.load(), failures.load());
  return failures ? 1 : 0;
}
