// Depth::Descriptors against Depth::Full: without reading the metadata it
// finds the errors of the ELF header, the selection and the kernel
// descriptors, each of which the full check finds too; what the metadata
// decides waits for the full check. Real objects (corpus, hipcc), crafted ones
// for each error, every truncation and many byte changes of a metadata
// document. And the Guard in strict mode: a fat binary is checked to selection
// at registration, its kernels at the first launch or lookup of one of them,
// where a kernel that cannot run is refused; registration never stops for
// what a code object holds.
#include <dirent.h>
#include <gtest/gtest.h>
#include <llvm/BinaryFormat/MsgPackReader.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "ccob.h"
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
  for (const char* n : names) out.push_back(*parse_target_id(n));
  return out;
}

// A code object as the only amdgcn entry of a bundle, labelled `target_id`.
std::vector<uint8_t> bundled(const std::vector<uint8_t>& co, const std::string& target_id) {
  return make_bundle({{kHost, {}}, {kHip + target_id, co}});
}

// Errors by code, and target, bundle entry and kernel (messages name where a value came from).
using Error = std::pair<Code, std::string>;  // the code, "target|entry|kernel"
std::set<Error> errors_of(const ImageReport& r) {
  std::set<Error> out;
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::Error && d.code != Code::kFindingsCapped)
      out.insert({d.code, d.target + "|" + d.entry + "|" + d.kernel});
  return out;
}
std::string str(const Error& e) { return std::string(code_string(e.first)) + "|" + e.second; }

bool has(const ImageReport& r, Code code, Severity s) {
  for (const auto& d : r.diagnostics)
    if (d.code == code && d.severity == s) return true;
  return false;
}

// Errors the full check finds without the metadata's help: bundle and ELF
// structure, the code object version, selection and e_flags, a missing note.
bool decided_without_metadata(Code code) {
  return (code >= Code::kUnreadable && code <= Code::kMalformedElf) || code == Code::kUnknownProcessor ||
         code == Code::kCodeObjectVersion || (code >= Code::kNoCodeObject && code <= Code::kGenericTooOld) ||
         code == Code::kNoMetadata;
}

struct Both {
  ImageReport full, descriptors;
};

// Both depths over `data`, with what must hold whatever the input: the same
// selection; at Depth::Descriptors only errors (selection findings aside),
// no argument and no metadata field; no error the full check lacks (every
// kernel there has metadata); every error decided without the metadata found.
Both both_depths(const std::vector<uint8_t>& data, const std::vector<TargetId>& targets, const std::string& what) {
  Bytes bytes(data.data(), data.size());
  Both b{check_image(bytes, "x", targets, "", Depth::Full), check_image(bytes, "x", targets, "", Depth::Descriptors)};
  const ImageReport& full = b.full;
  const ImageReport& desc = b.descriptors;
  bool orphans = false;  // descriptors without metadata: kernels at Depth::Descriptors only
  for (const auto& c : full.code_objects) orphans = orphans || !c.co.kernels_without_metadata.empty();
  EXPECT_EQ(full.verdicts.size(), desc.verdicts.size()) << what;
  for (size_t i = 0; i < full.verdicts.size() && i < desc.verdicts.size(); ++i) {
    EXPECT_EQ(full.verdicts[i].selected, desc.verdicts[i].selected) << what;
    EXPECT_EQ(full.verdicts[i].selection, desc.verdicts[i].selection) << what;
    if (full.verdicts[i].can_run && !orphans)
      EXPECT_TRUE(desc.verdicts[i].can_run) << what << " " << full.verdicts[i].target.str();
  }
  for (const auto& d : desc.diagnostics)
    EXPECT_TRUE(d.severity == Severity::Error || code_string(d.code).starts_with("HG2"))
        << what << ": below error severity at Depth::Descriptors, not a selection finding: " << code_string(d.code)
        << " " << d.message;
  for (const auto& c : desc.code_objects)
    for (const auto& k : c.co.kernels) {
      EXPECT_TRUE(k.args.empty() && k.max_flat_workgroup_size == 0 && k.vgpr_count == 0) << what << ": " << k.name;
      EXPECT_EQ(k.symbol, k.name + ".kd") << what;
    }
  std::set<Error> full_errors = errors_of(full), desc_errors = errors_of(desc);
  if (!orphans)
    for (const auto& e : desc_errors)
      EXPECT_TRUE(full_errors.count(e)) << what << ": only at Depth::Descriptors: " << str(e);
  for (const auto& e : full_errors)
    if (decided_without_metadata(e.first)) EXPECT_TRUE(desc_errors.count(e)) << what << ": missed: " << str(e);
  return b;
}

