// The command line of each hipguard command: the llvm::cl options, the help texts, and parsing into the option structs.
#include "cli/options.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include "hipguard/settings.h"
#include "hipguard/version.h"

namespace hipguard {
namespace {

namespace cl = llvm::cl;

// llvm::cl subcommands: `hipguard COMMAND --help` (and `hipguard help
// COMMAND`) per command, `--opt VALUE` and `--opt=VALUE` everywhere, unknown
// options answered with the nearest one.

cl::SubCommand CheckCmd("check", "Will these files run on these GPUs? (no GPU needed)");
cl::SubCommand InspectCmd("inspect", "What is inside: bundles, entries, code objects, kernels");
cl::SubCommand TargetsCmd("targets", "The products and processors hipguard knows");
cl::SubCommand RunCmd("run", "Run a program with the libhipguard.so shim preloaded");

cl::OptionCategory Options("Options");

// Shared by several commands (one option object registered in each).
cl::list<std::string> TargetOpt("target",
                                cl::desc("GPU to check for: a product (mi300x, mi355x, mi250x:xnack+, ...) or a "
                                         "target ID (gfx942, gfx90a:xnack+); repeat for several"),
                                cl::value_desc("T"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::sub(RunCmd),
                                cl::cat(Options));
cl::alias TargetShort("t", cl::desc("Same as --target"), cl::aliasopt(TargetOpt), cl::NotHidden);
cl::opt<bool> QuietOpt("quiet",
                       cl::desc("Print less: check, only errors and warnings; inspect, no kernel tables; "
                                "run, only the shim's errors"),
                       cl::sub(CheckCmd), cl::sub(InspectCmd), cl::sub(TargetsCmd), cl::sub(RunCmd), cl::cat(Options));
cl::alias QuietShort("q", cl::desc("Same as --quiet"), cl::aliasopt(QuietOpt), cl::NotHidden);
cl::opt<bool> VerboseOpt("verbose",
                         cl::desc("Print more: check, every finding of every fat binary (not grouped); "
                                  "inspect, code object URIs; run, the shim's debug log"),
                         cl::sub(CheckCmd), cl::sub(InspectCmd), cl::sub(TargetsCmd), cl::sub(RunCmd),
                         cl::cat(Options));
cl::alias VerboseShort("v", cl::desc("Same as --verbose"), cl::aliasopt(VerboseOpt), cl::NotHidden);
cl::opt<std::string> ColorOpt("color",
                              cl::desc("Colour the output: auto (on a terminal, unless NO_COLOR is set), "
                                       "always, never"),
                              cl::value_desc("WHEN"), cl::init("auto"), cl::sub(CheckCmd), cl::sub(InspectCmd),
                              cl::sub(TargetsCmd), cl::cat(Options));
cl::opt<bool> JsonOpt("json", cl::desc("Print the JSON report (docs/report.md)"), cl::sub(CheckCmd),
                      cl::sub(InspectCmd), cl::cat(Options));
cl::list<std::string> PathArgs(cl::Positional, cl::desc("PATH..."), cl::sub(CheckCmd), cl::sub(InspectCmd),
                               cl::cat(Options));

cl::opt<std::string> RuntimeOpt("runtime",
                                cl::desc("HIP runtime that selects the code objects: 5.0, 5.6, 6.4, 7.0 "
                                         "(any version: 6.4.3, 7.1; default: the newest, the strictest)"),
                                cl::value_desc("VERSION"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));
cl::opt<bool> OneProcessOpt("one-process",
                            cl::desc("The --target GPUs are the GPUs of one process (one machine), not "
                                     "separate machines: the runtime looks up their code objects at once"),
                            cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));

// Hidden: when the progress line first appears (tests give 0).
cl::opt<unsigned> ProgressDelayOpt("progress-delay", cl::desc("Milliseconds before the progress line appears"),
                                   cl::init(500), cl::Hidden, cl::sub(CheckCmd), cl::sub(InspectCmd));

// check
cl::opt<bool> JunitOpt("junit", cl::desc("Print a JUnit XML report"), cl::sub(CheckCmd), cl::cat(Options));
cl::opt<bool> SarifOpt("sarif", cl::desc("Print a SARIF 2.1.0 log (code scanning)"), cl::sub(CheckCmd),
                       cl::cat(Options));
cl::opt<unsigned> JobsOpt("jobs", cl::desc("Files checked in parallel (0: one per hardware thread)"),
                          cl::value_desc("N"), cl::init(0), cl::sub(CheckCmd), cl::cat(Options));
cl::alias JobsShort("j", cl::desc("Same as --jobs"), cl::aliasopt(JobsOpt), cl::NotHidden);
cl::opt<std::string> CacheOpt("cache",
                              cl::desc("Keep each file's result in DIR and take it from there when the same file "
                                       "(content, path, targets, options, hipguard build) is checked again; "
                                       "archives and images are always read"),
                              cl::value_desc("DIR"), cl::sub(CheckCmd), cl::cat(Options));

// What a program loads (dependencies.h): check follows it unless --no-deps, inspect with --deps.
cl::opt<std::string> SysrootOpt("sysroot",
                                cl::desc("Find the libraries a program loads inside DIR (an unpacked root or "
                                         "image) instead of /"),
                                cl::value_desc("DIR"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));
// Container images.
cl::opt<std::string> PlatformOpt("platform",
                                 cl::desc("The image to read from a multi-platform container image: OS/ARCH[/VARIANT] "
                                          "(default: linux/amd64)"),
                                 cl::value_desc("PLATFORM"), cl::sub(CheckCmd), cl::sub(InspectCmd), cl::cat(Options));
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
cl::opt<bool> StrictOpt("strict",
                        cl::desc("Strict mode: stop a program whose kernels cannot run (HIPGUARD_MODE=strict)"),
                        cl::sub(RunCmd), cl::cat(Options));
cl::opt<std::string> ReportOpt("report",
                               cl::desc("Write a report at exit: JSON, or JUnit XML for *.xml; %p = pid "
                                        "(HIPGUARD_REPORT)"),
                               cl::value_desc("FILE"), cl::sub(RunCmd), cl::cat(Options));
cl::list<std::string> CommandArg(cl::Positional, cl::desc("[--] COMMAND [ARGS...]"), cl::sub(RunCmd), cl::cat(Options));

const char* const kOverview[] = {
    // [0] hipguard
    "hipguard " HIPGUARD_VERSION_STRING
    ": why a HIP kernel cannot run on an AMD GPU, before the first launch.\n\n"
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

// The help text of `command` in kOverview.
int overview_of(const std::string& command) {
  return command == "check" ? 1 : command == "inspect" ? 2 : command == "targets" ? 3 : 4;
}

// `command`'s help text; run's ends with the settings the shim reads (settings.def). llvm::cl keeps
// the text it is given, so run's is built once and kept.
llvm::StringRef overview(const std::string& command) {
  static const std::string run = [] {
    std::string text =
        std::string(kOverview[4]) +
        "\nThe shim's settings (environment; run sets MODE, TARGET, LOG_LEVEL and REPORT from its options):\n";
    for (const SettingInfo& s : all_settings())
      ((((text += "  ") += s.variable) += ": ") += s.accepted) += "; without it: " + std::string(s.fallback) + "\n";
    return text;
  }();
  const int i = overview_of(command);
  return i == 4 ? llvm::StringRef(run) : llvm::StringRef(kOverview[i]);
}

// run: the options end at the first argument that is not one, or at "--";
// the program and its arguments are never seen by the option parser (which
// would expand an @FILE argument). Returns where the options end; *command:
// the program and its arguments (null when there are none).
int run_options_end(int argc, char** argv, char*** command) {
  const auto& run_options = cl::getRegisteredOptions(RunCmd);
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      *command = argv + i + 1;
      return i;
    }
    if (a.size() < 2 || a[0] != '-') {
      *command = argv + i;
      return i;
    }
    std::string_view name = a.substr(a[1] == '-' ? 2 : 1);
    if (name.find('=') != std::string_view::npos) continue;
    auto it = run_options.find(name);  // an option whose value is the next argument
    if (it != run_options.end() && it->second->getValueExpectedFlag() == cl::ValueRequired) ++i;
  }
  return argc;
}

// llvm::cl over `args`; false after its error, said on stderr with the command named.
bool parse_options(const std::string& command, const std::vector<const char*>& args) {
  cl::SetVersionPrinter([](llvm::raw_ostream& os) { os << "hipguard " << HIPGUARD_VERSION_STRING << "\n"; });
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(), overview(command), &es, nullptr,
                                  /*LongOptionsUseDoubleDash=*/true))
    return true;
  es.flush();
  // llvm::cl says "hipguard: ... Try: 'hipguard --help'": name the command.
  for (size_t p = 0; (p = errors.find("hipguard --help", p)) != std::string::npos; p += command.size() + 16)
    errors.replace(p, 15, "hipguard " + command + " --help");
  for (size_t p = 0; (p = errors.find("hipguard: ", p)) != std::string::npos; p += command.size() + 11)
    errors.replace(p, 10, "hipguard " + command + ": ");
  fputs(errors.c_str(), stderr);
  return false;
}

