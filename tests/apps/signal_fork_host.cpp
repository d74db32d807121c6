// Forks from a signal handler while the program calls HIP all the time, as a program whose signal
// handler starts a helper does: signal_fork_host IMAGE ROUNDS. An interval timer's
// SIGPROF (every 100 us of CPU time) forks; the child _exits 0 at once and the handler waits for
// it. Meanwhile main loads IMAGE as a module, looks up its kernel and unloads it, ROUNDS times
// (through the shim's guard and its locks). Prints the rounds, forks and failed children.
#include <hip/hip_runtime_api.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace {
volatile sig_atomic_t g_forks = 0, g_failed = 0;

void on_alarm(int) {
  int saved = errno;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) g_failed = g_failed + 1;
  g_forks = g_forks + 1;
  errno = saved;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: signal_fork_host IMAGE ROUNDS\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int rounds = atoi(argv[2]);
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  itimerval every{{0, 100}, {0, 100}};
  setitimer(ITIMER_PROF, &every, nullptr);
  int done = 0;
  for (; done < rounds; ++done) {
    hipModule_t m = nullptr;
    if (hipModuleLoadData(&m, image.data()) != hipSuccess) break;
    hipFunction_t f = nullptr;
    (void)hipModuleGetFunction(&f, m, "_Z10vector_addPKfS0_Pfi");
    (void)hipModuleUnload(m);
  }
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  printf("signal_fork_host: %d rounds, %d forks, %d failed\n", done, static_cast<int>(g_forks),
         static_cast<int>(g_failed));
  return done == rounds && g_failed == 0 ? 0 : 1;
}
