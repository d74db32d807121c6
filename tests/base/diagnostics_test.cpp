// diagnostic.h: the code table, docs/diagnostics.md, line format, and test coverage
// of every code.
#include "hipguard/diagnostic.h"

#include <cstdlib>
#include <regex>
#include <type_traits>

#include "hipguard/result.h"
#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

namespace {

fs::path source_dir() { return fs::path(HIPGUARD_SOURCE_DIR); }

// Codes the shim emits and another suite covers (integration tests).
const std::set<std::string> kCoveredElsewhere = {"HG204", "HG206"};

// Whether a ParseError can be made with a code of type C.
template <class C>
constexpr bool parse_error_takes = requires(C c) {
  ParseError{c, std::string()};
};

}  // namespace

TEST(Codes, TableIsSortedUniqueAndFindable) {
  auto codes = all_codes();
  ASSERT_FALSE(codes.empty());
  std::set<std::string_view> names;
  for (size_t i = 0; i < codes.size(); ++i) {
    const auto& c = codes[i];
    std::string_view text = code_string(c.code);
    EXPECT_TRUE(std::regex_match(std::string(text), std::regex("HG[1-7][0-9][0-9]"))) << text;
    EXPECT_TRUE(std::regex_match(std::string(c.name), std::regex("[a-z0-9]+(-[a-z0-9]+)*"))) << c.name;
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name " << c.name;
    EXPECT_FALSE(c.title.empty()) << text << " has no title";
    if (i) EXPECT_LT(code_string(codes[i - 1].code), text) << "not in code order";
    EXPECT_EQ(&code_info(c.code), &c);
    EXPECT_EQ(find_code(text), &c);
  }
  EXPECT_EQ(find_code("HG999"), nullptr);
  EXPECT_EQ(find_code(""), nullptr);
}

// Code and the table are expanded from the same lines of diagnostics.def, in the same order.
TEST(Codes, EnumNamesTheTableRowOfItsLine) {
  static_assert(code_string(Code::kUnreadable) == "HG101");
  static_assert(code_string(Code::kLdsOverLimit) == "HG301");
  auto codes = all_codes();
  for (size_t i = 0; i < codes.size(); ++i) {
    EXPECT_EQ(codes[i].code, static_cast<Code>(i)) << "enumerator " << i;
    EXPECT_EQ(find_code(code_string(static_cast<Code>(i))), &codes[i]) << "enumerator " << i;
  }
  EXPECT_EQ(code_string(static_cast<Code>(codes.size())), "") << "more enumerators than table rows";
}

// A ParseError names a code of the table, never free text; the diagnostic made
// from it gets the code and its severity from the table.
TEST(Codes, ParseErrorCarriesATableCode) {
  static_assert(parse_error_takes<Code>);
  static_assert(!parse_error_takes<std::string>);
  static_assert(!parse_error_takes<std::string_view>);
  static_assert(!parse_error_takes<const char*>);
  static_assert(!parse_error_takes<int>);
  // Diagnostics and code object issues carry the code too, not its text.
  static_assert(std::is_same_v<decltype(Diagnostic::code), Code>);
  static_assert(std::is_same_v<decltype(CodeObjectIssue::code), Code>);
  ParseError e{Code::kMalformedBundle, "table out of bounds"};
  EXPECT_EQ(code_string(e.code), "HG104");
  Diagnostic d = make_diagnostic(e.code, "f", e.message, "");
  EXPECT_EQ(d.code, Code::kMalformedBundle);
  EXPECT_EQ(d.severity, Severity::Error);
  Diagnostic note = make_diagnostic(Code::kFindingsCapped, "f", "m", "");
  EXPECT_EQ(note.code, Code::kFindingsCapped);
  EXPECT_EQ(note.severity, Severity::Note);
}

// A failed comparison of codes prints their text (tests/support/print_code.h).
TEST(Codes, PrintedAsTheirText) {
  EXPECT_EQ(testing::PrintToString(Code::kLdsOverLimit), "HG301");
  EXPECT_EQ(testing::PrintToString(std::vector<Code>{Code::kUnreadable, Code::kNoCodeObject}), "{ HG101, HG201 }");
  EXPECT_EQ(testing::PrintToString(std::optional<Code>(Code::kProcessorMismatch)), "(HG202)");
}

TEST(Codes, SeverityStrings) {
  EXPECT_EQ(to_string(Severity::Note), "note");
  EXPECT_EQ(to_string(Severity::Warning), "warning");
  EXPECT_EQ(to_string(Severity::Error), "error");
}

