// What the hipguard commands share: their option structs, exit codes and printing helpers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/check_paths.h"

namespace hipguard {

constexpr int kExitOk = 0, kExitProblems = 1, kExitUsage = 2;

// --color, --quiet, --verbose: how a command prints.
struct OutputOptions {
  bool color = false;  // --color decided (a terminal, NO_COLOR)
  bool quiet = false, verbose = false;
};

// What check and inspect read, as given on the command line.
struct InputOptions {
  std::vector<std::string> paths;
  std::vector<std::string> targets;    // --target values, not yet resolved
  std::optional<std::string> runtime;  // --runtime, when given ("--runtime=" is an error, not the default)
  bool one_process = false;
  std::optional<std::string> sysroot;   // --sysroot, when given
  std::optional<std::string> platform;  // --platform, when given
  unsigned progress_delay_ms = 500;
};

struct CheckOptions {
  OutputOptions output;
  InputOptions input;
  bool json = false, junit = false, sarif = false;
  unsigned jobs = 0;  // 0: one per hardware thread
  bool no_deps = false;
  std::string cache;  // --cache DIR; "": none
};

struct InspectOptions {
  OutputOptions output;
  InputOptions input;
  bool json = false, demangle = false, deps = false;
  std::string sort;  // lds, scratch, vgpr, name; "" keeps the file's order
};

struct TargetsOptions {
  OutputOptions output;
};

struct RunOptions {
  OutputOptions output;
  std::vector<std::string> targets;
  bool strict = false;
  std::optional<std::string> report;  // --report, when given
  char** command = nullptr;           // the program and its arguments (null-terminated), null when none
};

// The commands; each returns the exit status.
int run_check(const CheckOptions& options);
int run_inspect(const InspectOptions& options);
int run_targets(const TargetsOptions& options);
int run_run(const RunOptions& options);

// "hipguard COMMAND: MSG" and where to read more, on stderr; kExitUsage.
// `command` empty: an error before the command.
int usage_error(std::string_view command, const std::string& msg);

// The known word nearest to `word`, for "did you mean" (nothing when far).
std::string nearest(std::string_view word, std::initializer_list<std::string_view> known);

// SGR colours (1 bold, 31 red, 32 green, 33 yellow, 36 cyan), when `color`.
std::string paint(bool color, const char* sgr, const std::string& text);
// A diagnostic line with its severity word coloured.
std::string paint_line(bool color, const std::string& line);
std::string pad(std::string s, size_t width);
std::string human_bytes(uint64_t b);

// --target values, each resolved to the configurations it stands for (a
// product as shipped, a processor in each shipped configuration); the same
// target ID named twice is checked once. A value not accepted: HG601's code, the usage error.
Result<std::vector<TargetId>> resolve_targets(const std::vector<std::string>& values);
// --runtime, --one-process, --sysroot and whether to follow what programs
// load, into `options`, returned. A value not accepted: HG601's code, the usage error.
Result<CheckPathsOptions> read_input_options(const InputOptions& input, bool dependencies, CheckPathsOptions options);

}  // namespace hipguard