std::set<std::string> kernel_names(const ImageReport& r) {
  std::set<std::string> out;
  for (const auto& c : r.code_objects)
    for (const auto& k : c.co.kernels) out.insert(k.name);
  return out;
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

TEST(DescriptorsDepth, CorpusAndHipccObjectsListTheSameKernels) {
  size_t n = 0;
  const auto targets = targets_of({"gfx942", "gfx90a:xnack-", "gfx950", "gfx1030", "gfx942:xnack+"});
  auto compare = [&](const std::vector<uint8_t>& data, const std::string& what) {
    Both b = both_depths(data, targets, what);
    EXPECT_EQ(kernel_names(b.full), kernel_names(b.descriptors)) << what;
    for (size_t i = 0; i < b.full.verdicts.size(); ++i)
      EXPECT_EQ(b.full.verdicts[i].kernels, b.descriptors.verdicts[i].kernels) << what;
    ++n;
  };
  if (DIR* d = opendir(kCorpus.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() < 4 || name.substr(name.size() - 3) != ".co") continue;
      std::vector<uint8_t> co = read_bytes(kCorpus + "/" + name);
      auto parsed = parse_code_object(Bytes(co.data(), co.size()));
      if (!parsed) continue;
      compare(bundled(co, parsed->target.str()), name);
    }
    closedir(d);
  }
  for (const char* app : {"vector_add_gfx90a.hipfb", "vector_add_multi.hipfb", "fill_gfx1100.hipfb"}) {
    std::string path = kApps + "/" + app;
    if (!kApps.empty() && exists(path)) compare(read_bytes(path), app);
  }
  if (n == 0) GTEST_SKIP() << "no corpus and no hipcc test apps";
}

TEST(DescriptorsDepth, ErrorsOfHeaderSelectionAndDescriptorsAreDecided) {
  const auto gfx942 = targets_of({"gfx942"});
  struct Case {
    const char* what;
    Code code;
    std::function<void(hgtest::CodeObjectSpec&)> change;
  };
  std::vector<Case> cases = {
      {"LDS in the descriptor only", Code::kLdsOverLimit, [](auto& s) { s.kernels[0].kd_lds = 70000; }},
      {"LDS in the metadata and the descriptor", Code::kLdsOverLimit, [](auto& s) { s.kernels[0].lds = 70000; }},
      {"code object v7", Code::kCodeObjectVersion, [](auto& s) { s.version = 7; }},
      {"no metadata note", Code::kNoMetadata, [](auto& s) { s.note = false; }},
  };
  for (const auto& c : cases) {
    hgtest::CodeObjectSpec spec = two_kernels();
    c.change(spec);
    Both b = both_depths(bundled(hgtest::make_code_object(spec), "gfx942"), gfx942, c.what);
    EXPECT_TRUE(has(b.full, c.code, Severity::Error)) << c.what;
    EXPECT_TRUE(has(b.descriptors, c.code, Severity::Error)) << c.what;
    EXPECT_FALSE(b.descriptors.ok()) << c.what;
  }
  // Selection and e_flags: no entry for the target, an xnack mismatch, an entry whose ELF disagrees with its label.
  std::vector<uint8_t> co = hgtest::make_code_object(two_kernels());
  EXPECT_FALSE(both_depths(bundled(co, "gfx942"), targets_of({"gfx90a"}), "no gfx90a").descriptors.ok());
  hgtest::CodeObjectSpec xnack_on = two_kernels();
  xnack_on.features = hgtest::kXnackOn | hgtest::kSrameccAny;
  co = hgtest::make_code_object(xnack_on);
  EXPECT_FALSE(
      both_depths(bundled(co, "gfx942:xnack+"), targets_of({"gfx942:xnack-"}), "xnack+ code").descriptors.ok());
  Both label = both_depths(bundled(co, "gfx942"), targets_of({"gfx942:xnack-"}), "entry label and e_flags disagree");
  EXPECT_TRUE(has(label.descriptors, Code::kFeatureMismatch, Severity::Error));
}

