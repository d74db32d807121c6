// The hipguard CLI, run as a process: exit status (0 all can run, 1 problems,
// 2 usage error), per-target verdicts in the table and in --json, on the AITER
// corpus. Expected verdicts follow from the file names (gfx942_* / gfx950_* /
// gfx1250_* are built for that processor, checked with llvm-readelf e_flags) and
// the LDS table read with llvm-readelf (corpus_facts.h).
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "archive_writer.h"
#include "corpus_facts.h"
#include "hipguard/diagnostic.h"
#include "hipguard/settings.h"
#include "hipguard/version.h"
#include "test_util.h"

using namespace hgtest;

namespace {

struct CliRun {
  int status = -1;  // exit status, -1 if the process did not exit normally
  std::string out;  // stdout (stderr goes to the test log)
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CliRun run_cli(const std::vector<std::string>& args) {
  std::string cmd = quote(HIPGUARD_CLI);
  for (const auto& a : args) cmd += " " + quote(a);
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The corpus's 42 code objects named one by one: each file keeps its own
// verdict (a directory is a kernel library; see CorpusDirectoryIsAKernelLibrary).
std::vector<std::string> check_corpus_files(std::vector<std::string> args) {
  for (const auto& f : corpus_files()) args.push_back(f.string());
  return args;
}

std::string prefix_of(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  return name.substr(0, name.find('_'));
}

}  // namespace

TEST(Cli, CorpusAgainstGfx942AndMi355xJson) {
  HG_REQUIRE_CORPUS();
  CliRun r = run_cli(check_corpus_files({"check", "--target", "gfx942", "--target", "mi355x", "--json"}));
  EXPECT_EQ(r.status, 1) << "some objects cannot run: exit 1";
  auto doc = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError()) << "\n" << r.out.substr(0, 2000);
  const auto* root = doc->getAsObject();
  ASSERT_NE(root, nullptr);
  const auto* targets = root->getArray("targets");
  ASSERT_NE(targets, nullptr);
  ASSERT_EQ(targets->size(), 2u);
  // Checked as the GPUs ship: the full target ID, never a bare processor.
  EXPECT_EQ((*targets)[0].getAsString(), "gfx942:sramecc+:xnack-");
  EXPECT_EQ((*targets)[1].getAsString(), "gfx950:sramecc+:xnack-");
  const auto* files = root->getArray("files");
  ASSERT_NE(files, nullptr);
  ASSERT_EQ(files->size(), 42u);

  std::map<std::string, int> runnable;  // per target
  size_t hg301_gfx942 = 0;
  for (const auto& fv : *files) {
    const auto* f = fv.getAsObject();
    ASSERT_NE(f, nullptr);
    std::string path = f->getString("path").value_or("").str();
    std::string prefix = prefix_of(path);
    SCOPED_TRACE(path);
    const auto* images = f->getArray("images");
    ASSERT_TRUE(images && images->size() == 1);
    const auto* img = (*images)[0].getAsObject();
    const auto* verdicts = img->getArray("verdicts");
    ASSERT_TRUE(verdicts && verdicts->size() == 2);
    auto can_run = [&](size_t i) { return (*verdicts)[i].getAsObject()->getBoolean("can_run").value_or(false); };
    EXPECT_EQ(can_run(0), prefix == "gfx942");
    EXPECT_EQ(can_run(1), prefix == "gfx950");
    runnable["gfx942"] += can_run(0);
    runnable["gfx950"] += can_run(1);
    EXPECT_EQ(f->getBoolean("ok").value_or(true), false) << "no file runs on both targets";

    uint64_t lds = kCorpusLds.at(fs::path(path).filename().string());
    bool seen_hg301_942 = false, seen_hg202_942 = false;
    for (const auto& dv : *img->getArray("diagnostics")) {
      const auto* d = dv.getAsObject();
      std::string code = d->getString("code").value_or("").str();
      std::string target = d->getString("target").value_or("").str();
      if (code == "HG301" && target == "gfx942:sramecc+:xnack-") {
        seen_hg301_942 = true;
        ++hg301_gfx942;
        EXPECT_EQ(d->getInteger("value"), static_cast<int64_t>(lds));
        EXPECT_EQ(d->getInteger("limit"), 65536);
        EXPECT_FALSE(d->getString("kernel").value_or("").empty());
      }
      if (code == "HG202" && target == "gfx942:sramecc+:xnack-") seen_hg202_942 = true;
    }
    EXPECT_EQ(seen_hg301_942, lds > 65536) << "LDS " << lds;
    EXPECT_EQ(seen_hg202_942, prefix != "gfx942");
  }
  EXPECT_EQ(runnable["gfx942"], 19);
  EXPECT_EQ(runnable["gfx950"], 19);
  EXPECT_EQ(hg301_gfx942, 12u + 4u) << "12 gfx950 objects over 64 KiB, and the 4 gfx1250 ones (320 KiB)";
}

// `check` reads a code object built for none of the targets only to its kernel
// descriptors and does not list it; `inspect`, which describes the files, lists all.
TEST(Cli, CheckListsOnlyTheCodeObjectsTheTargetsCanLoad) {
  HG_REQUIRE_CORPUS();
  auto listed = [](const std::string& json, std::map<std::string, size_t>* hg301) {
    std::set<std::string> out;
    auto doc = llvm::json::parse(json);
    EXPECT_TRUE(bool(doc)) << (doc ? "" : llvm::toString(doc.takeError()));
    if (!doc) return out;
    for (const auto& fv : *doc->getAsObject()->getArray("files")) {
      const auto* f = fv.getAsObject();
      std::string name = fs::path(f->getString("path").value_or("").str()).filename().string();
      for (const auto& iv : *f->getArray("images")) {
        const auto* img = iv.getAsObject();
        if (!img->getArray("code_objects")->empty()) out.insert(name);
        for (const auto& dv : *img->getArray("diagnostics"))
          if (hg301 && dv.getAsObject()->getString("code") == "HG301")
            (*hg301)[name] = static_cast<size_t>(dv.getAsObject()->getInteger("value").value_or(0));
      }
    }
    return out;
  };
  std::map<std::string, size_t> hg301;
  std::set<std::string> checked =
      listed(run_cli(check_corpus_files({"check", "--json", "--target", "gfx942"})).out, &hg301);
  std::set<std::string> gfx942;
  for (const auto& f : corpus_files("gfx942_")) gfx942.insert(f.filename().string());
  EXPECT_EQ(checked, gfx942);
  EXPECT_EQ(hg301.size(), 16u);
  for (const auto& [name, value] : hg301) EXPECT_EQ(value, kCorpusLds.at(name)) << name;
  std::set<std::string> inspected =
      listed(run_cli({"inspect", "--json", "--target", "gfx942", corpus_dir().string()}).out, nullptr);
  EXPECT_EQ(inspected.size(), 42u);
}

TEST(Cli, CorpusTable) {
  HG_REQUIRE_CORPUS();
  CliRun r = run_cli(check_corpus_files({"check", "--target", "gfx942", "--target", "mi355x"}));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("target gfx942:sramecc+:xnack- (gfx942 as shipped in MI300X, MI300A, MI308X, MI325X)\n"),
            std::string::npos)
      << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("target gfx950:sramecc+:xnack- (mi355x)\n"), std::string::npos);
  EXPECT_NE(r.out.find("19 of 42 can run on gfx942:sramecc+:xnack-"), std::string::npos);
  EXPECT_NE(r.out.find("19 of 42 can run on gfx950:sramecc+:xnack-"), std::string::npos);
  // One diagnostic line per finding, e.g. the 66048-byte kernel on gfx942.
  EXPECT_NE(r.out.find("error HG301 [gfx942:sramecc+:xnack-]"), std::string::npos);
  // The last line says what was checked per target.
  EXPECT_NE(r.out.find("checked 0 fat binaries and 42 code object files: gfx942:sramecc+:xnack-: 19 code objects, "),
            std::string::npos)
      << r.out.substr(r.out.size() > 400 ? r.out.size() - 400 : 0);
  size_t pos = r.out.find("gfx950_fmha_v4_fwd_fwd_hd128_f4f4.co");
  ASSERT_NE(pos, std::string::npos);
  bool found = false;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("HG301") != std::string::npos && line.find("fmha_v4_fwd_fwd_hd128_f4f4") != std::string::npos) {
      found = true;
      EXPECT_NE(line.find("66048"), std::string::npos) << line;
    }
  EXPECT_TRUE(found);
}

