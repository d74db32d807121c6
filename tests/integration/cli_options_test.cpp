// The command line as a user meets it: per-command help, --opt VALUE and
// --opt=VALUE, the nearest option for a typo, colour only when asked or on a
// terminal, -q/-v; and inspect's --target, --demangle, --sort and file
// offsets, on hipcc-built programs and Debian's rocSPARSE. File offsets are
// checked against the bytes of the file (an ELF or bundle magic there), not
// against hipguard's own reading.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hipguard/version.h"
#include "process.h"

namespace {

const std::string kCli = HIPGUARD_CLI;
const std::string kApps = HIPGUARD_APPS_DIR;
const std::string kRocsparse = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";

std::string app(const std::string& name) { return kApps + "/" + name; }

#define REQUIRE_APP(name)                                                                               \
  do {                                                                                                  \
    if (kApps.empty() || !exists(app(name))) GTEST_SKIP() << "hipcc test app " << name << " not built"; \
  } while (0)

ProcessResult cli(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), kCli);
  return run_process(args, env);
}

// The bytes of `path` at `offset`.
std::string bytes_at(const std::string& path, uint64_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// Rows of every kernel table in `inspect` output: the table's rows, split in fields.
std::vector<std::vector<std::vector<std::string>>> kernel_tables(const std::string& out) {
  std::vector<std::vector<std::vector<std::string>>> tables;
  std::istringstream in(out);
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("LDS        SCRATCH") != std::string::npos) {
      tables.emplace_back();
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("      ", 0) != 0 || line.size() < 7 || !isdigit(static_cast<unsigned char>(line[6]))) {
      in_table = false;
      continue;
    }
    std::istringstream f(line);
    tables.back().push_back({std::istream_iterator<std::string>(f), std::istream_iterator<std::string>()});
  }
  return tables;
}

}  // namespace

TEST(CliHelp, EachCommandHasItsOwnHelp) {
  struct Want {
    std::string cmd;
    std::vector<std::string> options;
  };
  for (const Want& w : std::vector<Want>{
           {"check", {"--target=<T>", "--json", "--junit", "--sarif", "--jobs=<N>", "--quiet", "--verbose", "--color"}},
           {"inspect", {"--target=<T>", "--json", "--demangle", "--sort=<KEY>", "--quiet", "--verbose"}},
           {"targets", {"--quiet"}},
           {"run", {"--target=<T>", "--strict", "--report=<FILE>", "--quiet", "--verbose"}}}) {
    ProcessResult h = cli({w.cmd, "--help"});
    EXPECT_EQ(h.status, 0) << w.cmd << ": " << h.err;
    EXPECT_NE(h.out.find("USAGE: hipguard " + w.cmd + " [options]"), std::string::npos) << h.out;
    for (const auto& o : w.options) EXPECT_NE(h.out.find(o), std::string::npos) << w.cmd << " --help lacks " << o;
    // Not another command's options.
    if (w.cmd != "inspect") EXPECT_EQ(h.out.find("--demangle"), std::string::npos) << w.cmd;
    if (w.cmd != "run") EXPECT_EQ(h.out.find("--strict"), std::string::npos) << w.cmd;
    EXPECT_EQ(cli({w.cmd, "-h"}).out, h.out) << "-h is --help";
    EXPECT_EQ(cli({"help", w.cmd}).out, h.out) << "help " << w.cmd << " is " << w.cmd << " --help";
  }
  ProcessResult top = cli({"--help"});
  EXPECT_EQ(top.status, 0);
  for (const char* c : {"check", "inspect", "targets", "run", "help"})
    EXPECT_NE(top.out.find(std::string("\n  ") + c + " "), std::string::npos) << c << " in:\n" << top.out;
  EXPECT_EQ(cli({"help"}).out, top.out);
  EXPECT_EQ(cli({"help", "frobnicate"}).status, 2);
  ProcessResult none = cli({});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("missing command"), std::string::npos) << none.err;
}