TEST(DescriptorsDepth, WhatTheMetadataDecidesWaitsForTheFullCheck) {
  const auto gfx942 = targets_of({"gfx942"});
  struct Case {
    const char* what;
    Code code;
    std::function<void(hgtest::CodeObjectSpec&)> change;
  };
  std::vector<Case> cases = {
      {"LDS in the metadata only", Code::kLdsOverLimit,
       [](auto& s) { s.kernels[0].lds = 70000, s.kernels[0].kd_lds = 0; }},
      {"wave32 on gfx942", Code::kWavefrontSize,
       [](auto& s) { s.kernels[0].wavefront = 32, s.kernels[0].kd_properties = 1u << 10; }},
      {"too many VGPRs", Code::kRegisterLimit, [](auto& s) { s.kernels[0].vgpr = 600; }},
      {"max_flat_workgroup_size 0", Code::kWorkgroupSize, [](auto& s) { s.kernels[0].max_flat = 0; }},
      {"no .name", Code::kBadKernelMetadata, [](auto& s) { s.kernels[0].omit = {".name"}; }},
      {"no .max_flat_workgroup_size", Code::kBadKernelMetadata,
       [](auto& s) { s.kernels[0].omit = {".max_flat_workgroup_size"}; }},
      {"metadata names a descriptor the symbol table lacks", Code::kDescriptorMissing,
       [](auto& s) { s.kernels[1].descriptor = false; }},
      {"metadata root not a map", Code::kBadMetadata,
       [](auto& s) { s.raw_metadata = std::string("\x93\x01\x02\x03", 4); }},
      {"over 1024 arguments", Code::kBudgetExceeded,
       [](auto& s) {
         s.kernels[0].args.clear();
         for (uint64_t i = 0; i < 1030; ++i) s.kernels[0].args.push_back({"", "by_value", 8 * i, 8});
         s.kernels[0].kernarg_size = 8 * 1030;
       }},
  };
  for (const auto& c : cases) {
    hgtest::CodeObjectSpec spec = two_kernels();
    c.change(spec);
    Both b = both_depths(bundled(hgtest::make_code_object(spec), "gfx942"), gfx942, c.what);
    EXPECT_TRUE(has(b.full, c.code, Severity::Error)) << c.what << ": the full check finds " << code_string(c.code);
    EXPECT_FALSE(b.full.ok()) << c.what;
    EXPECT_TRUE(b.descriptors.ok()) << c.what;
    EXPECT_TRUE(b.descriptors.diagnostics.empty())
        << c.what << ": " << code_string(b.descriptors.diagnostics.front().code);
  }
  // Below error severity: a kernarg layout the runtime accepts (HG405), a descriptor that
  // disagrees with the metadata (HG404, a note), a missing integer the runtime takes as 0 (HG403).
  hgtest::CodeObjectSpec spec = two_kernels();
  spec.kernels[0].args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 4, 8}};
  spec.kernels[1].kd_private = 16;
  hgtest::KernelSpec partial;
  partial.name = "partial";
  partial.omit = {".sgpr_count"};
  spec.kernels.push_back(partial);
  Both b = both_depths(bundled(hgtest::make_code_object(spec), "gfx942"), gfx942, "warnings only");
  for (Code code : {Code::kKernargLayout, Code::kBadKernelMetadata})
    EXPECT_TRUE(has(b.full, code, Severity::Warning)) << code_string(code);
  EXPECT_TRUE(has(b.full, Code::kDescriptorMismatch, Severity::Note));
  EXPECT_TRUE(b.full.ok());
  EXPECT_TRUE(b.descriptors.diagnostics.empty()) << code_string(b.descriptors.diagnostics.front().code);
}

// A kernel descriptor no metadata entry names is no kernel to the runtime
// (HG407, a warning), but without the metadata it is judged as one: its LDS is
// an error at Depth::Descriptors only.
TEST(DescriptorsDepth, ADescriptorWithoutMetadataIsJudgedAsAKernel) {
  hgtest::CodeObjectSpec spec = two_kernels();
  hgtest::KernelSpec orphan;
  orphan.name = "orphan";
  orphan.metadata = false;
  orphan.kd_lds = 70000;
  spec.kernels.push_back(orphan);
  Both b = both_depths(bundled(hgtest::make_code_object(spec), "gfx942"), targets_of({"gfx942"}), "orphan");
  EXPECT_TRUE(has(b.full, Code::kKernelWithoutMetadata, Severity::Warning));
  EXPECT_TRUE(b.full.ok());
  EXPECT_TRUE(has(b.descriptors, Code::kLdsOverLimit, Severity::Error));
  EXPECT_EQ(kernel_names(b.descriptors), (std::set<std::string>{"alpha", "beta", "orphan"}));
}

// Every truncation and many single-byte changes of a metadata document: the
// descriptors decide alike whatever the document holds, and a document LLVM's
// own MessagePack reader cannot read to its end is invalid (HG402) in full.
TEST(DescriptorsDepth, DamagedMetadataWaitsForTheFullCheck) {
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
    Both b = both_depths(bundled(hgtest::make_code_object(s), "gfx942"), gfx942, what);
    EXPECT_TRUE(b.descriptors.ok()) << what;
    EXPECT_EQ(kernel_names(b.descriptors), (std::set<std::string>{"alpha", "beta"})) << what;
    if (!llvm_reads(doc)) EXPECT_TRUE(has(b.full, Code::kBadMetadata, Severity::Error)) << what;
  };
  for (size_t n = 0; n < blob.size(); ++n) check(blob.substr(0, n), "truncated to " + std::to_string(n));
  for (size_t i = 0; i < blob.size(); ++i)
    for (uint8_t b : {0x00, 0x7f, 0x81, 0x93, 0xa3, 0xc0, 0xc1, 0xc3, 0xc4, 0xc7, 0xca, 0xcd, 0xd1, 0xd4, 0xd9, 0xdc,
                      0xdf, 0xe0, 0xff}) {
      std::string doc = blob;
      doc[i] = static_cast<char>(b);
      check(doc, "byte " + std::to_string(i) + " = " + std::to_string(b));
    }
}

