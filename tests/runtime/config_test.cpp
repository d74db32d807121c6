// config_from: every HIPGUARD_* variable validated, from a name -> value map
// (no setenv), and the HotSwap check (HG210) on crafted bundles.
#include <map>
#include <string>

#include "hipguard/settings.h"
#include "runtime/guard.h"
#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

namespace {

// A configuration from exactly these variables (HIPGUARD_SYSFS_ROOT points at an
// empty directory unless given, so the machine's GPUs never leak in).
GuardConfig config(std::map<std::string, std::string> vars, bool secure = false) {
  if (!vars.count("HIPGUARD_SYSFS_ROOT")) vars["HIPGUARD_SYSFS_ROOT"] = "/nonexistent-hipguard-sysfs";
  return config_from(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      secure);
}

std::vector<const Diagnostic*> with_code(const GuardConfig& c, Code code) {
  std::vector<const Diagnostic*> out;
  for (const auto& d : c.setup_diagnostics)
    if (d.code == code) out.push_back(&d);
  return out;
}

// Exactly one HG601 line, naming the variable, the value and the accepted values.
void expect_refused(const GuardConfig& c, const std::string& var, const std::string& value,
                    const std::string& accepted) {
  auto bad = with_code(c, Code::kBadSetting);
  ASSERT_EQ(bad.size(), 1u) << dump(c.setup_diagnostics);
  EXPECT_EQ(bad[0]->severity, Severity::Error);
  std::string line = format_line(*bad[0]);
  EXPECT_NE(line.find(var + "='" + value + "'"), std::string::npos) << line;
  EXPECT_NE(line.find(accepted), std::string::npos) << line;
  EXPECT_TRUE(c.config_error);
}

}  // namespace

TEST(Config, DefaultsWithNothingSet) {
  GuardConfig c = config({{"HIPGUARD_TARGET", "gfx942"}});
  EXPECT_EQ(c.mode, Mode::Warn);
  EXPECT_EQ(c.exit_code, 86);
  EXPECT_FALSE(c.fail_on.has_value()) << "warn mode never changes the exit status by default";
  EXPECT_EQ(c.log_level, LogLevel::Info);
  EXPECT_FALSE(c.config_error);
  EXPECT_TRUE(c.setup_diagnostics.empty()) << dump(c.setup_diagnostics);
  EXPECT_TRUE(c.hotswap_tool.empty());
}

TEST(Config, ModeIsCaseInsensitive) {
  for (const char* v : {"strict", "STRICT", "Strict"})
    EXPECT_EQ(config({{"HIPGUARD_MODE", v}}).mode, Mode::Strict) << v;
  for (const char* v : {"warn", "WARN"}) EXPECT_EQ(config({{"HIPGUARD_MODE", v}}).mode, Mode::Warn) << v;
  for (const char* v : {"off", "Off"}) EXPECT_EQ(config({{"HIPGUARD_MODE", v}}).mode, Mode::Off) << v;
  GuardConfig s = config({{"HIPGUARD_MODE", "STRICT"}, {"HIPGUARD_TARGET", "gfx942"}});
  EXPECT_FALSE(s.config_error);
  ASSERT_TRUE(s.fail_on.has_value());
  EXPECT_EQ(*s.fail_on, Severity::Error) << "strict mode fails the exit status on errors";
  EXPECT_EQ(config({{"HIPGUARD_MODE", ""}}).mode, Mode::Warn) << "empty counts as unset";
}

TEST(Config, UnknownModeIsStrictAndSaysSo) {
  for (const char* v : {"strcit", "enforce", " strict", "1"}) {
    GuardConfig c = config({{"HIPGUARD_MODE", v}, {"HIPGUARD_TARGET", "gfx942"}});
    EXPECT_EQ(c.mode, Mode::Strict) << v;
    expect_refused(c, "HIPGUARD_MODE", v, "warn, strict, off");
    EXPECT_NE(format_line(*with_code(c, Code::kBadSetting)[0]).find("running in strict mode"), std::string::npos);
  }
}