TEST(Codes, FormatLine) {
  Diagnostic d;
  d.code = Code::kLdsOverLimit;
  d.severity = Severity::Error;
  d.file = "a.co";
  d.entry = "hipv4-amdgcn-amd-amdhsa--gfx950";
  d.kernel = "k";
  d.target = "gfx942";
  d.message = "too much LDS";
  d.fix = "use less";
  std::string line = format_line(d);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("error HG301", 0), 0u) << line;
  for (const char* part : {"[gfx942]", "a.co", "hipv4-amdgcn-amd-amdhsa--gfx950", "'k'", "too much LDS", "use less"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing: " << line;
  Diagnostic bare;
  bare.code = Code::kUnknownPayload;
  bare.message = "m";
  EXPECT_EQ(format_line(bare).rfind("error HG103", 0), 0u);
}

// docs/diagnostics.md must document every code hipguard can emit, with its name and severity.
TEST(Docs, EveryCodeIsDocumented) {
  fs::path doc = source_dir() / "docs" / "diagnostics.md";
  ASSERT_TRUE(fs::exists(doc)) << doc;
  std::string text = read_text(doc);
  for (const auto& c : all_codes()) {
    // A heading per code: "## HG301 lds-over-limit (error)".
    std::string heading = "## " + std::string(code_string(c.code)) + " " + std::string(c.name) + " (" +
                          std::string(to_string(c.severity)) + ")";
    EXPECT_NE(text.find(heading), std::string::npos) << "docs/diagnostics.md lacks the heading '" << heading << "'";
  }
  // Every error says what in the runtime rejects it (or why it is hipguard's
  // own): a "**Runtime.**" paragraph in its section.
  for (const auto& c : all_codes()) {
    if (c.severity != Severity::Error) continue;
    size_t at = text.find("## " + std::string(code_string(c.code)) + " ");
    if (at == std::string::npos) continue;  // reported above
    size_t next = text.find("\n## ", at + 1);
    std::string section = text.substr(at, next == std::string::npos ? std::string::npos : next - at);
    EXPECT_NE(section.find("**Runtime.**"), std::string::npos)
        << code_string(c.code)
        << " is an error: its section must cite the runtime source that rejects it (**Runtime.**)";
  }
  // And no stale codes.
  std::regex re("## (HG[0-9]{3}) ");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    EXPECT_NE(find_code((*it)[1].str()), nullptr) << "docs/diagnostics.md documents unknown code " << (*it)[1];
}

// Every code in all_codes() must be asserted on by some test in a layer's tests (tests/<layer>,
// tests/interpose) or tests/integration
// (HG204 and HG206 are emitted by the shim's set-up and covered by the integration tests).
// A test "asserts" a code when it names the code's constant (Code::kLdsOverLimit) or its
// string ("HG301", in a test of the output) outside this file.
TEST(Docs, EveryCodeIsExercisedByATest) {
  std::string header = read_text(source_dir() / "include" / "hipguard" / "diagnostics.def");
  ASSERT_FALSE(header.empty());
  std::map<std::string, std::string> constant;  // "HG301" -> "kLdsOverLimit"
  std::regex re("HG_DIAGNOSTIC\\((k[A-Za-z0-9]+), \"(HG[0-9]{3})\"");
  for (auto it = std::sregex_iterator(header.begin(), header.end(), re); it != std::sregex_iterator(); ++it)
    constant[(*it)[2].str()] = (*it)[1].str();
  std::string tests;
  for (const char* dir :
       {"tests/base", "tests/target", "tests/format", "tests/inputs", "tests/databases", "tests/checks", "tests/report",
        "tests/runtime", "tests/cli", "tests/interpose", "tests/integration"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(source_dir() / dir, ec))
      if (e.path().filename() != "diagnostics_test.cpp" && e.path().extension() == ".cpp") tests += read_text(e.path());
  }
  ASSERT_FALSE(tests.empty());
  for (const auto& c : all_codes()) {
    std::string code(code_string(c.code));
    if (kCoveredElsewhere.count(code)) continue;
    auto k = constant.find(code);
    ASSERT_NE(k, constant.end()) << code << " has no line in diagnostics.def";
    // ...or a string literal containing it, such as "error HG306" matched against the shim's output.
    bool used = std::regex_search(tests, std::regex("Code::" + k->second + "[),}]")) ||
                std::regex_search(tests, std::regex("\"[^\"\n]*" + code + "[^\"\n]*\""));
    EXPECT_TRUE(used) << code << " (" << c.name << ") is asserted by no layer or integration test";
  }
}