// Through the Guard (strict mode, gfx942: check_util.h).
namespace {
class StrictRegistration : public hgtest::OwnGuardTest {
 protected:
  StrictRegistration() : OwnGuardTest(checks::strict_gfx942()) {}
};

std::vector<uint8_t> bundle_of(const hgtest::CodeObjectSpec& spec) {
  return bundled(hgtest::make_code_object(spec), "gfx942");
}

// __hipRegisterFatBinary of `bundle` (kept alive by the caller) under `handle`,
// as the runtime would call it: what the Guard decides.
Action register_fatbin(Guard& g, const std::vector<uint8_t>& bundle, const void* handle) {
  FatbinWrapper w{kHipFatbinMagic, 1, bundle.data(), nullptr};
  PendingFatbinPtr pending;
  Action a = g.on_register_fatbin(&w, pending).action;
  if (a == Action::Forward) g.on_registered_fatbin(handle, std::move(pending));
  return a;
}

// Registers `bundle` under `handle` with its kernel `name` at `host`, which
// says nothing, then launches it: what the launch decides, and what it said.
std::pair<Decision, std::vector<Diagnostic>> register_then_launch(Guard& g, const std::vector<uint8_t>& bundle,
                                                                  const void* handle, const void* host,
                                                                  const char* name) {
  size_t mark = g.said().findings.size();
  EXPECT_EQ(register_fatbin(g, bundle, handle), Action::Forward) << name;
  EXPECT_EQ(g.on_register_function(handle, host, name).action, Action::Forward) << name;
  std::vector<Diagnostic> said = hgtest::said_since(g, mark);
  EXPECT_TRUE(said.empty()) << "nothing is read past the bundle table at registration: " << hgtest::lines(said);
  Decision d = g.on_launch(host, 0, "hipLaunchKernel");
  return {d, hgtest::said_since(g, mark)};
}
}  // namespace

using hgtest::count_said;
using hgtest::lines;

// A registered kernel whose descriptor cannot run (static LDS over the limit)
// or that the selected code object lacks does not stop the program at its
// registration: the runtime loads the code object at the first use of one of
// its kernels, and strict mode refuses each such kernel's launch then. The
// fat binary's findings, warnings too, are said at that first use (the check
// in full), and a kernel registered after it is judged as it is launched.
TEST_F(StrictRegistration, DescriptorErrorsRefuseTheLaunchNotTheRegistration) {
  Guard& g = guard();
  hgtest::CodeObjectSpec over = two_kernels();
  over.kernels[0].kd_lds = 70000;                                                       // in the kernel descriptor only
  over.kernels[1].args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 4, 8}};  // overlap: HG405, a warning
  static int handle, host_alpha, host_beta, host_gamma;
  std::vector<uint8_t> b = bundle_of(over);
  EXPECT_EQ(register_fatbin(g, b, &handle), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle, &host_beta, "beta").action, Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle, &host_alpha, "alpha").action, Action::Forward);
  size_t mark = 0;
  std::vector<Diagnostic> said = hgtest::said_since(g, mark);
  EXPECT_TRUE(said.empty()) << "nothing is said before the first use: " << lines(said);

  EXPECT_EQ(g.on_launch(&host_beta, 0, "hipLaunchKernel").action, Action::Forward) << "beta can run";
  said = hgtest::said_since(g, mark);
  EXPECT_EQ(count_said(said, Code::kLdsOverLimit, Severity::Error, "gfx942", "alpha"), 1u)
      << "said at the first use: " << lines(said);
  EXPECT_EQ(count_said(said, Code::kKernargLayout, Severity::Warning), 1u) << lines(said);

  Decision d = g.on_launch(&host_alpha, 0, "hipLaunchKernel");
  EXPECT_EQ(d.action, Action::Refuse);
  EXPECT_EQ(d.hip_error, kHipErrorInvalidDeviceFunction);
  // Registered after the check in full: judged at its launch as well.
  EXPECT_EQ(g.on_register_function(&handle, &host_gamma, "gamma").action, Action::Forward);
  EXPECT_EQ(g.on_launch(&host_gamma, 0, "hipLaunchKernel").action, Action::Refuse);
  said = hgtest::said_since(g, mark);
  EXPECT_EQ(count_said(said, Code::kLaunchWithFindings, Severity::Error, "", "gamma"), 1u)
      << "gamma's launch, with HG409: " << lines(said);
  EXPECT_NE(lines(said).find("HG409 [gfx942"), std::string::npos) << lines(said);
  g.on_unregister_fatbin(&handle);
}

// Registration reads a bundle's table only, in strict mode too: a selected
// code object built for another processor than its entry ID says (HG202, which
// the loader rejects) is not seen before the first use, where each launch of
// its kernels is refused.
TEST_F(StrictRegistration, RegistrationReadsNoCodeObject) {
  Guard& g = guard();
  hgtest::CodeObjectSpec other = two_kernels();
  other.mach = 0x03f;  // EF_AMDGPU_MACH_AMDGCN_GFX90A, in an entry that says gfx942
  other.target = "amdgcn-amd-amdhsa--gfx90a";
  std::vector<uint8_t> b = bundle_of(other);
  static int handle, host_alpha;
  auto [d, said] = register_then_launch(g, b, &handle, &host_alpha, "alpha");
  EXPECT_EQ(d.action, Action::Refuse) << lines(said);
  EXPECT_EQ(count_said(said, Code::kProcessorMismatch, Severity::Error, "gfx942"), 1u) << lines(said);
  g.on_unregister_fatbin(&handle);
}

