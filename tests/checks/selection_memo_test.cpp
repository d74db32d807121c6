// SelectionMemo (registration's selection by bundle entry IDs, warn and strict): the
// same verdicts, entries and findings as selection without it, over every fat
// binary of the ROCm 6.4 libraries and the hipcc test programs; nothing
// remembered that a finding came with; another set of targets starts afresh.
// Also the table read from a copy of the bundle's first bytes (check_image's
// head, the shim's warn-mode registration): the same, and the bundle's first
// page never read.
#include <gtest/gtest.h>
#include <llvm/Object/ELF.h>
#include <sys/mman.h>
#include <unistd.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ccob.h"
#include "check_util.h"
#include "hipguard/bundle.h"
#include "hipguard/check.h"
#include "hipguard/runtime_version.h"

using namespace hipguard;
using namespace checks;

namespace {

std::vector<TargetId> targets_of(std::initializer_list<const char*> names) {
  std::vector<TargetId> out;
  for (const char* n : names) {
    auto t = parse_target(n);
    EXPECT_TRUE(t) << n;
    if (t) out.push_back(*t);
  }
  return out;
}

std::string codes(const ImageReport& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += std::string(code_string(d.code)) + "/" + d.target + "/" + d.entry + " ";
  return s;
}

// `data` checked to Depth::Selection (registration) with the memo and without: the same report.
void expect_same(Bytes data, const std::vector<TargetId>& targets, const Machine& m, SelectionMemo& memo,
                 const std::string& what) {
  const Depth depth = Depth::Selection;
  ImageReport plain = check_image(data, what, targets, "", depth, m);
  ImageReport memoized = check_image(data, what, targets, "", depth, m, &memo);
  EXPECT_EQ(memoized.code_objects.size(), plain.code_objects.size()) << what;
  EXPECT_EQ(memoized.entry_ids, plain.entry_ids) << what;
  EXPECT_EQ(codes(memoized), codes(plain)) << what;
  EXPECT_EQ(memoized.ok(), plain.ok()) << what;
  ASSERT_EQ(memoized.verdicts.size(), plain.verdicts.size()) << what;
  for (size_t i = 0; i < plain.verdicts.size(); ++i) {
    const TargetVerdict &a = memoized.verdicts[i], &b = plain.verdicts[i];
    EXPECT_EQ(a.kernels, b.kernels) << what << " " << b.target.str();
    EXPECT_EQ(a.selection, b.selection) << what << " " << b.target.str();
    EXPECT_EQ(a.selected, b.selected) << what << " " << b.target.str();
    EXPECT_EQ(a.can_run, b.can_run) << what << " " << b.target.str();
    EXPECT_EQ(a.kernel_free, b.kernel_free) << what << " " << b.target.str();
  }
}

// `data` checked to Depth::Selection with its table from a copy of its first
// 4 KiB (check_image's head) and the memo, as the shim's warn-mode registration
// does, its first page made unreadable meanwhile: the
// same report as reading it, and no read there (it would fault). Returns false
// when `data` does not start a page (nothing checked).
bool expect_same_from_head(Bytes data, const std::vector<TargetId>& targets, const Machine& m, SelectionMemo& memo,
                           const std::string& what) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto* first = const_cast<uint8_t*>(data.data());
  if (reinterpret_cast<uintptr_t>(first) % page != 0 || data.size() < page) return false;
  std::vector<uint8_t> head(data.begin(), data.begin() + 4096);
  ImageReport plain = check_image(data, what, targets, "", Depth::Selection, m);
  EXPECT_EQ(mprotect(first, page, PROT_NONE), 0);
  ImageReport copied = check_image(data, what, targets, "", Depth::Selection, m, &memo, head);
  EXPECT_EQ(mprotect(first, page, PROT_READ), 0);
  EXPECT_EQ(copied.entry_ids, plain.entry_ids) << what;
  EXPECT_EQ(codes(copied), codes(plain)) << what;
  EXPECT_EQ(copied.ok(), plain.ok()) << what;
  EXPECT_EQ(copied.verdicts.size(), plain.verdicts.size()) << what;
  for (size_t i = 0; i < plain.verdicts.size() && i < copied.verdicts.size(); ++i) {
    EXPECT_EQ(copied.verdicts[i].selected, plain.verdicts[i].selected) << what;
    EXPECT_EQ(copied.verdicts[i].can_run, plain.verdicts[i].can_run) << what;
  }
  return true;
}

