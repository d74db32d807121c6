// The registry's stub owners (registry.h): a stub's first registration counts
// while its fat binary is registered, as CLR's StatCO::RegisterFunction keeps
// it; owners of gone fat binaries stop counting at once and are pruned in bulk.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/registry.h"

using namespace hipguard;

namespace {

const void* stub(uintptr_t i) { return reinterpret_cast<const void*>(0x10000 + i * 16); }

// A fat binary registered under `handle`, as on_registered_fatbin does.
FatbinState& registered(Registry& r, const void* handle) {
  FatbinState& fb = r.fatbins[handle];
  fb.seq = ++r.seq;
  return fb;
}

// Registers `stub` as on_register_function does: kept when its registration counts.
bool register_stub(Registry& r, const void* handle, const void* s) {
  FatbinState& fb = r.fatbins.at(handle);
  if (!r.claim_stub(s, handle, fb.seq)) return false;
  fb.unindexed.push_back({s, "kernel", 0});
  return true;
}

void unregistered(Registry& r, const void* handle) {
  r.forget_kernels_of(handle, r.fatbins.at(handle), [](const KernelState&) {});
  r.fatbins.erase(handle);
}

}  // namespace

TEST(Registry, AStubIsItsFirstRegistrationsWhileThatFatBinaryIsRegistered) {
  std::atomic<unsigned> gate{0};
  Registry r{gate};
  static int a, b, c;
  registered(r, &a);
  registered(r, &b);
  EXPECT_TRUE(register_stub(r, &a, stub(1)));
  EXPECT_FALSE(register_stub(r, &b, stub(1))) << "the runtime drops the second registration";
  EXPECT_EQ(r.owner_of(stub(1)), &a);
  unregistered(r, &a);
  EXPECT_EQ(r.owner_of(stub(1)), nullptr) << "gone with its fat binary; b's was dropped for good";
  registered(r, &c);
  EXPECT_TRUE(register_stub(r, &c, stub(1))) << "registered anew after the first owner went";
  EXPECT_EQ(r.owner_of(stub(1)), &c);
  // A handle registered anew (its earlier registration's kernels forgotten): its stubs are claimed anew.
  r.forget_kernels_of(&c, r.fatbins.at(&c), [](const KernelState&) {});
  registered(r, &c);
  EXPECT_EQ(r.owner_of(stub(1)), nullptr) << "the earlier registration's claim";
  EXPECT_TRUE(register_stub(r, &c, stub(1)));
  EXPECT_EQ(r.owner_of(stub(1)), &c);
  EXPECT_EQ(r.owner_of(stub(2)), nullptr);
}

// Stubs of unregistered fat binaries are not erased one by one; once they
// outnumber the rest (and Registry::kPruneAbove), they are erased at once,
// and what still counts is kept.
TEST(Registry, OwnersOfGoneFatBinariesArePrunedInBulk) {
  std::atomic<unsigned> gate{0};
  Registry r{gate};
  static int kept, dup, gone, going;
  registered(r, &kept);
  registered(r, &dup);
  registered(r, &gone);
  registered(r, &going);
  ASSERT_TRUE(register_stub(r, &kept, stub(0)));
  ASSERT_FALSE(register_stub(r, &dup, stub(0)));
  const size_t n = Registry::kPruneAbove + 10;
  for (size_t i = 1; i <= 100; ++i) ASSERT_TRUE(register_stub(r, &gone, stub(n + i)));
  for (size_t i = 1; i <= n; ++i) ASSERT_TRUE(register_stub(r, &going, stub(i)));
  unregistered(r, &dup);
  unregistered(r, &gone);
  EXPECT_EQ(r.stub_owner.size(), n + 101) << "not pruned below the threshold";
  EXPECT_EQ(r.owner_of(stub(n + 1)), nullptr) << "gone, if not erased";
  unregistered(r, &going);
  EXPECT_EQ(r.stub_owner.size(), 1u) << "pruned: the going fat binary's and the gone one's";
  EXPECT_EQ(r.gone_stubs, 0u);
  EXPECT_EQ(r.owner_of(stub(0)), &kept);
  EXPECT_EQ(r.owner_of(stub(5)), nullptr);
}

// The registry writes its three bits of the launch gate (guard.h) from its own state: a fat binary
// below Depth::Full, registrations waiting for the kernel table, a kernel with findings entered.
TEST(Registry, OwnsItsLaunchGateBits) {
  std::atomic<unsigned> gate{kGateProbe};  // the probe's bit is not the registry's: left alone
  Registry r{gate};
  r.depth_changed(Depth::Full, Depth::Selection);  // registered to selection
  r.depth_changed(Depth::Full, Depth::Selection);  // another one
  EXPECT_EQ(gate.load(), kGateProbe | kGateNotCheckedInFull);
  r.depth_changed(Depth::Selection, Depth::Selection);  // registered anew, still to selection
  r.depth_changed(Depth::Selection, Depth::Full);       // checked in full
  EXPECT_EQ(gate.load(), kGateProbe | kGateNotCheckedInFull) << "one is still below Full";
  r.depth_changed(Depth::Selection, Depth::Full);  // gone
  EXPECT_EQ(gate.load(), kGateProbe);

  static int a, b;
  r.unindexed(&a, true);
  r.unindexed(&a, false);
  r.unindexed(&b, true);
  EXPECT_EQ(r.unindexed_order, (std::vector<const void*>{&a, &b}));
  EXPECT_EQ(gate.load(), kGateProbe | kGateUnindexed);
  r.indexed(&a);
  EXPECT_EQ(gate.load(), kGateProbe | kGateUnindexed) << "b still waits";
  r.indexed(&b);
  EXPECT_EQ(gate.load(), kGateProbe);
  r.unindexed(&a, true);
  r.all_indexed();
  EXPECT_TRUE(r.unindexed_order.empty());
  EXPECT_EQ(gate.load(), kGateProbe);

  KernelState& clean = r.new_kernel();
  r.enter(stub(1), clean);
  EXPECT_EQ(gate.load(), kGateProbe) << "a kernel without findings leaves the gate closed";
  KernelState& bad = r.new_kernel();
  bad.findings_ptr = std::make_shared<const std::vector<Diagnostic>>(
      std::vector<Diagnostic>{make_diagnostic(code::kLdsOverLimit, "x.co", "too much LDS", "")});
  r.enter(stub(2), bad);
  EXPECT_EQ(gate.load(), kGateProbe | kGateFindings);
  EXPECT_EQ(r.find(stub(2)), &bad);
}
