// HIPGUARD_REPORT and `hipguard run --report` in running programs (simulated
// runtime): a report is never lost, never stale, never written where it does
// not belong, and every process of a job ends up in it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "process.h"

namespace {

const std::string kShim = HIPGUARD_SHIM;
const std::string kCli = HIPGUARD_CLI;
const std::string kApps = HIPGUARD_APPS_DIR;
const std::string kSimrt = HIPGUARD_SIMRT_DIR;
const std::string kMi300x = "gfx942:sramecc+:xnack-";

std::string app(const std::string& name) { return kApps + "/" + name; }

std::map<std::string, std::string> sim(std::map<std::string, std::string> extra = {}, bool shim = true) {
  extra["LD_LIBRARY_PATH"] = kSimrt;
  extra["HIPGUARD_SIM_GPUS"] = kMi300x;
  extra["HIPGUARD_TARGET"] = "mi300x";
  if (shim) extra["LD_PRELOAD"] = kShim;
  return extra;
}

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string n = e->d_name; n != "." && n != "..") out.insert(n);
    closedir(d);
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

class ReportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kApps.empty() || !exists(app("dlopen_host")) || !exists(app("libkernels_lib.so")))
      GTEST_SKIP() << "hipcc test apps not built";
    if (!exists(kSimrt + "/libamdhip64.so.5")) GTEST_SKIP() << "simulated runtime not built";
    char tmpl[] = "/tmp/hipguard-reportfile-XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) run_process({"/bin/rm", "-rf", dir_});
  }
  // dlopen_host loading a library built for gfx90a only: HG201 on mi300x.
  ProcessResult host(const std::string& report, std::map<std::string, std::string> extra = {}) {
    extra["HIPGUARD_REPORT"] = report;
    return run_process({app("dlopen_host"), app("libkernels_lib.so")}, sim(extra));
  }
  std::string dir_;
};

}  // namespace

TEST_F(ReportFile, PathsThatAreNoRegularFileGetNothingAndAWarning) {
  // Before: /dev/full.<pid> and /dev/null.<pid> were created as regular files,
  // a directory got a sibling "<dir>.<pid>".
  std::set<std::string> dev_before = entries("/dev");
  std::string sub = dir_ + "/reports";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{{"/dev/full", "a character device"},
                                                                                   {"/dev/null", "a character device"},
                                                                                   {"/dev/stdout", "a symbolic link"},
                                                                                   {sub, "a directory"}}) {
    ProcessResult r = host(path);
    EXPECT_EQ(r.status, 0) << path << ": the program's status is its own";
    auto lines = lines_with(r.err, "warning HG603 " + path + ":");
    ASSERT_EQ(lines.size(), 1u) << path << "\n" << r.err;
    EXPECT_NE(lines[0].find(kind), std::string::npos) << lines[0];
  }
  EXPECT_EQ(entries("/dev"), dev_before) << "nothing created in /dev";
  EXPECT_EQ(entries(dir_), std::set<std::string>{"reports"}) << "no sibling next to the directory";
  EXPECT_TRUE(entries(sub).empty());
}

TEST_F(ReportFile, AnEarlierRunsReportNeverSurvives) {
  // Before: the existing file was kept and this run's report went to <path>.<pid>.
  std::string report = dir_ + "/r.json";
  { std::ofstream(report) << "{\"schema\": \"hipguard-report/1\", \"stale\": true}\n"; }
  ProcessResult r = host(report);
  EXPECT_EQ(r.status, 0);
  std::string doc = read_text(report);
  EXPECT_EQ(doc.find("stale"), std::string::npos) << doc.substr(0, 300);
  EXPECT_NE(doc.find("\"code\": \"HG201\""), std::string::npos) << doc.substr(0, 300);
  EXPECT_EQ(entries(dir_), std::set<std::string>{"r.json"}) << "no r.json.<pid> beside it";
}

TEST_F(ReportFile, AWriteErrorIsSaid) {
  // Before: a full disk left a 0-byte report and no word of it. A file size
  // limit (SIGXFSZ ignored, as a shell's `trap '' XFSZ` does) fails the same
  // write(2) calls ENOSPC would.
  if (!exists("/usr/bin/prlimit")) GTEST_SKIP() << "prlimit (util-linux) not installed";
  std::string report = dir_ + "/r.json";
  auto env = sim({{"HIPGUARD_REPORT", report}});
  ProcessResult r = run_process({"/bin/sh", "-c", "trap '' XFSZ; exec /usr/bin/prlimit --fsize=600 \"$0\" \"$1\"",
                                 app("dlopen_host"), app("libkernels_lib.so")},
                                env);
  EXPECT_EQ(r.status, 0) << r.err;
  auto lines = lines_with(r.err, "warning HG603 " + report + ": HIPGUARD_REPORT is incomplete: File too large");
  EXPECT_EQ(lines.size(), 1u) << r.err;
}