TEST(Config, ExitCode) {
  EXPECT_EQ(config({{"HIPGUARD_EXIT_CODE", "1"}}).exit_code, 1);
  EXPECT_EQ(config({{"HIPGUARD_EXIT_CODE", "255"}}).exit_code, 255);
  EXPECT_EQ(config({{"HIPGUARD_EXIT_CODE", "42"}}).exit_code, 42);
  EXPECT_FALSE(config({{"HIPGUARD_EXIT_CODE", "42"}, {"HIPGUARD_TARGET", "gfx942"}}).config_error);
  for (const char* v : {"0", "256", "300", "-1", "abc", "12x", " 7", "+7", "99999999999999999999"}) {
    GuardConfig c = config({{"HIPGUARD_EXIT_CODE", v}, {"HIPGUARD_TARGET", "gfx942"}});
    EXPECT_EQ(c.exit_code, 86) << v << ": the documented fallback, which still fails the process";
    expect_refused(c, "HIPGUARD_EXIT_CODE", v, "from 1 to 255");
  }
  GuardConfig zero = config({{"HIPGUARD_EXIT_CODE", "0"}, {"HIPGUARD_TARGET", "gfx942"}});
  EXPECT_NE(format_line(*with_code(zero, Code::kBadSetting)[0]).find("0 would let a failing process pass"),
            std::string::npos);
}

TEST(Config, FailOn) {
  GuardConfig e = config({{"HIPGUARD_FAIL_ON", "error"}});
  ASSERT_TRUE(e.fail_on.has_value());
  EXPECT_EQ(*e.fail_on, Severity::Error);
  EXPECT_TRUE(e.fails_on(Severity::Error));
  EXPECT_FALSE(e.fails_on(Severity::Warning));
  GuardConfig w = config({{"HIPGUARD_FAIL_ON", "Warning"}});
  EXPECT_TRUE(w.fails_on(Severity::Warning));
  EXPECT_FALSE(w.fails_on(Severity::Note));
  EXPECT_FALSE(config({{"HIPGUARD_FAIL_ON", "none"}}).fail_on.has_value());
  // "none" never weakens strict mode.
  GuardConfig strict_none = config({{"HIPGUARD_MODE", "strict"}, {"HIPGUARD_FAIL_ON", "NONE"}});
  EXPECT_TRUE(strict_none.fails_on(Severity::Error));
  // Unknown: the stricter choice (warnings too).
  GuardConfig bad = config({{"HIPGUARD_FAIL_ON", "errors"}, {"HIPGUARD_TARGET", "gfx942"}});
  expect_refused(bad, "HIPGUARD_FAIL_ON", "errors", "error, warning, none");
  EXPECT_TRUE(bad.fails_on(Severity::Warning));
}

TEST(Config, LogLevelNamesAndAmdLogLevelNumbers) {
  std::map<std::string, LogLevel> expected = {
      {"trace", LogLevel::Trace},
      {"DEBUG", LogLevel::Debug},
      {"info", LogLevel::Info},
      {"Warn", LogLevel::Warn},
      {"warning", LogLevel::Warn},
      {"error", LogLevel::Error},
      {"off", LogLevel::Off},
      // AMD_LOG_LEVEL: 0 off, 1 error, 2 warning, 3 info, 4 debug, 5 extra debug.
      {"0", LogLevel::Off},
      {"1", LogLevel::Error},
      {"2", LogLevel::Warn},
      {"3", LogLevel::Info},
      {"4", LogLevel::Debug},
      {"5", LogLevel::Trace}};
  for (const auto& [v, level] : expected) {
    GuardConfig c = config({{"HIPGUARD_LOG_LEVEL", v}, {"HIPGUARD_TARGET", "gfx942"}});
    EXPECT_EQ(c.log_level, level) << v;
    EXPECT_FALSE(c.config_error) << v;
  }
  for (const char* v : {"verbose", "6", "-1", "inf"}) {
    GuardConfig c = config({{"HIPGUARD_LOG_LEVEL", v}, {"HIPGUARD_TARGET", "gfx942"}});
    EXPECT_EQ(c.log_level, LogLevel::Info) << v;
    expect_refused(c, "HIPGUARD_LOG_LEVEL", v, "AMD_LOG_LEVEL");
  }
}