bool want_color(const std::string& when) {
  if (when == "always") return true;
  if (when == "never") return false;
  const char* no_color = getenv("NO_COLOR");  // https://no-color.org: set and not empty
  if (no_color && *no_color) return false;
  const char* term = getenv("TERM");
  return isatty(STDOUT_FILENO) && !(term && std::string_view(term) == "dumb");
}

InputOptions input_options() {
  InputOptions input;
  input.paths = PathArgs;
  input.targets = TargetOpt;
  if (RuntimeOpt.getNumOccurrences()) input.runtime = RuntimeOpt.getValue();
  input.one_process = OneProcessOpt;
  if (SysrootOpt.getNumOccurrences()) input.sysroot = SysrootOpt.getValue();
  if (PlatformOpt.getNumOccurrences()) input.platform = PlatformOpt.getValue();
  input.progress_delay_ms = ProgressDelayOpt;
  return input;
}

// The parsed options of `command` into its struct.
Invocation invocation(const std::string& command, const OutputOptions& output, char** program) {
  if (command == "check") {
    CheckOptions o;
    o.output = output, o.input = input_options();
    o.json = JsonOpt, o.junit = JunitOpt, o.sarif = SarifOpt, o.jobs = JobsOpt, o.no_deps = NoDepsOpt;
    o.cache = CacheOpt;
    return o;
  }
  if (command == "inspect") {
    InspectOptions o;
    o.output = output, o.input = input_options();
    o.json = JsonOpt, o.demangle = DemangleOpt, o.deps = DepsOpt, o.sort = SortOpt;
    return o;
  }
  if (command == "targets") return TargetsOptions{output};
  RunOptions o;
  o.output = output, o.targets = TargetOpt, o.strict = StrictOpt;
  if (ReportOpt.getNumOccurrences()) o.report = ReportOpt.getValue();
  o.command = program;
  return o;
}

}  // namespace