// A directory of code objects is a kernel library (README, "Kernel libraries"):
// for each target the files it loads are checked in full, the files for other
// processors are counted, and a target without any file is one error (HG214).
TEST(Cli, CorpusDirectoryIsAKernelLibrary) {
  HG_REQUIRE_CORPUS();
  // What the corpus holds, from its file names (the processor prefix).
  std::map<std::string, size_t> per_processor;
  for (const auto& f : corpus_files()) ++per_processor[prefix_of(f.string())];
  ASSERT_EQ(per_processor.size(), 3u);  // gfx1250, gfx942, gfx950
  size_t all = corpus_files().size();
  CliRun r = run_cli({"check", "--target", "gfx942", "--target", "mi355x", corpus_dir().string()});
  EXPECT_EQ(r.status, 0) << r.out;
  std::string row942 = std::to_string(per_processor["gfx942"]) + " of " + std::to_string(all) + " files (" +
                       std::to_string(all - per_processor["gfx942"]) + " for other targets)";
  EXPECT_NE(r.out.find(row942), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 1 can run on gfx942:sramecc+:xnack-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 1 can run on gfx950:sramecc+:xnack-"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("HG202"), std::string::npos) << "files for other processors are not errors";
  EXPECT_EQ(r.out.find("HG301"), std::string::npos) << "nor are their kernels' LDS on a GPU that never loads them";
  // A GPU the library has no file for: one error naming what it has.
  CliRun none = run_cli({"check", "--target", "gfx1100", corpus_dir().string()});
  EXPECT_EQ(none.status, 1);
  std::vector<std::string> errors;
  std::istringstream lines(none.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("error ", 0) == 0) errors.push_back(line);
  ASSERT_EQ(errors.size(), 1u) << none.out;
  EXPECT_EQ(
      errors[0].rfind(
          "error HG214 [gfx1100] " + corpus_dir().string() + ": kernel library has no code object for gfx1100", 0),
      0u)
      << errors[0];
  for (const auto& [processor, n] : per_processor) EXPECT_NE(errors[0].find(processor), std::string::npos) << processor;
  // The same grouping in the JSON report.
  auto doc = llvm::json::parse(
      run_cli({"check", "--json", "--target", "gfx942", "--target", "gfx1100", corpus_dir().string()}).out);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const auto* libraries = doc->getAsObject()->getArray("libraries");
  ASSERT_TRUE(libraries && libraries->size() == 1);
  const auto* lib = (*libraries)[0].getAsObject();
  EXPECT_EQ(lib->getString("name"), corpus_dir().string());
  EXPECT_EQ(lib->getInteger("files"), static_cast<int64_t>(all));
  const auto* targets = lib->getArray("targets");
  ASSERT_TRUE(targets && targets->size() == 2);
  const auto* t942 = (*targets)[0].getAsObject();
  EXPECT_EQ(t942->getInteger("code_objects"), static_cast<int64_t>(per_processor["gfx942"]));
  EXPECT_EQ(t942->getInteger("other_target"), static_cast<int64_t>(all - per_processor["gfx942"]));
  EXPECT_EQ(t942->getBoolean("can_run"), true);
  const auto* t1100 = (*targets)[1].getAsObject();
  EXPECT_EQ(t1100->getInteger("code_objects"), 0);
  EXPECT_EQ(t1100->getBoolean("can_run"), false);
}

TEST(Cli, PassingCaseExitsZero) {
  HG_REQUIRE_CORPUS();
  std::vector<std::string> args = {"check", "--target", "gfx942"};
  for (const auto& f : corpus_files("gfx942_")) args.push_back(f.string());
  CliRun r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("19 of 19 can run on gfx942:sramecc+:xnack-"), std::string::npos) << r.out;
  CliRun gfx950 = run_cli({"check", "--target=mi355x",
                           (corpus_dir() / "gfx950_f4gemm_f4gemm_bf16_per1x32Fp4_noBpreShuffle_256x256.co").string()});
  EXPECT_EQ(gfx950.status, 0) << gfx950.out;
}