// A raw code object registered through __hipRegisterFatBinary (AITER registers .co files so) is
// selected from its ELF header at registration and read at its first use, as a bundle's entry is:
// a kernel over the LDS limit refuses its launch, not the registration. One built for another
// processor is a selection failure, said at registration, where strict mode stops the program.
TEST_F(StrictRegistration, RawCodeObjectIsReadAtFirstUse) {
  Guard& g = guard();
  hgtest::CodeObjectSpec spec = two_kernels();
  spec.kernels[0].kd_lds = 70000;
  std::vector<uint8_t> co = hgtest::make_code_object(spec);
  static int handle, host_alpha, other_handle;
  auto [d, said] = register_then_launch(g, co, &handle, &host_alpha, "alpha");
  EXPECT_EQ(d.action, Action::Refuse) << lines(said);
  EXPECT_EQ(d.hip_error, kHipErrorInvalidDeviceFunction);
  EXPECT_EQ(count_said(said, Code::kLdsOverLimit, Severity::Error, "gfx942", "alpha"), 1u)
      << "said at the first use: " << lines(said);
  g.on_unregister_fatbin(&handle);

  spec.mach = 0x03f;  // EF_AMDGPU_MACH_AMDGCN_GFX90A
  spec.target = "amdgcn-amd-amdhsa--gfx90a";
  std::vector<uint8_t> gfx90a = hgtest::make_code_object(spec);
  size_t mark = g.said().findings.size();
  EXPECT_EQ(register_fatbin(g, gfx90a, &other_handle), Action::Exit);
  said = hgtest::said_since(g, mark);
  EXPECT_EQ(count_said(said, Code::kProcessorMismatch, Severity::Error, "gfx942"), 1u) << lines(said);
}

// Broken metadata does not stop the program at registration (the runtime too
// reads it when the code object is first used): the first launch of any kernel
// of that code object is refused, with the metadata's error (CLR rejects the
// whole code object for beta's .max_flat_workgroup_size 0, so alpha cannot run either).
TEST_F(StrictRegistration, MetadataErrorsRefuseTheFirstLaunch) {
  Guard& g = guard();
  hgtest::CodeObjectSpec spec = two_kernels();
  spec.kernels[1].max_flat = 0;  // CLR rejects the code object (HG304)
  std::vector<uint8_t> b = bundle_of(spec);
  static int handle, host_alpha;
  auto [d, said] = register_then_launch(g, b, &handle, &host_alpha, "alpha");
  EXPECT_EQ(d.action, Action::Refuse);
  EXPECT_EQ(d.hip_error, kHipErrorInvalidDeviceFunction);
  EXPECT_EQ(count_said(said, Code::kWorkgroupSize, Severity::Error), 1u) << lines(said);
  g.on_unregister_fatbin(&handle);
}

// Kernels are what the metadata names, as the runtime finds them: a
// descriptor without metadata over the LDS limit (no kernel to the runtime,
// never registered) is said as such at the first launch, not as a kernel over
// the limit, and a kernel whose metadata names a descriptor of another name
// runs.
TEST_F(StrictRegistration, KernelsAreWhatTheMetadataNames) {
  Guard& g = guard();
  hgtest::CodeObjectSpec spec = two_kernels();
  hgtest::KernelSpec orphan;
  orphan.name = "orphan";
  orphan.metadata = false;
  orphan.kd_lds = 70000;
  spec.kernels.push_back(orphan);
  std::vector<uint8_t> b1 = bundle_of(spec);
  static int handle1, handle2, host_alpha, host_aliased;
  auto [d, said] = register_then_launch(g, b1, &handle1, &host_alpha, "alpha");
  EXPECT_EQ(d.action, Action::Forward) << lines(said);
  EXPECT_EQ(count_said(said, Code::kLdsOverLimit, Severity::Error), 0u) << lines(said);
  EXPECT_NE(lines(said).find("HG407"), std::string::npos)
      << "the full check's finding is said at the first launch: " << lines(said);
  g.on_unregister_fatbin(&handle1);

  // Metadata .name "aliased", .symbol "renamed.kd": the symbol table has no "aliased.kd".
  hgtest::CodeObjectSpec renamed;
  renamed.kernels[0].name = "renamed";
  std::string blob = hgtest::metadata_blob(renamed);
  size_t at = blob.find("\xa7renamed");  // the .name value (fixstr 7); .symbol is "renamed.kd" (fixstr 10)
  ASSERT_NE(at, std::string::npos);
  blob.replace(at + 1, 7, "aliased");
  renamed.raw_metadata = blob;
  std::vector<uint8_t> b2 = bundle_of(renamed);
  auto [aliased, said2] = register_then_launch(g, b2, &handle2, &host_aliased, "aliased");
  EXPECT_EQ(aliased.action, Action::Forward) << lines(said2);
  EXPECT_EQ(count_said(said2, Code::kKernelNotInCodeObject, Severity::Error), 0u) << lines(said2);
  g.on_unregister_fatbin(&handle2);
}