TEST(CliHelp, VersionIsTheProjectVersion) {
  ProcessResult v = cli({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out, std::string("hipguard ") + HIPGUARD_VERSION_STRING + "\n");
  EXPECT_EQ(std::string(HIPGUARD_SHIM_SONAME), "libhipguard.so." + std::to_string(HIPGUARD_VERSION_MAJOR));
  // The shim says its version in its debug log (hipguard run -v).
  REQUIRE_APP("vector_add_gfx90a");
  ProcessResult r = cli({"run", "-v", "--target", "gfx90a", "--", app("vector_add_gfx90a")});
  EXPECT_NE(r.err.find(std::string("hipguard: hipguard ") + HIPGUARD_VERSION_STRING + ": checking against gfx90a"),
            std::string::npos)
      << r.err;
}

// Every option that takes a value takes it both ways, with the same result.
TEST(CliOptions, ValueAsNextArgumentOrAfterEquals) {
  REQUIRE_APP("arch_guarded");
  std::string f = app("arch_guarded");
  for (const auto& [spaced, joined] : std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{"check", "--target", "gfx90a", f}, {"check", "--target=gfx90a", f}},
           {{"check", "-t", "gfx90a", f}, {"check", "-t=gfx90a", f}},
           {{"check", "--jobs", "2", "--target", "mi300x", f}, {"check", "--jobs=2", "--target=mi300x", f}},
           {{"check", "--color", "never", "--target", "gfx90a", f}, {"check", "--color=never", "--target=gfx90a", f}},
           {{"inspect", "--target", "gfx90a", f}, {"inspect", "--target=gfx90a", f}},
           {{"inspect", "--sort", "name", f}, {"inspect", "--sort=name", f}},
       }) {
    ProcessResult a = cli(spaced), b = cli(joined);
    EXPECT_EQ(a.status, b.status) << joined[1];
    EXPECT_EQ(a.out, b.out) << joined[1];
    EXPECT_TRUE(a.status == 0 || a.status == 1) << joined[1] << ": " << a.err;
  }
  EXPECT_EQ(cli({"check", "--target=gfx90a", f}).status, 0);
  EXPECT_EQ(cli({"check", "--target=mi300x", f}).status, 1);
  // run: --report FILE and --report=FILE both write the report.
  REQUIRE_APP("vector_add_multi");
  std::string dir = testing::TempDir();
  for (const auto& args : std::vector<std::vector<std::string>>{{"--report", dir + "hg-spaced.json"},
                                                                {"--report=" + dir + "hg-joined.json"}}) {
    std::vector<std::string> argv = {"run", "--target=gfx942", "--strict"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", app("vector_add_multi")});
    ProcessResult r = cli(argv);
    EXPECT_EQ(r.status, 86) << r.err;
  }
  for (const char* name : {"hg-spaced.json", "hg-joined.json"}) {
    std::string report = read_text(dir + name);
    EXPECT_NE(report.find("\"HG201\""), std::string::npos) << name << ": " << report.substr(0, 300);
    std::remove((dir + name).c_str());
  }
}

TEST(CliOptions, UnknownOptionsSuggestTheNearest) {
  struct Case {
    std::vector<std::string> args;
    std::string suggestion;
  };
  for (const Case& c : std::vector<Case>{
           {{"check", "--targt", "gfx942", "x.co"}, "Did you mean '--target'?"},
           {{"check", "--jsn", "x.co"}, "Did you mean '--json'?"},
           {{"inspect", "--demangel", "x.co"}, "Did you mean '--demangle'?"},
           {{"inspect", "--srot=lds", "x.co"}, "Did you mean '--sort"},
           {{"run", "--stirct", "--", "/bin/true"}, "Did you mean '--strict'?"},
           {{"chek", "x.co"}, "did you mean 'check'?"},
           {{"chekc", "x.co"}, "did you mean 'check'?"},  // a transposition is one edit
           {{"--versoin"}, "did you mean '--version'?"},
       }) {
    ProcessResult r = cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args[0] << " " << c.args[1];
    EXPECT_NE(r.err.find(c.suggestion), std::string::npos) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find("Try"), std::string::npos) << r.err;
  }
  // Bad values of options with a fixed set of values.
  EXPECT_EQ(cli({"inspect", "--sort", "size", "x.co"}).status, 2);
  EXPECT_EQ(cli({"check", "--color=sometimes", "x.co"}).status, 2);
  EXPECT_EQ(cli({"check", "--jobs=many", "x.co"}).status, 2);
  EXPECT_EQ(cli({"check", "-q", "-v", "x.co"}).status, 2);
  ProcessResult sarif = cli({"check", "--sarif", "--json", "x.co"});
  EXPECT_EQ(sarif.status, 2) << "one output format";
}