TEST(Cli, StructuralOnlyWithoutTarget) {
  HG_REQUIRE_CORPUS();
  CliRun r = run_cli({"check", corpus_dir().string()});
  EXPECT_EQ(r.status, 0) << r.out;
  // Every code object is read (one kernel each), and counted before the table drops its kernels.
  EXPECT_NE(r.out.find("checked 0 fat binaries and 42 code object files: 42 code objects, 42 kernels (structural "
                       "checks only)"),
            std::string::npos)
      << r.out.substr(r.out.size() > 300 ? r.out.size() - 300 : 0);
}

// Without --target, after the structural check: one row per configuration the product table
// ships (hipguard targets' TARGET IDs, each once), "runs" exactly where `check --target <one of its
// products>` passes, else the code of the first error that check reports; the exit status stays the
// structural check's.
TEST(Cli, WithoutTargetSaysWhichGpusItRunsOn) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  CliRun r = run_cli({"check", path});
  EXPECT_EQ(r.status, 0) << r.out;
  std::set<std::string> shipped;
  std::istringstream products(run_cli({"targets"}).out);
  for (std::string line; std::getline(products, line) && line.rfind("Processors", 0) != 0;) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"(\s(gfx[0-9a-f]+(:[a-z]+[+-])*)\s)"))) shipped.insert(m[1]);
  }
  ASSERT_GT(shipped.size(), 5u);
  const size_t at = r.out.find("which GPUs");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream table(r.out.substr(at));
  std::string line;
  std::getline(table, line), std::getline(table, line);  // the title, the column names
  std::set<std::string> rows;
  std::map<std::string, bool> runs_on;
  size_t runs = 0;
  const std::regex row_re(R"(^  (runs|does not run) +(\S+) +(\S+).*$)");
  for (; std::getline(table, line) && !line.empty();) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, row_re)) << line;
    EXPECT_TRUE(rows.insert(m[2]).second) << m[2] << " twice";
    CliRun one = run_cli({"check", "--target", m[3], path});
    const bool row_runs = m[1] == "runs";
    runs += row_runs;
    runs_on[m[2]] = row_runs;
    EXPECT_EQ(row_runs, one.status == 0) << line << "\n" << one.out;
    if (row_runs) continue;
    std::smatch code;
    ASSERT_TRUE(std::regex_search(line, code, std::regex("error (HG[0-9]+)"))) << line;
    EXPECT_NE(one.out.find("error " + code[1].str()), std::string::npos) << line << "\n" << one.out;
  }
  EXPECT_EQ(rows, shipped);
  EXPECT_GT(runs, 0u) << r.out;           // built for gfx90a among others
  EXPECT_LT(runs, rows.size()) << r.out;  // and not for gfx942
  // A CI gate names its targets: with one, no such table.
  EXPECT_EQ(run_cli({"check", "--target", "gfx90a", path}).out.find("which GPUs"), std::string::npos);
  // The JSON report's "support" says the same, each row that does not run with its cause's code.
  CliRun json = run_cli({"check", "--json", path});
  EXPECT_EQ(json.status, r.status);
  auto doc = llvm::json::parse(json.out);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const llvm::json::Array* support = doc->getAsObject()->getArray("support");
  ASSERT_NE(support, nullptr) << json.out.substr(0, 400);
  std::map<std::string, bool> in_json;
  for (const auto& row : *support) {
    const auto* o = row.getAsObject();
    in_json[o->getString("target")->str()] = *o->getBoolean("runs");
    if (!*o->getBoolean("runs"))
      EXPECT_TRUE(o->getString("code") && o->getString("cause")) << o->getString("target")->str();
  }
  EXPECT_EQ(in_json, runs_on);
  // SARIF carries the same array in its run's properties.
  CliRun sarif = run_cli({"check", "--sarif", path});
  EXPECT_EQ(sarif.status, r.status);
  auto sdoc = llvm::json::parse(sarif.out);
  ASSERT_TRUE(bool(sdoc)) << llvm::toString(sdoc.takeError());
  const llvm::json::Object* run0 = (*sdoc->getAsObject()->getArray("runs"))[0].getAsObject();
  const llvm::json::Object* props = run0->getObject("properties");
  ASSERT_NE(props, nullptr) << sarif.out.substr(0, 400);
  ASSERT_NE(props->getArray("support"), nullptr);
  EXPECT_EQ(llvm::json::Value(llvm::json::Array(*props->getArray("support"))),
            llvm::json::Value(llvm::json::Array(*support)));
}

TEST(Cli, HipccProgram) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  CliRun ok = run_cli({"check", "--target", "gfx90a", path});
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"), std::string::npos) << ok.out;
  CliRun bad = run_cli({"check", "--target", "mi300x", path});
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.out.find("HG201"), std::string::npos) << bad.out;
}