// A compressed bundle is judged at the first use of one of its kernels, as
// the runtime decompresses it then (its table is inside the compressed data):
// nothing is said at registration (that nothing is decoded there either: the
// next test's payload that does not decode).
TEST_F(StrictRegistration, ACompressedBundleIsJudgedAtTheFirstUse) {
  Guard& g = guard();
  hgtest::CodeObjectSpec spec = two_kernels();
  hgtest::CodeObjectSpec over = spec;
  over.kernels[0].kd_lds = 70000;
  std::vector<uint8_t> bad = hgtest::make_ccob(bundle_of(over), 3, hgtest::kCcobZstd);
  std::vector<uint8_t> good = hgtest::make_ccob(bundle_of(spec), 3, hgtest::kCcobZstd);
  static int handle1, handle2, host_alpha1, host_alpha2, host_gamma;
  EXPECT_EQ(register_fatbin(g, bad, &handle1), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle1, &host_alpha1, "alpha").action, Action::Forward);
  EXPECT_EQ(register_fatbin(g, good, &handle2), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle2, &host_alpha2, "alpha").action, Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle2, &host_gamma, "gamma").action, Action::Forward);
  size_t mark = 0;
  std::vector<Diagnostic> said = hgtest::said_since(g, mark);
  EXPECT_TRUE(said.empty()) << "nothing is said before the first use: " << lines(said);
  EXPECT_EQ(g.on_launch(&host_alpha1, 0, "hipLaunchKernel").action, Action::Refuse);
  EXPECT_EQ(g.on_launch(&host_alpha2, 0, "hipLaunchKernel").action, Action::Forward);
  EXPECT_EQ(g.on_launch(&host_gamma, 0, "hipLaunchKernel").action, Action::Refuse);
  said = hgtest::said_since(g, mark);
  EXPECT_EQ(count_said(said, Code::kLdsOverLimit, Severity::Error, "gfx942", "alpha"), 1u) << lines(said);
  EXPECT_EQ(count_said(said, Code::kLaunchWithFindings, Severity::Error, "", "gamma"), 1u) << lines(said);
  EXPECT_NE(lines(said).find("HG409 [gfx942"), std::string::npos) << lines(said);
  g.on_unregister_fatbin(&handle1);
  g.on_unregister_fatbin(&handle2);
}

// With no code object for the GPU, a compressed bundle is not a stop at registration (since ROCm
// 5.3 the runtime goes on and decompresses it at first use): its first launch is refused with
// HG201 said there, once. A payload that does not decode is said at the first use too, as an
// error of that fat binary. Under ROCm 5.2's runtime, which extracts every fat binary at start-up
// and aborts, strict mode still stops at registration.
TEST_F(StrictRegistration, ACompressedBundleWithoutCodeForTheGpuRefusesItsFirstLaunch) {
  Guard& g = guard();
  hgtest::CodeObjectSpec spec = two_kernels();
  spec.mach = 0x03f;  // EF_AMDGPU_MACH_AMDGCN_GFX90A
  spec.target = "amdgcn-amd-amdhsa--gfx90a";
  std::vector<uint8_t> elsewhere =
      hgtest::make_ccob(bundled(hgtest::make_code_object(spec), "gfx90a"), 3, hgtest::kCcobZstd);
  std::vector<uint8_t> broken = elsewhere;
  for (size_t i = 40; i < broken.size(); ++i) broken[i] ^= 0x5a;  // the zstd frame, past the v3 header
  static int handle1, handle2, host1, host2;
  auto [d, said] = register_then_launch(g, elsewhere, &handle1, &host1, "alpha");
  EXPECT_EQ(d.action, Action::Refuse) << lines(said);
  EXPECT_EQ(d.hip_error, kHipErrorInvalidDeviceFunction);
  EXPECT_EQ(count_said(said, Code::kNoCodeObject, Severity::Error, "gfx942"), 1u)
      << "said at the first use: " << lines(said);
  size_t mark = g.said().findings.size();
  EXPECT_EQ(g.on_launch(&host1, 0, "hipLaunchKernel").action, Action::Refuse);
  EXPECT_TRUE(hgtest::said_since(g, mark).empty()) << "said once";

  auto [b, bsaid] = register_then_launch(g, broken, &handle2, &host2, "beta");
  EXPECT_EQ(b.action, Action::Refuse) << lines(bsaid);
  size_t payload_errors = 0;
  for (const auto& e : bsaid) payload_errors += code_string(e.code).starts_with("HG1") && e.severity == Severity::Error;
  EXPECT_EQ(payload_errors, 1u) << "the payload's error at the first use: " << lines(bsaid);
  g.on_unregister_fatbin(&handle1);
  g.on_unregister_fatbin(&handle2);

  GuardConfig rocm52 = checks::strict_gfx942();
  rocm52.machine.runtime = &runtime_for_version(50200000);
  Guard old(rocm52);
  static int handle3;
  EXPECT_EQ(register_fatbin(old, elsewhere, &handle3), Action::Exit);
  EXPECT_EQ(count_said(old.said().findings, Code::kNoCodeObject, Severity::Error, "gfx942"), 1u)
      << "ROCm 5.2: at registration: " << lines(old.said().findings);
}

