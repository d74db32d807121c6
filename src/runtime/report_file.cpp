// The HIPGUARD_REPORT file: journal while processes run, document at the end (report_file.h).
#include "runtime/report_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "hipguard/report.h"
#include "hipguard/version.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace hipguard {
namespace {

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link (never followed)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string compact(llvm::json::Value v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << v;
  os.flush();
  return out;
}

std::string pretty(llvm::json::Value v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", v);
  os.flush();
  return out;
}

// What the journal says of one process.
struct Process {
  int64_t pid = 0;
  std::optional<int64_t> ppid;
  std::string program;
  bool launcher = false;
  std::vector<llvm::json::Value> findings;
  std::optional<llvm::json::Value> report;
  std::optional<std::string> junit;
};

// The text between <testsuites ...> and </testsuites>.
std::string_view suites_of(std::string_view xml) {
  size_t open = xml.find("<testsuites");
  size_t body = open == std::string_view::npos ? open : xml.find('>', open);
  size_t close = xml.rfind("</testsuites>");
  if (body == std::string_view::npos || close == std::string_view::npos || close < body) return {};
  return xml.substr(body + 1, close - body - 1);
}

// A process that ended before its report: one test case per error it said.
std::string suite_of_unfinished(const Process& p) {
  std::string cases;
  size_t tests = 0, failures = 0;
  for (const auto& f : p.findings) {
    const auto* o = f.getAsObject();
    if (!o || o->getString("severity").value_or("") != "error") continue;
    std::string target = o->getString("target").value_or("structural").str();
    std::string code = o->getString("code").value_or("").str();
    std::string message = o->getString("message").value_or("").str();
    ++tests, ++failures;
    cases += "  <testcase classname=\"hipguard." + xml_escape(target.empty() ? "structural" : target) + "\" name=\"" +
             xml_escape(o->getString("file").value_or("").str()) + "\"><failure type=\"" + xml_escape(code) +
             "\" message=\"" + xml_escape(message) + "\"/></testcase>\n";
  }
  if (tests == 0) {
    ++tests;
    cases = "  <testcase classname=\"hipguard.process\" name=\"process " + std::to_string(p.pid) + "\"/>\n";
  }
  return " <testsuite name=\"hipguard process " + std::to_string(p.pid) + " (" + xml_escape(p.program) +
         "): ended before its report was complete\" tests=\"" + std::to_string(tests) + "\" failures=\"" +
         std::to_string(failures) + "\">\n" + cases + " </testsuite>\n";
}

std::string merge_junit(std::string_view prior, const std::vector<Process>& procs) {
  if (prior.empty() && procs.size() == 1 && procs[0].junit) return *procs[0].junit;
  std::string body(suites_of(prior));
  for (const auto& p : procs) body += p.junit ? std::string(suites_of(*p.junit)) : suite_of_unfinished(p);
  size_t tests = 0, failures = 0;
  for (size_t at = body.find("<testcase"), next; at != std::string::npos; at = next) {
    next = body.find("<testcase", at + 1);
    ++tests;
    if (body.substr(at, next == std::string::npos ? next : next - at).find("<failure") != std::string::npos)
      ++failures;
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" + std::to_string(tests) +
         "\" failures=\"" + std::to_string(failures) + "\">\n" + body + "</testsuites>\n";
}

// Files of a process that ended early: its findings, grouped by file, as file-level diagnostics.
void add_unfinished_files(const Process& p, llvm::json::Array& files) {
  std::map<std::string, std::pair<bool, llvm::json::Array>> by_file;
  std::vector<std::string> order;
  for (const auto& f : p.findings) {
    const auto* o = f.getAsObject();
    if (!o) continue;
    std::string file = o->getString("file").value_or("").str();
    auto [it, fresh] = by_file.try_emplace(file, true, llvm::json::Array{});
    if (fresh) order.push_back(file);
    if (o->getString("severity").value_or("") == "error") it->second.first = false;
    it->second.second.push_back(f);
  }
  for (const auto& file : order) {
    auto& [ok, diags] = by_file[file];
    files.push_back(llvm::json::Object{{"path", file}, {"ok", ok}, {"hip", true}, {"images", llvm::json::Array{}},
                                       {"diagnostics", std::move(diags)}});
  }
}

std::string merge_json(std::optional<llvm::json::Value> prior, std::vector<Process>& procs) {
  if (!prior && procs.size() == 1 && procs[0].report) return pretty(std::move(*procs[0].report)) + "\n";
  llvm::json::Array targets, files, processes;
  std::set<std::string> seen_targets;
  auto add_targets = [&](const llvm::json::Object& doc) {
    if (const auto* ts = doc.getArray("targets"))
      for (const auto& t : *ts)
        if (auto s = t.getAsString(); s && seen_targets.insert(s->str()).second) targets.push_back(s->str());
  };
  auto add_files = [&](llvm::json::Object& doc) {
    if (auto* fs = doc.getArray("files"))
      for (auto& f : *fs) files.push_back(std::move(f));
  };
  if (prior)
    if (auto* doc = prior->getAsObject()) {
      add_targets(*doc);
      add_files(*doc);
      if (auto* ps = doc->getArray("processes")) {
        for (auto& p : *ps) processes.push_back(std::move(p));
      } else if (auto* run = doc->getObject("run")) {
        llvm::json::Object entry{{"pid", run->getInteger("pid").value_or(0)},
                                 {"program", run->getString("program").value_or("").str()},
                                 {"complete", true},
                                 {"findings", llvm::json::Array{}}};
        entry["run"] = std::move(*run);
        processes.push_back(std::move(entry));
      }
    }
  for (auto& p : procs) {
    llvm::json::Object entry{{"pid", p.pid}, {"program", p.program}, {"complete", p.report.has_value()}};
    if (p.ppid) entry["ppid"] = *p.ppid;
    entry["findings"] = llvm::json::Array(p.findings);
    if (p.report) {
      if (auto* doc = p.report->getAsObject()) {
        add_targets(*doc);
        add_files(*doc);
        if (auto* run = doc->getObject("run")) entry["run"] = std::move(*run);
      }
    } else {
      add_unfinished_files(p, files);
    }
    processes.push_back(std::move(entry));
  }
  llvm::json::Object doc{{"schema", "hipguard-report/1"},
                         {"tool", llvm::json::Object{{"name", "hipguard"}, {"version", HIPGUARD_VERSION_STRING}}},
                         {"targets", std::move(targets)},
                         {"files", std::move(files)},
                         {"processes", std::move(processes)}};
  return pretty(std::move(doc)) + "\n";
}

}  // namespace

std::string merge_report(std::string_view content, bool xml) {
  // An earlier merged document of the same job comes first (pretty JSON, or
  // XML); journal lines follow it.
  std::optional<llvm::json::Value> prior_json;
  std::string_view prior_xml;
  size_t pos = 0;
  if (content.substr(0, 5) == "<?xml" || content.substr(0, 11) == "<testsuites") {
    size_t end = content.find("</testsuites>");
    if (end != std::string_view::npos) {
      prior_xml = content.substr(0, end + 13);
      pos = end + 13;
    }
  } else if (content.substr(0, 2) == "{\n") {
    size_t end = content.find("\n}\n");  // a pretty document's top level closes at column 0
    if (end != std::string_view::npos) {
      if (auto v = llvm::json::parse(content.substr(0, end + 2))) prior_json = std::move(*v);
      else llvm::consumeError(v.takeError());
      pos = end + 3;
    }
  }
  std::vector<Process> procs;
  std::map<int64_t, size_t> index;
  while (pos < content.size()) {
    size_t nl = content.find('\n', pos);
    std::string_view line = content.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    auto v = llvm::json::parse(line);
    if (!v) {
      llvm::consumeError(v.takeError());
      continue;
    }
    auto* o = v->getAsObject();
    if (!o) continue;
    auto pid = o->getInteger("pid");
    if (!pid) continue;
    auto [it, fresh] = index.emplace(*pid, procs.size());
    if (fresh) procs.emplace_back().pid = *pid;
    Process& p = procs[it->second];
    if (auto pp = o->getInteger("ppid")) p.ppid = pp;
    if (auto prog = o->getString("program")) p.program = prog->str();
    if (o->getBoolean("launcher").value_or(false)) p.launcher = true;
    if (auto* d = o->get("diagnostic")) p.findings.push_back(std::move(*d));
    if (auto* r = o->get("report")) p.report = std::move(*r);
    if (auto j = o->getString("junit")) p.junit = j->str();
  }
  std::vector<Process> hip;  // the launcher (hipguard run) has no findings of its own
  for (auto& p : procs)
    if (!p.launcher) hip.push_back(std::move(p));
  return xml ? merge_junit(prior_xml, hip) : merge_json(std::move(prior_json), hip);
}

std::optional<std::string> ReportFile::open(const std::string& path, llvm::json::Object header) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return path + " is " + kind_of(st.st_mode);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot open " + path + ": " + strerror(errno);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced between the two calls
    close(fd);
    return path + " is " + kind_of(st.st_mode);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    // Nobody else writes it: an earlier run's report, never left to pass for this one's.
    if (ftruncate(fd, 0) != 0) {
      std::string why = "cannot empty " + path + ": " + strerror(errno);
      close(fd);
      return why;
    }
    flock(fd, LOCK_SH);
  } else {
    // Other processes of this job write it; a merge holds it exclusively for a moment.
    for (int i = 0; i < 200 && flock(fd, LOCK_SH | LOCK_NB) != 0; ++i) usleep(5000);
  }
  fd_ = fd;
  path_ = path;
  header_ = std::move(header);
  pid_ = 0;  // append() writes the header first
  append({});
  return std::nullopt;
}

