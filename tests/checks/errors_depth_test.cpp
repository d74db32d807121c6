// Depth::Errors (strict mode's registration check) against Depth::Full: the
// same verdicts and the same error findings, from code objects whose kernel
// arguments are judged but not kept; warnings and notes are left for the full
// check. Real objects (corpus, hipcc), crafted ones for each error a loader
// rejects, and every truncation and many byte changes of a metadata document.
#include <dirent.h>
#include <gtest/gtest.h>
#include <llvm/BinaryFormat/MsgPackReader.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "check_util.h"
#include "code_object.h"
#include "hipguard/check.h"
#include "hipguard/code_object.h"
#include "runtime/guard.h"

using namespace hipguard;

namespace {

using namespace checks;

const std::string kHost = "host-x86_64-unknown-linux-gnu-";
const std::string kHip = "hipv4-amdgcn-amd-amdhsa--";

std::vector<TargetId> targets_of(std::initializer_list<const char*> names) {
  std::vector<TargetId> out;
  for (const char* n : names) out.push_back(*parse_target_id(n, nullptr));
  return out;
}

// A code object as the only amdgcn entry of a bundle, labelled `target_id`.
std::vector<uint8_t> bundled(const std::vector<uint8_t>& co, const std::string& target_id) {
  return make_bundle({{kHost, {}}, {kHip + target_id, co}});
}

std::multiset<std::string> errors_of(const ImageReport& r) {
  std::multiset<std::string> out;
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::Error && d.code != "HG112")
      out.insert(d.code + "|" + d.target + "|" + d.entry + "|" + d.kernel + "|" + d.message);
  return out;
}

bool capped(const ImageReport& r) {
  for (const auto& d : r.diagnostics)
    if (d.code == "HG112") return true;
  return false;
}

// Both depths over `data`; returns the full report.
ImageReport expect_same_decision(const std::vector<uint8_t>& data, const std::vector<TargetId>& targets,
                                 const std::string& what) {
  Bytes bytes(data.data(), data.size());
  ImageReport full = check_image(bytes, "x", targets, "", Depth::Full);
  ImageReport errs = check_image(bytes, "x", targets, "", Depth::Errors);
  EXPECT_EQ(full.structurally_ok, errs.structurally_ok) << what;
  EXPECT_EQ(full.ok(), errs.ok()) << what;
  EXPECT_EQ(full.verdicts.size(), errs.verdicts.size()) << what;
  for (size_t i = 0; i < full.verdicts.size() && i < errs.verdicts.size(); ++i) {
    EXPECT_EQ(full.verdicts[i].can_run, errs.verdicts[i].can_run) << what << " " << full.verdicts[i].target.str();
    EXPECT_EQ(full.verdicts[i].selected, errs.verdicts[i].selected) << what;
    EXPECT_EQ(full.verdicts[i].kernels, errs.verdicts[i].kernels) << what;
  }
  // With more findings than hipguard shows, which ones are shown may differ (the verdict may not).
  if (!capped(full) && !capped(errs)) EXPECT_EQ(errors_of(full), errors_of(errs)) << what;
  for (const auto& d : errs.diagnostics)
    EXPECT_TRUE(d.severity == Severity::Error || d.code.rfind("HG2", 0) == 0)
        << what << ": below error severity at Depth::Errors, not a selection finding: " << d.code << " " << d.message;
  // The kernels a registration looks up (HG409): the same names.
  EXPECT_EQ(full.code_objects.size(), errs.code_objects.size()) << what;
  for (size_t i = 0; i < full.code_objects.size() && i < errs.code_objects.size(); ++i) {
    const CodeObject& a = full.code_objects[i].co;
    const CodeObject& b = errs.code_objects[i].co;
    EXPECT_EQ(a.kernels.size(), b.kernels.size()) << what;
    for (size_t k = 0; k < a.kernels.size() && k < b.kernels.size(); ++k) {
      EXPECT_EQ(a.kernels[k].name, b.kernels[k].name) << what;
      EXPECT_TRUE(b.kernels[k].args.empty()) << what << ": arguments are not kept at Depth::Errors";
    }
  }
  return full;
}

bool has(const ImageReport& r, const std::string& code, Severity s) {
  for (const auto& d : r.diagnostics)
    if (d.code == code && d.severity == s) return true;
  return false;
}

hgtest::CodeObjectSpec two_kernels() {
  hgtest::CodeObjectSpec spec;
  hgtest::KernelSpec a, b;
  a.name = "alpha";
  a.reqd = std::array<uint64_t, 3>{64, 2, 1};
  b.name = "beta";
  b.agpr = 4;
  b.args.push_back({"n", "by_value", 16, 4});
  b.kernarg_size = 24;
  spec.kernels = {a, b};
  return spec;
}

}  // namespace