// --cache DIR: a second check gives the same output, the program's result taken from the one entry DIR
// keeps; an archive is read each time and kept nowhere; a DIR hipguard cannot make is a usage error.
TEST(Cli, CacheKeepsFilesNotArchives) {
  HG_REQUIRE_APP(program, "vector_add_multi");
  fs::path tmp = fs::temp_directory_path() / ("hipguard-cli-cache-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string dir = (tmp / "made" / "cache").string();
  std::string bytes = read_text(program);
  const std::string tar = (tmp / "app.tar").string();
  std::ofstream(tar, std::ios::binary) << hgtest::write_tar({{"usr/bin/vector_add_multi", bytes}});
  CliRun plain = run_cli({"check", "--json", "--target", "mi300x", "--target", "gfx90a", program, tar});
  ASSERT_EQ(plain.status, 1) << plain.out;  // nothing for MI300X
  for (int run = 0; run < 2; ++run) {
    CliRun cached =
        run_cli({"check", "--json", "--cache", dir, "--target", "mi300x", "--target", "gfx90a", program, tar});
    EXPECT_EQ(cached.status, plain.status);
    EXPECT_EQ(cached.out, plain.out) << "run " << run;
    size_t kept = 0;
    for (const auto& e : fs::directory_iterator(dir)) kept += e.path().extension() == ".hgrc";
    EXPECT_EQ(kept, 1u) << "the program's entry, none for the archive";
  }
  std::ofstream(tmp / "file") << "x";
  EXPECT_EQ(run_cli({"check", "--cache", (tmp / "file").string(), "--target", "gfx90a", program}).status, 2);
  fs::remove_all(tmp);
}

TEST(Cli, MissingPathIsHG101) {
  CliRun r = run_cli({"check", "--target", "gfx942", "/nonexistent/hipguard.co"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("HG101"), std::string::npos) << r.out;
}

TEST(Cli, UsageErrorsExitTwo) {
  HG_REQUIRE_CORPUS();
  std::string f = (corpus_dir() / "gfx942_pa_a16w8_f16.co").string();
  EXPECT_EQ(run_cli({"check", "--target", "gfx9999", f}).status, 2) << "bad target";
  EXPECT_EQ(run_cli({"check", "--target", "gfx942:xnack", f}).status, 2) << "bad feature";
  EXPECT_EQ(run_cli({"check", "--target=mi999", f}).status, 2) << "bad product name";
  EXPECT_EQ(run_cli({"check", "--target", "gfx942"}).status, 2) << "no path";
  EXPECT_EQ(run_cli({"check"}).status, 2) << "no path, no target";
  EXPECT_EQ(run_cli({"check", "--frobnicate", f}).status, 2) << "unknown option";
  EXPECT_EQ(run_cli({"check", f, "--target"}).status, 2) << "--target without a value";
  EXPECT_EQ(run_cli({"check", "--target=", f}).status, 2) << "--target= without a value";
  EXPECT_EQ(run_cli({"check", "--target", " gfx942", f}).status, 2) << "leading space";
  EXPECT_EQ(run_cli({"check", "--target", "gfx942;gfx90a", f}).status, 2) << "not a list";
  EXPECT_EQ(run_cli({"check", "--json", "--junit", f}).status, 2) << "two output formats";
  EXPECT_EQ(run_cli({}).status, 2) << "no command";
  EXPECT_EQ(run_cli({"frobnicate"}).status, 2) << "unknown command";
  EXPECT_EQ(run_cli({"--help"}).status, 0);
}

// `hipguard run --help` lists each setting of the shim with what it accepts (settings.def).
TEST(Cli, RunHelpListsTheShimsSettings) {
  CliRun r = run_cli({"run", "--help"});
  EXPECT_EQ(r.status, 0);
  for (const hipguard::SettingInfo& s : hipguard::all_settings())
    EXPECT_NE(r.out.find(std::string(s.variable) + ": " + std::string(s.accepted)), std::string::npos)
        << s.variable << "\n"
        << r.out;
}

// ---------------------------------------------------------------- inspect

namespace {
// The JSON document a run printed, or null with a test failure.
std::optional<llvm::json::Value> parse_json(const CliRun& r) {
  auto doc = llvm::json::parse(r.out);
  if (!doc) {
    ADD_FAILURE() << llvm::toString(doc.takeError()) << "\n" << r.out.substr(0, 2000);
    return std::nullopt;
  }
  return std::move(*doc);
}

// The JSON document of `hipguard inspect --json ARGS`, or null with a test failure.
std::optional<llvm::json::Value> inspect_json(const std::vector<std::string>& paths, int* status = nullptr) {
  std::vector<std::string> args = {"inspect", "--json"};
  args.insert(args.end(), paths.begin(), paths.end());
  CliRun r = run_cli(args);
  if (status) *status = r.status;
  return parse_json(r);
}
}  // namespace

TEST(CliInspect, HipccProgramTableAndJson) {
  // arch_guarded: gfx90a holds two kernels, gfx1030 one (the other is #if'd out).
  HG_REQUIRE_APP(path, "arch_guarded");
  CliRun r = run_cli({"inspect", path});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 offload bundle(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("entry hipv4-amdgcn-amd-amdhsa--gfx90a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("code object gfx1030 [hipv4-amdgcn-amd-amdhsa--gfx1030], v"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("code object gfx90a [hipv4-amdgcn-amd-amdhsa--gfx90a], v"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LDS        SCRATCH   WAVE"), std::string::npos) << "the kernel table header: " << r.out;
  int status = -1;
  auto doc = inspect_json({path}, &status);
  ASSERT_TRUE(doc);
  EXPECT_EQ(status, 0);
  const auto* files = doc->getAsObject()->getArray("files");
  ASSERT_TRUE(files && files->size() == 1);
  const auto* images = (*files)[0].getAsObject()->getArray("images");
  ASSERT_TRUE(images && images->size() == 1);
  std::map<std::string, std::vector<std::string>> kernels;  // processor -> kernel names
  for (const auto& co : *(*images)[0].getAsObject()->getArray("code_objects")) {
    const auto* o = co.getAsObject();
    for (const auto& k : *o->getArray("kernels")) {
      kernels[o->getString("target")->str()].push_back(k.getAsObject()->getString("name")->str());
      EXPECT_EQ(k.getAsObject()->getInteger("kernarg_segment_size"), 8) << "one pointer argument";
    }
  }
  EXPECT_EQ(kernels["gfx90a"].size(), 2u);
  ASSERT_EQ(kernels["gfx1030"].size(), 1u);
  EXPECT_EQ(kernels["gfx1030"][0], "_Z10everywherePf");
}

TEST(CliInspect, CorpusCodeObjectShowsLdsFromMetadataAndDescriptor) {
  HG_REQUIRE_CORPUS();
  // The 66048-byte kernel (llvm-readelf: group_segment_fixed_size in the notes).
  std::string f = (corpus_dir() / "gfx950_fmha_v4_fwd_fwd_hd128_f4f4.co").string();
  CliRun r = run_cli({"inspect", f});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("code object gfx950, v6, 1 kernel(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("66048"), std::string::npos) << r.out;
  auto doc = inspect_json({f});
  ASSERT_TRUE(doc);
  const auto& co = *(*doc->getAsObject()->getArray("files"))[0]
                        .getAsObject()
                        ->getArray("images")
                        ->front()
                        .getAsObject()
                        ->getArray("code_objects")
                        ->front()
                        .getAsObject();
  const auto& k = *co.getArray("kernels")->front().getAsObject();
  EXPECT_EQ(k.getInteger("group_segment_fixed_size"), 66048);
  EXPECT_EQ(k.getObject("descriptor")->getInteger("group_segment_fixed_size"), 66048) << "kernel descriptor agrees";
  EXPECT_EQ(co.getInteger("code_object_version"), 6);
}

TEST(CliInspect, RocsparseHas111Bundles) {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";
  if (!fs::exists(lib)) GTEST_SKIP() << lib << " not installed (Debian package librocsparse0)";
  CliRun r = run_cli({"inspect", lib});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("  111 offload bundle(s)\n"), std::string::npos) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find(".hip_fatbin bundle 111/111"), std::string::npos);
  auto doc = inspect_json({lib});
  ASSERT_TRUE(doc);
  const auto* images = (*doc->getAsObject()->getArray("files"))[0].getAsObject()->getArray("images");
  ASSERT_NE(images, nullptr);
  EXPECT_EQ(images->size(), 111u);
  size_t xnack_off = 0;
  for (const auto& img : *images)
    for (const auto& e : *img.getAsObject()->getArray("entries"))
      if (e.getAsObject()->getString("id") == "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-") ++xnack_off;
  EXPECT_EQ(xnack_off, 111u) << "every bundle carries a gfx90a:xnack- entry";
  // check selects exactly those.
  // One row for the library; with --verbose, one per fat binary.
  CliRun row = run_cli({"check", "--target", "gfx90a:xnack-", lib});
  EXPECT_EQ(row.status, 0);
  EXPECT_NE(row.out.find("1 of 1 can run on gfx90a:sramecc+:xnack-"), std::string::npos) << row.out.substr(0, 500);
  EXPECT_NE(row.out.find(lib + " (111 fat binaries)"), std::string::npos) << row.out.substr(0, 500);
  CliRun c = run_cli({"check", "-v", "--target", "gfx90a:xnack-", lib});
  EXPECT_EQ(c.status, 0);
  EXPECT_NE(c.out.find("111 of 111 can run on gfx90a:sramecc+:xnack-"), std::string::npos) << c.out.substr(0, 500);
  size_t selected = 0;
  for (size_t p = 0; (p = c.out.find("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack- (native)", p)) != std::string::npos; ++p)
    ++selected;
  EXPECT_EQ(selected, 111u);
}

TEST(CliInspect, MissingPathAndUsage) {
  CliRun r = run_cli({"inspect", "/nonexistent/hipguard.co"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("error HG101 /nonexistent/hipguard.co: no such file or directory"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli({"inspect"}).status, 2) << "no path";
  EXPECT_EQ(run_cli({"inspect", "--frobnicate", "x"}).status, 2) << "unknown option";
}

// rocSPARSE has no gfx942 code: one cause, one line with the count (the JSON
// keeps all 111); the closing line says what was checked.
TEST(Cli, IdenticalFindingsOfOneFileAreOneLine) {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";
  if (!fs::exists(lib)) GTEST_SKIP() << lib << " not installed (Debian package librocsparse0)";
  CliRun r = run_cli({"check", "--target", "mi300x", lib});
  EXPECT_EQ(r.status, 1);
  size_t hg201 = 0;
  std::istringstream lines(r.out);
  std::string last;
  for (std::string line; std::getline(lines, line); last = line)
    if (line.find("HG201") != std::string::npos) {
      ++hg201;
      EXPECT_NE(line.find(lib + " [111 of 111 fat binaries]: no code object for gfx942:sramecc+:xnack- (mi300x)"),
                std::string::npos)
          << line;
    }
  EXPECT_EQ(hg201, 1u) << r.out.substr(0, 2000);
  EXPECT_EQ(last,
            "checked 111 fat binaries and 0 code object files: gfx942:sramecc+:xnack-: 0 code objects, 0 kernels");
  auto doc = llvm::json::parse(run_cli({"check", "--target", "mi300x", "--json", lib}).out);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  size_t in_json = 0;
  for (const auto& img : *(*doc->getAsObject()->getArray("files"))[0].getAsObject()->getArray("images"))
    for (const auto& d : *img.getAsObject()->getArray("diagnostics"))
      in_json += d.getAsObject()->getString("code") == "HG201";
  EXPECT_EQ(in_json, 111u);
}

// A bare processor means the GPUs that have it, as they ship: an xnack+ build
// fails on gfx90a (MI210/MI250/MI250X run with xnack off by default).
TEST(Cli, BareProcessorIsCheckedAsShipped) {
  HG_REQUIRE_APP(path, "vector_add_xnack_on");
  CliRun bare = run_cli({"check", "--target", "gfx90a", path});
  EXPECT_EQ(bare.status, 1) << bare.out;
  EXPECT_NE(bare.out.find("target gfx90a:sramecc+:xnack- (gfx90a as shipped in MI210, MI250, MI250X)"),
            std::string::npos)
      << bare.out;
  EXPECT_NE(bare.out.find("error HG203 [gfx90a:sramecc+:xnack-]"), std::string::npos) << bare.out;
  EXPECT_EQ(run_cli({"check", "--target", "mi250x", path}).status, 1) << "a product as shipped";
  CliRun on = run_cli({"check", "--target", "mi250x:xnack+", path});
  EXPECT_EQ(on.status, 0) << on.out;
  EXPECT_NE(on.out.find("1 of 1 can run on gfx90a:sramecc+:xnack+"), std::string::npos) << on.out;
  // The same target named twice is checked once.
  CliRun twice = run_cli({"check", "--target", "mi250x:xnack+", "--target", "gfx90a:sramecc+:xnack+", path});
  EXPECT_EQ(twice.status, 0);
  EXPECT_EQ(twice.out.find("target ", twice.out.find("target ") + 1), std::string::npos) << twice.out;
}

// Nothing checked is a failure: a file without GPU code, a directory without any.
TEST(Cli, NothingCheckedFails) {
  CliRun ls = run_cli({"check", "--target", "mi300x", "/bin/ls"});
  EXPECT_EQ(ls.status, 1) << ls.out;
  EXPECT_NE(ls.out.find("error HG107 /bin/ls: no GPU code"), std::string::npos) << ls.out;
  fs::path dir = fs::temp_directory_path() / ("hipguard-empty-" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "notes.txt") << "no kernels here\n";
  CliRun empty = run_cli({"check", "--target", "mi300x", dir.string()});
  fs::remove_all(dir);
  EXPECT_EQ(empty.status, 1) << empty.out;
  EXPECT_NE(empty.out.find("error HG110 " + dir.string() + ": no GPU code found below this directory"),
            std::string::npos)
      << empty.out;
  EXPECT_NE(empty.out.find("checked 0 fat binaries and 0 code object files: gfx942:sramecc+:xnack-: 0 code objects"),
            std::string::npos)
      << empty.out;
}

TEST(Cli, TargetsListsProductsProcessorsAndSources) {
  CliRun r = run_cli({"targets"});
  EXPECT_EQ(r.status, 0);
  std::istringstream lines(r.out);
  size_t products = 0;
  bool mi300x = false, gfx906 = false, sources = false;
  for (std::string line; std::getline(lines, line);) {
    for (const auto& p : hipguard::all_products())
      if (line.rfind("  " + std::string(p.name) + " ", 0) == 0) ++products;
    mi300x = mi300x ||
             (line.find("mi300x") != std::string::npos && line.find("gfx942:sramecc+:xnack-") != std::string::npos &&
              line.find("64.0 KiB") != std::string::npos);
    gfx906 = gfx906 || line.find("gfx906:sramecc+:xnack-, gfx906:sramecc-:xnack-") != std::string::npos;
    sources = sources || line.find("amdgpu_gmc_noretry_set") != std::string::npos;
  }
  EXPECT_EQ(products, hipguard::all_products().size()) << r.out;
  EXPECT_TRUE(mi300x && gfx906 && sources) << r.out;
  EXPECT_EQ(run_cli({"targets", "extra"}).status, 2);
}

// Paths the CLI cannot use are HG101 findings and exit 1: never an abort
// (uncaught filesystem_error), a hang (FIFO) or an endless read (/dev/zero).
TEST(Cli, UnusablePathsAreFindingsNotCrashes) {
  fs::path root = fs::temp_directory_path() / ("hipguard-cli-paths-" + std::to_string(getpid()));
  fs::create_directories(root);
  fs::create_symlink("b", root / "a");
  fs::create_symlink("a", root / "b");
  ASSERT_EQ(mkfifo((root / "fifo").c_str(), 0600), 0);
  std::string long_name = (root / std::string(300, 'n')).string();
  for (const std::string& p : {(root / "a").string(), long_name, (root / "fifo").string(), std::string("/dev/zero")}) {
    CliRun r = run_cli({"check", "--target", "mi300x", p});
    EXPECT_EQ(r.status, 1) << p << "\n" << r.out;
    EXPECT_NE(r.out.find("error HG101"), std::string::npos) << p << "\n" << r.out;
    CliRun i = run_cli({"inspect", p});
    EXPECT_EQ(i.status, 1) << p << "\n" << i.out;
  }
  fs::remove_all(root);
}

// A report that cannot be written fails the command.
TEST(Cli, OutputWriteErrorFails) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  std::string cmd = quote(HIPGUARD_CLI) + " check --target mi300x " + quote(path) + " > /dev/full 2>/dev/null";
  int st = system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 2) << "a full disk must not pass as a clean report";
  cmd = quote(HIPGUARD_CLI) + " targets > /dev/full 2>/dev/null";
  st = system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 2);
}

