// target.h: processor table, target-ID parsing, product aliases, and the
// code-object/device compatibility rule.
//
// Expected values come from LLVM AMDGPUUsage ("AMDGPU Processors", "Target ID",
// "Generic Processors"): gfx942 and gfx950 are members of gfx9-4-generic,
// gfx1030 of gfx10-3-generic; gfx1030 has neither xnack nor sramecc; a feature
// left unspecified matches either setting; generic version must be >= 1.
#include "hipguard/diagnostic.h"
#include "hipguard/target.h"
#include "print_code.h"

#include <gtest/gtest.h>

using namespace hipguard;

namespace {

TargetId must_parse(std::string_view text) {
  auto t = parse_target(text);
  EXPECT_TRUE(t) << text << ": " << t.error().message;
  return t ? *t : TargetId{};
}

}  // namespace

TEST(Target, ParsesFeaturesCanonically) {
  auto t = parse_target_id("gfx942:xnack-:sramecc+");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->str(), "gfx942:sramecc+:xnack-");
  EXPECT_EQ(t->sramecc, Feature::On);
  EXPECT_EQ(t->xnack, Feature::Off);
}

TEST(Target, PlainProcessorLeavesFeaturesAny) {
  auto t = parse_target_id("gfx942");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->processor, "gfx942");
  EXPECT_EQ(t->xnack, Feature::Any);
  EXPECT_EQ(t->sramecc, Feature::Any);
  EXPECT_EQ(t->str(), "gfx942");
  EXPECT_TRUE(t->alias.empty());
}

TEST(Target, ProcessorWithoutFeaturesMarksThemUnsupported) {
  // gfx1030 (RDNA2) supports neither xnack nor sramecc (AMDGPUUsage processor table).
  auto t = parse_target_id("gfx1030");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->xnack, Feature::Unsupported);
  EXPECT_EQ(t->sramecc, Feature::Unsupported);
  EXPECT_EQ(t->str(), "gfx1030");
}

TEST(Target, SingleFeature) {
  auto t = parse_target_id("gfx90a:xnack+");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->processor, "gfx90a");
  EXPECT_EQ(t->xnack, Feature::On);
  EXPECT_EQ(t->sramecc, Feature::Any);
  EXPECT_EQ(t->str(), "gfx90a:xnack+");
}

TEST(Target, GenericProcessorIsATargetId) {
  auto t = parse_target_id("gfx10-3-generic");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->processor, "gfx10-3-generic");
}

TEST(Target, RejectsFeatureTheProcessorLacks) {
  auto t = parse_target_id("gfx1030:xnack+");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Code::kBadTarget);
  EXPECT_NE(t.error().message.find("no xnack"), std::string::npos) << t.error().message;
  auto u = parse_target_id("gfx1100:sramecc-");
  ASSERT_FALSE(u);
  EXPECT_FALSE(u.error().message.empty());
}

TEST(Target, RejectsBadInputs) {
  for (const char* bad :
       {"", "gfx", "gfx9999", "nvidia", "sm_90", "gfx942:xnack", "gfx942:xnack*", "gfx942:", "gfx942:xnack+:xnack-",
        "gfx942:sramecc+:sramecc+", "gfx942:foo+", "gfx942::xnack+", ":xnack+", "gfx942 "}) {
    auto t = parse_target_id(bad);
    ASSERT_FALSE(t) << "'" << bad << "' was accepted";
    EXPECT_FALSE(t.error().message.empty()) << "no error message for '" << bad << "'";
    EXPECT_FALSE(parse_target(bad)) << "'" << bad << "' was accepted by parse_target";
  }
}

TEST(Target, ProductNamesAreNotTargetIds) { EXPECT_FALSE(parse_target_id("mi300x")); }

