// The command line of each hipguard command (llvm::cl), parsed into the option structs of common.h.
#pragma once

#include <cstdio>
#include <string>
#include <variant>

#include "cli/common.h"

namespace hipguard {

// One command's options, for run_check, run_inspect, run_targets or run_run.
using Invocation = std::variant<CheckOptions, InspectOptions, TargetsOptions, RunOptions>;

// `hipguard --help`: the overview and the commands.
void print_help(FILE* out);

// `hipguard COMMAND ARGS...`: argv[1] is COMMAND (check, inspect, targets or
// run), argv[2...] its arguments. False after a usage error, said on stderr;
// COMMAND --help prints the command's help and exits.
bool parse_command(const std::string& command, int argc, char** argv, Invocation* invocation);

}  // namespace hipguard
