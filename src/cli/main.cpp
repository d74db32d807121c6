// hipguard: offline checks of HIP fat binaries and code objects, and a
// launcher that runs a program with the libhipguard.so shim preloaded.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <filesystem>
#include <string>
#include <vector>

#include "hipguard/inputs.h"
#include "hipguard/report.h"

using namespace hipguard;

namespace {

constexpr int kExitOk = 0, kExitProblems = 1, kExitUsage = 2;

void usage(FILE* out) {
  fputs(
      "usage: hipguard check [--target T]... [--json | --junit | --sarif] [--jobs N] PATH...\n"
      "       hipguard inspect [--json] PATH...\n"
      "       hipguard targets\n"
      "       hipguard run [--target T]... [--strict] [--report FILE] -- COMMAND [ARGS...]\n"
      "\n"
      "check  reads executables and shared libraries (.hip_fatbin), offload bundles,\n"
      "       .co/.hsaco code objects and directories of them, and says for each\n"
      "       target whether every kernel can run there. Exit 0: everything can run;\n"
      "       1: something cannot; 2: usage error. --jobs N: threads (0, the default:\n"
      "       one per hardware thread); the output does not depend on it.\n"
      "inspect lists what is inside: bundles, entries, code objects, kernels with\n"
      "       LDS, scratch, registers, kernarg size, device functions.\n"
      "run    runs COMMAND with libhipguard.so preloaded (HIPGUARD_TARGET, HIPGUARD_MODE).\n"
      "targets lists the products and processors hipguard knows, with the target ID\n"
      "       each is checked as, its LDS and wave sizes, and the source of each fact.\n"
      "\n"
      "T is a product name (mi300x, mi325x, mi355x, mi250x, ...: checked as the GPU\n"
      "ships, e.g. mi300x = gfx942:sramecc+:xnack-; mi250x:xnack+ for the other\n"
      "setting) or a target ID (gfx942, gfx90a:xnack+); a feature left out is checked\n"
      "in every configuration GPUs of that processor ship with.\n",
      out);
}

int usage_error(const std::string& msg) {
  fprintf(stderr, "hipguard: %s\n", msg.c_str());
  usage(stderr);
  return kExitUsage;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string image_name(const ImageReport& img) {
  return escape_text(img.location.empty() ? img.origin : img.origin + " [" + img.location + "]");
}

// Findings that differ only in which fat binary of one file they concern
// (rocSPARSE: 111 bundles, one HG201 each) are printed once with a count; the
// JSON report keeps every one.
void print_findings(const std::vector<FileReport>& reports) {
  size_t count = 0;
  for (const auto& r : reports) {
    for (const auto& d : r.diagnostics) printf("%s\n", format_line(d).c_str()), ++count;
    std::vector<std::pair<Diagnostic, size_t>> groups;  // first occurrence order
    std::map<std::string, size_t> index;
    for (const auto& i : r.images)
      for (const auto& d : i.diagnostics) {
        Diagnostic key = d;
        key.file = r.path;  // without the "[bundle n/m @0x...]" location
        std::string k = format_line(key);
        auto [it, fresh] = index.emplace(k, groups.size());
        if (fresh) groups.push_back({d, 0});
        ++groups[it->second].second;
      }
    for (auto& [d, n] : groups) {
      if (n > 1) d.file = r.path + " [" + std::to_string(n) + " of " + std::to_string(r.images.size()) + " fat binaries]";
      printf("%s\n", format_line(d).c_str());
      ++count;
    }
  }
  if (count == 0) printf("no problems found\n");
}

// What was checked, per target, for the closing line: a CI log shows a gate
// that checked nothing. Counted as files are checked (the table mode drops
// the parsed kernels afterwards).
struct Tally {
  size_t bundles = 0, raw = 0, objects = 0, kernels = 0;  // objects/kernels: read, without targets
  std::vector<size_t> selected, selected_kernels;          // per target: selected code objects, their kernels

  void add(const FileReport& r, size_t targets) {
    selected.resize(targets), selected_kernels.resize(targets);
    for (const auto& img : r.images) {
      (img.kind == PayloadKind::CodeObject ? raw : bundles)++;
      for (size_t t = 0; t < targets && t < img.verdicts.size(); ++t) {
        const TargetVerdict& v = img.verdicts[t];
        if (v.selection == Selection::Native || v.selection == Selection::Generic)
          ++selected[t], selected_kernels[t] += v.kernels;
      }
      for (const auto& c : img.code_objects) ++objects, kernels += c.co.kernels.size();
    }
  }

  std::string line(const std::vector<TargetId>& targets) const {
    std::string s = "checked " + std::to_string(bundles) + " fat binaries and " + std::to_string(raw) +
                    " code object files";
    if (targets.empty())
      s += ": " + std::to_string(objects) + " code objects, " + std::to_string(kernels) + " kernels (structural checks only)";
    for (size_t t = 0; t < targets.size(); ++t)
      s += std::string(t ? "; " : ": ") + targets[t].str() + ": " +
           std::to_string(t < selected.size() ? selected[t] : 0) + " code objects, " +
           std::to_string(t < selected.size() ? selected_kernels[t] : 0) + " kernels";
    return s;
  }
};

void print_table(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets, const Tally& tally) {
  std::vector<const ImageReport*> images;
  for (const auto& r : reports)
    for (const auto& i : r.images) images.push_back(&i);
  for (size_t t = 0; t < targets.size(); ++t) {
    const TargetId& target = targets[t];
    size_t runnable = 0;
    printf("target %s\n", target.label().c_str());
    printf("  %s %s %s %s\n", pad("RESULT", 6).c_str(), pad("SELECTED", 52).c_str(), pad("KERNELS", 7).c_str(), "FILE");
    for (const ImageReport* img : images) {
      const TargetVerdict& v = img->verdicts[t];
      if (v.can_run) ++runnable;
      std::string sel = v.selection == Selection::None ? "-" : escape_text(v.selected) + " (" + std::string(to_string(v.selection)) + ")";
      std::string kernels = v.selection == Selection::None ? "-" : std::to_string(v.kernels);
      printf("  %s %s %s %s\n", pad(v.can_run ? "ok" : "FAIL", 6).c_str(), pad(sel, 52).c_str(), pad(kernels, 7).c_str(),
             image_name(*img).c_str());
    }
    printf("  %zu of %zu can run on %s\n\n", runnable, images.size(), target.str().c_str());
  }
  if (targets.empty()) {
    printf("no --target given: structural checks only\n");
    for (const ImageReport* img : images)
      printf("  %s %s (%s, %zu code object(s) read)\n", pad(img->structurally_ok ? "ok" : "FAIL", 6).c_str(),
             image_name(*img).c_str(), std::string(to_string(img->kind)).c_str(), img->code_objects.size());
    printf("\n");
  }
  print_findings(reports);
  printf("%s\n", tally.line(targets).c_str());
}

// --target values: each resolved to the configurations it stands for (a
// product as shipped, a processor in each shipped configuration); the same
// target ID named twice is checked once. False after a usage error.
bool add_targets(std::string_view text, std::vector<TargetId>* targets, std::string* error) {
  std::vector<TargetId> resolved = resolve_target(text, error);
  if (resolved.empty()) {
    *error = "bad target '" + std::string(text) + "': " + *error;
    return false;
  }
  for (auto& t : resolved) {
    auto same = std::find_if(targets->begin(), targets->end(), [&](const TargetId& o) { return o.str() == t.str(); });
    if (same == targets->end()) targets->push_back(std::move(t));
    else if (!t.alias.empty() && same->alias.find(t.alias) == std::string::npos)
      same->alias += (same->alias.empty() ? "" : "; ") + t.alias;
  }
  return true;
}

int cmd_check(int argc, char** argv) {
  std::vector<TargetId> targets;
  std::vector<std::string> paths;
  bool json = false, junit = false, sarif = false;
  unsigned jobs = 0;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--target" || a == "-t" || a.rfind("--target=", 0) == 0) {
      std::string value;
      if (a.rfind("--target=", 0) == 0) value = a.substr(9);
      else if (i + 1 >= argc) return usage_error(a + " needs a value");
      else value = argv[++i];
      std::string err;
      if (!add_targets(value, &targets, &err)) return usage_error(err);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--junit") {
      junit = true;
    } else if (a == "--sarif") {
      sarif = true;
    } else if (a == "--jobs" || a == "-j" || a.rfind("--jobs=", 0) == 0) {
      std::string v = a.rfind("--jobs=", 0) == 0 ? a.substr(7) : i + 1 < argc ? argv[++i] : "";
      if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos)
        return usage_error("--jobs needs a number of threads (0: one per hardware thread)");
      jobs = static_cast<unsigned>(std::stoul(v));
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return kExitOk;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage_error("unknown option " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) return usage_error("check needs at least one PATH");
  if (json + junit + sarif > 1) return usage_error("--json, --junit and --sarif exclude each other");
  CheckPathsOptions options{targets, jobs, /*empty_directory_is_error=*/true};
  if (json || junit || sarif) {  // streamed as the files are checked
    auto os = stdio_ostream(stdout);
    auto writer = make_report_writer(json ? ReportFormat::Json : junit ? ReportFormat::JUnit : ReportFormat::Sarif, *os, targets);
    CheckPathsResult result = check_paths(paths, options, *writer);
    writer->finish();
    return result.ok ? kExitOk : kExitProblems;
  }
  // The table needs only verdicts and diagnostics: the sink drops the parsed kernels.
  Tally tally;
  CollectSink sink(/*keep_parsed=*/false, [&](FileReport& r) { tally.add(r, targets.size()); });
  CheckPathsResult result = check_paths(paths, options, sink);
  print_table(sink.reports, targets, tally);
  return result.ok ? kExitOk : kExitProblems;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024) snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

void print_inspect(const std::vector<FileReport>& reports) {
  for (const auto& r : reports) {
    printf("%s\n", escape_text(r.path).c_str());
    for (const auto& d : r.diagnostics) printf("  %s\n", format_line(d).c_str());
    size_t bundles = 0;
    for (const auto& img : r.images)
      if (img.kind != PayloadKind::CodeObject) ++bundles;
    if (bundles) printf("  %zu offload bundle(s)\n", bundles);
    for (const auto& img : r.images) {
      std::string head = img.location.empty() ? std::string(to_string(img.kind)) : img.location;
      if (img.kind == PayloadKind::CompressedBundle)
        head += " (CCOB v" + std::to_string(img.ccob_version) + ", " + (img.ccob_method == 1 ? "zstd" : "zlib") + ")";
      printf("  %s\n", head.c_str());
      for (const auto& e : img.entries)
        printf("    entry %-52s %10s at offset %llu\n", escape_text(e.id).c_str(), human_bytes(e.size).c_str(),
               static_cast<unsigned long long>(e.offset));
      for (const auto& c : img.code_objects) {
        printf("    code object %s%s, v%u, %zu kernel(s)\n", describe_target(c.co).c_str(),
               c.entry.empty() ? "" : (" [" + escape_text(c.entry) + "]").c_str(), c.co.version, c.co.kernels.size());
        if (!c.co.kernels.empty())
          printf("      %-10s %-9s %-6s %-11s %-5s %-5s %-7s %s\n", "LDS", "SCRATCH", "WAVE", "VGPR/AGPR", "SGPR",
                 "WG", "KERNARG", "KERNEL");
        for (const auto& k : c.co.kernels) {
          std::string regs = std::to_string(k.vgpr_count) + "/" + (k.agpr_count ? std::to_string(*k.agpr_count) : "-");
          std::string scratch = std::to_string(k.private_segment_fixed_size) + (k.uses_dynamic_stack ? "+dyn" : "");
          printf("      %-10llu %-9s %-6llu %-11s %-5llu %-5llu %-7llu %s\n",
                 static_cast<unsigned long long>(k.group_segment_fixed_size), scratch.c_str(),
                 static_cast<unsigned long long>(k.wavefront_size), regs.c_str(),
                 static_cast<unsigned long long>(k.sgpr_count), static_cast<unsigned long long>(k.max_flat_workgroup_size),
                 static_cast<unsigned long long>(k.kernarg_segment_size), escape_text(k.name).c_str());
        }
        for (const auto& f : c.co.device_functions)
          printf("      device function (not a kernel): %s\n", escape_text(f).c_str());
        for (const auto& f : c.co.kernels_without_metadata)
          printf("      kernel descriptor without metadata: %s\n", escape_text(f).c_str());
      }
      for (const auto& d : img.diagnostics) printf("    %s\n", format_line(d).c_str());
    }
  }
}

int cmd_inspect(int argc, char** argv) {
  bool json = false;
  std::vector<std::string> paths;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") json = true;
    else if (a == "-h" || a == "--help") {
      usage(stdout);
      return kExitOk;
    } else if (!a.empty() && a[0] == '-') return usage_error("unknown option " + a);
    else paths.push_back(a);
  }
  if (paths.empty()) return usage_error("inspect needs at least one PATH");
  CheckPathsOptions options{{}, 0, /*empty_directory_is_error=*/false};
  CheckPathsResult result;
  if (json) {  // streamed as the files are read
    auto os = stdio_ostream(stdout);
    auto writer = make_report_writer(ReportFormat::Json, *os, {});
    result = check_paths(paths, options, *writer);
    writer->finish();
  } else {  // printed file by file
    auto print = [](FileReport& r) {
      std::vector<FileReport> one;
      one.push_back(std::move(r));
      print_inspect(one);
    };
    CollectSink sink(/*keep_parsed=*/true, print, /*keep=*/false);
    result = check_paths(paths, options, sink);
  }
  // inspect describes; it fails only when an input could not be read at all.
  return result.unreadable ? kExitProblems : kExitOk;
}