TEST(ErrorsDepth, CorpusAndHipccObjectsDecideAlike) {
  size_t n = 0;
  const auto targets = targets_of({"gfx942", "gfx90a:xnack-", "gfx950", "gfx1030", "gfx942:xnack+"});
  if (DIR* d = opendir(kCorpus.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() < 4 || name.substr(name.size() - 3) != ".co") continue;
      std::vector<uint8_t> co = read_bytes(kCorpus + "/" + name);
      auto parsed = parse_code_object(Bytes(co.data(), co.size()));
      if (!parsed) continue;
      expect_same_decision(bundled(co, parsed->target.str()), targets, name);
      ++n;
    }
    closedir(d);
  }
  for (const char* app : {"vector_add_gfx90a.hipfb", "vector_add_multi.hipfb", "fill_gfx1100.hipfb"}) {
    std::string path = kApps + "/" + app;
    if (kApps.empty() || !exists(path)) continue;
    expect_same_decision(read_bytes(path), targets, app);
    ++n;
  }
  if (n == 0) GTEST_SKIP() << "no corpus and no hipcc test apps";
}

TEST(ErrorsDepth, EachErrorTheLoaderRejectsIsDecided) {
  const auto gfx942 = targets_of({"gfx942"});
  struct Case {
    const char* what;
    const char* code;
    std::function<void(hgtest::CodeObjectSpec&)> change;
  };
  std::vector<Case> cases = {
      {"LDS in the descriptor only", "HG301", [](auto& s) { s.kernels[0].kd_lds = 70000; }},
      {"LDS in the metadata", "HG301", [](auto& s) { s.kernels[0].lds = 70000, s.kernels[0].kd_lds = 70000; }},
      {"wave32 on gfx942", "HG302", [](auto& s) { s.kernels[0].wavefront = 32, s.kernels[0].kd_properties = 1u << 10; }},
      {"too many VGPRs", "HG303", [](auto& s) { s.kernels[0].vgpr = 600; }},
      {"max_flat_workgroup_size 0", "HG304", [](auto& s) { s.kernels[0].max_flat = 0; }},
      {"no .name", "HG403", [](auto& s) { s.kernels[0].omit = {".name"}; }},
      {"no .max_flat_workgroup_size", "HG403", [](auto& s) { s.kernels[0].omit = {".max_flat_workgroup_size"}; }},
      {"no descriptor", "HG406", [](auto& s) { s.kernels[1].descriptor = false; }},
      {"code object v7", "HG109", [](auto& s) { s.version = 7; }},
      {"no metadata note", "HG401", [](auto& s) { s.note = false; }},
      {"metadata root not a map", "HG402", [](auto& s) { s.raw_metadata = std::string("\x93\x01\x02\x03", 4); }},
      {"truncated metadata", "HG402",
       [](auto& s) {
         std::string blob = hgtest::metadata_blob(s);
         s.raw_metadata = blob.substr(0, blob.size() / 2);
       }},
      {"over 1024 arguments", "HG111",
       [](auto& s) {
         s.kernels[0].args.clear();
         for (uint64_t i = 0; i < 1030; ++i) s.kernels[0].args.push_back({"", "by_value", 8 * i, 8});
         s.kernels[0].kernarg_size = 8 * 1030;
       }},
  };
  for (const auto& c : cases) {
    hgtest::CodeObjectSpec spec = two_kernels();
    c.change(spec);
    ImageReport full = expect_same_decision(bundled(hgtest::make_code_object(spec), "gfx942"), gfx942, c.what);
    EXPECT_TRUE(has(full, c.code, Severity::Error)) << c.what << ": the full check finds " << c.code;
    EXPECT_FALSE(full.ok()) << c.what;
  }
  // Selection and e_flags: no entry for the target, an xnack mismatch, an entry whose ELF disagrees with its label.
  std::vector<uint8_t> co = hgtest::make_code_object(two_kernels());
  expect_same_decision(bundled(co, "gfx942"), targets_of({"gfx90a"}), "no code object for gfx90a");
  hgtest::CodeObjectSpec xnack_on = two_kernels();
  xnack_on.features = hgtest::kXnackOn | hgtest::kSrameccAny;
  expect_same_decision(bundled(hgtest::make_code_object(xnack_on), "gfx942:xnack+"), targets_of({"gfx942:xnack-"}),
                       "xnack+ code on an xnack- GPU");
  expect_same_decision(bundled(hgtest::make_code_object(xnack_on), "gfx942"), targets_of({"gfx942:xnack-"}),
                       "entry label and e_flags disagree");
}

TEST(ErrorsDepth, WarningsWaitForTheFullCheck) {
  // A kernarg layout the runtime accepts (HG405), a descriptor that disagrees
  // with the metadata (HG404), a kernel descriptor without metadata (HG407), a
  // missing integer the runtime takes as 0 (HG403 warning): nothing at
  // Depth::Errors, every one of them in full.
  hgtest::CodeObjectSpec spec = two_kernels();
  spec.kernels[0].args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 4, 8}};
  spec.kernels[1].kd_private = 16;
  hgtest::KernelSpec orphan;
  orphan.name = "orphan";
  orphan.metadata = false;
  hgtest::KernelSpec partial;
  partial.name = "partial";
  partial.omit = {".sgpr_count"};
  spec.kernels.push_back(orphan);
  spec.kernels.push_back(partial);
  std::vector<uint8_t> data = bundled(hgtest::make_code_object(spec), "gfx942");
  ImageReport full = expect_same_decision(data, targets_of({"gfx942"}), "warnings only");
  for (const char* code : {"HG405", "HG404", "HG407", "HG403"})
    EXPECT_TRUE(has(full, code, Severity::Warning)) << code;
  EXPECT_TRUE(full.ok());
  ImageReport errs = check_image(Bytes(data.data(), data.size()), "x", targets_of({"gfx942"}), "", Depth::Errors);
  EXPECT_TRUE(errs.diagnostics.empty()) << errs.diagnostics.front().code;
}