// With a report, a fat binary never used is checked in full when it is unregistered (a library
// unregisters before the report is written, at exit), for the report only: its findings are listed
// there, not said, and do not count for the exit status (an unused kernel changes neither).
TEST(StrictRegistrationReport, AnUnusedFatBinaryIsListedNotSaid) {
  const std::string path = "/tmp/hipguard-unused-" + std::to_string(getpid()) + ".json";
  Guard g(
      hgtest::guard_config({{"HIPGUARD_TARGET", "gfx942"}, {"HIPGUARD_MODE", "strict"}, {"HIPGUARD_REPORT", path}}));
  hgtest::CodeObjectSpec spec = two_kernels();
  spec.mach = 0x03f;  // EF_AMDGPU_MACH_AMDGCN_GFX90A
  spec.target = "amdgcn-amd-amdhsa--gfx90a";
  std::vector<uint8_t> elsewhere =
      hgtest::make_ccob(bundled(hgtest::make_code_object(spec), "gfx90a"), 3, hgtest::kCcobZstd);
  static int handle, host;
  testing::internal::CaptureStderr();
  EXPECT_EQ(register_fatbin(g, elsewhere, &handle), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle, &host, "alpha").action, Action::Forward);
  g.on_unregister_fatbin(&handle);
  g.write_report();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_said(g.said().findings, Code::kNoCodeObject, Severity::Error), 0u) << lines(g.said().findings);
  std::ifstream in(path);
  std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("\"HG201\""), std::string::npos) << "listed in the report: " << report.substr(0, 2000);
  std::remove(path.c_str());
}

// A stub registered first by a fat binary whose code object lacks its kernel
// (HG409) and again by one that holds it stays the first's: the runtime drops
// the second registration (CLR StatCO::RegisterFunction), so launches are
// refused. Unregistering the first forgets the stub: the runtime has no
// kernel for it then, and hipguard nothing to refuse.
TEST_F(StrictRegistration, AStubRegisteredAgainKeepsItsFirstRegistration) {
  Guard& g = guard();
  std::vector<uint8_t> b = bundle_of(two_kernels());
  static int handle1, handle2, host;
  testing::internal::CaptureStderr();
  EXPECT_EQ(register_fatbin(g, b, &handle1), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle1, &host, "gamma").action, Action::Forward);
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Refuse) << "HG409";
  EXPECT_EQ(register_fatbin(g, b, &handle2), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle2, &host, "alpha").action, Action::Forward);
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Refuse) << "decided on its first registration";
  g.on_unregister_fatbin(&handle1);
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward) << "not registered any more";
  g.on_unregister_fatbin(&handle2);
  testing::internal::GetCapturedStderr();
}

// The other way round: a second registration of a good kernel's stub, in a
// fat binary that lacks it, is dropped: never judged (HG409 is not said), and
// launches are forwarded.
TEST_F(StrictRegistration, ADroppedRegistrationDoesNotStopTheProgram) {
  Guard& g = guard();
  std::vector<uint8_t> b = bundle_of(two_kernels());
  static int handle1, handle2, host;
  testing::internal::CaptureStderr();
  EXPECT_EQ(register_fatbin(g, b, &handle1), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle1, &host, "alpha").action, Action::Forward);
  EXPECT_EQ(register_fatbin(g, b, &handle2), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle2, &host, "gamma").action, Action::Forward) << "the runtime drops it";
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward);
  g.on_unregister_fatbin(&handle2);
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward) << "the first's, still registered";
  g.on_unregister_fatbin(&handle1);
  testing::internal::GetCapturedStderr();
  for (const auto& d : g.said().findings)
    EXPECT_NE(d.kernel, "gamma") << "a dropped registration is never judged: " << format_line(d);
}

// Registrations are claimed when first needed (the registry's pending claims),
// with the same outcome as at registration: a second registration of a stub,
// made while the first's fat binary was registered, stays dropped once that
// fat binary goes before anything was launched (its kernel, missing from the
// second's code object, would be refused otherwise); the newest fat binary
// going first (as at exit) leaves the older's registrations theirs.
TEST_F(StrictRegistration, ClaimsMadeLateDecideAsAtRegistration) {
  Guard& g = guard();
  std::vector<uint8_t> b = bundle_of(two_kernels());
  static int handle1, handle2, handle3, host, host_beta;
  testing::internal::CaptureStderr();
  EXPECT_EQ(register_fatbin(g, b, &handle1), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle1, &host, "alpha").action, Action::Forward);
  EXPECT_EQ(register_fatbin(g, b, &handle2), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle2, &host, "gamma").action, Action::Forward) << "the runtime drops it";
  g.on_unregister_fatbin(&handle1);
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Forward) << "no registration of it counts";
  g.on_unregister_fatbin(&handle2);

  EXPECT_EQ(register_fatbin(g, b, &handle1), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle1, &host, "gamma").action, Action::Forward);
  EXPECT_EQ(register_fatbin(g, b, &handle3), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle3, &host_beta, "beta").action, Action::Forward);
  g.on_unregister_fatbin(&handle3);  // the newest goes first
  EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Refuse) << "still the first's: HG409";
  g.on_unregister_fatbin(&handle1);
  testing::internal::GetCapturedStderr();
}