// Control characters and invalid UTF-8 in names cannot forge output lines or
// break the JSON and XML outputs; JSON keeps the exact bytes in "<key>_hex".
TEST(Cli, HostileFileNamesAreEscaped) {
  HG_REQUIRE_APP(hipfb, "vector_add_gfx90a.hipfb");
  fs::path dir = fs::temp_directory_path() / ("hipguard-names-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string evil = std::string("x\nerror HG000 forged\x1b[31m\xff.hipfb");
  fs::copy_file(hipfb, dir / evil);
  std::string path = (dir / evil).string();
  CliRun text = run_cli({"check", "--target", "mi300x", path});
  EXPECT_EQ(text.status, 1);
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.rfind("error HG000", 0), 0u) << "a forged line: " << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
  EXPECT_NE(text.out.find("x\\x0aerror HG000 forged\\x1b[31m\\xff.hipfb"), std::string::npos) << text.out;

  CliRun json = run_cli({"check", "--target", "mi300x", "--json", path});
  auto doc = llvm::json::parse(json.out);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const auto* file = (*doc->getAsObject()->getArray("files"))[0].getAsObject();
  std::string hex;
  for (unsigned char c : path) hex += llvm::formatv("{0:x-2}", static_cast<unsigned>(c)).str();
  EXPECT_EQ(file->getString("path_hex").value_or("").str(), hex) << "the exact bytes of the path";

  CliRun junit = run_cli({"check", "--target", "mi300x", "--junit", path});
  EXPECT_TRUE(llvm::json::isUTF8(junit.out)) << "XML output must be UTF-8";
  for (unsigned char c : junit.out) EXPECT_TRUE(c >= 0x20 || c == '\n') << "control byte " << int(c) << " in XML";
  fs::remove_all(dir);
}

// ------------------------------------------------------------ CI formats

// The output does not depend on the number of threads: the same bytes, in
// the same order, with one thread and with several.
TEST(CliFormats, OutputDoesNotDependOnJobs) {
  HG_REQUIRE_CORPUS();
  for (const char* format : {"--json", "--sarif", "--junit", "--verbose"}) {
    std::vector<std::string> base = {"check", "--target", "gfx942", "--target", "mi355x"};
    if (*format) base.push_back(format);
    base.push_back(corpus_dir().string());
    base.push_back("/nonexistent/first-a-problem.co");
    auto with = [&](const char* jobs) {
      std::vector<std::string> a = base;
      a.insert(a.begin() + 1, {"--jobs", jobs});
      return run_cli(a);
    };
    CliRun one = with("1"), three = with("3"), all = with("0");
    EXPECT_EQ(one.status, 1) << format;
    EXPECT_EQ(three.status, 1) << format;
    EXPECT_GT(one.out.size(), 1000u) << format;
    EXPECT_EQ(one.out, three.out) << format;
    EXPECT_EQ(one.out, all.out) << format;
  }
  CliRun one = run_cli({"inspect", "--json", corpus_dir().string()});
  CliRun text = run_cli({"inspect", corpus_dir().string()});
  EXPECT_EQ(one.status, 0);
  EXPECT_NE(text.out.find("gfx950_fmha_v4_fwd_fwd_hd128_f4f4.co"), std::string::npos);
  // Files come in path order (directories are walked sorted).
  auto doc = parse_json(one);
  ASSERT_TRUE(doc);
  std::vector<std::string> paths;
  for (const auto& f : *doc->getAsObject()->getArray("files"))
    paths.push_back(f.getAsObject()->getString("path")->str());
  EXPECT_EQ(paths.size(), 42u);
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
}

// The JSON report names the tool and its version and sums up per target and severity.
TEST(CliFormats, JsonToolVersionAndSummary) {
  HG_REQUIRE_CORPUS();
  CliRun r = run_cli(check_corpus_files({"check", "--target", "gfx942", "--target", "mi355x", "--json"}));
  auto doc = parse_json(r);
  ASSERT_TRUE(doc);
  const auto* root = doc->getAsObject();
  EXPECT_EQ(root->getString("schema"), "hipguard-report/1");
  const auto* tool = root->getObject("tool");
  ASSERT_NE(tool, nullptr);
  EXPECT_EQ(tool->getString("name"), "hipguard");
  EXPECT_EQ(tool->getString("version"), HIPGUARD_VERSION_STRING);
  const auto* s = root->getObject("summary");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->getInteger("files"), 42);
  EXPECT_EQ(s->getInteger("images"), 42);
  EXPECT_EQ(s->getInteger("file_errors"), 0);
  const auto* targets = s->getArray("targets");
  ASSERT_TRUE(targets && targets->size() == 2);
  const auto* gfx942 = (*targets)[0].getAsObject();
  EXPECT_EQ(gfx942->getString("target"), "gfx942:sramecc+:xnack-");
  EXPECT_EQ(gfx942->getInteger("can_run"), 19);
  EXPECT_EQ(gfx942->getInteger("cannot_run"), 23);
  // Every error for gfx942 counted: 23 objects for other processors (HG202), 16 over its LDS (HG301).
  size_t errors = 0;
  for (const auto& f : *root->getArray("files"))
    for (const auto& img : *f.getAsObject()->getArray("images"))
      for (const auto& d : *img.getAsObject()->getArray("diagnostics"))
        errors += d.getAsObject()->getString("severity") == "error" &&
                  d.getAsObject()->getString("target") == "gfx942:sramecc+:xnack-";
  EXPECT_GE(errors, 23u + 16u);
  EXPECT_EQ(gfx942->getInteger("error"), static_cast<int64_t>(errors));
}