TEST(Target, ProductAliases) {
  // AMD product -> the target ID it runs with as shipped (driver defaults: xnack
  // off, SRAM ECC on for Instinct boards; rocminfo on those boards).
  struct {
    const char* product;
    const char* processor;
    const char* shipped;
  } cases[] = {{"mi300x", "gfx942", "gfx942:sramecc+:xnack-"},
               {"mi325x", "gfx942", "gfx942:sramecc+:xnack-"},
               {"mi300a", "gfx942", "gfx942:sramecc+:xnack-"},
               {"mi355x", "gfx950", "gfx950:sramecc+:xnack-"},
               {"mi350x", "gfx950", "gfx950:sramecc+:xnack-"},
               {"mi250x", "gfx90a", "gfx90a:sramecc+:xnack-"},
               {"mi250", "gfx90a", "gfx90a:sramecc+:xnack-"},
               {"mi210", "gfx90a", "gfx90a:sramecc+:xnack-"},
               {"mi100", "gfx908", "gfx908:sramecc+:xnack-"},
               {"mi50", "gfx906", "gfx906:sramecc+:xnack-"},
               {"radeon-vii", "gfx906", "gfx906:sramecc-:xnack-"},
               {"mi25", "gfx900", "gfx900:xnack-"},
               {"w7900", "gfx1100", "gfx1100"},
               {"rx9060xt", "gfx1200", "gfx1200"},
               {"rx9070", "gfx1201", "gfx1201"},
               {"ryzen-ai-max", "gfx1151", "gfx1151"}};
  for (const auto& c : cases) {
    TargetId t = must_parse(c.product);
    EXPECT_EQ(t.processor, c.processor) << c.product;
    EXPECT_EQ(t.alias, c.product);
    EXPECT_EQ(t.str(), c.shipped) << "a product is checked as it ships";
  }
  TargetId upper = must_parse("MI355X");
  EXPECT_EQ(upper.processor, "gfx950");
  EXPECT_EQ(upper.alias, "mi355x");
  EXPECT_EQ(find_processor(upper.processor)->lds_bytes, 163840u);
  // Every product names a processor of the table, and its defaults are settings the processor has.
  for (const auto& p : all_products()) {
    const ProcessorInfo* info = find_processor(p.processor);
    ASSERT_NE(info, nullptr) << p.name;
    EXPECT_EQ(p.xnack != Feature::Unsupported, info->xnack) << p.name;
    EXPECT_EQ(p.sramecc != Feature::Unsupported, info->sramecc) << p.name;
  }
}

TEST(Target, ProductAliasWithFeatures) {
  TargetId t = must_parse("mi300x:xnack+");
  EXPECT_EQ(t.processor, "gfx942");
  EXPECT_EQ(t.xnack, Feature::On);
  EXPECT_EQ(t.str(), "gfx942:sramecc+:xnack+") << "the named setting, the shipped default for the other";
  EXPECT_EQ(must_parse("mi250x:sramecc-").str(), "gfx90a:sramecc-:xnack-");
  EXPECT_FALSE(parse_target("mi300x:bogus+"));
  EXPECT_FALSE(parse_target("mi999x"));
}