// HIPGUARD_HEAP is read by the shim's heap itself (interpose/private_heap.cpp);
// here a value it does not know is said, and its name is not a misspelling.
TEST(Config, HeapSettingValidated) {
  for (const char* v : {"private", "malloc", "MALLOC"}) {
    GuardConfig c = config({{"HIPGUARD_HEAP", v}, {"HIPGUARD_TARGET", "gfx942"}});
    EXPECT_FALSE(c.config_error) << v << dump(c.setup_diagnostics);
  }
  for (const char* v : {"mmap", "glibc"})
    expect_refused(config({{"HIPGUARD_HEAP", v}, {"HIPGUARD_TARGET", "gfx942"}}), "HIPGUARD_HEAP", v,
                   "private, malloc");
}

TEST(Config, BadTargetItemsAreNamedAndNeverMeanNotSet) {
  // Each item that does not parse is one HG206 naming it; the valid ones are kept.
  GuardConfig c = config({{"HIPGUARD_TARGET", "gfx9422,gfx90a,GFX942"}});
  ASSERT_EQ(c.targets.size(), 2u);
  EXPECT_EQ(c.targets[0].processor, "gfx90a");
  EXPECT_EQ(c.targets[1].processor, "gfx942") << "target names are case-insensitive";
  auto bad = with_code(c, Code::kBadTarget);
  ASSERT_EQ(bad.size(), 1u) << dump(c.setup_diagnostics);
  EXPECT_NE(bad[0]->message.find("'gfx9422'"), std::string::npos) << bad[0]->message;
  EXPECT_TRUE(c.config_error);
  EXPECT_TRUE(with_code(c, Code::kDeviceChecksSkipped).empty()) << dump(c.setup_diagnostics);

  for (const char* v : {"gfx9422", " gfx942", "gfx942;gfx90a", "gfx942, gfx90a", "gfx942,,gfx90a"}) {
    GuardConfig one = config({{"HIPGUARD_TARGET", v}, {"HIPGUARD_MODE", "strict"}});
    EXPECT_TRUE(one.config_error) << v;
    EXPECT_EQ(one.mode, Mode::Strict);
    auto items = with_code(one, Code::kBadTarget);
    ASSERT_EQ(items.size(), 1u) << v << ": " << dump(one.setup_diagnostics);
  }
  // No valid item left: said exactly so, not "HIPGUARD_TARGET not set".
  GuardConfig none = config({{"HIPGUARD_TARGET", "gfx942;gfx90a"}});
  EXPECT_TRUE(none.targets.empty());
  EXPECT_NE(with_code(none, Code::kBadTarget)[0]->message.find("'gfx942;gfx90a'"), std::string::npos);
  auto skipped = with_code(none, Code::kDeviceChecksSkipped);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0]->message.find("has no valid entry"), std::string::npos) << skipped[0]->message;
  EXPECT_EQ(skipped[0]->message.find("not set"), std::string::npos) << skipped[0]->message;
}

TEST(Config, ReportPathIgnoredWhenSecure) {
  EXPECT_EQ(config({{"HIPGUARD_REPORT", "r-%p.json"}}).report_path, "r-%p.json");
  EXPECT_EQ(config({{"HIPGUARD_REPORT", "r-%p.json"}}, /*secure=*/true).report_path, "");
}

TEST(Config, KfdTopologyWhenTargetUnset) {
  GuardConfig c = config({{"HIPGUARD_SYSFS_ROOT", std::string(HIPGUARD_SOURCE_DIR) + "/tests/fixtures/sysfs/mi300x"}});
  ASSERT_EQ(c.targets.size(), 1u);
  EXPECT_EQ(c.targets[0].processor, "gfx942");
  EXPECT_TRUE(c.setup_diagnostics.empty()) << dump(c.setup_diagnostics);
  GuardConfig none = config({});
  auto skipped = with_code(none, Code::kDeviceChecksSkipped);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0]->message.find("HIPGUARD_TARGET not set"), std::string::npos);
}

TEST(Config, TargetsAreOneProcessUnlessAnEntryStandsForAlternatives) {
  // The KFD's GPUs, and HIPGUARD_TARGET entries that each name one configuration, share the runtime's batch lookup.
  EXPECT_TRUE(config({{"HIPGUARD_SYSFS_ROOT", std::string(HIPGUARD_SOURCE_DIR) + "/tests/fixtures/sysfs/mi300x"}})
                  .machine.one_process);
  GuardConfig two = config({{"HIPGUARD_TARGET", "gfx90a:xnack+,gfx90a:xnack-"}});
  EXPECT_EQ(two.targets.size(), 2u);
  EXPECT_TRUE(two.machine.one_process);
  // gfx906 is MI50 (sramecc+) or Radeon VII (sramecc-): alternatives, not two GPUs.
  GuardConfig alt = config({{"HIPGUARD_TARGET", "mi300x,gfx906"}});
  EXPECT_EQ(alt.targets.size(), 3u);
  EXPECT_FALSE(alt.machine.one_process);
  EXPECT_EQ(alt.machine.runtime, nullptr) << "the shim sets the runtime; the core reads no environment for it";
}

