// Runs a command with extra environment and captures stdout, stderr and the
// exit status (test helper).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "files.h"  // tests/support: read_text, exists, TempDir

struct ProcessResult {
  int status = -1;     // exit status, or 128+signal
  std::string out;     // stdout
  std::string err;     // stderr
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          bool clear_hipguard_env = true);

// Lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);
using hgtest::exists;
using hgtest::read_text;