// A bare processor is checked in every configuration its GPUs ship with.
TEST(Target, BareProcessorResolvesToShippedConfigurations) {
  auto ids = [](std::string_view text) {
    auto ts = resolve_target(text);
    if (!ts) return std::vector<std::string>{"error: " + ts.error().message};
    std::vector<std::string> out;
    for (const auto& t : *ts) out.push_back(t.str());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids("gfx90a"), (V{"gfx90a:sramecc+:xnack-"}));
  EXPECT_EQ(ids("gfx942"), (V{"gfx942:sramecc+:xnack-"}));
  EXPECT_EQ(ids("gfx950"), (V{"gfx950:sramecc+:xnack-"}));
  EXPECT_EQ(ids("gfx906"), (V{"gfx906:sramecc+:xnack-", "gfx906:sramecc-:xnack-"})) << "MI50/MI60 and Radeon VII";
  EXPECT_EQ(ids("gfx906:sramecc-"), (V{"gfx906:sramecc-:xnack-"}));
  EXPECT_EQ(ids("gfx90a:xnack+"), (V{"gfx90a:sramecc+:xnack+"}));
  EXPECT_EQ(ids("gfx90a:sramecc-:xnack+"), (V{"gfx90a:sramecc-:xnack+"})) << "fully given: as given";
  EXPECT_EQ(ids("gfx1030"), (V{"gfx1030"})) << "no xnack/sramecc settings";
  EXPECT_EQ(ids("gfx940"), (V{"gfx940:xnack-"})) << "no product: the driver's xnack default";
  EXPECT_EQ(ids("gfx902"), (V{"gfx902"})) << "no known default: either setting";
  EXPECT_EQ(ids("mi250x:xnack+"), (V{"gfx90a:sramecc+:xnack+"}));
  EXPECT_EQ(ids("gfx9422"), (V{"error: unknown processor 'gfx9422'"}));
  auto gfx906 = resolve_target("gfx906");
  ASSERT_TRUE(gfx906);
  ASSERT_EQ(gfx906->size(), 2u);
  EXPECT_EQ((*gfx906)[0].alias, "gfx906 as shipped in MI50, MI60");
  EXPECT_EQ((*gfx906)[1].alias, "gfx906 as shipped in AMD Radeon VII");
}

TEST(Target, ProcessorTableFacts) {
  // EF_AMDGPU_MACH values: llvm/BinaryFormat/ELF.h and the reference §2.
  struct {
    const char* name;
    uint32_t mach;
    uint32_t lds;
  } rows[] = {{"gfx90a", 0x03f, 65536},         {"gfx942", 0x04c, 65536},   {"gfx950", 0x04f, 163840},
              {"gfx1030", 0x036, 65536},        {"gfx1250", 0x049, 327680}, {"gfx9-4-generic", 0x05f, 65536},
              {"gfx10-3-generic", 0x053, 65536}};
  for (const auto& r : rows) {
    const ProcessorInfo* p = find_processor(r.name);
    ASSERT_NE(p, nullptr) << r.name;
    EXPECT_EQ(p->mach, r.mach) << r.name;
    EXPECT_EQ(p->lds_bytes, r.lds) << r.name;
    EXPECT_EQ(find_processor_by_mach(r.mach), p) << r.name;
  }
  EXPECT_EQ(find_processor("gfx942")->generic, "gfx9-4-generic");
  EXPECT_EQ(find_processor("gfx950")->generic, "gfx9-4-generic");
  EXPECT_TRUE(find_processor("gfx9-4-generic")->is_generic);
  // KFD gfx_target_version 90402 -> gfx942; generic rows are never a device.
  EXPECT_EQ(find_processor_by_version(9, 4, 2), find_processor("gfx942"));
  EXPECT_EQ(find_processor_by_version(9, 5, 0), find_processor("gfx950"));
  EXPECT_EQ(find_processor_by_version(9, 9, 9), nullptr);
  EXPECT_EQ(find_processor_by_mach(0x0fe), nullptr);
  // Unique names and machs.
  for (const auto& a : all_processors())
    for (const auto& b : all_processors())
      if (&a != &b) {
        EXPECT_NE(a.name, b.name);
        EXPECT_NE(a.mach, b.mach) << a.name << " / " << b.name;
      }
}

// ---- match_target -----------------------------------------------------------

TEST(Match, NativeSameProcessor) {
  EXPECT_EQ(match_target(must_parse("gfx942"), 0, must_parse("gfx942")).kind, Match::Native);
  EXPECT_EQ(match_target(must_parse("gfx90a:xnack-"), 0, must_parse("mi250x")).kind, Match::Native);
}

TEST(Match, GenericFamily) {
  TargetId g = must_parse("gfx9-4-generic");
  EXPECT_EQ(match_target(g, 1, must_parse("gfx942")).kind, Match::Generic);
  EXPECT_EQ(match_target(g, 1, must_parse("gfx950")).kind, Match::Generic);
  EXPECT_EQ(match_target(g, 1, must_parse("mi300x")).kind, Match::Generic);
  EXPECT_EQ(match_target(g, 2, must_parse("gfx950")).kind, Match::Generic);
  EXPECT_EQ(match_target(must_parse("gfx10-3-generic"), 1, must_parse("gfx1030")).kind, Match::Generic);
  EXPECT_EQ(match_target(must_parse("gfx10-3-generic"), 1, must_parse("gfx1036")).kind, Match::Generic);
}