void print_help(FILE* out) {
  fprintf(out, "%s\nUSAGE: hipguard COMMAND [OPTIONS] ...\n\nCOMMANDS:\n", kOverview[0]);
  for (cl::SubCommand* sc : {&CheckCmd, &InspectCmd, &TargetsCmd, &RunCmd})
    fprintf(out, "  %-8s %s\n", sc->getName().str().c_str(), sc->getDescription().str().c_str());
  fprintf(out, "  %-8s %s\n\n", "help", "help COMMAND: the options of COMMAND (as COMMAND --help)");
  fprintf(out,
          "OPTIONS:\n  --help     this text\n  --version  hipguard's version\n\n"
          "Run 'hipguard COMMAND --help' for the options of a command; 'man hipguard' for more.\n");
}

bool parse_command(const std::string& command, int argc, char** argv, Invocation* invocation_out) {
  int end = argc;
  char** program = nullptr;
  if (command == "run") end = run_options_end(argc, argv, &program);
  std::vector<const char*> args = {"hipguard", command.c_str()};
  for (int i = 2; i < end; ++i) args.push_back(std::string_view(argv[i]) == "-h" ? "--help" : argv[i]);
  if (!parse_options(command, args)) return false;
  if (ColorOpt != "auto" && ColorOpt != "always" && ColorOpt != "never") {
    usage_error(command, "--color must be auto, always or never (got '" + ColorOpt + "')");
    return false;
  }
  OutputOptions output{want_color(ColorOpt), QuietOpt, VerboseOpt};
  if (output.quiet && output.verbose) {
    usage_error(command, "--quiet and --verbose exclude each other");
    return false;
  }
  *invocation_out = invocation(command, output, program);
  return true;
}

}  // namespace hipguard