TEST(Config, HotSwapToolFromHsaToolsLib) {
  EXPECT_EQ(config({{"HSA_TOOLS_LIB", "libhsa-hotswap.so"}}).hotswap_tool, "libhsa-hotswap.so");
  EXPECT_EQ(config({{"HSA_TOOLS_LIB", "librocprofiler64.so /opt/rocm/lib/libamd_comgr_hotswap_tool.so"}}).hotswap_tool,
            "libamd_comgr_hotswap_tool.so");
  EXPECT_EQ(config({{"HSA_TOOLS_LIB", "librocprofiler64.so"}}).hotswap_tool, "");
  EXPECT_EQ(config({}).hotswap_tool, "");
}

TEST(Config, OffModeNeverChangesTheExitStatus) {
  EXPECT_FALSE(config({{"HIPGUARD_MODE", "off"}, {"HIPGUARD_FAIL_ON", "error"}}).fail_on.has_value());
}

TEST(Config, MisspelledVariableNamesAreSaid) {
  auto cfg = [](std::map<std::string, std::string> vars) {
    vars["HIPGUARD_TARGET"] = "gfx942";
    std::vector<std::string> names;
    for (const auto& [k, v] : vars) names.push_back(k);
    return config_from(
        [vars](const char* name) -> const char* {
          auto it = vars.find(name);
          return it == vars.end() ? nullptr : it->second.c_str();
        },
        false, names);
  };
  // Meant as HIPGUARD_MODE: said, and strict (the stricter choice).
  for (const char* name : {"HIPGUARD_MDOE", "hipguard_mode", "HIPGUARD_MODES"}) {
    GuardConfig c = cfg({{name, "strict"}});
    EXPECT_EQ(c.mode, Mode::Strict) << name;
    auto bad = with_code(c, Code::kBadSetting);
    ASSERT_EQ(bad.size(), 1u) << name << dump(c.setup_diagnostics);
    EXPECT_NE(bad[0]->message.find(std::string(name) + " is not a hipguard variable (did you mean HIPGUARD_MODE?)"),
              std::string::npos)
        << bad[0]->message;
  }
  // HIPGUARD_MODE set as well: it decides; the misspelling is still said.
  GuardConfig both = cfg({{"HIPGUARD_MODE", "warn"}, {"HIPGUARD_MDOE", "strict"}});
  EXPECT_EQ(both.mode, Mode::Warn);
  EXPECT_EQ(with_code(both, Code::kBadSetting).size(), 1u);
  GuardConfig exit = cfg({{"HIPGUARD_EXITCODE", "3"}});
  EXPECT_EQ(exit.mode, Mode::Warn);
  ASSERT_EQ(with_code(exit, Code::kBadSetting).size(), 1u);
  EXPECT_NE(with_code(exit, Code::kBadSetting)[0]->message.find("did you mean HIPGUARD_EXIT_CODE?"), std::string::npos);
  // Other people's HIPGUARD_ variables (the simulated runtime's, the CI script's) are not ours to judge.
  GuardConfig others = cfg({{"HIPGUARD_SIM_GPUS", "gfx942"},
                            {"HIPGUARD_SMOKE_SIM", "1"},
                            {"HIPGUARD_SIM_LOG", "1"},
                            {"HIPGUARD_MODE", "strict"},
                            {"HIPGUARD_REPORT", "r.json"},
                            {"HIPGUARD_HEAP", "malloc"}});
  EXPECT_TRUE(others.setup_diagnostics.empty()) << dump(others.setup_diagnostics);
}

namespace {
ByteVec co_for(const std::string& proc) {
  CodeObjectSpec s;
  s.target = "amdgcn-amd-amdhsa--" + proc;
  return make_code_object(s);
}
}  // namespace