// SARIF for code scanning: a rule per code with its documentation, a result per
// finding at the file, the LDS finding with its kernel and numbers.
TEST(CliFormats, SarifRulesAndResults) {
  HG_REQUIRE_CORPUS();
  std::string f = (corpus_dir() / "gfx950_fmha_v4_fwd_fwd_hd128_f4f4.co").string();
  CliRun r = run_cli({"check", "--target", "gfx942", "--sarif", f});
  EXPECT_EQ(r.status, 1);
  auto doc = parse_json(r);
  ASSERT_TRUE(doc);
  const auto* root = doc->getAsObject();
  EXPECT_EQ(root->getString("version"), "2.1.0");
  const auto& run = *root->getArray("runs")->front().getAsObject();
  const auto* driver = run.getObject("tool")->getObject("driver");
  EXPECT_EQ(driver->getString("name"), "hipguard");
  const auto* rules = driver->getArray("rules");
  ASSERT_NE(rules, nullptr);
  ASSERT_EQ(rules->size(), hipguard::all_codes().size());
  std::map<std::string, const llvm::json::Object*> by_id;
  for (const auto& rule : *rules) by_id[rule.getAsObject()->getString("id")->str()] = rule.getAsObject();
  const auto* hg301 = by_id["HG301"];
  ASSERT_NE(hg301, nullptr);
  EXPECT_EQ(hg301->getString("name"), "lds-over-limit");
  std::string help = hg301->getObject("help")->getString("markdown")->str();
  EXPECT_EQ(help.rfind("## HG301 lds-over-limit (error)", 0), 0u) << help.substr(0, 200);
  EXPECT_NE(help.find("**Fix.**"), std::string::npos);
  EXPECT_EQ(hg301->getObject("defaultConfiguration")->getString("level"), "error");
  std::set<std::string> codes;
  bool lds = false;
  for (const auto& rv : *run.getArray("results")) {
    const auto* res = rv.getAsObject();
    std::string id = res->getString("ruleId")->str();
    codes.insert(id);
    EXPECT_EQ((*rules)[*res->getInteger("ruleIndex")].getAsObject()->getString("id"), id);
    std::string uri = res->getArray("locations")
                          ->front()
                          .getAsObject()
                          ->getObject("physicalLocation")
                          ->getObject("artifactLocation")
                          ->getString("uri")
                          ->str();
    EXPECT_EQ(uri, "file://" + f);
    if (id == "HG301") {
      lds = true;
      EXPECT_EQ(res->getObject("properties")->getInteger("value"), 66048);
      EXPECT_EQ(res->getObject("properties")->getInteger("limit"), 65536);
      EXPECT_NE(res->getObject("message")->getString("text")->find("[gfx942:sramecc+:xnack-]"), llvm::StringRef::npos);
    }
  }
  EXPECT_TRUE(lds) << r.out.substr(0, 3000);
  EXPECT_TRUE(codes.count("HG202")) << "built for gfx950, checked for gfx942";
}