// Every fat binary of a library's .hip_fatbin section.
template <class Fn>
size_t each_fatbin(const std::string& path, Fn fn) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  EXPECT_TRUE(bool(buf)) << path;
  if (!buf) return 0;
  auto f = llvm::object::ELFFile<llvm::object::ELF64LE>::create((*buf)->getBuffer());
  EXPECT_TRUE(bool(f)) << path;
  if (!f) return 0;
  size_t n = 0;
  for (const auto& s : llvm::cantFail(f->sections())) {
    auto name = f->getSectionName(s);
    if (!name || *name != ".hip_fatbin") continue;
    auto data = llvm::cantFail(f->getSectionContents(s));
    for (const auto& sb : split_fatbin_section(Bytes(data.data(), data.size()))) {
      fn(Bytes(data.data(), data.size()).subspan(sb.offset));
      ++n;
    }
  }
  return n;
}

}  // namespace

// Processors the libraries ship (gfx90a, gfx1030), one they do not (gfx942),
// xnack-specific and generic targets, and two GPUs in one process (HG212's batch lookup).
TEST(SelectionMemo, SelectsAsWithoutItInRocmLibraries) {
  const std::string root = HIPGUARD_ROCM_ROOT;
  if (!exists(root + "/.hipguard-root"))
    GTEST_SKIP() << "no ROCm root at '" << root << "' (scripts/rocm-root.sh builds it)";
  struct Case {
    std::vector<TargetId> targets;
    Machine machine;
  };
  std::vector<Case> cases = {{targets_of({"gfx90a"}), {}},
                             {targets_of({"gfx942"}), {}},
                             {targets_of({"gfx90a:xnack+", "gfx1030"}), {nullptr, true}},
                             {targets_of({"gfx1031"}), {}}};
  for (const char* lib :
       {"librocblas.so.4", "librocsparse.so.1", "librocsolver.so.0", "ggml/backends0/libggml-hip.so"}) {
    for (const auto& c : cases) {
      SelectionMemo memo;
      size_t clean = 0;  // fat binaries selected without a finding: the memo's to remember
      size_t from_head = 0;
      SelectionMemo with_head;
      size_t n = each_fatbin(root + "/usr/lib/x86_64-linux-gnu/" + lib, [&](Bytes fatbin) {
        expect_same(fatbin, c.targets, c.machine, memo, lib);
        clean += check_image(fatbin, lib, c.targets, "", Depth::Selection, c.machine).diagnostics.empty();
        from_head += expect_same_from_head(fatbin, c.targets, c.machine, with_head, lib);
      });
      EXPECT_GT(n, 0u) << lib;
      EXPECT_EQ(from_head, n) << lib << ": each fat binary starts a page of the mapped file";
      std::cout << lib << " for " << c.targets.front().str() << (c.targets.size() > 1 ? ",..." : "") << ": " << n
                << " fat binaries, " << clean << " selected without a finding from " << memo.size()
                << " tables of entry IDs\n";
      EXPECT_EQ(memo.size() > 0, clean > 0) << lib;
      EXPECT_LT(memo.size() * 4, std::max<size_t>(clean, 1)) << lib << ": most fat binaries share a table";
      if (c.targets.front().str() == "gfx90a") EXPECT_GT(clean, n / 2) << lib << " ships gfx90a code";
    }
  }
}

// Every runtime hipguard models (generic entries taken or not, the batch
// lookup of one process), and two GPUs of one processor with different xnack
// modes in one process, where the batch lookup gives a bare entry to one of
// them only (HG212: not remembered).
TEST(SelectionMemo, SelectsAsWithoutItInHipccPrograms) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  for (const char* app :
       {"vector_add_gfx90a.hipfb", "vector_add_multi.hipfb", "fill_gfx1100.hipfb", "device_vars_only.hipfb"}) {
    std::vector<uint8_t> b = read_bytes(kApps + "/" + app);
    for (const RuntimeInfo& rt : all_runtimes())
      for (bool one_process : {false, true})
        for (auto targets : {targets_of({"gfx90a"}), targets_of({"gfx1030"}), targets_of({"gfx90a:xnack+", "gfx1030"}),
                             targets_of({"gfx90a:xnack+", "gfx90a:xnack-"}), targets_of({"gfx1100"}),
                             targets_of({"gfx1101"}), targets_of({"gfx942"})}) {
          SelectionMemo memo;
          for (int round = 0; round < 2; ++round)  // the second round selects from the memo
            expect_same(Bytes(b.data(), b.size()), targets, {&rt, one_process}, memo, app);
        }
  }
  // HG212: one bare gfx90a entry, two gfx90a GPUs with different xnack modes in one process.
  std::vector<uint8_t> b = read_bytes(kApps + "/vector_add_gfx90a.hipfb");
  SelectionMemo memo;
  ImageReport starved = check_image(Bytes(b.data(), b.size()), "app", targets_of({"gfx90a:xnack+", "gfx90a:xnack-"}),
                                    "", Depth::Selection, {nullptr, true}, &memo);
  EXPECT_TRUE(std::any_of(starved.diagnostics.begin(), starved.diagnostics.end(), [](const Diagnostic& d) {
    return d.code == Code::kBatchLookupStarved;
  })) << codes(starved);
  EXPECT_EQ(memo.size(), 0u);
}