std::string feature_name(Feature f) {
  switch (f) {
    case Feature::On: return "+";
    case Feature::Off: return "-";
    case Feature::Any: return "any";
    case Feature::Unsupported: return "n/a";
  }
  return "?";
}

std::string waves(const ProcessorInfo& p) {
  return p.wave32 && p.wave64 ? "32,64" : p.wave32 ? "32" : "64";
}

// `hipguard targets`: the product and processor tables the checks use.
int cmd_targets(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return kExitOk;
    }
    return usage_error("targets takes no argument (got '" + a + "')");
  }
  printf("Products (checked as shipped; NAME:xnack+ etc. for another setting)\n");
  printf("  %-11s %-24s %-26s %-10s %s\n", "NAME", "GPU", "TARGET ID", "LDS", "WAVE");
  for (const auto& p : all_products()) {
    std::string err;
    auto t = parse_target(p.name, &err);
    const ProcessorInfo* info = find_processor(p.processor);
    if (!t || !info) continue;
    printf("  %-11s %-24s %-26s %-10s %s\n", std::string(p.name).c_str(), std::string(p.display).c_str(),
           t->str().c_str(), human_bytes(info->lds_bytes).c_str(), waves(*info).c_str());
  }
  printf("\nProcessors (a bare processor is checked in each configuration its products ship with)\n");
  printf("  %-16s %-10s %-6s %-7s %-8s %-14s %s\n", "PROCESSOR", "LDS", "WAVE", "XNACK", "SRAMECC", "XNACK DEFAULT",
         "CHECKED AS");
  for (const auto& p : all_processors()) {
    std::string err, as;
    for (const auto& t : resolve_target(p.name, &err)) as += (as.empty() ? "" : ", ") + t.str();
    printf("  %-16s %-10s %-6s %-7s %-8s %-14s %s%s\n", std::string(p.name).c_str(), human_bytes(p.lds_bytes).c_str(),
           waves(p).c_str(), p.xnack ? "yes" : "no", p.sramecc ? "yes" : "no",
           p.xnack ? feature_name(p.default_xnack).c_str() : "n/a", as.c_str(),
           p.legacy ? " (legacy)" : p.is_generic ? " (generic)" : "");
  }
  printf("\nSources\n");
  for (const auto& f : fact_sources()) printf("  %s: %s\n", std::string(f.fact).c_str(), std::string(f.source).c_str());
  return kExitOk;
}

