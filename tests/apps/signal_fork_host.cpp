// Forks from a signal handler while the program calls HIP all the time, as a program whose signal
// handler starts a helper does: signal_fork_host IMAGE ROUNDS [THREADS [nested]]. An interval
// timer's SIGPROF (every 100 us of CPU time, to whichever thread runs) forks; the child _exits 0 at
// once and the handler waits for it. Meanwhile main and THREADS - 1 more threads (default 1) each
// load IMAGE as a module, look up its kernel and unload it, ROUNDS times (through the shim's guard
// and its locks). "nested": a pthread_atfork prepare handler, installed before any HIP call (so it
// runs after hipguard's, which holds its locks then), raises SIGUSR1 once every 16 forks, whose
// handler forks again: a fork inside another fork's handlers. Prints the rounds, forks and failed
// children.
#include <hip/hip_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

namespace {
std::atomic<int> g_forks{0}, g_failed{0}, g_nested{0};
thread_local bool t_in_prepare = false;

void fork_and_wait() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++g_failed;
}

void on_alarm(int) {
  int saved = errno;
  fork_and_wait();
  ++g_forks;
  errno = saved;
}

void on_usr1(int) {
  int saved = errno;
  fork_and_wait();
  ++g_nested;
  errno = saved;
}

// Runs after hipguard's prepare handler (installed later), while hipguard holds its locks.
void prepare() {
  if (t_in_prepare || g_forks.load() % 16 != 0) return;
  t_in_prepare = true;
  raise(SIGUSR1);
  t_in_prepare = false;
}

int rounds_of(const std::vector<char>& image, int rounds) {
  int done = 0;
  for (; done < rounds; ++done) {
    hipModule_t m = nullptr;
    if (hipModuleLoadData(&m, image.data()) != hipSuccess) break;
    hipFunction_t f = nullptr;
    (void)hipModuleGetFunction(&f, m, "_Z10vector_addPKfS0_Pfi");
    (void)hipModuleUnload(m);
  }
  return done;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: signal_fork_host IMAGE ROUNDS [THREADS [nested]]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int rounds = atoi(argv[2]);
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  bool nested = argc > 4 && strcmp(argv[4], "nested") == 0;
  struct sigaction sa {};
  sa.sa_flags = SA_RESTART;
  if (nested) {
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, nullptr);
    pthread_atfork(prepare, nullptr, nullptr);
  }
  sa.sa_handler = on_alarm;
  sigaction(SIGPROF, &sa, nullptr);
  itimerval every{{0, 100}, {0, 100}};
  setitimer(ITIMER_PROF, &every, nullptr);
  std::vector<int> done(threads > 0 ? threads : 1, 0);
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back([&, t] { done[t] = rounds_of(image, rounds); });
  done[0] = rounds_of(image, rounds);
  for (auto& t : others) t.join();
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  int all = 0;
  for (int d : done) all += d;
  printf("signal_fork_host: %d rounds, %d forks, %d nested, %d failed\n", all, g_forks.load(), g_nested.load(),
         g_failed.load());
  return all == rounds * static_cast<int>(done.size()) && g_failed.load() == 0 ? 0 : 1;
}
