// hipcc-built offload bundles (.hipfb), CCOB fixtures made from one of them
// (zlib and zstd, header v1, v2, v3), and the .hip_fatbin sections of the
// hipcc-built executables and libraries: truncated and bit-flipped, through
// check_image (gfx90a - what the bundles hold -, gfx942, gfx950:xnack+, and
// structural-only), parse_bundle/entry_bytes and split_fatbin_section.
//
// A bundle cut short of its encoded size (the end of its last entry; for a
// CCOB v2/v3 the total size in its header, for v1 the end of the stream) is
// missing bytes the runtime reads: the structural check must fail with an
// HG1xx error, and gfx90a (which selects an entry) must not be able to run.
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>

#include <iostream>

#include "robust_util.h"

namespace hgrobust {
namespace {

constexpr int kMutationsPerInput = 200;

struct Input {
  std::string name;
  ByteVec bytes;
};

std::vector<Input> hipfb_bundles() {
  std::vector<Input> out;
  fs::path dir = apps_dir();
  if (dir.empty()) return out;
  for (const char* n : {"vector_add_gfx90a.hipfb", "vector_add_multi.hipfb"}) {
    std::error_code ec;
    if (fs::is_regular_file(dir / n, ec)) out.push_back({n, read_bytes(dir / n)});
  }
  return out;
}

// CCOB fixtures: vector_add_multi.hipfb compressed both ways, every header version.
std::vector<Input> ccob_bundles() {
  std::vector<Input> out;
  for (const auto& b : hipfb_bundles()) {
    if (b.name != "vector_add_multi.hipfb") continue;
    for (auto format : {llvm::compression::Format::Zlib, llvm::compression::Format::Zstd}) {
      if (llvm::compression::getReasonIfUnsupported(format)) continue;
      for (uint16_t version : {1, 2, 3}) {
        std::string name = b.name + (format == llvm::compression::Format::Zstd ? ".zstd" : ".zlib") + ".v" +
                           std::to_string(version) + ".ccob";
        uint16_t method = format == llvm::compression::Format::Zstd ? hgtest::kCcobZstd : hgtest::kCcobZlib;
        out.push_back({name, make_ccob(b.bytes, version, method, /*hash=*/0)});
      }
    }
  }
  return out;
}

// .hip_fatbin sections of the hipcc-built host programs and libraries.
std::vector<Input> fatbin_sections() {
  std::vector<Input> out;
  fs::path dir = apps_dir();
  if (dir.empty()) return out;
  for (const char* n : {"vector_add_gfx90a", "vector_add_gfx940", "vector_add_multi", "vector_add_xnack_on",
                        "big_lds_gfx90a", "libkernels_lib.so"}) {
    std::error_code ec;
    if (!fs::is_regular_file(dir / n, ec)) continue;
    ByteVec file = read_bytes(dir / n);
    auto elf =
        llvm::object::ELF64LEFile::create(llvm::StringRef(reinterpret_cast<const char*>(file.data()), file.size()));
    if (!elf) {
      llvm::consumeError(elf.takeError());
      continue;
    }
    auto sections = elf->sections();
    if (!sections) {
      llvm::consumeError(sections.takeError());
      continue;
    }
    for (const auto& s : *sections) {
      auto name = elf->getSectionName(s);
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (*name != ".hip_fatbin") continue;
      auto contents = elf->getSectionContents(s);
      if (!contents) {
        llvm::consumeError(contents.takeError());
        continue;
      }
      out.push_back({std::string(n) + ":.hip_fatbin", ByteVec(contents->begin(), contents->end())});
    }
  }
  return out;
}

#define REQUIRE_APPS()                                                                                               \
  do {                                                                                                               \
    if (apps_dir().empty())                                                                                          \
      GTEST_SKIP() << "hipcc-built bundles not available (HIPGUARD_HAVE_APPS=0: hipcc not found at configure time)"; \
  } while (0)

const std::vector<hipguard::TargetId>& bundle_targets() {
  static const std::vector<hipguard::TargetId> t = {target("gfx90a"), target("gfx942"), target("gfx950:xnack+")};
  return t;
}

// Bytes of `b` whose truncation is interesting: the header and entry table,
// each entry's start and end, and the structural parts of each code object.
ElfLayout bundle_layout(const ByteVec& b) {
  ElfLayout l;
  auto parsed = hipguard::parse_bundle(span(b));
  if (!parsed || parsed->compressed) {
    l.dense.push_back({0, std::min<uint64_t>(b.size(), 64)});
    l.structural.push_back({0, b.size()});
    return l;
  }
  l.dense.push_back({0, parsed->table_size});
  l.structural.push_back({0, parsed->table_size});
  for (const auto& e : parsed->entries) {
    uint64_t end = e.offset + e.size;
    l.dense.push_back({e.offset >= 16 ? e.offset - 16 : 0, std::min<uint64_t>(e.offset + 16, b.size())});
    l.dense.push_back({end >= 16 ? end - 16 : 0, std::min<uint64_t>(end + 16, b.size())});
    ByteVec co(b.begin() + e.offset, b.begin() + end);
    if (hipguard::classify(span(co)) != hipguard::PayloadKind::CodeObject) continue;
    ElfLayout inner = elf_layout(co);
    for (const auto& r : inner.structural) l.structural.push_back({e.offset + r.begin, e.offset + r.end});
  }
  return l;
}

// Truncation of one bundle (plain or CCOB).
void truncate_bundle(const Input& in, Failures& fail, uint64_t& parses) {
  auto whole = hipguard::parse_bundle(span(in.bytes));
  ASSERT_TRUE(whole) << in.name << ": " << whole.error().message;
  uint64_t needed = whole->encoded_size;
  ASSERT_LE(needed, in.bytes.size());
  const auto& targets = bundle_targets();
  hipguard::ImageReport full_t = hipguard::check_image(span(in.bytes), in.name, targets);
  hipguard::ImageReport full_s = hipguard::check_image(span(in.bytes), in.name, {});
  ASSERT_TRUE(full_s.ok()) << in.name << summary(full_s);
  ASSERT_TRUE(full_t.verdicts[0].can_run) << in.name << " should run on gfx90a" << summary(full_t);
  ElfLayout layout = bundle_layout(in.bytes);
  std::vector<uint64_t> points = truncation_points(in.bytes.size(), layout.dense, {needed});
  auto results = run_isolated(points.size(), [&](uint64_t i) -> std::string {
    uint64_t k = points[i];
    Exact prefix(in.bytes.data(), k);
    hipguard::ImageReport rt = hipguard::check_image(prefix.bytes(), in.name, targets);
    hipguard::ImageReport rs = hipguard::check_image(prefix.bytes(), in.name, {});
    if (auto p = report_problem(rt, targets.size()); !p.empty()) return p;
    if (auto p = report_problem(rs, 0); !p.empty()) return "(structural) " + p;
    auto b = hipguard::parse_bundle(prefix.bytes());
    if (b)
      for (const auto& e : b->entries) {
        hipguard::Bytes payload = hipguard::entry_bytes(*b, prefix.bytes(), e);
        volatile uint8_t sink = 0;
        for (uint8_t x : payload) sink = sink ^ x;
      }
    if (k < needed) {
      if (!has_structural_error(rs) || rs.ok())
        return "structural check has no HG1xx error: " + codes(rs) + summary(rs);
      if (rt.verdicts[0].can_run) return "gfx90a can still run it: " + codes(rt) + summary(rt);
    } else if (codes(rt) != codes(full_t) || codes(rs) != codes(full_s)) {
      return "diagnostics differ from the whole bundle's: " + codes(rt) + " / " + codes(rs);
    }
    return "";
  });
  for (const auto& [i, what] : results)
    fail.add(in.name + " truncated to " + (i < points.size() ? std::to_string(points[i]) : "?") + " of " +
             std::to_string(in.bytes.size()) + " bytes (encoded size " + std::to_string(needed) + "): " + what);
  parses += 2 * points.size();
}

void flip_bundle(const Input& in, Failures& fail, uint64_t& runs) {
  ElfLayout layout = bundle_layout(in.bytes);
  const auto& targets = bundle_targets();
  Rng rng{seed_of(in.name, 2)};
  std::vector<std::string> flips(kMutationsPerInput);
  std::vector<ByteVec> mutants(kMutationsPerInput, in.bytes);
  for (int i = 0; i < kMutationsPerInput; ++i) flips[i] = flip_bits(mutants[i], rng, layout.structural);
  auto results = run_isolated(kMutationsPerInput, [&](uint64_t i) -> std::string {
    Exact copy(mutants[i].data(), mutants[i].size());
    hipguard::ImageReport rt = hipguard::check_image(copy.bytes(), in.name, targets);
    hipguard::ImageReport rs = hipguard::check_image(copy.bytes(), in.name, {});
    if (auto p = report_problem(rt, targets.size()); !p.empty()) return p;
    if (auto p = report_problem(rs, 0); !p.empty()) return "(structural) " + p;
    for (auto& part : hipguard::split_fatbin_section(copy.bytes()))
      if (part.bundle)
        for (const auto& e : part.bundle->entries)
          hipguard::entry_bytes(*part.bundle, copy.bytes().subspan(part.offset), e);
    return "";
  });
  for (const auto& [i, what] : results)
    fail.add(in.name + " mutation " + std::to_string(i) + " (flipped byte:bit " + (i < flips.size() ? flips[i] : "") +
             "): " + what);
  runs += 2 * kMutationsPerInput;
}

TEST(Robustness, HipccBundlesTruncated) {
  REQUIRE_APPS();
  auto inputs = hipfb_bundles();
  ASSERT_FALSE(inputs.empty()) << "no .hipfb in " << apps_dir();
  Failures fail;
  uint64_t parses = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& in : inputs) truncate_bundle(in, fail, parses);
  std::cout << "[ robustness ] " << inputs.size() << " bundles, " << parses << " checks of truncated copies, "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
}

TEST(Robustness, HipccBundlesBitFlips) {
  REQUIRE_APPS();
  Failures fail;
  uint64_t runs = 0;
  for (const auto& in : hipfb_bundles()) flip_bundle(in, fail, runs);
  EXPECT_GT(runs, 0u);
}

TEST(Robustness, CompressedBundlesTruncated) {
  REQUIRE_APPS();
  auto inputs = ccob_bundles();
  if (inputs.empty()) GTEST_SKIP() << "LLVM built without zlib and zstd";
  Failures fail;
  uint64_t parses = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& in : inputs) truncate_bundle(in, fail, parses);
  std::cout << "[ robustness ] " << inputs.size() << " CCOBs, " << parses << " checks of truncated copies, "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
}

