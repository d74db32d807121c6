// SARIF 2.1.0 (OASIS), as GitHub code scanning uploads it: one rule per
// diagnostic code with its docs/diagnostics.md section as help, one result per
// finding, located at the file (a binary: no line region), with a fingerprint
// of its own so the upload computes none from the file's "lines".
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include "hipguard/version.h"
#include "report/report_internal.h"

namespace hipguard {

std::string_view diagnostic_section(Code code) {
  std::string_view doc = diagnostics_markdown();
  std::string head = "\n## " + std::string(code_string(code)) + " ";
  size_t start = doc.find(head);
  if (start == std::string_view::npos) return {};
  ++start;
  size_t end = doc.find("\n## ", start + 1);
  if (size_t rule = doc.find("\n---", start + 1); rule < end) end = rule;
  if (end == std::string_view::npos) end = doc.size();
  std::string_view s = doc.substr(start, end - start);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

namespace {

using llvm::json::OStream;

// The paragraph after "**Cause.** " on one line; its first sentence.
std::string cause_of(std::string_view section) {
  static constexpr std::string_view kCause = "**Cause.** ";
  size_t at = section.find(kCause);
  if (at == std::string_view::npos) return "";
  at += kCause.size();
  size_t end = section.find("\n\n", at);
  std::string_view p = section.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
  std::string out;
  for (char c : p) out += c == '\n' ? ' ' : c;
  return out;
}

std::string first_sentence(const std::string& text) {
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '.' || text[i + 1] != ' ') continue;
    // "e.g. " and "i.e. " do not end a sentence.
    if (i >= 3 && (text.compare(i - 3, 3, "e.g") == 0 || text.compare(i - 3, 3, "i.e") == 0)) continue;
    return text.substr(0, i + 1);
  }
  return text;
}

std::string sarif_level(Severity s) {
  return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note";
}

// A URI reference for a path: absolute paths as file:// URIs, relative ones
// relative (to the repository root, for code scanning); every byte outside
// RFC 3986's unreserved set and '/' percent-encoded.
std::string path_uri(const std::string& path) {
  std::string p = path;
  while (p.rfind("./", 0) == 0) p.erase(0, 2);
  std::string out = !p.empty() && p[0] == '/' ? "file://" : "";
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : p) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// FNV-1a, 64 bits, as 16 hex digits: a fingerprint that stays the same
// from run to run for the same finding in the same place.
std::string fingerprint(std::initializer_list<std::string_view> parts) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::string_view p : parts) {
    for (unsigned char c : p) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;  // separator
  }
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class SarifWriter final : public ReportWriter {
 public:
  SarifWriter(llvm::raw_ostream& os, const std::vector<TargetId>& targets) : os_(os), j_(os, 2) {
    (void)targets;
    j_.objectBegin();
    j_.attribute("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    j_.attribute("version", "2.1.0");
    j_.attributeBegin("runs");
    j_.arrayBegin();
    j_.objectBegin();
    j_.attributeObject("tool", [&] {
      j_.attributeObject("driver", [&] {
        j_.attribute("name", "hipguard");
        j_.attribute("version", HIPGUARD_VERSION_STRING);
        j_.attribute("semanticVersion", HIPGUARD_VERSION_STRING);
        j_.attributeArray("rules", [&] {
          for (const CodeInfo& c : all_codes()) write_rule(c);
        });
      });
    });
    j_.attribute("columnKind", "unicodeCodePoints");
    j_.attributeBegin("results");
    j_.arrayBegin();
  }

  void begin_file(const std::string& path) override {
    path_ = path;
    uri_ = path_uri(path);
  }

  void image(ImageReport&& img) override {
    for (const auto& d : img.diagnostics) write_result(d, img.location);
  }

  void end_file(FileReport&& r) override {
    for (const auto& d : r.diagnostics) write_result(d, "");
  }

  void support(const std::vector<SupportRow>& rows) override { support_ = rows; }

  void finish(const RunInfo*) override {
    j_.arrayEnd();
    j_.attributeEnd();
    // Which GPUs (check without --target): a property of the run, as SARIF has no place for it.
    if (!support_.empty()) j_.attributeObject("properties", [&] { write_support(j_, support_); });
    j_.objectEnd();
    j_.arrayEnd();
    j_.attributeEnd();
    j_.objectEnd();
    j_.flush();
    os_ << "\n";
    os_.flush();
  }

 private:
  void write_rule(const CodeInfo& c) {
    std::string_view section = diagnostic_section(c.code);
    std::string cause = cause_of(section);
    j_.object([&] {
      j_.attribute("id", llvm::StringRef(code_string(c.code)));
      j_.attribute("name", llvm::StringRef(c.name));
      j_.attributeObject("shortDescription",
                         [&] { j_.attribute("text", cause.empty() ? std::string(c.name) : first_sentence(cause)); });
      j_.attributeObject("fullDescription", [&] { j_.attribute("text", cause.empty() ? std::string(c.name) : cause); });
      if (!section.empty())
        j_.attributeObject("help", [&] {
          j_.attribute("text", llvm::StringRef(section));
          j_.attribute("markdown", llvm::StringRef(section));
        });
      j_.attributeObject("defaultConfiguration", [&] { j_.attribute("level", sarif_level(c.severity)); });
      j_.attributeObject("properties", [&] {
        j_.attributeArray("tags", [&] {
          j_.value("hipguard");
          j_.value("amdgpu");
        });
        j_.attribute("problem.severity", c.severity == Severity::Error     ? "error"
                                         : c.severity == Severity::Warning ? "warning"
                                                                           : "recommendation");
      });
    });
  }

  void write_result(const Diagnostic& d, const std::string& location) {
    std::string text;
    if (!d.target.empty()) text += "[" + d.target + "] ";
    if (!location.empty()) text += location + ": ";
    if (!d.entry.empty()) text += "(" + d.entry + ") ";
    if (!d.kernel.empty()) text += "kernel '" + d.kernel + "': ";
    text += d.message;
    if (!d.fix.empty()) text += " -- fix: " + d.fix;
    auto utf8 = [](const std::string& s) { return llvm::json::isUTF8(s) ? s : llvm::json::fixUTF8(s); };
    j_.object([&] {
      j_.attribute("ruleId", llvm::StringRef(code_string(d.code)));
      j_.attribute("ruleIndex", static_cast<int64_t>(&code_info(d.code) - all_codes().data()));
      j_.attribute("level", sarif_level(d.severity));
      j_.attributeObject("message", [&] { j_.attribute("text", utf8(text)); });
      j_.attributeArray("locations", [&] {
        j_.object([&] {
          j_.attributeObject("physicalLocation",
                             [&] { j_.attributeObject("artifactLocation", [&] { j_.attribute("uri", uri_); }); });
          if (!d.kernel.empty())
            j_.attributeArray("logicalLocations", [&] {
              j_.object([&] {
                j_.attribute("name", utf8(d.kernel));
                j_.attribute("kind", "function");
              });
            });
        });
      });
      j_.attributeObject("partialFingerprints", [&] {
        j_.attribute("hipguardFinding/v1",
                     fingerprint({code_string(d.code), d.target, path_, location, d.entry, d.kernel}));
      });
      j_.attributeObject("properties", [&] {
        if (!d.target.empty()) j_.attribute("target", utf8(d.target));
        if (!location.empty()) j_.attribute("location", utf8(location));
        if (!d.entry.empty()) j_.attribute("entry", utf8(d.entry));
        if (!d.kernel.empty()) j_.attribute("kernel", utf8(d.kernel));
        if (!d.fix.empty()) j_.attribute("fix", utf8(d.fix));
        if (d.value) j_.attribute("value", static_cast<int64_t>(*d.value));
        if (d.limit) j_.attribute("limit", static_cast<int64_t>(*d.limit));
      });
    });
  }

  llvm::raw_ostream& os_;
  OStream j_;
  std::string path_, uri_;
  std::vector<SupportRow> support_;
};

}  // namespace

std::unique_ptr<ReportWriter> make_sarif_writer(llvm::raw_ostream& os, const std::vector<TargetId>& targets) {
  return std::make_unique<SarifWriter>(os, targets);
}

}  // namespace hipguard