TEST(HotSwap, ForeignEntryForwardedInsteadOfTheNativeOne) {
  ByteVec fatbin = make_bundle({{"host-x86_64-unknown-linux-gnu--", {}},
                                {"hipv4-amdgcn-amd-amdhsa--gfx942", co_for("gfx942")},
                                {"hipv4-amdgcn-amd-amdhsa--gfx950", co_for("gfx950")},
                                {"hipv4-amdgcn-amd-amdhsa--gfx1250", co_for("gfx1250")}});
  std::vector<TargetId> targets = {target("gfx942"), target("gfx90a"), target("mi355x")};
  ImageReport r = check_image(span(fatbin), "app", targets);
  auto ds = hotswap_forwarding(r, targets, "libhsa-hotswap.so");
  ASSERT_EQ(ds.size(), 2u) << dump(ds) << "one per gfx942 / gfx950 target, none for gfx90a";
  EXPECT_EQ(ds[0].code, Code::kHotSwapForwarding);
  EXPECT_EQ(ds[0].severity, Severity::Warning);
  EXPECT_EQ(ds[0].entry, "hipv4-amdgcn-amd-amdhsa--gfx1250");
  EXPECT_EQ(ds[0].target, "gfx942");
  std::string line = format_line(ds[0]);
  EXPECT_NE(line.find("libhsa-hotswap.so"), std::string::npos) << line;
  EXPECT_NE(line.find("(hipv4-amdgcn-amd-amdhsa--gfx942)"), std::string::npos) << "names the native entry: " << line;
  EXPECT_NE(line.find("unset HSA_TOOLS_LIB"), std::string::npos) << line;
  EXPECT_NE(format_line(ds[1]).find("hipv4-amdgcn-amd-amdhsa--gfx950"), std::string::npos);
  // Without the tool: nothing.
  EXPECT_TRUE(hotswap_forwarding(r, targets, "").empty());
  // An entry naming features is forwarded all the same: the processor decides.
  ByteVec featured = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", co_for("gfx942")},
                                  {"hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+", co_for("gfx1250")}});
  auto featured_ds = hotswap_forwarding(check_image(span(featured), "app", targets), targets, "libhsa-hotswap.so");
  ASSERT_EQ(featured_ds.size(), 1u) << dump(featured_ds);
  EXPECT_EQ(featured_ds[0].entry, "hipv4-amdgcn-amd-amdhsa--gfx1250:xnack+");
  // Without a gfx1250 entry: nothing.
  ByteVec plain = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", co_for("gfx942")}});
  EXPECT_TRUE(hotswap_forwarding(check_image(span(plain), "app", targets), targets, "libhsa-hotswap.so").empty());
}

// The settings table (settings.def) is what users read: each variable has its row in the README's
// table of settings (HIPGUARD_SYSFS_ROOT, for tests, and HIPGUARD_SHIM, `hipguard run`'s, in its
// text) and is named among the variables HG601 knows (docs/diagnostics.md); a variable the
// configuration refuses quotes the table's accepted values.
TEST(Config, EverySettingIsDocumentedAndRefusedAsTheTableSays) {
  const std::string readme = read_text(std::string(HIPGUARD_SOURCE_DIR) + "/README.md");
  const std::string diagnostics = read_text(std::string(HIPGUARD_SOURCE_DIR) + "/docs/diagnostics.md");
  const size_t hg601 = diagnostics.find("## HG601");
  ASSERT_NE(hg601, std::string::npos);
  const std::string hg601_section = diagnostics.substr(hg601, diagnostics.find("\n## ", hg601 + 1) - hg601);
  for (const SettingInfo& s : all_settings()) {
    const std::string name = std::string("`") + s.variable + "`";
    EXPECT_NE(readme.find(name), std::string::npos) << s.variable << " is not in the README";
    EXPECT_NE(hg601_section.find(name), std::string::npos) << s.variable << " is not in HG601's list";
  }
  EXPECT_EQ(std::to_string(config({{"HIPGUARD_TARGET", "gfx942"}}).exit_code), setting(Setting::ExitCode).fallback);
  for (Setting s : {Setting::Mode, Setting::ExitCode, Setting::FailOn, Setting::LogLevel, Setting::Heap})
    expect_refused(config({{variable(s), "not-a-value"}, {"HIPGUARD_TARGET", "gfx942"}}), variable(s), "not-a-value",
                   std::string(setting(s).accepted));
}