TEST(Robustness, CompressedBundlesBitFlips) {
  REQUIRE_APPS();
  auto inputs = ccob_bundles();
  if (inputs.empty()) GTEST_SKIP() << "LLVM built without zlib and zstd";
  Failures fail;
  uint64_t runs = 0;
  for (const auto& in : inputs) flip_bundle(in, fail, runs);
}

// .hip_fatbin sections: split into bundles, each checked structurally.
TEST(Robustness, FatbinSectionsTruncatedAndFlipped) {
  REQUIRE_APPS();
  auto inputs = fatbin_sections();
  ASSERT_FALSE(inputs.empty()) << "no .hip_fatbin section in the programs of " << apps_dir();
  Failures fail;
  auto check = [&](hipguard::Bytes section) -> std::string {
    for (auto& part : hipguard::split_fatbin_section(section)) {
      if (part.offset >= section.size()) return "bundle offset " + std::to_string(part.offset) + " outside the section";
      hipguard::Bytes rest = section.subspan(part.offset);
      if (part.bundle && part.bundle->encoded_size > rest.size()) return "encoded size beyond the section";
      hipguard::ImageReport r = hipguard::check_image(rest, "section", {});
      if (auto p = report_problem(r, 0); !p.empty()) return p;
    }
    return "";
  };
  for (const auto& in : inputs) {
    ElfLayout layout;
    uint64_t pos = 0;
    for (auto& part : hipguard::split_fatbin_section(span(in.bytes))) {
      if (!part.bundle) continue;
      ByteVec one(in.bytes.begin() + part.offset, in.bytes.begin() + part.offset + part.bundle->encoded_size);
      for (const auto& r : bundle_layout(one).dense)
        layout.dense.push_back({part.offset + r.begin, part.offset + r.end});
      for (const auto& r : bundle_layout(one).structural)
        layout.structural.push_back({part.offset + r.begin, part.offset + r.end});
      pos = part.offset + part.bundle->encoded_size;
    }
    EXPECT_GT(pos, 0u) << in.name << ": no bundle found";
    std::vector<uint64_t> points = truncation_points(in.bytes.size(), layout.dense);
    for (const auto& [i, what] : run_isolated(points.size(), [&](uint64_t i) {
           Exact prefix(in.bytes.data(), points[i]);
           return check(prefix.bytes());
         }))
      fail.add(in.name + " truncated to " + (i < points.size() ? std::to_string(points[i]) : "?") + ": " + what);
    Rng rng{seed_of(in.name, 3)};
    std::vector<std::string> flips(kMutationsPerInput);
    std::vector<ByteVec> mutants(kMutationsPerInput, in.bytes);
    for (int i = 0; i < kMutationsPerInput; ++i) flips[i] = flip_bits(mutants[i], rng, layout.structural);
    for (const auto& [i, what] : run_isolated(kMutationsPerInput, [&](uint64_t i) {
           Exact copy(mutants[i].data(), mutants[i].size());
           return check(copy.bytes());
         }))
      fail.add(in.name + " mutation " + std::to_string(i) + " (flipped byte:bit " + (i < flips.size() ? flips[i] : "") +
               "): " + what);
  }
}

}  // namespace
}  // namespace hgrobust
