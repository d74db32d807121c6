// Helpers the hipguard commands share: usage errors, "did you mean", colour, and the inputs of check and inspect.
#include "cli/common.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/edit_distance.h"
#include "inputs/archive.h"

namespace hipguard {

int usage_error(std::string_view command, const std::string& msg) {
  std::string cmd(command);
  fprintf(stderr, "hipguard%s: %s\n", cmd.empty() ? "" : (" " + cmd).c_str(), msg.c_str());
  fprintf(stderr, "Try 'hipguard %s--help'.\n", cmd.empty() ? "" : (cmd + " ").c_str());
  return kExitUsage;
}

std::string nearest(std::string_view word, std::initializer_list<std::string_view> known) {
  std::string best;
  size_t best_d = word.size() / 3 + 1;  // "chek" -> check, "--versoin" -> --version; "--frob" -> nothing
  for (auto k : known)
    if (size_t d = edit_distance(word, k); d < best_d) best_d = d, best = k;
  return best;
}

std::string paint(bool color, const char* sgr, const std::string& text) {
  return color ? std::string("\033[") + sgr + "m" + text + "\033[0m" : text;
}

std::string paint_line(bool color, const std::string& line) {
  for (auto [word, sgr] : {std::pair{"error ", "1;31"}, std::pair{"warning ", "1;33"}, std::pair{"note ", "36"}})
    if (line.rfind(word, 0) == 0)
      return paint(color, sgr, std::string(word, strlen(word) - 1)) + line.substr(strlen(word) - 1);
  return line;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024) snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

Result<std::vector<TargetId>> resolve_targets(const std::vector<std::string>& values) {
  std::vector<TargetId> targets;
  for (const auto& text : values) {
    auto resolved = resolve_target(text);
    if (!resolved) return ParseError{Code::kBadSetting, "bad target '" + text + "': " + resolved.error().message};
    for (auto& t : *resolved) {
      auto same = std::find_if(targets.begin(), targets.end(), [&](const TargetId& o) { return o.str() == t.str(); });
      if (same == targets.end()) targets.push_back(std::move(t));
      else if (!t.alias.empty() && same->alias.find(t.alias) == std::string::npos)
        same->alias += (same->alias.empty() ? "" : "; ") + t.alias;
    }
  }
  return targets;
}

namespace {

// --runtime and --one-process.
Result<Machine> machine_options(const InputOptions& input) {
  Machine machine;
  machine.one_process = input.one_process;
  if (!input.runtime) return machine;
  machine.runtime = parse_runtime(*input.runtime);
  if (machine.runtime) return machine;
  std::string known;
  for (const auto& r : all_runtimes()) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return ParseError{Code::kBadSetting,
                    "bad --runtime '" + *input.runtime + "': give a HIP version such as " + known + " or 6.4.3"};
}

// The archive and image reader (archive.h): .deb, .whl, .tar.*, .a and container images read in place,
// a multi-platform image read for --platform, an image's runtime compared with --runtime's (HG125).
Result<const ArchiveReader*> archive_options(const InputOptions& input, const Machine& machine) {
  if (!input.platform && !machine.runtime) return &archive_reader();
  std::optional<Platform> platform = input.platform ? Platform::parse(*input.platform) : Platform{};
  if (!platform)
    return ParseError{Code::kBadSetting,
                      "bad --platform '" + *input.platform + "': give OS/ARCH or OS/ARCH/VARIANT, such as linux/amd64"};
  static std::vector<std::unique_ptr<ArchiveReader>> readers;  // one per parse, alive as long as the options
  readers.push_back(make_archive_reader({}, *platform, machine.runtime));
  return readers.back().get();
}

}  // namespace

Result<CheckPathsOptions> read_input_options(const InputOptions& input, bool dependencies, CheckPathsOptions options) {
  auto machine = machine_options(input);
  if (!machine) return machine.error();
  auto archives = archive_options(input, *machine);
  if (!archives) return archives.error();
  options.archives = *archives;
  options.machine = *machine;
  options.dependencies = dependencies;  // what a program loads (dependencies.h)
  if (!input.sysroot) return options;
  std::error_code ec;
  if (input.sysroot->empty() || !std::filesystem::is_directory(*input.sysroot, ec))
    return ParseError{Code::kBadSetting, "--sysroot '" + *input.sysroot + "' is not a directory"};
  options.sysroot = *input.sysroot;
  return options;
}

}  // namespace hipguard
