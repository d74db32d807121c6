// Runs a command with extra environment and captures stdout, stderr and the
// exit status (test helper).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "files.h"  // tests/support: read_text, exists, TempDir

struct ProcessResult {
  int status = -1;  // exit status, or 128+signal
  std::string out;  // stdout
  std::string err;  // stderr
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          bool clear_hipguard_env = true);

// The shim for a host program that cannot preload a sanitizer runtime (a
// setuid program; one that replaces malloc): `shim` itself, or in a sanitizer
// build an uninstrumented one (CMake's HIPGUARD_PLAIN_SHIM, which
// scripts/sanitize.sh sets to build/'s); "" when a sanitizer build has none.
std::string uninstrumented_shim(const std::string& shim);

// Lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);
using hgtest::exists;
using hgtest::read_text;