TEST(Match, GenericOutsideItsFamily) {
  auto m = match_target(must_parse("gfx9-4-generic"), 1, must_parse("gfx90a"));
  EXPECT_EQ(m.kind, Match::ProcessorMismatch);
  EXPECT_FALSE(m.detail.empty());
  EXPECT_EQ(match_target(must_parse("gfx10-3-generic"), 1, must_parse("gfx1010")).kind, Match::ProcessorMismatch);
  EXPECT_EQ(match_target(must_parse("gfx9-generic"), 1, must_parse("gfx942")).kind, Match::ProcessorMismatch);
}

TEST(Match, GenericVersionZeroIsTooOld) {
  // AMDGPUUsage "Generic Processor Versioning": EF_AMDGPU_GENERIC_VERSION_MIN is 1.
  auto m = match_target(must_parse("gfx9-4-generic"), 0, must_parse("gfx942"));
  EXPECT_EQ(m.kind, Match::GenericTooOld);
  EXPECT_NE(m.detail.find("0"), std::string::npos) << m.detail;
}

TEST(Match, GenericDoesNotRunOnANonMemberEvenWithVersion) {
  // A specific processor's code never matches the generic pseudo-processor as a device.
  EXPECT_EQ(match_target(must_parse("gfx942"), 0, must_parse("gfx9-4-generic")).kind, Match::ProcessorMismatch);
}

TEST(Match, ProcessorMismatch) {
  auto m = match_target(must_parse("gfx950"), 0, must_parse("gfx942"));
  EXPECT_EQ(m.kind, Match::ProcessorMismatch);
  EXPECT_NE(m.detail.find("gfx950"), std::string::npos) << m.detail;
  EXPECT_NE(m.detail.find("gfx942"), std::string::npos) << m.detail;
  // Newer is not backwards compatible either way, nor are same-generation siblings.
  EXPECT_EQ(match_target(must_parse("gfx942"), 0, must_parse("gfx950")).kind, Match::ProcessorMismatch);
  EXPECT_EQ(match_target(must_parse("gfx940"), 0, must_parse("gfx942")).kind, Match::ProcessorMismatch);
  EXPECT_EQ(match_target(must_parse("gfx1030"), 0, must_parse("gfx1031")).kind, Match::ProcessorMismatch);
}

TEST(Match, XnackMismatch) {
  auto m = match_target(must_parse("gfx90a:xnack+"), 0, must_parse("gfx90a:xnack-"));
  EXPECT_EQ(m.kind, Match::FeatureMismatch);
  EXPECT_NE(m.detail.find("xnack+"), std::string::npos) << m.detail;
  EXPECT_NE(m.detail.find("xnack-"), std::string::npos) << m.detail;
  EXPECT_EQ(match_target(must_parse("gfx942:xnack-"), 0, must_parse("gfx942:xnack+")).kind, Match::FeatureMismatch);
}

TEST(Match, SrameccMismatch) {
  auto m = match_target(must_parse("gfx942:sramecc-"), 0, must_parse("gfx942:sramecc+"));
  EXPECT_EQ(m.kind, Match::FeatureMismatch);
  EXPECT_NE(m.detail.find("sramecc"), std::string::npos) << m.detail;
  // Both differ: both are named.
  auto both = match_target(must_parse("gfx942:sramecc-:xnack+"), 0, must_parse("gfx942:sramecc+:xnack-"));
  EXPECT_EQ(both.kind, Match::FeatureMismatch);
  EXPECT_NE(both.detail.find("sramecc"), std::string::npos) << both.detail;
  EXPECT_NE(both.detail.find("xnack"), std::string::npos) << both.detail;
}