TEST(CliFormats, UsageErrors) {
  HG_REQUIRE_CORPUS();
  std::string f = (corpus_dir() / "gfx942_pa_a16w8_f16.co").string();
  EXPECT_EQ(run_cli({"check", "--json", "--sarif", f}).status, 2);
  EXPECT_EQ(run_cli({"check", "--sarif", "--junit", f}).status, 2);
  EXPECT_EQ(run_cli({"check", "--jobs", "x", f}).status, 2);
  EXPECT_EQ(run_cli({"check", "--jobs=-1", f}).status, 2);
  EXPECT_EQ(run_cli({"check", f, "--jobs"}).status, 2);
  EXPECT_EQ(run_cli({"check", "--jobs=2", "--target", "gfx942", f}).status, 0);
}

// A streamed report that cannot be written fails the command in every format.
TEST(CliFormats, WriteErrorFailsEveryFormat) {
  HG_REQUIRE_APP(path, "vector_add_multi");
  for (const char* fmt : {"--json", "--junit", "--sarif"}) {
    std::string cmd =
        quote(HIPGUARD_CLI) + " check " + fmt + " --target mi300x " + quote(path) + " > /dev/full 2>/dev/null";
    int st = system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 2) << fmt;
  }
  std::string cmd = quote(HIPGUARD_CLI) + " inspect --json " + quote(path) + " > /dev/full 2>/dev/null";
  int st = system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 2) << "inspect --json";
}