std::string find_shim() {
  if (const char* env = getenv("HIPGUARD_SHIM"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto dir = exe.parent_path();
  for (auto cand : {dir / "libhipguard.so", dir / "../lib/libhipguard.so", dir / "../lib/hipguard/libhipguard.so"})
    if (std::filesystem::exists(cand, ec)) return std::filesystem::canonical(cand, ec).string();
  return "";
}

// LD_PRELOAD splits its value at spaces and colons: a shim path holding one
// would not be preloaded, and the program would run unchecked. The path as
// given, else its canonical form (a symlink's target), if either can be
// preloaded; else "" and `why` says what is wrong.
std::string preloadable(const std::string& shim, std::string* why) {
  auto fits = [](const std::string& p) { return p.find_first_of(" :\t\n") == std::string::npos; };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(shim, ec)) {
    *why = "'" + shim + "' is not a file";
    return "";
  }
  // Relative to this directory, not to wherever the program chdirs.
  std::string abs = std::filesystem::absolute(shim, ec).string();
  if (!ec && fits(abs)) return abs;
  std::string real = std::filesystem::canonical(shim, ec).string();
  if (!ec && fits(real)) return real;
  *why = "'" + shim + "' contains a space or a colon, where LD_PRELOAD splits its value: the shim would not be "
         "loaded and the program would run unchecked; install hipguard under a path without spaces and colons, or "
         "point HIPGUARD_SHIM at a copy or symlink there";
  return "";
}

int cmd_run(int argc, char** argv) {
  std::string targets, report;
  bool strict = false;
  int i = 0;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--target" || a == "-t" || a.rfind("--target=", 0) == 0) {
      std::string value;
      if (a.rfind("--target=", 0) == 0) value = a.substr(9);
      else if (i + 1 >= argc) return usage_error("--target needs a value");
      else value = argv[++i];
      std::string err;
      if (value.empty()) return usage_error("--target needs a value");
      if (value.find_first_of(" \t,;") != std::string::npos)
        return usage_error("bad target '" + value + "': give one target per --target, without spaces");
      if (!parse_target(value, &err)) return usage_error("bad target '" + value + "': " + err);
      targets += (targets.empty() ? "" : ",") + value;
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--report" || a.rfind("--report=", 0) == 0) {
      if (a.rfind("--report=", 0) == 0) report = a.substr(9);
      else if (i + 1 >= argc) return usage_error("--report needs a file");
      else report = argv[++i];
      if (report.empty()) return usage_error("--report needs a file");
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return kExitOk;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option " + a);
    } else {
      break;
    }
  }
  if (i >= argc) return usage_error("run needs a COMMAND");
  std::string found = find_shim();
  if (found.empty()) {
    fprintf(stderr, "hipguard: cannot find libhipguard.so next to the hipguard executable (set HIPGUARD_SHIM)\n");
    return kExitUsage;
  }
  std::string why;
  std::string shim = preloadable(found, &why);
  if (shim.empty()) {
    fprintf(stderr, "hipguard: cannot preload the shim: %s\n", why.c_str());
    return kExitUsage;
  }
  std::string preload = shim;
