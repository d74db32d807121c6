// hipguard: offline checks of HIP fat binaries and code objects, and a
// launcher that runs a program with the libhipguard.so shim preloaded.
// main: the words before the command, then the command with its options.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/common.h"
#include "cli/options.h"
#include "hipguard/inputs.h"
#include "hipguard/version.h"

using namespace hipguard;

namespace {

constexpr std::string_view kCommands[] = {"check", "inspect", "targets", "run", "help"};

bool known(std::string_view command) {
  return std::find(std::begin(kCommands), std::end(kCommands), command) != std::end(kCommands);
}

int unknown_command(const std::string& command) {
  std::string near = nearest(command, {"check", "inspect", "targets", "run", "help"});
  fprintf(stderr, "hipguard: unknown command '%s'%s\nTry 'hipguard --help'.\n", escape_text(command).c_str(),
          near.empty() ? "" : ("; did you mean '" + near + "'?").c_str());
  return kExitUsage;
}

int run(const Invocation& invocation) {
  if (auto* o = std::get_if<CheckOptions>(&invocation)) return run_check(*o);
  if (auto* o = std::get_if<InspectOptions>(&invocation)) return run_inspect(*o);
  if (auto* o = std::get_if<TargetsOptions>(&invocation)) return run_targets(*o);
  return run_run(std::get<RunOptions>(invocation));
}

// `hipguard --help`, `--version`, `help [COMMAND]`, or COMMAND with its options.
int run_command(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "hipguard: missing command\n");
    print_help(stderr);
    return kExitUsage;
  }
  std::string command = argv[1];
  if (command == "--help" || command == "-h" || (command == "help" && argc == 2)) {
    print_help(stdout);
    return kExitOk;
  }
  if (command == "--version") {
    printf("hipguard %s\n", HIPGUARD_VERSION_STRING);
    return kExitOk;
  }
  if (command == "help") {  // hipguard help COMMAND = hipguard COMMAND --help
    if (argc > 3) return usage_error("", "help takes one COMMAND");
    if (!known(argv[2]) || std::string_view(argv[2]) == "help") return unknown_command(argv[2]);
    command = argv[2];
    argv[2] = const_cast<char*>("--help");
  } else if (!known(command)) {
    if (command.size() > 1 && command[0] == '-') {
      std::string near = nearest(command, {"--help", "--version"});
      return usage_error("", "unknown option '" + escape_text(command) + "' (options follow the COMMAND)" +
                                 (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    return unknown_command(command);
  }
  Invocation invocation;
  if (!parse_command(command, argc, argv, &invocation)) return kExitUsage;
  return run(invocation);
}

// A file mapped for reading (FileData, above 64 MiB) that is truncated
// meanwhile raises SIGBUS on the next page touched: say so, never crash.
extern "C" void on_sigbus(int) {
  static const char msg[] = "hipguard: a file shrank while it was being read (SIGBUS); check it again\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(kExitUsage);
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction sa {};
  sa.sa_handler = on_sigbus;
  sigaction(SIGBUS, &sa, nullptr);
  int status;
  try {
    set_entry_spill(temporary_file_spill());  // a compressed bundle's large entries are not held in memory
    status = run_command(argc, argv);
  } catch (const std::exception& e) {
    fprintf(stderr, "hipguard: internal error: %s\n", e.what());
    return kExitUsage;
  } catch (...) {
    fprintf(stderr, "hipguard: internal error\n");
    return kExitUsage;
  }
  // A report that did not reach its reader (a full disk, a closed pipe) is a failure.
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "hipguard: cannot write the output: %s\n", strerror(errno));
    return kExitUsage;
  }
  return status;
}