// `run` stops reading options at the program: what follows is the program's,
// options and @FILE arguments included.
TEST(CliOptions, RunLeavesTheProgramsArgumentsAlone) {
  std::string dir = testing::TempDir();
  std::string at = dir + "hg-args.txt";
  std::ofstream(at) << "--strict\n";
  ProcessResult r = cli({"run", "/bin/echo", "--strict", "-v", "@" + at});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "--strict -v @" + at + "\n");
  ProcessResult dd = cli({"run", "--", "/bin/echo", "x", "--help", "--target=gfx942"});
  EXPECT_EQ(dd.out, "x --help --target=gfx942\n") << dd.err;
  std::remove(at.c_str());
}

// What keeps `run` from starting the program is said, in these words, and the program does not run:
// a bad --target, a shim that cannot be preloaded, a report path that cannot be written.
TEST(CliOptions, RunSaysWhyTheProgramDoesNotStart) {
  std::string dir = testing::TempDir() + "hg-run-refusals";
  std::filesystem::create_directories(dir);
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string err;  // how stderr begins
  };
  for (const Case& c : std::vector<Case>{
           {{"--target", "gfx942;gfx90a"},
            {},
            "hipguard run: bad target 'gfx942;gfx90a': give one target per --target, without spaces"},
           {{"--target", "gfx9422"}, {}, "hipguard run: bad target 'gfx9422': "},
           {{},
            {{"HIPGUARD_SHIM", dir + "/none.so"}},
            "hipguard: cannot preload the shim: '" + dir + "/none.so' is not a file"},
           {{"--report", dir}, {}, "hipguard: cannot write the report: " + dir + " is a directory"},
       }) {
    std::vector<std::string> argv = {"run"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    argv.insert(argv.end(), {"--", "/bin/echo", "ran"});
    ProcessResult r = cli(argv, c.env);
    EXPECT_EQ(r.status, 2) << c.err << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.err;
    EXPECT_EQ(r.err.rfind(c.err, 0), 0u) << r.err;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliOptions, ColourOnlyWhenAskedOrOnATerminal) {
  REQUIRE_APP("vector_add_multi");
  std::string f = app("vector_add_multi");
  ProcessResult piped = cli({"check", "--target", "mi300x", f});
  EXPECT_EQ(piped.out.find('\x1b'), std::string::npos) << "a pipe gets no colour";
  ProcessResult always = cli({"check", "--color=always", "--target", "mi300x", f});
  EXPECT_NE(always.out.find("\x1b[1;31merror\x1b[0m HG201"), std::string::npos) << always.out;
  EXPECT_EQ(cli({"check", "--color=always", "--target", "mi300x", f}, {{"NO_COLOR", "1"}}).out, always.out)
      << "--color=always overrides NO_COLOR";
  // On a terminal (script(1) gives the program a pty): colour, unless NO_COLOR.
  if (!exists("/usr/bin/script")) GTEST_SKIP() << "script(1) not installed";
  std::string cmd = "'" + kCli + "' check --target mi300x '" + f + "'";
  ProcessResult tty = run_process({"/usr/bin/script", "-qec", cmd, "/dev/null"}, {{"TERM", "xterm"}});
  EXPECT_NE(tty.out.find("\x1b[1;31merror\x1b[0m HG201"), std::string::npos) << tty.out;
  ProcessResult no_color =
      run_process({"/usr/bin/script", "-qec", cmd, "/dev/null"}, {{"TERM", "xterm"}, {"NO_COLOR", "1"}});
  EXPECT_NE(no_color.out.find("error HG201"), std::string::npos) << no_color.out;
  EXPECT_EQ(no_color.out.find('\x1b'), std::string::npos) << no_color.out;
}

// A long check on a terminal shows its progress on stderr, erased before the
// results; never in a pipe or with -q (--progress-delay 0: from the first file).
TEST(CliOptions, ProgressOnlyOnATerminal) {
  REQUIRE_APP("vector_add_multi");
  std::string dir = std::filesystem::path(app("vector_add_multi")).parent_path().string();
  auto shows_progress = [](const std::string& text) {
    return text.find(" files, ") != std::string::npos && text.find("checked 1 of ") != std::string::npos;
  };
  ProcessResult piped = cli({"check", "--progress-delay", "0", "--target", "mi300x", dir});
  EXPECT_FALSE(shows_progress(piped.out + piped.err)) << piped.err;
  if (!exists("/usr/bin/script")) GTEST_SKIP() << "script(1) not installed";
  std::string cmd = "'" + kCli + "' check --progress-delay 0 --target mi300x '" + dir + "'";
  ProcessResult tty = run_process({"/usr/bin/script", "-qec", cmd, "/dev/null"}, {{"TERM", "xterm"}});
  EXPECT_TRUE(shows_progress(tty.out)) << tty.out.substr(0, 400);
  EXPECT_NE(tty.out.find("\rtarget gfx942:sramecc+:xnack- (mi300x)"), std::string::npos)
      << "the line is erased (carriage return) before the table";
  ProcessResult quiet = run_process({"/usr/bin/script", "-qec", cmd + " -q", "/dev/null"}, {{"TERM", "xterm"}});
  EXPECT_FALSE(shows_progress(quiet.out)) << quiet.out.substr(0, 400);
  EXPECT_NE(quiet.out.find("HG201"), std::string::npos) << quiet.out.substr(0, 400);
}

// In a directory, only whole-file code objects and bundles are kernel library
// files; a program's fat binary (even its only one, which has no location in
// the file either) keeps its own verdict: HG201, not "for another processor".
TEST(CliOptions, ProgramsInADirectoryAreNotLibraryFiles) {
  REQUIRE_APP("vector_add_multi");
  std::string dir = std::filesystem::path(app("vector_add_multi")).parent_path().string();
  ProcessResult r = cli({"check", "-q", "--target", "mi300x", dir});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("error HG201 [gfx942:sramecc+:xnack-] " + app("vector_add_multi") + ": "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("error HG201 [gfx942:sramecc+:xnack-] " + app("vector_add_gfx90a") + ": "), std::string::npos)
      << r.out;
  // The dumped fat binaries (*.hipfb) beside them are the library, which has no gfx942 code.
  EXPECT_NE(r.out.find("error HG214 [gfx942:sramecc+:xnack-] " + dir + ": "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("vector_add_multi.hipfb: no code object"), std::string::npos) << r.out;
}

TEST(CliOptions, QuietAndVerbose) {
  if (!exists(kRocsparse)) GTEST_SKIP() << kRocsparse << " not installed (Debian package librocsparse0)";
  ProcessResult normal = cli({"check", "--target", "mi300x", kRocsparse});
  ProcessResult quiet = cli({"check", "-q", "--target", "mi300x", kRocsparse});
  ProcessResult verbose = cli({"check", "--verbose", "--target", "mi300x", kRocsparse});
  EXPECT_EQ(normal.status, 1);
  EXPECT_EQ(quiet.status, 1);
  EXPECT_EQ(verbose.status, 1);
  // Quiet: the finding and nothing else; normal: grouped (one line, 111 fat
  // binaries); verbose: one line per fat binary.
  EXPECT_EQ(lines_with(quiet.out, "").size(), 1u) << quiet.out;
  EXPECT_EQ(lines_with(quiet.out, "error HG201").size(), 1u) << quiet.out;
  EXPECT_EQ(lines_with(normal.out, "error HG201").size(), 1u);
  EXPECT_NE(normal.out.find("[111 of 111 fat binaries]"), std::string::npos);
  EXPECT_EQ(lines_with(verbose.out, "error HG201").size(), 111u);
  EXPECT_EQ(
      lines_with(verbose.out, "error HG201 [gfx942:sramecc+:xnack-] " + kRocsparse + " [.hip_fatbin bundle 37/111 @0x")
          .size(),
      1u);
  // inspect -q: no kernel tables; run -q / -v set the shim's log level.
  ProcessResult iq = cli({"inspect", "-q", kRocsparse});
  EXPECT_EQ(iq.out.find("LDS        SCRATCH"), std::string::npos);
  EXPECT_EQ(lines_with(iq.out, "    code object ").size(),
            lines_with(cli({"inspect", kRocsparse}).out, "    code object ").size());
  ProcessResult rv = cli({"run", "-v", "--", "/usr/bin/env"});
  EXPECT_EQ(lines_with(rv.out, "HIPGUARD_LOG_LEVEL=debug").size(), 1u) << rv.out;
  EXPECT_NE(rv.err.find("hipguard: LD_PRELOAD="), std::string::npos) << rv.err;
  EXPECT_EQ(lines_with(cli({"run", "-q", "--", "/usr/bin/env"}).out, "HIPGUARD_LOG_LEVEL=error").size(), 1u);
}

// ---------------------------------------------------------------- inspect

TEST(CliInspectOptions, TargetShowsTheSelectionAndWhy) {
  REQUIRE_APP("arch_guarded");
  REQUIRE_APP("vector_add_xnack_on");
  ProcessResult r = cli({"inspect", "--target", "gfx90a", "--target", "mi300x", app("arch_guarded")});
  EXPECT_EQ(r.status, 0) << "inspect describes: " << r.err;
  EXPECT_EQ(lines_with(r.out,
                       "target gfx90a:sramecc+:xnack- (gfx90a as shipped in MI210, MI250, MI250X): selects "
                       "hipv4-amdgcn-amd-amdhsa--gfx90a (native), 2 kernel(s): can run")
                .size(),
            1u)
      << r.out;
  EXPECT_EQ(lines_with(r.out, "target gfx942:sramecc+:xnack- (mi300x): selects nothing: cannot run").size(), 1u)
      << r.out;
  EXPECT_EQ(lines_with(r.out, "other processor: code object is for gfx1030, device is gfx90a").size(), 1u) << r.out;
  EXPECT_EQ(lines_with(r.out, "error HG201 [gfx942:sramecc+:xnack-]").size(), 1u) << r.out;
  // Every code object is still listed (not only the selected one).
  EXPECT_EQ(lines_with(r.out, "    code object ").size(), 2u) << r.out;
  ProcessResult x = cli({"inspect", "--target", "mi250x", app("vector_add_xnack_on")});
  EXPECT_EQ(lines_with(x.out, "xnack/sramecc differ: code object xnack+, device xnack-").size(), 1u) << x.out;
  EXPECT_EQ(lines_with(x.out, "error HG203").size(), 1u) << x.out;
  ProcessResult ok = cli({"inspect", "--target", "mi250x:xnack+", app("vector_add_xnack_on")});
  EXPECT_EQ(lines_with(ok.out, "(native), 1 kernel(s): can run").size(), 1u) << ok.out;
  EXPECT_EQ(cli({"inspect", "--target", "gfx9999", app("arch_guarded")}).status, 2);
}

TEST(CliInspectOptions, Demangle) {
  REQUIRE_APP("arch_guarded");
  ProcessResult plain = cli({"inspect", app("arch_guarded")});
  ProcessResult dem = cli({"inspect", "--demangle", app("arch_guarded")});
  EXPECT_EQ(lines_with(plain.out, " _Z10everywherePf").size(), 2u) << plain.out;
  EXPECT_EQ(lines_with(dem.out, " everywhere(float*)").size(), 2u) << dem.out;
  EXPECT_EQ(lines_with(dem.out, " only_on_gfx90a(float*)").size(), 1u) << dem.out;
  EXPECT_EQ(dem.out.find("_Z10everywherePf"), std::string::npos) << dem.out;
}

TEST(CliInspectOptions, SortOrdersEveryKernelTable) {
  if (!exists(kRocsparse)) GTEST_SKIP() << kRocsparse << " not installed (Debian package librocsparse0)";
  auto unsorted = kernel_tables(cli({"inspect", kRocsparse}).out);
  ASSERT_GT(unsorted.size(), 100u);
  size_t rows = 0, reordered = 0;
  for (const auto& t : unsorted) rows += t.size();
  // Columns: LDS SCRATCH WAVE VGPR/AGPR SGPR WG KERNARG KERNEL
  auto num = [](const std::string& s) { return std::stoull(s.substr(0, s.find_first_of("/+"))); };
  for (const auto& [key, col] :
       std::vector<std::pair<std::string, size_t>>{{"lds", 0}, {"scratch", 1}, {"vgpr", 3}, {"name", 7}}) {
    ProcessResult r = cli({"inspect", "--sort", key, kRocsparse});
    ASSERT_EQ(r.status, 0);
    auto tables = kernel_tables(r.out);
    ASSERT_EQ(tables.size(), unsorted.size()) << key;
    size_t sorted_rows = 0;
    for (size_t i = 0; i < tables.size(); ++i) {
      const auto& t = tables[i];
      sorted_rows += t.size();
      auto a = t, b = unsorted[i];
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b) << key << ": table " << i << " holds other kernels";
      reordered += t != unsorted[i];
      for (size_t k = 1; k < t.size(); ++k) {
        if (key == "name") EXPECT_LE(t[k - 1][col], t[k][col]) << key << " table " << i;
        else EXPECT_GE(num(t[k - 1][col]), num(t[k][col])) << key << " table " << i;
      }
    }
    EXPECT_EQ(sorted_rows, rows);
  }
  EXPECT_GT(reordered, 0u) << "rocSPARSE's kernels are not already in every order";
}

// Offsets as roc-obj-ls prints them: in the file. An ELF (code object) starts
// at each amdgcn entry's file offset, a bundle at each bundle's.
TEST(CliInspectOptions, FileOffsetsPointAtTheBytes) {
  std::vector<std::string> files;
  if (!kApps.empty() && exists(app("vector_add_multi"))) files.push_back(app("vector_add_multi"));
  if (!kApps.empty() && exists(app("vector_add_multi.hipfb"))) files.push_back(app("vector_add_multi.hipfb"));
  if (exists(kRocsparse)) files.push_back(kRocsparse);
  if (files.empty()) GTEST_SKIP() << "no hipcc test app and no rocSPARSE";
  for (const auto& f : files) {
    ProcessResult r = cli({"inspect", "-v", f});
    ASSERT_EQ(r.status, 0) << f;
    size_t entries = 0, bundles = 0;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      auto at = line.find("file offset ");
      if (at == std::string::npos) continue;
      uint64_t off = std::stoull(line.substr(at + 12));
      if (line.find("    entry hipv4-amdgcn") == 0) {
        EXPECT_EQ(bytes_at(f, off, 4),
                  "\x7f"
                  "ELF")
            << f << ": " << line;
        ++entries;
      } else if (line.find("  ") == 0 && line.find("bundle") != std::string::npos &&
                 line.find("entry") == std::string::npos) {
        EXPECT_EQ(bytes_at(f, off, 24), "__CLANG_OFFLOAD_BUNDLE__") << f << ": " << line;
        ++bundles;
      }
    }
    EXPECT_GT(entries, 0u) << f << "\n" << r.out.substr(0, 1000);
    EXPECT_GT(bundles, 0u) << f;
    // -v: the entries as code-object URIs, file://PATH#offset=N&size=M.
    EXPECT_EQ(lines_with(r.out, "file://" + f + "#offset=").size(),
              lines_with(r.out, "    entry hipv4-").size() + lines_with(r.out, "    entry hip-").size())
        << f;
  }
}
