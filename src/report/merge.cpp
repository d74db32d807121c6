// Merging the HIPGUARD_REPORT journal into one document: JSON, or JUnit XML (report_file.h, merge_report).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hipguard/version.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "report/report_file.h"
#include "report/report_internal.h"

namespace hipguard {
namespace {

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
    cases += junit_failed_case(target.empty() ? "structural" : target, o->getString("file").value_or("").str(), code,
                               message, "");
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
    if (body.substr(at, next == std::string::npos ? next : next - at).find("<failure") != std::string::npos) ++failures;
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" + std::to_string(tests) + "\" failures=\"" +
         std::to_string(failures) + "\">\n" + body + "</testsuites>\n";
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
    files.push_back(llvm::json::Object{
        {"path", file}, {"ok", ok}, {"hip", true}, {"images", llvm::json::Array{}}, {"diagnostics", std::move(diags)}});
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
  llvm::json::Object doc{{"schema", kReportSchema},
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
      else llvm::consumeError(v.takeError());  // a damaged earlier document is left out; the journal still merges
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
      llvm::consumeError(v.takeError());  // a line that is not JSON (e.g. cut short by a killed process) is skipped
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

}  // namespace hipguard
