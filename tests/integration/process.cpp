#include "process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

std::string uninstrumented_shim(const std::string& shim) {
#ifdef HIPGUARD_SANITIZER_RUNTIME
  (void)shim;
  return HIPGUARD_PLAIN_SHIM;
#else
  return shim;
#endif
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          bool clear_hipguard_env) {
  char out_path[] = "/tmp/hipguard-test-out-XXXXXX";
  char err_path[] = "/tmp/hipguard-test-err-XXXXXX";
  int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  ProcessResult r;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (clear_hipguard_env) {
      for (const char* v :
           {"HIPGUARD_TARGET", "HIPGUARD_MODE", "HIPGUARD_EXIT_CODE", "HIPGUARD_LOG_LEVEL", "HIPGUARD_SYSFS_ROOT",
            "HIPGUARD_REPORT", "HIPGUARD_FAIL_ON", "HIPGUARD_SHIM", "HSA_TOOLS_LIB", "LD_PRELOAD"})
        unsetenv(v);
    }
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
#ifdef HIPGUARD_SANITIZER_RUNTIME
    // Sanitizer build: the runtime must come before the instrumented shim, and
    // the host programs' own leaks are not ours to report.
    if (const char* pre = getenv("LD_PRELOAD"); pre && strstr(pre, "libhipguard") && pre != uninstrumented_shim("")) {
      setenv("LD_PRELOAD", (std::string(HIPGUARD_SANITIZER_RUNTIME) + ":" + pre).c_str(), 1);
      setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 1);
    }
#endif
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    fprintf(stderr, "exec %s failed: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  close(out_fd);
  close(err_fd);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  unlink(out_path);
  unlink(err_path);
  return r;
}