TEST_F(ReportFile, FindingsSurviveKillExitAndAbort) {
  // Before: the report was written only by an exit handler; SIGKILL, _exit
  // and abort left nothing. Now each finding is a journal line as it is said.
  for (const auto& [end, status] :
       std::vector<std::pair<std::string, int>>{{"kill", 137}, {"_exit", 0}, {"abort", 134}}) {
    std::string report = dir_ + "/" + end + ".json";
    ProcessResult r = host(report, {{"DLOPEN_HOST_END", end}});
    EXPECT_EQ(r.status, status) << end << ": the program's own status";
    std::string journal = read_text(report);
    auto headers = lines_with(journal, "\"program\":\"" + app("dlopen_host") + "\"");
    EXPECT_EQ(headers.size(), 1u) << end << ":\n" << journal;
    auto found = lines_with(journal, "{\"diagnostic\":{\"code\":\"HG201\"");
    EXPECT_EQ(found.size(), 1u) << end << ":\n" << journal;
  }
}

TEST_F(ReportFile, ForkedChildrenWriteOnlyWhatTheyDid) {
  // Before: each child wrote the whole inherited report again (300 forks of a
  // process with a big report: seconds each, 4.9 GB). Now a child adds a few
  // lines of its own and the last one out writes one document for all.
  std::string report = dir_ + "/r.json";
  ProcessResult r = host(report, {{"DLOPEN_HOST_FORK", "40"}});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(count(r.out, "child status 0"), 40u) << r.out;
  std::string doc = read_text(report);
  EXPECT_EQ(count(doc, "\"complete\": true"), 41u) << doc.substr(0, 2000);
  EXPECT_EQ(count(doc, "\"code\": \"HG201\""), 2u) << "once in the parent's files, once in its findings";
  EXPECT_EQ(count(doc, "\"path\": \"" + app("libkernels_lib.so") + "\""), 1u) << "the children list no files";
  // A child's entry: pid, ppid, program, complete, no findings, a run with no
  // kernels: the library's kernel, registered by the parent and never
  // launched, is neither indexed nor listed by the children.
  EXPECT_EQ(count(doc, "\"kernels\": []"), 40u) << doc.substr(0, 3000);
  EXPECT_LT(doc.size(), 40u * 1024) << "what the children add is small";
}

TEST_F(ReportFile, RunKeepsEveryProcessOfTheJob) {
  // Before: each process wrote the path if it was free, else <path>.<pid>,
  // and a crashed one nothing. Now one document lists every process.
  std::string report = dir_ + "/job.json";
  { std::ofstream(report) << "stale"; }
  std::string host_cmd = app("dlopen_host") + " " + app("libkernels_lib.so");
  ProcessResult r = run_process({kCli, "run", "--target", "mi300x", "--report", report, "--", "/bin/sh", "-c",
                                 host_cmd + "; DLOPEN_HOST_END=kill " + host_cmd + "; " + app("vector_add_gfx90a")},
                                sim({}, /*shim=*/false));
  EXPECT_EQ(r.status, 0) << r.err;
  std::string doc = read_text(report);
  EXPECT_EQ(doc.find("stale"), std::string::npos);
  EXPECT_EQ(count(doc, "\"complete\": true"), 2u) << doc.substr(0, 3000);
  EXPECT_EQ(count(doc, "\"complete\": false"), 1u) << "the killed process, with what it found";
  EXPECT_EQ(count(doc, "\"program\": \"hipguard run\""), 0u) << "the launcher is not a process of the job";
  for (const auto& file : {app("libkernels_lib.so"), app("vector_add_gfx90a")})
    EXPECT_GE(count(doc, "\"path\": \"" + file + "\""), 1u) << file;
  EXPECT_EQ(count(doc, "\"path\": \"" + app("libkernels_lib.so") + "\""), 2u) << "both dlopen_host processes";
  EXPECT_EQ(entries(dir_), std::set<std::string>{"job.json"});

  // JUnit: one suite per target per finished process, one for the killed one.
  std::string xml = dir_ + "/job.xml";
  r = run_process({kCli, "run", "--target", "mi300x", "--report", xml, "--", "/bin/sh", "-c",
                   host_cmd + "; DLOPEN_HOST_END=kill " + host_cmd},
                  sim({}, false));
  std::string x = read_text(xml);
  EXPECT_EQ(x.rfind("<?xml", 0), 0u) << x;
  EXPECT_EQ(count(x, "<testsuites"), 1u) << x;
  EXPECT_EQ(count(x, "</testsuites>"), 1u) << x;
  EXPECT_EQ(count(x, "ended before its report was complete"), 1u) << x;
  EXPECT_EQ(count(x, "type=\"HG201\""), 2u) << x;

  // A report path that cannot be one fails before the command runs.
  r = run_process({kCli, "run", "--report", "/dev/full", "--", "/bin/echo", "ran"}, sim({}, false));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out.find("ran"), std::string::npos);
  EXPECT_NE(r.err.find("/dev/full is a character device"), std::string::npos) << r.err;
}