#ifdef HIPGUARD_SANITIZER_RUNTIME
  preload = std::string(HIPGUARD_SANITIZER_RUNTIME) + ":" + preload;  // sanitizer build of hipguard
  setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 0);
#endif
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!targets.empty()) setenv("HIPGUARD_TARGET", targets.c_str(), 1);
  if (strict) setenv("HIPGUARD_MODE", "strict", 1);
  if (!report.empty()) setenv("HIPGUARD_REPORT", report.c_str(), 1);
  execvp(argv[i], argv + i);
  fprintf(stderr, "hipguard: cannot run %s: %s\n", argv[i], strerror(errno));
  return 127;
}


// A file mapped for reading (FileData, above 64 MiB) that is truncated
// meanwhile raises SIGBUS on the next page touched: say so, never crash.
extern "C" void on_sigbus(int) {
  static const char msg[] = "hipguard: a file shrank while it was being read (SIGBUS); check it again\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(kExitUsage);
}

int run_command(int argc, char** argv) {
  if (argc < 2) return usage_error("missing command");
  std::string cmd = argv[1];
  if (cmd == "check") return cmd_check(argc - 2, argv + 2);
  if (cmd == "run") return cmd_run(argc - 2, argv + 2);
  if (cmd == "inspect") return cmd_inspect(argc - 2, argv + 2);
  if (cmd == "targets") return cmd_targets(argc - 2, argv + 2);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    printf("hipguard 0.1.0\n");
    return kExitOk;
  }
  return usage_error("unknown command '" + cmd + "'");
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction sa {};
  sa.sa_handler = on_sigbus;
  sigaction(SIGBUS, &sa, nullptr);
  int status;
  try {
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