TEST(Match, AnyMatchesBothSettings) {
  // Code object built without a feature suffix runs with either device setting...
  EXPECT_EQ(match_target(must_parse("gfx90a"), 0, must_parse("gfx90a:xnack+")).kind, Match::Native);
  EXPECT_EQ(match_target(must_parse("gfx90a"), 0, must_parse("gfx90a:xnack-")).kind, Match::Native);
  EXPECT_EQ(match_target(must_parse("gfx942"), 0, must_parse("gfx942:sramecc+:xnack-")).kind, Match::Native);
  // ...and a device whose setting is unknown (user typed only the processor) accepts either code-object setting.
  EXPECT_EQ(match_target(must_parse("gfx90a:xnack+"), 0, must_parse("gfx90a")).kind, Match::Native);
  EXPECT_EQ(match_target(must_parse("gfx90a:xnack-"), 0, must_parse("gfx90a")).kind, Match::Native);
  // Equal settings match.
  EXPECT_EQ(match_target(must_parse("gfx942:sramecc+:xnack-"), 0, must_parse("gfx942:sramecc+:xnack-")).kind,
            Match::Native);
}

// match_kind (selection's fast form) gives match_target's verdict for every
// pair of processors in the table, with every feature setting and generic version.
TEST(Match, KindAgreesWithMatchTarget) {
  std::vector<TargetId> ids;
  for (const auto& p : all_processors()) {
    for (Feature x : {Feature::Any, Feature::On, Feature::Off}) {
      TargetId t;
      t.processor = std::string(p.name);
      t.xnack = p.xnack ? x : Feature::Unsupported;
      t.sramecc = p.sramecc ? (x == Feature::On ? Feature::Off : x) : Feature::Unsupported;
      ids.push_back(t);
    }
  }
  size_t native = 0, generic = 0, mismatch = 0;
  for (const auto& code : ids)
    for (const auto& dev : ids)
      for (unsigned gv : {0u, 1u}) {
        Match k = match_kind(code, gv, dev);
        ASSERT_EQ(k, match_target(code, gv, dev).kind) << code.str() << " on " << dev.str() << " v" << gv;
        native += k == Match::Native;
        generic += k == Match::Generic;
        mismatch += k == Match::FeatureMismatch;
      }
  // Every kind occurs, so the comparison covered each branch.
  EXPECT_GT(native, 0u);
  EXPECT_GT(generic, 0u);
  EXPECT_GT(mismatch, 0u);
}

TEST(Match, GenericFeatureMismatch) {
  EXPECT_EQ(match_target(must_parse("gfx9-4-generic:xnack+"), 1, must_parse("gfx942:xnack-")).kind,
            Match::FeatureMismatch);
  EXPECT_EQ(match_target(must_parse("gfx9-4-generic:xnack+"), 1, must_parse("gfx942")).kind, Match::Generic);
}

// "nearest: ..." in HG201/HG214: the same ISA major version, the closest minor (gfx950 is 9.5.0,
// gfx942 9.4.2, gfx90a 9.0.10), each candidate once, in the candidates' order.
TEST(Target, NearestProcessorsShareTheMajorAndTheClosestMinor) {
  const std::vector<std::string> built_for = {"gfx1100", "gfx908", "gfx90a", "gfx90a:xnack+", "gfx942", "gfx942"};
  using V = std::vector<std::string>;
  EXPECT_EQ(nearest_processors("gfx950", built_for), (V{"gfx942"}));
  EXPECT_EQ(nearest_processors("gfx906", built_for), (V{"gfx908", "gfx90a", "gfx90a:xnack+"}));
  EXPECT_EQ(nearest_processors("gfx1101", built_for), (V{"gfx1100"}));
  EXPECT_EQ(nearest_processors("gfx1201", built_for), V{});  // no gfx12 code at all
  EXPECT_EQ(nearest_processors("gfx9999", built_for), V{});  // not a processor
  EXPECT_EQ(nearest_processors("gfx950", V{"gfx9999", "x"}), V{});
}
