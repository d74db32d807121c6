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
#include <unordered_map>
#include <set>
#include <filesystem>
#include <string>
#include <vector>

#include <llvm/Demangle/Demangle.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include "checks/archive.h"
#include "hipguard/inputs.h"
#include "hipguard/report.h"
#include "hipguard/version.h"
#include "launch.h"
#include "progress.h"

using namespace hipguard;
namespace cl = llvm::cl;

namespace {

constexpr int kExitOk = 0, kExitProblems = 1, kExitUsage = 2;

// ---------------------------------------------------------------- command line
// llvm::cl subcommands: `hipguard COMMAND --help` (and `hipguard help
// COMMAND`) per command, `--opt VALUE` and `--opt=VALUE` everywhere, unknown
// options answered with the nearest one.

cl::SubCommand CheckCmd("check", "Will these files run on these GPUs? (no GPU needed)");
cl::SubCommand InspectCmd("inspect", "What is inside: bundles, entries, code objects, kernels");
cl::SubCommand TargetsCmd("targets", "The products and processors hipguard knows");
cl::SubCommand RunCmd("run", "Run a program with the libhipguard.so shim preloaded");

cl::OptionCategory Options("Options");

// Shared by several commands (one option object registered in each).
cl::list<std::string> TargetOpt("target", cl::desc("GPU to check for: a product (mi300x, mi355x, mi250x:xnack+, ...) or a "
                                                    "target ID (gfx942, gfx90a:xnack+); repeat for several"),
                                cl::value_desc("T"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::sub(RunCmd),
                                cl::cat(Options));
cl::alias TargetShort("t", cl::desc("Same as --target"), cl::aliasopt(TargetOpt), cl::NotHidden);
cl::opt<bool> QuietOpt("quiet", cl::desc("Print less: check, only errors and warnings; inspect, no kernel tables; "
                                         "run, only the shim's errors"),
                       cl::sub(CheckCmd), cl::sub(InspectCmd), cl::sub(TargetsCmd), cl::sub(RunCmd), cl::cat(Options));
cl::alias QuietShort("q", cl::desc("Same as --quiet"), cl::aliasopt(QuietOpt), cl::NotHidden);
cl::opt<bool> VerboseOpt("verbose", cl::desc("Print more: check, every finding of every fat binary (not grouped); "
                                             "inspect, code object URIs; run, the shim's debug log"),
                         cl::sub(CheckCmd), cl::sub(InspectCmd), cl::sub(TargetsCmd), cl::sub(RunCmd), cl::cat(Options));
cl::alias VerboseShort("v", cl::desc("Same as --verbose"), cl::aliasopt(VerboseOpt), cl::NotHidden);
cl::opt<std::string> ColorOpt("color", cl::desc("Colour the output: auto (on a terminal, unless NO_COLOR is set), "
                                                "always, never"),
                              cl::value_desc("WHEN"), cl::init("auto"), cl::sub(CheckCmd), cl::sub(InspectCmd),
                              cl::sub(TargetsCmd), cl::cat(Options));
cl::opt<bool> JsonOpt("json", cl::desc("Print the JSON report (docs/report.md)"), cl::sub(CheckCmd), cl::sub(InspectCmd),
                      cl::cat(Options));
cl::list<std::string> PathArgs(cl::Positional, cl::desc("PATH..."), cl::sub(CheckCmd), cl::sub(InspectCmd),
                               cl::cat(Options));

cl::opt<std::string> RuntimeOpt("runtime", cl::desc("HIP runtime that selects the code objects: 5.0, 5.6, 6.4, 7.0 "
                                                  "(any version: 6.4.3, 7.1; default: the newest, the strictest)"),
                                cl::value_desc("VERSION"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));
cl::opt<bool> OneProcessOpt("one-process", cl::desc("The --target GPUs are the GPUs of one process (one machine), not "
                                                    "separate machines: the runtime looks up their code objects at once"),
                            cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));

// Hidden: when the progress line first appears (tests give 0).
cl::opt<unsigned> ProgressDelayOpt("progress-delay", cl::desc("Milliseconds before the progress line appears"),
                                   cl::init(500), cl::Hidden, cl::sub(CheckCmd), cl::sub(InspectCmd));

// check
cl::opt<bool> JunitOpt("junit", cl::desc("Print a JUnit XML report"), cl::sub(CheckCmd), cl::cat(Options));
cl::opt<bool> SarifOpt("sarif", cl::desc("Print a SARIF 2.1.0 log (code scanning)"), cl::sub(CheckCmd), cl::cat(Options));
cl::opt<unsigned> JobsOpt("jobs", cl::desc("Files checked in parallel (0: one per hardware thread)"), cl::value_desc("N"),
                          cl::init(0), cl::sub(CheckCmd), cl::cat(Options));
cl::alias JobsShort("j", cl::desc("Same as --jobs"), cl::aliasopt(JobsOpt), cl::NotHidden);

// What a program loads (dependencies.h): check follows it unless --no-deps, inspect with --deps.
cl::opt<std::string> SysrootOpt("sysroot", cl::desc("Find the libraries a program loads inside DIR (an unpacked root or "
                                                  "image) instead of /"),
                                cl::value_desc("DIR"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));
cl::opt<bool> NoDepsOpt("no-deps", cl::desc("Check the files named only, not the libraries and kernel files they load"),
                        cl::sub(CheckCmd), cl::cat(Options));
cl::opt<bool> DepsOpt("deps", cl::desc("Also inspect the libraries and kernel files the named files load"),
                      cl::sub(InspectCmd), cl::cat(Options));

// inspect
cl::opt<bool> DemangleOpt("demangle", cl::desc("Show kernel and function names demangled"), cl::sub(InspectCmd),
                          cl::cat(Options));
cl::opt<std::string> SortOpt("sort", cl::desc("Order kernels by: lds, scratch, vgpr (largest first) or name"),
                             cl::value_desc("KEY"), cl::sub(InspectCmd), cl::cat(Options));

// run
cl::opt<bool> StrictOpt("strict", cl::desc("Strict mode: stop a program whose kernels cannot run (HIPGUARD_MODE=strict)"),
                        cl::sub(RunCmd), cl::cat(Options));
cl::opt<std::string> ReportOpt("report", cl::desc("Write a report at exit: JSON, or JUnit XML for *.xml; %p = pid "
                                                  "(HIPGUARD_REPORT)"),
                               cl::value_desc("FILE"), cl::sub(RunCmd), cl::cat(Options));
cl::list<std::string> CommandArg(cl::Positional, cl::desc("[--] COMMAND [ARGS...]"), cl::sub(RunCmd), cl::cat(Options));

const char* const kOverview[] = {
    // [0] hipguard
    "hipguard " HIPGUARD_VERSION_STRING ": why a HIP kernel cannot run on an AMD GPU, before the first launch.\n\n"
    "  hipguard check --target mi300x app lib/ kernels/*.co\n"
    "  hipguard inspect --target gfx942 --sort lds app\n"
    "  hipguard targets\n"
    "  hipguard run --target mi300x --strict --report run-%p.json -- ./app\n\n"
    "  T (--target) is a product name (mi300x, mi325x, mi355x, mi250x, ...: checked as the GPU\n"
    "  ships, e.g. mi300x = gfx942:sramecc+:xnack-; mi250x:xnack+ for the other setting) or a\n"
    "  target ID (gfx942, gfx90a:xnack+); a feature left out is checked in every configuration\n"
    "  GPUs of that processor ship with. @FILE reads arguments from FILE.\n",
    // [1] check
    "hipguard check: will these files run on these GPUs? Reads executables and shared libraries\n"
    "(.hip_fatbin), offload bundles (also compressed), .co/.hsaco code objects and directories of\n"
    "them, and says for each target whether every kernel can run there. Without --target: the\n"
    "structural checks only. Archives (.deb, .whl/.zip, .tar, .tar.gz/.xz/.zst/.bz2, .a) are read\n"
    "in place: each member with GPU code is a file named ARCHIVE!MEMBER (pkg.deb!usr/lib/x.so).\n\n"
    "The code object each target gets is the one the HIP runtime --runtime VERSION selects (by\n"
    "default the newest, which is the strictest: HIP 7.x loads no gfx9-generic code on a gfx906).\n"
    "Several --target are separate machines; with --one-process they are one process's GPUs, whose\n"
    "code objects the runtime looks up at once (a bundle entry then serves one GPU only, HG212).\n\n"
    "Exit status: 0 everything can run on every target; 1 something cannot, or nothing was\n"
    "checked; 2 usage error.\n",
    // [2] inspect
    "hipguard inspect: what is inside: bundles and their entries (offsets in the bundle and in the\n"
    "file), code objects, kernels with LDS, scratch, registers, kernarg size, device functions;\n"
    "in archives too (ARCHIVE!MEMBER, as check names them).\n"
    "With --target: which entry the runtime would select for each target, and why each other\n"
    "entry is not selected.\n\n"
    "Exit status: 0; 1 when a file cannot be read; 2 usage error.\n",
    // [3] targets
    "hipguard targets: the products and processors hipguard knows, with the target ID each is\n"
    "checked as, its LDS and wave sizes, and the source of each fact.\n",
    // [4] run
    "hipguard run: runs COMMAND with libhipguard.so preloaded (found next to hipguard: ../lib),\n"
    "in warn mode, or in strict mode with --strict. The exit status is COMMAND's (docs/ci.md).\n"
    "HIPGUARD_SHIM names another shim. Options end at COMMAND or at '--'.\n",
};

constexpr const char* kCommands[] = {"check", "inspect", "targets", "run", "help"};

// Edit distance, for "did you mean" on a mistyped command.
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string g_command;  // the subcommand being run, for messages

int usage_error(const std::string& msg) {
  fprintf(stderr, "hipguard%s: %s\n", g_command.empty() ? "" : (" " + g_command).c_str(), msg.c_str());
  fprintf(stderr, "Try 'hipguard %s--help'.\n", g_command.empty() ? "" : (g_command + " ").c_str());
  return kExitUsage;
}

// ---------------------------------------------------------------- colour

bool g_color = false;

bool want_color(const std::string& when) {
  if (when == "always") return true;
  if (when == "never") return false;
  const char* no_color = getenv("NO_COLOR");  // https://no-color.org: set and not empty
  if (no_color && *no_color) return false;
  const char* term = getenv("TERM");
  return isatty(STDOUT_FILENO) && !(term && std::string_view(term) == "dumb");
}

// SGR colours: 1 bold, 31 red, 32 green, 33 yellow, 36 cyan.
std::string paint(const char* sgr, const std::string& text) {
  return g_color ? std::string("\033[") + sgr + "m" + text + "\033[0m" : text;
}

// A diagnostic line with its severity word coloured.
std::string paint_line(const std::string& line) {
  for (auto [word, sgr] : {std::pair{"error ", "1;31"}, std::pair{"warning ", "1;33"}, std::pair{"note ", "36"}})
    if (line.rfind(word, 0) == 0) return paint(sgr, std::string(word, strlen(word) - 1)) + line.substr(strlen(word) - 1);
  return line;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string image_name(const ImageReport& img) {
  return escape_text(img.location.empty() ? img.origin : img.origin + " [" + img.location + "]");
}

// Findings that differ only in which fat binary of one file (rocSPARSE: 111
// bundles, one HG201 each), or which file of one kernel library, they concern
// are printed once with a count; the JSON report keeps every one.
// --verbose: every finding as it is; --quiet: errors and warnings only.
void print_findings(const std::vector<FileReport>& reports) {
  size_t count = 0;
  auto print_line = [&](Severity severity, const std::string& line) {
    if (QuietOpt && severity == Severity::Note) return;
    printf("%s\n", paint_line(line).c_str());
    ++count;
  };
  // Units of grouping: a file, or all files of one kernel library, in first-occurrence order.
  std::vector<std::vector<const FileReport*>> units;
  std::unordered_map<std::string, size_t> library_unit;
  for (const auto& r : reports) {
    if (r.library.empty() || VerboseOpt || r.images.empty()) {
      units.push_back({&r});
      continue;
    }
    auto [it, fresh] = library_unit.try_emplace(r.library, units.size());
    if (fresh) units.emplace_back();
    units[it->second].push_back(&r);
  }
  for (const auto& unit : units) {
    bool library = unit.size() > 1 || !unit[0]->library.empty();
    const std::string& name = library && !VerboseOpt ? unit[0]->library : unit[0]->path;
    size_t images = 0;
    for (const FileReport* r : unit) {
      for (const auto& d : r->diagnostics) print_line(d.severity, format_line(d));
      images += r->images.size();
    }
    // Equal findings of several images are said once: grouped by their line
    // with the unit's name for the file, in first occurrence order.
    struct Group {
      const Diagnostic* d;
      size_t n;
      const std::string* line;  // the line as printed once (the key itself), unless it has a location
    };
    std::vector<Group> groups;
    std::unordered_map<std::string, size_t> index;  // node-based: the keys stay where Group::line points
    for (const FileReport* r : unit)
      for (const auto& i : r->images)
        for (const auto& d : i.diagnostics) {
          bool as_is = VerboseOpt || (!library && d.file == r->path);
          std::string key;
          if (as_is) {
            key = format_line(d);
          } else {
            Diagnostic located = d;
            located.file = name;
            key = format_line(located);
          }
          auto [it, fresh] = index.try_emplace(std::move(key), groups.size());
          if (fresh) groups.push_back({&d, 0, as_is ? &it->first : nullptr});
          ++groups[it->second].n;
        }
    for (const auto& g : groups) {
      if (g.n == 1 && (g.line || library)) {
        print_line(g.d->severity, g.line ? *g.line : format_line(*g.d));
        continue;
      }
      Diagnostic d = *g.d;
      if (g.n > 1)
        d.file = name + " [" + std::to_string(g.n) + " of " + std::to_string(images) +
                 (library ? " files]" : " fat binaries]");
      print_line(d.severity, format_line(d));
    }
  }
  if (count == 0 && !QuietOpt) printf("no problems found\n");
}

// What was checked, per target, for the closing line: a CI log shows a gate
// that checked nothing. Counted as files are checked (the table mode drops
// the parsed kernels afterwards).
struct Tally {
  size_t bundles = 0, raw = 0, objects = 0, kernels = 0;  // objects/kernels: read, without targets
  std::vector<size_t> selected, selected_kernels;          // per target: selected code objects, their kernels

  void add(const ImageReport& img, size_t targets) {  // as it is checked, before its parsed kernels are dropped
    selected.resize(targets), selected_kernels.resize(targets);
    {
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

void print_needed_by(const std::vector<FileReport>& reports);

// One row of the table: a file, a kernel library, or (--verbose) a fat binary.
struct Row {
  bool ok;
  std::string selected, kernels, name;
};

void print_row(const Row& r) {
  printf("  %s %s %s %s\n", paint(r.ok ? "32" : "1;31", pad(r.ok ? "ok" : "FAIL", 6)).c_str(), pad(r.selected, 52).c_str(),
         pad(r.kernels, 7).c_str(), r.name.c_str());
}

std::string selection_text(const TargetVerdict& v) {
  return v.selection == Selection::None ? "-" : escape_text(v.selected) + " (" + std::string(to_string(v.selection)) + ")";
}

Row image_row(const ImageReport& img, const TargetVerdict& v) {
  return {!v.fails(), selection_text(v), v.selection == Selection::None ? "-" : std::to_string(v.kernels), image_name(img)};
}

// A file with several fat binaries (a program, a shared library) on one row:
// the distinct selections, the kernels of all, how many cannot run.
Row file_row(const FileReport& r, size_t t) {
  std::vector<std::string> selections;
  size_t kernels = 0, failing = 0;
  for (const auto& img : r.images) {
    const TargetVerdict& v = img.verdicts[t];
    std::string s = selection_text(v);
    if (std::find(selections.begin(), selections.end(), s) == selections.end()) selections.push_back(s);
    kernels += v.kernels;
    if (v.fails()) ++failing;
  }
  std::string selected = selections.empty() ? "-" : selections[0];
  if (selections.size() > 1) selected += " +" + std::to_string(selections.size() - 1) + " more";
  std::string name = escape_text(r.path) + " (" + std::to_string(r.images.size()) + " fat binaries";
  if (failing) name += ", " + std::to_string(failing) + " cannot run";
  return {failing == 0, selected, std::to_string(kernels), name + ")"};
}

// A kernel library on one row: the files the target loads, and those it does not.
Row library_row(const LibrarySummary& l, size_t t) {
  const LibrarySummary::PerTarget& p = l.targets[t];
  std::string selected = std::to_string(p.code_objects) + " of " + std::to_string(l.files) + " files";
  if (p.other) selected += " (" + std::to_string(p.other) + " for other targets)";
  std::string name = escape_text(l.name) + "/ (library";
  if (p.failing) name += ", " + std::to_string(p.failing) + " files cannot run";
  return {p.code_objects > 0 && p.failing == 0, selected, std::to_string(p.kernels), name + ")"};
}

// The rows for target `t` (structural soundness when t == npos), in input order:
// one per kernel library, per file, or with --verbose per fat binary.
std::vector<Row> table_rows(const std::vector<FileReport>& reports, const std::vector<LibrarySummary>& libraries,
                            size_t t) {
  std::vector<Row> rows;
  std::set<std::string> listed;
  std::map<std::string, std::pair<size_t, size_t>> sound;  // structural: per library, files and broken files
  if (t == SIZE_MAX)
    for (const auto& r : reports)
      if (!r.library.empty() && !r.images.empty()) {
        auto& [files, broken] = sound[r.library];
        ++files;
        for (const auto& i : r.images) broken += !i.structurally_ok;
      }
  for (const auto& r : reports) {
    if (r.images.empty()) continue;  // findings of its own only (HG101, HG107, HG214)
    if (!r.library.empty() && !VerboseOpt) {
      if (!listed.insert(r.library).second) continue;
      auto l = std::find_if(libraries.begin(), libraries.end(), [&](const LibrarySummary& l) { return l.name == r.library; });
      if (t != SIZE_MAX && l != libraries.end()) {
        rows.push_back(library_row(*l, t));
        continue;
      }
    }
    if (t == SIZE_MAX && !r.library.empty() && !VerboseOpt) {
      auto [files, broken] = sound[r.library];
      rows.push_back({broken == 0, "library, " + std::to_string(files) + " files", "", escape_text(r.library) + "/"});
    } else if (t == SIZE_MAX) {
      bool ok = std::all_of(r.images.begin(), r.images.end(), [](const ImageReport& i) { return i.structurally_ok; });
      std::string what = std::string(to_string(r.images[0].kind));
      if (r.images.size() > 1) what += ", " + std::to_string(r.images.size()) + " fat binaries";
      rows.push_back({ok, what, "", escape_text(r.path)});
    } else if (r.images.size() == 1 || VerboseOpt) {
      for (const auto& img : r.images)
        if (!img.verdicts[t].other_target) rows.push_back(image_row(img, img.verdicts[t]));
    } else {
      rows.push_back(file_row(r, t));
    }
  }
  return rows;
}

void print_table(const std::vector<FileReport>& reports, const std::vector<LibrarySummary>& libraries,
                 const std::vector<TargetId>& targets, const Tally& tally) {
  if (QuietOpt) {
    print_findings(reports);
    return;
  }
  for (size_t t = 0; t < targets.size(); ++t) {
    std::vector<Row> rows = table_rows(reports, libraries, t);
    if (rows.empty()) continue;  // nothing with GPU code: the findings say why
    printf("target %s\n", targets[t].label().c_str());
    printf("  %s %s %s %s\n", pad("RESULT", 6).c_str(), pad("SELECTED", 52).c_str(), pad("KERNELS", 7).c_str(), "FILE");
    for (const Row& r : rows) print_row(r);
    size_t runnable = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.ok; });
    printf("  %zu of %zu can run on %s\n\n", runnable, rows.size(), targets[t].str().c_str());
  }
  if (targets.empty()) {
    std::vector<Row> rows = table_rows(reports, libraries, SIZE_MAX);
    if (!rows.empty()) {
      printf("no --target given: structural checks only\n");
      for (const Row& r : rows)
        printf("  %s %s (%s)\n", paint(r.ok ? "32" : "1;31", pad(r.ok ? "ok" : "FAIL", 6)).c_str(), r.name.c_str(),
               r.selected.c_str());
      printf("\n");
    }
  }
  print_needed_by(reports);
  print_findings(reports);
  printf("%s\n", tally.line(targets).c_str());
}

// --target values: each resolved to the configurations it stands for (a
// product as shipped, a processor in each shipped configuration); the same
// target ID named twice is checked once. False after a usage error.
// --runtime and --one-process; false after a usage error.
bool machine_options(Machine* machine, std::string* error) {
  machine->one_process = OneProcessOpt;
  if (RuntimeOpt.getNumOccurrences() == 0) return true;  // "--runtime=" is an error, not the default
  machine->runtime = parse_runtime(RuntimeOpt);
  if (!machine->runtime) {
    std::string known;
    for (const auto& r : all_runtimes()) known += (known.empty() ? "" : ", ") + std::string(r.name);
    *error = "bad --runtime '" + RuntimeOpt + "': give a HIP version such as " + known + " or 6.4.3";
    return false;
  }
  return true;
}

// --sysroot, --no-deps / --deps; false after a usage error.
bool dependency_options(CheckPathsOptions* options, bool follow, std::string* error) {
  options->dependencies = follow;
  if (SysrootOpt.getNumOccurrences() == 0) return true;
  std::error_code ec;
  if (SysrootOpt.empty() || !std::filesystem::is_directory(SysrootOpt.getValue(), ec)) {
    *error = "--sysroot '" + SysrootOpt + "' is not a directory";
    return false;
  }
  options->sysroot = SysrootOpt;
  return true;
}

// The dependencies among the files, each with the program or library that loads it.
// The kernel files of one directory that one library opens are one line.
void print_needed_by(const std::vector<FileReport>& reports) {
  bool any = false;
  for (size_t i = 0; i < reports.size();) {
    const FileReport& r = reports[i];
    if (r.needed_by.empty()) {
      ++i;
      continue;
    }
    std::string dir = std::filesystem::path(r.path).parent_path().string();
    size_t n = 1;
    while (i + n < reports.size() && reports[i + n].needed_by == r.needed_by &&
           std::filesystem::path(reports[i + n].path).parent_path() == dir)
      ++n;
    if (!any) printf("loaded by the files named:\n");
    any = true;
    std::string what = n > 2 ? dir + "/ (" + std::to_string(n) + " files)" : r.path;
    printf("  %s, needed by %s\n", escape_text(what).c_str(), escape_text(r.needed_by).c_str());
    if (n <= 2) n = 1;
    i += n;
  }
  if (any) printf("\n");
}

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

int cmd_check() {
  std::vector<TargetId> targets;
  for (const auto& value : TargetOpt) {
    std::string err;
    if (!add_targets(value, &targets, &err)) return usage_error(err);
  }
  const std::vector<std::string>& paths = PathArgs;
  bool json = JsonOpt, junit = JunitOpt, sarif = SarifOpt;
  if (json + junit + sarif > 1) return usage_error("--json, --junit and --sarif exclude each other");
  if (paths.empty()) return usage_error("check needs at least one PATH");
  // Code objects for other processors are read to their descriptors (check.h, Depth::ForTargets).
  CheckPathsOptions options{targets, JobsOpt, /*empty_directory_is_error=*/true, Depth::ForTargets, {}, {}, false, {}, {}};
  options.archives = &archive_reader();  // .deb, .whl, .tar.*, .a read in place (archive.h)
  options.kernel_databases = true;  // kernel databases below directory arguments (kernel_database.h)
  if (std::string err; !machine_options(&options.machine, &err)) return usage_error(err);
  if (std::string err; !dependency_options(&options, !NoDepsOpt, &err)) return usage_error(err);
  // Not over a report streamed to the same terminal.
  Progress progress(!QuietOpt && !((json || junit || sarif) && isatty(STDOUT_FILENO)), ProgressDelayOpt);
  options.progress = [&](size_t done, size_t total, const std::string& path) { progress.file_done(done, total, path); };
  if (json || junit || sarif) {  // streamed as the files are checked
    auto os = stdio_ostream(stdout);
    auto writer = make_report_writer(json ? ReportFormat::Json : junit ? ReportFormat::JUnit : ReportFormat::Sarif, *os, targets);
    CheckPathsResult result = check_paths(paths, options, *writer);
    writer->finish();
    return result.ok ? kExitOk : kExitProblems;
  }
  // The table needs only verdicts and diagnostics: the sink drops the parsed kernels.
  Tally tally;
  CollectSink sink(/*keep_parsed=*/false, {}, /*keep=*/true, [&](const ImageReport& i) { tally.add(i, targets.size()); });
  CheckPathsResult result = check_paths(paths, options, sink);
  progress.clear();
  print_table(sink.reports, sink.libraries, targets, tally);
  return result.ok ? kExitOk : kExitProblems;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024) snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string shown_name(const std::string& name) {
  return escape_text(DemangleOpt ? llvm::demangle(name) : name);
}

// --sort: largest first for sizes (then by name), names in ascending order.
std::vector<const KernelInfo*> sorted_kernels(const CodeObject& co) {
  std::vector<const KernelInfo*> ks;
  for (const auto& k : co.kernels) ks.push_back(&k);
  auto key = [](const KernelInfo& k) -> uint64_t {
    if (SortOpt == "lds") return k.group_segment_fixed_size;
    if (SortOpt == "scratch") return k.private_segment_fixed_size;
    if (SortOpt == "vgpr") return k.vgpr_count;
    return 0;
  };
  if (!SortOpt.empty())
    std::stable_sort(ks.begin(), ks.end(), [&](const KernelInfo* a, const KernelInfo* b) {
      if (key(*a) != key(*b)) return key(*a) > key(*b);
      return shown_name(a->name) < shown_name(b->name);
    });
  return ks;
}

// Why an entry (or a raw code object) is or is not a candidate for `t`.
std::string match_reason(const TargetId& code, unsigned generic_version, const TargetId& t) {
  MatchResult m = match_target(code, generic_version, t);
  switch (m.kind) {
    case Match::Native: return "fits (native)";
    case Match::Generic: return "fits (generic)";
    case Match::ProcessorMismatch: return "other processor" + (m.detail.empty() ? "" : ": " + m.detail);
    case Match::FeatureMismatch: return "xnack/sramecc differ" + (m.detail.empty() ? "" : ": " + m.detail);
    case Match::GenericTooOld: return "generic version too old" + (m.detail.empty() ? "" : ": " + m.detail);
  }
  return "?";
}

// --target: what the runtime would select in `img` for each target (from the
// checked image `checked`), and why each entry is or is not a candidate.
void print_selection(const ImageReport& img, const ImageReport& checked, const std::vector<TargetId>& targets) {
  for (size_t t = 0; t < targets.size() && t < checked.verdicts.size(); ++t) {
    const TargetVerdict& v = checked.verdicts[t];
    std::string sel = v.selection == Selection::None
                          ? "selects nothing"
                          : "selects " + escape_text(v.selected) + " (" + std::string(to_string(v.selection)) + "), " +
                                std::to_string(v.kernels) + " kernel(s)";
    printf("    target %s: %s: %s\n", targets[t].label().c_str(), sel.c_str(),
           paint(v.can_run ? "32" : "1;31", v.can_run ? "can run" : "cannot run").c_str());
    if (!QuietOpt) {
      for (const auto& e : img.entries) {
        if (!e.parsed.is_amdgcn()) continue;
        std::string err;
        auto code = parse_target_id(e.parsed.target_id, &err);
        unsigned generic = 0;
        for (const auto& c : img.code_objects)
          if (c.entry == e.id) generic = c.co.generic_version;
        printf("      %-52s %s\n", escape_text(e.id).c_str(),
               code ? match_reason(*code, generic, targets[t]).c_str() : ("unreadable target ID: " + err).c_str());
      }
      if (img.kind == PayloadKind::CodeObject)
        for (const auto& c : img.code_objects)
          printf("      %-52s %s\n", describe_target(c.co).c_str(),
                 match_reason(c.co.target, c.co.generic_version, targets[t]).c_str());
    }
    for (const auto& d : checked.diagnostics)
      if (d.target == targets[t].str() && !(QuietOpt && d.severity == Severity::Note))
        printf("      %s\n", paint_line(format_line(d)).c_str());
  }
}

// `checked`: the same files checked against --target (empty without).
void print_inspect(const std::vector<FileReport>& reports, const std::vector<FileReport>& checked,
                   const std::vector<TargetId>& targets) {
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const FileReport& r = reports[ri];
    printf("%s\n", paint("1", escape_text(r.path)).c_str());
    if (!r.needed_by.empty()) printf("  needed by %s\n", escape_text(r.needed_by).c_str());
    for (const auto& d : r.diagnostics) printf("  %s\n", paint_line(format_line(d)).c_str());
    size_t bundles = 0;
    for (const auto& img : r.images)
      if (img.kind != PayloadKind::CodeObject) ++bundles;
    if (bundles) printf("  %zu offload bundle(s)\n", bundles);
    for (size_t ii = 0; ii < r.images.size(); ++ii) {
      const ImageReport& img = r.images[ii];
      std::string head = img.location.empty() ? std::string(to_string(img.kind)) : img.location;
      if (img.kind == PayloadKind::CompressedBundle)
        head += " (CCOB v" + std::to_string(img.ccob_version) + ", " + (img.ccob_method == 1 ? "zstd" : "zlib") + ")";
      if (img.kind != PayloadKind::CodeObject) head += ", file offset " + std::to_string(img.file_offset);
      printf("  %s\n", head.c_str());
      // Offsets: in the bundle (clang-offload-bundler), and in the file as
      // roc-obj-ls prints them (file://PATH#offset=N&size=M); entries of a
      // compressed bundle have no place in the file.
      bool in_file = img.kind == PayloadKind::OffloadBundle;
      for (const auto& e : img.entries) {
        std::string where = "at offset " + std::to_string(e.offset) +
                            (in_file ? ", file offset " + std::to_string(img.file_offset + e.offset) : " (compressed)");
        printf("    entry %-52s %10s %s\n", escape_text(e.id).c_str(), human_bytes(e.size).c_str(), where.c_str());
        if (VerboseOpt && in_file && e.size)
          printf("      file://%s#offset=%llu&size=%llu\n", escape_text(r.path).c_str(),
                 static_cast<unsigned long long>(img.file_offset + e.offset), static_cast<unsigned long long>(e.size));
      }
      if (ri < checked.size() && ii < checked[ri].images.size())
        print_selection(img, checked[ri].images[ii], targets);
      for (const auto& c : img.code_objects) {
        printf("    code object %s%s, v%u, %zu kernel(s)\n", describe_target(c.co).c_str(),
               c.entry.empty() ? "" : (" [" + escape_text(c.entry) + "]").c_str(), c.co.version, c.co.kernels.size());
        if (QuietOpt) continue;
        if (!c.co.kernels.empty())
          printf("      %-10s %-9s %-6s %-11s %-5s %-5s %-7s %s\n", "LDS", "SCRATCH", "WAVE", "VGPR/AGPR", "SGPR",
                 "WG", "KERNARG", "KERNEL");
        for (const KernelInfo* kp : sorted_kernels(c.co)) {
          const KernelInfo& k = *kp;
          std::string regs = std::to_string(k.vgpr_count) + "/" + (k.agpr_count ? std::to_string(*k.agpr_count) : "-");
          std::string scratch = std::to_string(k.private_segment_fixed_size) + (k.uses_dynamic_stack ? "+dyn" : "");
          printf("      %-10llu %-9s %-6llu %-11s %-5llu %-5llu %-7llu %s\n",
                 static_cast<unsigned long long>(k.group_segment_fixed_size), scratch.c_str(),
                 static_cast<unsigned long long>(k.wavefront_size), regs.c_str(),
                 static_cast<unsigned long long>(k.sgpr_count), static_cast<unsigned long long>(k.max_flat_workgroup_size),
                 static_cast<unsigned long long>(k.kernarg_segment_size), shown_name(k.name).c_str());
        }
        for (const auto& f : c.co.device_functions)
          printf("      device function (not a kernel): %s\n", shown_name(f).c_str());
        for (const auto& f : c.co.kernels_without_metadata)
          printf("      kernel descriptor without metadata: %s\n", shown_name(f).c_str());
      }
      for (const auto& d : img.diagnostics) printf("    %s\n", paint_line(format_line(d)).c_str());
    }
  }
}

int cmd_inspect() {
  std::vector<TargetId> targets;
  for (const auto& value : TargetOpt) {
    std::string err;
    if (!add_targets(value, &targets, &err)) return usage_error(err);
  }
  if (!SortOpt.empty() && SortOpt != "lds" && SortOpt != "scratch" && SortOpt != "vgpr" && SortOpt != "name")
    return usage_error("--sort must be lds, scratch, vgpr or name (got '" + SortOpt + "')");
  bool json = JsonOpt;
  const std::vector<std::string>& paths = PathArgs;
  if (paths.empty()) return usage_error("inspect needs at least one PATH");
  CheckPathsOptions options{targets, 0, /*empty_directory_is_error=*/false, Depth::Full, {}, {}, false, {}, {}};
  options.archives = &archive_reader();  // .deb, .whl, .tar.*, .a read in place (archive.h)
  if (std::string err; !machine_options(&options.machine, &err)) return usage_error(err);
  if (std::string err; !dependency_options(&options, DepsOpt, &err)) return usage_error(err);
  CheckPathsResult result;
  if (json) {  // streamed as the files are read; with --target, what would be selected
    auto os = stdio_ostream(stdout);
    auto writer = make_report_writer(ReportFormat::Json, *os, targets);
    result = check_paths(paths, options, *writer);
    writer->finish();
  } else if (targets.empty()) {  // printed file by file
    auto print = [&](FileReport& r) {
      std::vector<FileReport> one;
      one.push_back(std::move(r));
      print_inspect(one, {}, targets);
    };
    CollectSink sink(/*keep_parsed=*/true, print, /*keep=*/false);
    result = check_paths(paths, options, sink);
  } else {
    // Every code object (no targets), and beside it what each target selects.
    CollectSink all(/*keep_parsed=*/true), checked(/*keep_parsed=*/false);
    Progress progress(!QuietOpt, ProgressDelayOpt);
    options.progress = [&](size_t done, size_t total, const std::string& path) { progress.file_done(done, total, path); };
    CheckPathsOptions structural = options;
    structural.targets.clear();
    structural.dependency_targets = targets;  // the same kernel files as `checked`
    result = check_paths(paths, structural, all);
    check_paths(paths, options, checked);
    progress.clear();
    print_inspect(all.reports, checked.reports, targets);
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
int cmd_targets() {
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
  if (QuietOpt) return kExitOk;
  printf("\nHIP runtimes (check --runtime; default %s, the newest)\n", std::string(default_runtime().name).c_str());
  printf("  %-8s %-8s %-8s %-15s %-13s %s\n", "VERSION", "GENERIC", "SPIR-V", "GENERIC NAME", "ONE PROCESS", "SOURCE");
  for (const auto& r : all_runtimes())
    printf("  %-8s %-8s %-8s %-15s %-13s %s\n", std::string(r.name).c_str(), r.generic ? "yes" : "no",
           r.spirv ? "yes" : "no", !r.generic ? "-" : r.generic_keeps_features ? "with features" : "bare",
           !r.batch_lookup ? "per GPU" : r.own_parser_with_generic ? "batch*" : "batch", std::string(r.source).c_str());
  printf("  (batch: one comgr lookup for all GPUs, an entry serves one GPU; *: per GPU when an uncompressed bundle "
         "has a generic entry)\n");
  printf("\nSources\n");
  for (const auto& f : fact_sources()) printf("  %s: %s\n", std::string(f.fact).c_str(), std::string(f.source).c_str());
  return kExitOk;
}

// The shim of this hipguard: HIPGUARD_SHIM, else libhipguard.so.MAJOR where
// the install (and the build tree) puts it relative to the executable, so an
// installed tree or an unpacked tarball works from any prefix.
std::string find_shim() {
  if (const char* env = getenv("HIPGUARD_SHIM"); env && *env) return env;
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

// `command`: the program and its arguments (everything from the first
// argument that is not an option, or after "--").
int cmd_run(char** command) {
  std::string targets;
  for (const auto& value : TargetOpt) {
    std::string err;
    if (value.empty()) return usage_error("--target needs a value");
    if (value.find_first_of(" \t,;") != std::string::npos)
      return usage_error("bad target '" + value + "': give one target per --target, without spaces");
    if (!parse_target(value, &err)) return usage_error("bad target '" + value + "': " + err);
    targets += (targets.empty() ? "" : ",") + value;
  }
  bool strict = StrictOpt;
  std::string report = ReportOpt;
  if (ReportOpt.getNumOccurrences() && report.empty()) return usage_error("--report needs a file");
  if (!command || !command[0]) return usage_error("run needs a COMMAND");
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
  if (QuietOpt) setenv("HIPGUARD_LOG_LEVEL", "error", 1);
  if (VerboseOpt) {
    setenv("HIPGUARD_LOG_LEVEL", "debug", 1);
    fprintf(stderr, "hipguard: LD_PRELOAD=%s\n", preload.c_str());
  }
  return launch(command, report);
}


// A file mapped for reading (FileData, above 64 MiB) that is truncated
// meanwhile raises SIGBUS on the next page touched: say so, never crash.
extern "C" void on_sigbus(int) {
  static const char msg[] = "hipguard: a file shrank while it was being read (SIGBUS); check it again\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(kExitUsage);
}

void print_help(FILE* out) {
  fprintf(out, "%s\nUSAGE: hipguard COMMAND [OPTIONS] ...\n\nCOMMANDS:\n", kOverview[0]);
  for (cl::SubCommand* sc : {&CheckCmd, &InspectCmd, &TargetsCmd, &RunCmd})
    fprintf(out, "  %-8s %s\n", sc->getName().str().c_str(), sc->getDescription().str().c_str());
  fprintf(out, "  %-8s %s\n\n", "help", "help COMMAND: the options of COMMAND (as COMMAND --help)");
  fprintf(out, "OPTIONS:\n  --help     this text\n  --version  hipguard's version\n\n"
               "Run 'hipguard COMMAND --help' for the options of a command; 'man hipguard' for more.\n");
}

// The known word nearest to `word`, for "did you mean" (nothing when far).
std::string nearest(std::string_view word, std::initializer_list<std::string_view> known) {
  std::string best;
  size_t best_d = word.size() / 3 + 1;  // "chek" -> check, "--versoin" -> --version; "--frob" -> nothing
  for (auto k : known)
    if (size_t d = distance(word, k); d < best_d) best_d = d, best = k;
  return best;
}

int run_command(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "hipguard: missing command\n");
    print_help(stderr);
    return kExitUsage;
  }
  std::string cmd = argv[1];
  std::vector<const char*> args = {"hipguard"};
  auto known = [](std::string_view c) { return std::find(std::begin(kCommands), std::end(kCommands), c) != std::end(kCommands); };
  auto unknown = [&](const std::string& c) {
    std::string near = nearest(c, {"check", "inspect", "targets", "run", "help"});
    fprintf(stderr, "hipguard: unknown command '%s'%s\nTry 'hipguard --help'.\n", escape_text(c).c_str(),
            near.empty() ? "" : ("; did you mean '" + near + "'?").c_str());
    return kExitUsage;
  };
  if (cmd == "--help" || cmd == "-h" || (cmd == "help" && argc == 2)) {
    print_help(stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    printf("hipguard %s\n", HIPGUARD_VERSION_STRING);
    return kExitOk;
  }
  if (cmd == "help") {  // hipguard help COMMAND = hipguard COMMAND --help
    if (argc > 3) return usage_error("help takes one COMMAND");
    if (!known(argv[2]) || std::string_view(argv[2]) == "help") return unknown(argv[2]);
    cmd = argv[2];
    argv[2] = const_cast<char*>("--help");
  } else if (!known(cmd)) {
    if (cmd.size() > 1 && cmd[0] == '-') {
      std::string near = nearest(cmd, {"--help", "--version"});
      return usage_error("unknown option '" + escape_text(cmd) + "' (options follow the COMMAND)" +
                         (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    return unknown(cmd);
  }
  args.push_back(cmd.c_str());
  g_command = cmd;
  int overview = cmd == "check" ? 1 : cmd == "inspect" ? 2 : cmd == "targets" ? 3 : 4;

  // run: the options end at the first argument that is not one, or at "--";
  // the program and its arguments are never seen by the option parser (which
  // would expand an @FILE argument).
  int end = argc;
  char** command = nullptr;
  if (cmd == "run") {
    const auto& run_options = cl::getRegisteredOptions(RunCmd);
    for (int i = 2; i < argc; ++i) {
      std::string_view a = argv[i];
      if (a == "--") {
        end = i, command = argv + i + 1;
        break;
      }
      if (a.size() < 2 || a[0] != '-') {
        end = i, command = argv + i;
        break;
      }
      std::string_view name = a.substr(a[1] == '-' ? 2 : 1);
      if (name.find('=') != std::string_view::npos) continue;
      auto it = run_options.find(name);  // an option whose value is the next argument
      if (it != run_options.end() && it->second->getValueExpectedFlag() == cl::ValueRequired) ++i;
    }
  }
  for (int i = 2; i < end; ++i) args.push_back(std::string_view(argv[i]) == "-h" ? "--help" : argv[i]);

  cl::SetVersionPrinter([](llvm::raw_ostream& os) { os << "hipguard " << HIPGUARD_VERSION_STRING << "\n"; });
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (!cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(), kOverview[overview], &es, nullptr,
                                   /*LongOptionsUseDoubleDash=*/true)) {
    es.flush();
    // llvm::cl says "hipguard: ... Try: 'hipguard --help'": name the command.
    for (size_t p = 0; (p = errors.find("hipguard --help", p)) != std::string::npos; p += cmd.size() + 16)
      errors.replace(p, 15, "hipguard " + cmd + " --help");
    for (size_t p = 0; (p = errors.find("hipguard: ", p)) != std::string::npos; p += cmd.size() + 11)
      errors.replace(p, 10, "hipguard " + cmd + ": ");
    fputs(errors.c_str(), stderr);
    return kExitUsage;
  }
  if (ColorOpt != "auto" && ColorOpt != "always" && ColorOpt != "never")
    return usage_error("--color must be auto, always or never (got '" + ColorOpt + "')");
  g_color = want_color(ColorOpt);
  if (QuietOpt && VerboseOpt) return usage_error("--quiet and --verbose exclude each other");
  if (CheckCmd) return cmd_check();
  if (InspectCmd) return cmd_inspect();
  if (TargetsCmd) return cmd_targets();
  if (RunCmd) return cmd_run(command);
  return usage_error("missing command");
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