// --runtime selects as that HIP version does; --one-process makes the targets one process's GPUs.
TEST(Cli, RuntimeVersionAndOneProcess) {
  fs::path dir = fs::temp_directory_path() / ("hipguard-runtime-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const ByteVec& data) {
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), data.size());
    return (dir / name).string();
  };
  CodeObjectSpec generic;
  generic.mach = 0x051;  // gfx9-generic
  generic.target = "amdgcn-amd-amdhsa--gfx9-generic";
  generic.version = 6, generic.generic_version = 1;
  std::string gen =
      write("gfx9_generic.hipfb", make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx9-generic", make_code_object(generic)}}));
  CliRun hip7 = run_cli({"check", "--target", "mi50", gen});
  EXPECT_EQ(hip7.status, 1) << hip7.out;
  EXPECT_NE(hip7.out.find("HG213"), std::string::npos) << hip7.out;
  CliRun hip64 = run_cli({"check", "--runtime", "6.4", "--target", "mi50", gen});
  EXPECT_EQ(hip64.status, 0) << hip64.out;
  EXPECT_EQ(run_cli({"check", "--runtime", "6.4.3", "--target", "mi50", gen}).status, 0);
  EXPECT_EQ(run_cli({"check", "--runtime", "7.0", "--target", "mi50", gen}).status, 1);
  for (const char* bad : {"8.x", "", "latest", "6.4.3.1"})
    EXPECT_EQ(run_cli({"check", "--runtime", bad, "--target", "mi50", gen}).status, 2) << bad;

  CodeObjectSpec gfx90a;
  gfx90a.mach = 0x03f;
  gfx90a.target = "amdgcn-amd-amdhsa--gfx90a";
  std::string bare =
      write("gfx90a.hipfb", make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", make_code_object(gfx90a)}}));
  std::vector<std::string> gpus = {"check", "--target", "gfx90a:xnack+", "--target", "gfx90a:xnack-", bare};
  EXPECT_EQ(run_cli(gpus).status, 0) << "separate machines";
  gpus.insert(gpus.begin() + 1, "--one-process");
  CliRun one = run_cli(gpus);
  EXPECT_EQ(one.status, 1) << one.out;
  EXPECT_NE(one.out.find("error HG212 [gfx90a:sramecc+:xnack-]"), std::string::npos) << one.out;
  fs::remove_all(dir);
}