bool ReportFile::write_line(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error_.empty()) error_ = n < 0 ? strerror(errno) : "short write";
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

void ReportFile::append(llvm::json::Object record) {
  if (fd_ < 0) return;
  pid_t pid = getpid();
  if (pid != pid_) {  // this process's first record (a forked child's too): who it is
    llvm::json::Object header = header_;
    header["pid"] = static_cast<int64_t>(pid);
    header["ppid"] = static_cast<int64_t>(getppid());
    pid_ = pid;
    write_line(compact(std::move(header)) + "\n");
  }
  if (record.empty()) return;
  record["pid"] = static_cast<int64_t>(pid);
  write_line(compact(std::move(record)) + "\n");
}

std::optional<std::string> ReportFile::finish(llvm::json::Object record, bool xml) {
  if (fd_ < 0) return std::nullopt;
  append(std::move(record));
  // Unlock first, then try for the file alone: of processes ending together
  // one gets it, after the others' last records are in.
  flock(fd_, LOCK_UN);
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    std::string content;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      ssize_t n = pread(fd_, buf, sizeof buf, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      content.append(buf, static_cast<size_t>(n));
      at += n;
    }
    std::string doc = merge_report(content, xml);
    if (ftruncate(fd_, 0) != 0 && error_.empty()) error_ = strerror(errno);
    write_line(doc);
  }
  close(fd_);
  fd_ = -1;
  if (error_.empty()) return std::nullopt;
  return error_;
}

void ReportFile::prepare_fork() {
  if (fd_ < 0) return;
  // A new open file description: its lock is the child's own.
  std::string self = "/proc/self/fd/" + std::to_string(fd_);
  child_fd_ = ::open(self.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (child_fd_ >= 0) flock(child_fd_, LOCK_SH | LOCK_NB);
}

void ReportFile::parent_after_fork() {
  if (child_fd_ >= 0) close(child_fd_);
  child_fd_ = -1;
}

void ReportFile::child_after_fork() {
  if (child_fd_ < 0) return;  // keeps the inherited descriptor: appends still land
  close(fd_);
  fd_ = child_fd_;
  child_fd_ = -1;
}

void ReportFile::close_inherited() {
  if (child_fd_ >= 0) close(child_fd_);
  if (fd_ >= 0) close(fd_);  // the parent's lock stays: it holds the same description
  fd_ = child_fd_ = -1;
}

}  // namespace hipguard