// Whichever fat binary is indexed first (a launch of its other kernel, or of
// a key nobody registered, which indexes all), the stub stays its first
// registration's.
TEST_F(StrictRegistration, IndexingOrderLeavesAStubToItsFirstRegistration) {
  Guard& g = guard();
  std::vector<uint8_t> b = bundle_of(two_kernels());
  for (bool index_all : {false, true}) {
    static int handle1, handle2, host, host_beta1, host_beta2;
    int unknown = 0;
    testing::internal::CaptureStderr();
    EXPECT_EQ(register_fatbin(g, b, &handle1), Action::Forward);
    EXPECT_EQ(g.on_register_function(&handle1, &host, "gamma").action, Action::Forward);
    EXPECT_EQ(g.on_register_function(&handle1, &host_beta1, "beta").action, Action::Forward);
    EXPECT_EQ(register_fatbin(g, b, &handle2), Action::Forward);
    EXPECT_EQ(g.on_register_function(&handle2, &host, "alpha").action, Action::Forward);
    EXPECT_EQ(g.on_register_function(&handle2, &host_beta2, "beta").action, Action::Forward);
    if (index_all) EXPECT_EQ(g.on_launch(&unknown, 0, "hipLaunchKernel").action, Action::Forward);
    // The second is indexed (and checked in full) first.
    EXPECT_EQ(g.on_launch(&host_beta2, 0, "hipLaunchKernel").action, Action::Forward) << index_all;
    EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Refuse) << index_all;
    EXPECT_EQ(g.on_launch(&host_beta1, 0, "hipLaunchKernel").action, Action::Forward) << index_all;
    EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Refuse) << index_all;
    g.on_unregister_fatbin(&handle2);
    EXPECT_EQ(g.on_launch(&host, 0, "hipLaunchKernel").action, Action::Refuse) << "still the first's";
    g.on_unregister_fatbin(&handle1);
    testing::internal::GetCapturedStderr();
  }
}
// hipGetFuncBySymbol of a kernel that cannot run is refused in strict mode,
// and the hipFunction_t it returns (AITER launches by it, with
// hipModuleLaunchKernel) is decided as its kernel: refused for HG409 or for
// too much dynamic LDS, checked in full with its fat binary at first use, and
// forgotten when the fat binary is unregistered.
TEST_F(StrictRegistration, AFunctionFromGetFuncBySymbolIsDecidedAsItsKernel) {
  Guard& g = guard();
  std::vector<uint8_t> b = bundle_of(two_kernels());
  static int handle, host_gamma, host_alpha, fn_gamma, fn_alpha;
  testing::internal::CaptureStderr();
  EXPECT_EQ(register_fatbin(g, b, &handle), Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle, &host_gamma, "gamma").action, Action::Forward);
  EXPECT_EQ(g.on_register_function(&handle, &host_alpha, "alpha").action, Action::Forward);
  // The lookup itself: refused before the runtime's call (which may abort on a missing kernel).
  Decision lookup = g.before_kernel_call(&host_gamma, "hipGetFuncBySymbol", /*say_in_warn=*/false);
  EXPECT_EQ(lookup.action, Action::Refuse);
  EXPECT_EQ(lookup.hip_error, kHipErrorInvalidDeviceFunction);
  EXPECT_TRUE(lookup.sets_last_error) << "the runtime records every call's failure: hipGetLastError returns it";
  EXPECT_EQ(g.before_kernel_call(&host_alpha, "hipGetFuncBySymbol", false).action, Action::Forward);
  g.on_get_func_by_symbol(&host_gamma, 0, &fn_gamma);
  g.on_get_func_by_symbol(&host_alpha, 0, &fn_alpha);
  EXPECT_EQ(g.on_launch(&fn_gamma, 0, "hipModuleLaunchKernel").action, Action::Refuse);
  EXPECT_EQ(g.on_launch(&fn_alpha, 0, "hipModuleLaunchKernel").action, Action::Forward);
  EXPECT_EQ(g.on_launch(&fn_alpha, 1u << 20, "hipModuleLaunchKernel").action, Action::Refuse) << "dynamic LDS";
  EXPECT_EQ(g.on_launch(&host_alpha, 1u << 20, "hipLaunchKernel").action, Action::Refuse);
  testing::internal::GetCapturedStderr();
  std::vector<Diagnostic> said = g.said().findings;
  EXPECT_EQ(count_said(said, Code::kLookupFailed, Severity::Error, "", "gamma"), 1u) << lines(said);
  EXPECT_NE(lines(said).find("hipGetFuncBySymbol of a kernel that cannot run: HG409"), std::string::npos)
      << lines(said);
  EXPECT_EQ(count_said(said, Code::kLaunchLds, Severity::Error, "", "alpha"), 1u)
      << "said once per kernel, whichever key launched it: " << lines(said);
  g.on_unregister_fatbin(&handle);
  EXPECT_EQ(g.on_launch(&fn_gamma, 0, "hipModuleLaunchKernel").action, Action::Forward) << "forgotten";
  EXPECT_FALSE(launch_known_clean(&fn_alpha, 0));
}
