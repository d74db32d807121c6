// hipguard run: finds the shim and sets LD_PRELOAD and the HIPGUARD_* settings, then launches the program (launch.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/common.h"
#include "cli/launch.h"
#include "hipguard/settings.h"
#include "hipguard/version.h"

namespace hipguard {
namespace {

// The shim of this hipguard: HIPGUARD_SHIM, else libhipguard.so.MAJOR where
// the install (and the build tree) puts it relative to the executable, so an
// installed tree or an unpacked tarball works from any prefix.
std::string find_shim() {
  if (const char* env = getenv(variable(Setting::Shim)); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto dir = exe.parent_path();
  for (auto cand : {dir / HIPGUARD_BIN_TO_LIB / HIPGUARD_SHIM_SONAME, dir / "../lib" / HIPGUARD_SHIM_SONAME,
                    dir / "libhipguard.so", dir / "../lib/libhipguard.so"})
    if (std::filesystem::is_regular_file(cand, ec)) return cand.lexically_normal().string();
  return "";
}

// LD_PRELOAD splits its value at spaces and colons: a shim path holding one
// would not be preloaded, and the program would run unchecked. The path as
// given, else its canonical form (a symlink's target), if either can be
// preloaded; else fails with what is wrong (HG601, kBadSetting: HIPGUARD_SHIM is the fix).
Result<std::string> preloadable(const std::string& shim) {
  auto fits = [](const std::string& p) { return p.find_first_of(" :\t\n") == std::string::npos; };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(shim, ec)) return ParseError{Code::kBadSetting, "'" + shim + "' is not a file"};
  // Relative to this directory, not to wherever the program chdirs.
  std::string abs = std::filesystem::absolute(shim, ec).string();
  if (!ec && fits(abs)) return abs;
  std::string real = std::filesystem::canonical(shim, ec).string();
  if (!ec && fits(real)) return real;
  return ParseError{Code::kBadSetting,
                    "'" + shim +
                        "' contains a space or a colon, where LD_PRELOAD splits its value: the shim would not be "
                        "loaded and the program would run unchecked; install hipguard under a path without spaces and "
                        "colons, or point HIPGUARD_SHIM at a copy or symlink there"};
}

// The --target values as HIPGUARD_TARGET (comma-separated); fails with a usage error (HG601, kBadSetting).
Result<std::string> target_setting(const std::vector<std::string>& values) {
  auto fail = [](std::string msg) { return ParseError{Code::kBadSetting, std::move(msg)}; };
  std::string targets;
  for (const auto& value : values) {
    if (value.empty()) return fail("--target needs a value");
    if (value.find_first_of(" \t,;") != std::string::npos)
      return fail("bad target '" + value + "': give one target per --target, without spaces");
    if (auto t = parse_target(value); !t) return fail("bad target '" + value + "': " + t.error().message);
    targets += (targets.empty() ? "" : ",") + value;
  }
  return targets;
}

// The shim to preload; fails (HG601, kBadSetting) when there is none to preload.
Result<std::string> shim_to_preload() {
  std::string found = find_shim();
  if (found.empty())
    return ParseError{Code::kBadSetting,
                      "cannot find libhipguard.so next to the hipguard executable (set HIPGUARD_SHIM)"};
  Result<std::string> shim = preloadable(found);
  if (!shim) return ParseError{Code::kBadSetting, "cannot preload the shim: " + shim.error().message};
  return shim;
}

}  // namespace

int run_run(const RunOptions& o) {
  Result<std::string> targets = target_setting(o.targets);
  if (!targets) return usage_error("run", targets.error().message);
  if (o.report && o.report->empty()) return usage_error("run", "--report needs a file");
  if (!o.command || !o.command[0]) return usage_error("run", "run needs a COMMAND");
  Result<std::string> shim = shim_to_preload();
  if (!shim) {
    fprintf(stderr, "hipguard: %s\n", shim.error().message.c_str());
    return kExitUsage;
  }
  std::string preload = std::move(*shim);
#ifdef HIPGUARD_SANITIZER_RUNTIME
  preload = std::string(HIPGUARD_SANITIZER_RUNTIME) + ":" + preload;  // sanitizer build of hipguard
  setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 0);
#endif
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!targets->empty()) setenv(variable(Setting::Target), targets->c_str(), 1);
  if (o.strict) setenv(variable(Setting::Mode), "strict", 1);
  if (o.output.quiet) setenv(variable(Setting::LogLevel), "error", 1);
  if (o.output.verbose) {
    setenv(variable(Setting::LogLevel), "debug", 1);
    fprintf(stderr, "hipguard: LD_PRELOAD=%s\n", preload.c_str());
  }
  return launch(o.command, o.report.value_or(""));
}

}  // namespace hipguard
