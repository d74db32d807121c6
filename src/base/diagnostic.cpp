// The diagnostic code table (expanded from diagnostics.def), line format and text escaping.
#include "hipguard/diagnostic.h"

#include <array>

namespace hipguard {
namespace {
constexpr std::array kCodes = {
#define HG_DIAGNOSTIC(constant, code, name, severity, title, fix) \
  CodeInfo{Code::constant, name, Severity::severity, title, fix},
#include "hipguard/diagnostics.def"
#undef HG_DIAGNOSTIC
};
constexpr bool indexed_by_code() {
  for (size_t i = 0; i < kCodes.size(); ++i)
    if (kCodes[i].code != static_cast<Code>(i)) return false;
  return true;
}
static_assert(indexed_by_code(), "code_info(c) is kCodes[c]");
}  // namespace

bool rejects_code_object(const Diagnostic& d) {
  return d.severity == Severity::Error && (d.code == Code::kBadKernelMetadata || d.code == Code::kWorkgroupSize);
}

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::span<const CodeInfo> all_codes() { return kCodes; }

const CodeInfo& code_info(Code c) { return kCodes[static_cast<size_t>(c)]; }

const CodeInfo* find_code(std::string_view text) {
  for (const auto& info : kCodes)
    if (code_string(info.code) == text) return &info;
  return nullptr;
}

Diagnostic make_diagnostic(Code c, std::string file, std::string message, std::string fix) {
  Diagnostic d;
  d.code = c;
  d.severity = code_info(c).severity;
  d.file = std::move(file);
  d.message = std::move(message);
  d.fix = std::move(fix);
  return d;
}

std::string format_line(const Diagnostic& d) {
  std::string s;
  s += to_string(d.severity);
  s += ' ';
  s += code_string(d.code);
  if (!d.target.empty()) s += " [" + d.target + "]";
  s += ' ';
  s += d.file.empty() ? std::string("<input>") : d.file;
  if (!d.entry.empty()) s += " (" + d.entry + ")";
  if (!d.kernel.empty()) s += " kernel '" + d.kernel + "'";
  s += ": " + d.message;
  if (!d.fix.empty()) s += " -- fix: " + d.fix;
  return escape_text(s);
}

namespace {
// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), 0 when there is none.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}
}  // namespace

std::string escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    // Printable ASCII other than the backslash is the common case: copied in runs.
    size_t run = i;
    while (run < s.size() && static_cast<unsigned char>(s[run]) >= 0x20 && static_cast<unsigned char>(s[run]) < 0x7f &&
           s[run] != '\\')
      ++run;
    if (run > i) {
      out.append(s.substr(i, run - i));
      i = run;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_length(s, i);
    if (c == '\\') {
      out += "\\\\";
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      n = 1;
    } else {
      out.append(s.substr(i, n));
    }
    i += n ? n : 1;
  }
  return out;
}

}  // namespace hipguard