// A bundle with the IDs of a remembered one whose table runs past its end is
// still a broken bundle: the memo is asked only after the table is read.
TEST(SelectionMemo, ABrokenBundleWithRememberedIdsIsStillBroken) {
  if (kApps.empty() || !exists(kApps + "/vector_add_multi.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> b = read_bytes(kApps + "/vector_add_multi.hipfb");
  auto targets = targets_of({"gfx1030"});
  SelectionMemo memo;
  ImageReport whole = check_image(Bytes(b.data(), b.size()), "whole", targets, "", Depth::Selection, {}, &memo);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(memo.size(), 1u);
  Result<Bundle> parsed = parse_bundle(Bytes(b.data(), b.size()));
  ASSERT_TRUE(parsed);
  Bytes cut(b.data(), parsed->entries.back().offset + 1);  // the last entry runs past the end
  ImageReport broken = check_image(cut, "cut", targets, "", Depth::Selection, {}, &memo);
  EXPECT_FALSE(broken.ok());
  EXPECT_EQ(codes(broken), codes(check_image(cut, "cut", targets, "", Depth::Selection)));
}

// Nothing for the target: not remembered. Another set of targets: the memo
// starts afresh, and what it held for the first set does not answer for it.
TEST(SelectionMemo, OnlyCleanSelectionsForOneSetOfTargets) {
  if (kApps.empty() || !exists(kApps + "/vector_add_gfx90a.hipfb")) GTEST_SKIP() << "hipcc test apps not built";
  std::vector<uint8_t> b = read_bytes(kApps + "/vector_add_gfx90a.hipfb");
  Bytes data(b.data(), b.size());
  SelectionMemo memo;
  EXPECT_FALSE(check_image(data, "app", targets_of({"gfx1030"}), "", Depth::Selection, {}, &memo).ok());
  EXPECT_EQ(memo.size(), 0u);
  EXPECT_TRUE(check_image(data, "app", targets_of({"gfx90a"}), "", Depth::Selection, {}, &memo).ok());
  EXPECT_EQ(memo.size(), 1u);
  ImageReport other = check_image(data, "app", targets_of({"gfx1030"}), "", Depth::Selection, {}, &memo);
  EXPECT_FALSE(other.ok());
  EXPECT_EQ(other.verdicts[0].selection, Selection::None);
  // gfx90a:xnack+ selects the same entry: remembered anew, for these targets only.
  EXPECT_TRUE(check_image(data, "app", targets_of({"gfx90a:xnack+"}), "", Depth::Selection, {}, &memo).ok());
  EXPECT_EQ(memo.size(), 1u) << "another set of targets starts afresh";
  EXPECT_FALSE(check_image(data, "app", targets_of({"gfx1030"}), "", Depth::Selection, {}, &memo).ok());
  // Depths that read more than the headers never use it, nor do compressed bundles.
  SelectionMemo unused;
  for (Depth d : {Depth::Full, Depth::Descriptors, Depth::ForTargets})
    EXPECT_TRUE(check_image(data, "app", targets_of({"gfx90a"}), "", d, {}, &unused).ok());
  std::vector<uint8_t> ccob = hgtest::make_ccob(b, 3, 1);
  EXPECT_TRUE(
      check_image(Bytes(ccob.data(), ccob.size()), "ccob", targets_of({"gfx90a"}), "", Depth::Selection, {}, &unused)
          .ok());
  EXPECT_EQ(unused.size(), 0u);
}