// Every truncation and many single-byte changes of a metadata document: the
// two depths read it alike, and a document LLVM's own MessagePack reader
// cannot read to its end is invalid (HG402) for hipguard too.
TEST(ErrorsDepth, DamagedMetadataDecidesAlike) {
  hgtest::CodeObjectSpec spec = two_kernels();
  const std::string blob = hgtest::metadata_blob(spec);
  const auto gfx942 = targets_of({"gfx942"});
  auto llvm_reads = [](const std::string& doc) {
    llvm::msgpack::Reader r(doc);
    uint64_t objects = 1;  // still to read
    while (objects > 0) {
      llvm::msgpack::Object o;
      auto got = r.read(o);
      if (!got) {
        llvm::consumeError(got.takeError());
        return false;
      }
      if (!*got) return false;
      --objects;
      if (o.Kind == llvm::msgpack::Type::Array) objects += o.Length;
      if (o.Kind == llvm::msgpack::Type::Map) objects += 2 * o.Length;
    }
    return true;
  };
  auto check = [&](const std::string& doc, const std::string& what) {
    hgtest::CodeObjectSpec s = spec;
    s.raw_metadata = doc;
    ImageReport full = expect_same_decision(bundled(hgtest::make_code_object(s), "gfx942"), gfx942, what);
    if (!llvm_reads(doc)) EXPECT_TRUE(has(full, "HG402", Severity::Error)) << what;
  };
  for (size_t n = 0; n < blob.size(); ++n) check(blob.substr(0, n), "truncated to " + std::to_string(n));
  for (size_t i = 0; i < blob.size(); ++i)
    for (uint8_t b : {0x00, 0x7f, 0x81, 0x93, 0xa3, 0xc0, 0xc1, 0xc3, 0xc4, 0xc7, 0xca, 0xcd, 0xd1, 0xd4, 0xd9,
                      0xdc, 0xdf, 0xe0, 0xff}) {
      std::string doc = blob;
      doc[i] = static_cast<char>(b);
      check(doc, "byte " + std::to_string(i) + " = " + std::to_string(b));
    }
}

// Through the Guard (strict mode, gfx942: check_util.h): an error stops the
// program at registration, a kernel missing from the selected code object at
// its __hipRegisterFunction; a warning of the same fat binary is said only at
// the first launch of one of its kernels (the check in full).
namespace {
class StrictRegistration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { checks::configure_guard_for_tests(); }
};
}  // namespace

TEST_F(StrictRegistration, ErrorsStopAtRegistrationWarningsWaitForFirstUse) {
  Guard& g = Guard::get();
  hgtest::CodeObjectSpec over = two_kernels();
  over.kernels[0].kd_lds = 70000;  // in the kernel descriptor only
  std::vector<uint8_t> b1 = bundled(hgtest::make_code_object(over), "gfx942");
  FatbinWrapper w1{kHipFatbinMagic, 1, b1.data(), nullptr};
  testing::internal::CaptureStderr();
  EXPECT_EQ(g.on_register_fatbin(&w1).action, Action::Exit);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("error HG301 [gfx942"), std::string::npos) << err;
  EXPECT_NE(err.find("strict mode: stopping"), std::string::npos) << err;

  hgtest::CodeObjectSpec warn = two_kernels();
  warn.kernels[0].args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 4, 8}};  // overlap: HG405, a warning
  std::vector<uint8_t> b2 = bundled(hgtest::make_code_object(warn), "gfx942");
  FatbinWrapper w2{kHipFatbinMagic, 1, b2.data(), nullptr};
  static int handle, host_alpha, host_gamma;
  testing::internal::CaptureStderr();
  EXPECT_EQ(g.on_register_fatbin(&w2).action, Action::Forward);
  g.on_registered_fatbin(&handle);
  EXPECT_EQ(g.on_register_function(&handle, &host_alpha, "alpha").action, Action::Forward);
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("HG405"), std::string::npos) << "a warning waits for the first use: " << err;

  testing::internal::CaptureStderr();
  EXPECT_EQ(g.on_register_function(&handle, &host_gamma, "gamma").action, Action::Exit);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("error HG409 [gfx942"), std::string::npos) << err;

  testing::internal::CaptureStderr();
  EXPECT_EQ(g.on_launch(&host_alpha, 0, "hipLaunchKernel").action, Action::Forward);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning HG405 "), std::string::npos) << "said at the first launch: " << err;
  g.on_unregister_fatbin(&handle);
  refused_launch_error(true);
}
