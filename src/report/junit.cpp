// The JUnit XML report: a test suite per target, a test case per image and target (CI systems show it
// as a test run).
#include <llvm/Support/raw_ostream.h>

#include "report/report_internal.h"

namespace hipguard {

namespace {

// One <testsuite> per target (one "structural" suite without targets), one
// <testcase> per (target, image) and per file with an error of its own, at
// most one <failure> each: the image cannot run on the target (or, without
// targets, is structurally broken). The suites' test cases are kept as text
// until finish(), since a suite's counts come before its cases.
class JUnitWriter final : public ReportWriter {
  struct Suite {
    std::string name, body;
    size_t tests = 0, failures = 0;
  };

 public:
  JUnitWriter(llvm::raw_ostream& os, const std::vector<TargetId>& targets) : os_(os), targets_(targets) {
    for (const auto& t : targets) suites_.push_back({t.str(), "", 0, 0});
    if (suites_.empty()) suites_.push_back({"structural", "", 0, 0});
  }

  void begin_file(const std::string& path) override { path_ = path; }

  void image(ImageReport&& img) override {
    std::string name = img.location.empty() ? img.origin : img.origin + " [" + img.location + "]";
    for (size_t t = 0; t < suites_.size(); ++t) {
      bool structural = targets_.empty();
      if (!structural && t < img.verdicts.size() && img.verdicts[t].other_target) continue;  // not loaded there
      bool failed = structural ? !img.structurally_ok : !(t < img.verdicts.size() && img.verdicts[t].can_run);
      // The errors that concern this target fail it; everything else is output.
      std::vector<const Diagnostic*> errors;
      std::string out;
      for (const auto& d : img.diagnostics) {
        bool mine = structural || d.target.empty() || d.target == suites_[t].name;
        if (!mine) continue;
        if (failed && d.severity == Severity::Error) errors.push_back(&d);
        else out += format_line(d) + "\n";
      }
      Suite& s = suites_[t];
      ++s.tests;
      s.body += "  <testcase classname=\"hipguard." + xml_escape(s.name) + "\" name=\"" + xml_escape(name) + "\"";
      if (!failed && out.empty()) {
        s.body += "/>\n";
        continue;
      }
      s.body += ">";
      if (failed) {
        ++s.failures;
        std::string type = errors.empty() ? "cannot-run" : std::string(code_string(errors[0]->code));
        std::string message = errors.empty() ? "cannot run on " + s.name : errors[0]->message;
        if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more errors)";
        s.body += "<failure type=\"" + xml_escape(type) + "\" message=\"" + xml_escape(message) + "\">";
        for (const Diagnostic* d : errors) s.body += xml_escape(format_line(*d)) + "\n";
        s.body += "</failure>";
      }
      if (!out.empty()) s.body += "<system-out>" + xml_escape(out) + "</system-out>";
      s.body += "</testcase>\n";
    }
  }

  void end_file(FileReport&& r) override {
    std::vector<const Diagnostic*> errors;
    for (const auto& d : r.diagnostics)
      if (d.severity == Severity::Error) errors.push_back(&d);
    if (errors.empty()) return;
    std::string message = errors[0]->message;
    if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more errors)";
    std::string lines;
    for (const Diagnostic* d : errors) lines += xml_escape(format_line(*d)) + "\n";
    for (auto& s : suites_) {
      ++s.tests, ++s.failures;
      s.body += junit_failed_case(s.name, path_, std::string(code_string(errors[0]->code)), message, lines);
    }
  }

  void finish(const RunInfo*) override {
    size_t tests = 0, failures = 0;
    for (const auto& s : suites_) tests += s.tests, failures += s.failures;
    os_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"hipguard\" tests=\"" << tests
        << "\" failures=\"" << failures << "\">\n";
    for (auto& s : suites_) {
      os_ << " <testsuite name=\"hipguard " << xml_escape(s.name) << "\" tests=\"" << s.tests << "\" failures=\""
          << s.failures << "\" errors=\"0\" skipped=\"0\">\n"
          << s.body << " </testsuite>\n";
      std::string().swap(s.body);
    }
    os_ << "</testsuites>\n";
    os_.flush();
  }

 private:
  llvm::raw_ostream& os_;
  std::vector<TargetId> targets_;
  std::vector<Suite> suites_;
  std::string path_;
};

}  // namespace

std::string junit_failed_case(const std::string& suite, const std::string& name, const std::string& type,
                              const std::string& message, const std::string& xml_body) {
  std::string s = "  <testcase classname=\"hipguard." + xml_escape(suite) + "\" name=\"" + xml_escape(name) +
                  "\"><failure type=\"" + xml_escape(type) + "\" message=\"" + xml_escape(message) + "\"";
  s += xml_body.empty() ? "/>" : ">" + xml_body + "</failure>";
  return s + "</testcase>\n";
}

// escape_text (no control characters or invalid UTF-8 survive: XML 1.0 allows
// neither), then XML's own escapes.
std::string xml_escape(const std::string& text) {
  std::string o, s = escape_text(text);
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::unique_ptr<ReportWriter> make_junit_writer(llvm::raw_ostream& os, const std::vector<TargetId>& targets) {
  return std::make_unique<JUnitWriter>(os, targets);
}

}  // namespace hipguard
