// The registry (registry.h) through its operations: a stub's first registration counts while its
// fat binary is registered, as CLR's StatCO::RegisterFunction keeps it, and owners of gone fat
// binaries stop counting at once and are pruned in bulk; a fat binary registered anew under its
// handle; a kernel found by its stub; kernel states quarantined before reuse; the launch gate's bits.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/registry.h"

using namespace hipguard;

namespace {

const void* stub(uintptr_t i) { return reinterpret_cast<const void*>(0x10000 + i * 16); }

const std::vector<TargetId> kNoTargets;

// A fat binary registered under `handle` at `depth`, as on_registered_fatbin does; the live kernels
// of its earlier registration under that handle are counted in `gone`.
void registered(Registry& r, const void* handle, Depth depth = Depth::Full, size_t* gone = nullptr) {
  PendingFatbin p;
  p.report.origin = "lib" + std::to_string(reinterpret_cast<uintptr_t>(handle) % 1000) + ".so";
  p.depth = depth;
  r.add_fatbin(handle, std::move(p), [&](const KernelState&) {
    if (gone) ++*gone;
  });
}

void unregistered(Registry& r, const void* handle, size_t* gone = nullptr) {
  EXPECT_TRUE(r.remove_fatbin(
      handle,
      [&](const KernelState&) {
        if (gone) ++*gone;
      },
      [](ImageReport&&, uint64_t) {}));
}

// The kernel table for `key`, as a launch fills it (Kernels::index_kernel); the host functions
// that entered it are counted in `entered`.
const KernelState* launched(Registry& r, const void* key, size_t* entered = nullptr) {
  r.index_kernel(key, kNoTargets, [&](const void*, std::span<const void* const> fns) {
    if (entered) *entered += fns.size();
  });
  return r.find(key);
}

std::string name_of(const KernelState* k) { return k ? k->name : "(none)"; }

// A module whose image has an error about kernel `bad`.
ModuleInfo module_with_a_bad_kernel() {
  ModuleInfo m;
  m.origin = "m.co";
  ImageReport img;
  img.origin = "m.co";
  Diagnostic d = make_diagnostic(Code::kLdsOverLimit, "m.co", "too much LDS", "");
  d.severity = Severity::Error;
  d.kernel = "bad";
  img.diagnostics.push_back(d);
  m.images.push_back(std::move(img));
  return m;
}

}  // namespace

TEST(Registry, AStubIsItsFirstRegistrationsWhileThatFatBinaryIsRegistered) {
  std::atomic<unsigned> gate{0};
  Probe probe{gate};  // never off here: asked only whether it is
  Registry r{gate, probe};
  static int a, b, c;
  registered(r, &a);
  registered(r, &b);
  r.add_function(&a, stub(1), "from_a");
  r.add_function(&b, stub(1), "from_b");
  EXPECT_EQ(r.owner_of(stub(1)), &a);
  EXPECT_EQ(name_of(launched(r, stub(1))), "from_a");
  r.index_waiting(0, kNoTargets, [](const void*, std::span<const void* const>) {});
  EXPECT_EQ(name_of(r.find(stub(1))), "from_a") << "the runtime drops the second registration";
  size_t gone = 0;
  unregistered(r, &a, &gone);
  EXPECT_EQ(gone, 1u);
  EXPECT_EQ(r.find(stub(1)), nullptr) << "gone with its fat binary";
  EXPECT_EQ(r.owner_of(stub(1)), nullptr) << "b's registration was dropped for good";
  registered(r, &c);
  r.add_function(&c, stub(1), "from_c");
  EXPECT_EQ(r.owner_of(stub(1)), &c) << "registered anew after the first owner went";
  EXPECT_EQ(name_of(launched(r, stub(1))), "from_c");
  EXPECT_EQ(r.owner_of(stub(2)), nullptr);
  EXPECT_EQ(launched(r, stub(2)), nullptr) << "never registered";
}

// A handle registered anew (without an unregistration between): its earlier registration's
// kernels leave the table, its stubs are claimed anew, and the report lists it once.
TEST(Registry, AFatBinaryRegisteredAnewUnderItsHandleReplacesTheEarlierOne) {
  std::atomic<unsigned> gate{0};
  Probe probe{gate};  // never off here: asked only whether it is
  Registry r{gate, probe};
  static int h;
  registered(r, &h);
  r.add_function(&h, stub(1), "first");
  r.add_function(&h, stub(2), "also_first");
  size_t entered = 0;
  EXPECT_EQ(name_of(launched(r, stub(1), &entered)), "first");
  EXPECT_EQ(entered, 2u) << "its fat binary's kernels enter the table together";
  const uint64_t before = r.last_seq();
  size_t gone = 0;
  registered(r, &h, Depth::Full, &gone);
  EXPECT_EQ(gone, 2u);
  EXPECT_GT(r.last_seq(), before);
  EXPECT_EQ(r.find(stub(1)), nullptr);
  EXPECT_EQ(r.find(stub(2)), nullptr);
  EXPECT_EQ(r.owner_of(stub(1)), nullptr) << "the earlier registration's claim";
  r.add_function(&h, stub(1), "second");
  EXPECT_EQ(r.owner_of(stub(1)), &h);
  EXPECT_EQ(name_of(launched(r, stub(1))), "second");
  size_t images = 0;
  r.for_each_image_since(0, [&](const ImageReport&) { ++images; });
  EXPECT_EQ(images, 1u);
  size_t current = 0;
  r.for_each_current_kernel(0, [&](const KernelState& k) {
    ++current;
    EXPECT_EQ(k.name, "second");
  });
  EXPECT_EQ(current, 1u) << "the retired states are not listed";
}

// The hipFunction_t that hipGetFuncBySymbol returned for a stub is found under its own key with the
// stub's facts; both get fresh states when their fat binary is checked in full, and go with it.
TEST(Registry, AKernelFoundByItsStubFollowsItsFatBinary) {
  std::atomic<unsigned> gate{0};
  Probe probe{gate};  // never off here: asked only whether it is
  Registry r{gate, probe};
  static int h, function;
  registered(r, &h, Depth::Selection);
  r.add_function(&h, stub(1), "k");
  const KernelState* by_stub = launched(r, stub(1));
  ASSERT_NE(by_stub, nullptr);
  EXPECT_EQ(by_stub->depth, Depth::Selection);
  r.enter_function_of(stub(1), &function);
  const KernelState* by_function = r.find(&function);
  ASSERT_NE(by_function, nullptr);
  EXPECT_EQ(by_function->name, "k");
  EXPECT_EQ(by_function->stub, stub(1));
  EXPECT_EQ(by_function->fatbin, &h);
  r.enter_function_of(stub(1), &function);
  EXPECT_EQ(r.find(&function), by_function) << "looked up before: the same state";

  EXPECT_TRUE(r.below_full(&h, 0));
  EXPECT_FALSE(r.below_full(&h, r.last_seq())) << "registered before that seq";
  EXPECT_EQ(r.all_below_full(0), std::vector<const void*>{&h});
  const ImageReport* full = r.check_in_full(
      &h,
      [](Bytes, const std::string& origin) {
        ImageReport rep;
        rep.origin = origin;
        Diagnostic d = make_diagnostic(Code::kLdsOverLimit, origin, "too much LDS", "");
        d.severity = Severity::Warning;
        d.kernel = "k";
        rep.diagnostics.push_back(d);
        return rep;
      },
      kNoTargets);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->diagnostics.size(), 1u);
  EXPECT_EQ(r.check_in_full(
                &h, [](Bytes, const std::string&) { return ImageReport(); }, kNoTargets),
            nullptr)
      << "in full already";
  EXPECT_TRUE(r.all_below_full(0).empty());
  for (const void* key : {stub(1), static_cast<const void*>(&function)}) {
    const KernelState* fresh = r.find(key);
    ASSERT_NE(fresh, nullptr);
    EXPECT_EQ(fresh->depth, Depth::Full);
    EXPECT_EQ(fresh->findings().size(), 1u) << "the full check's finding about k";
  }
  EXPECT_NE(r.find(stub(1)), by_stub);
  EXPECT_TRUE(by_stub->superseded) << "kept valid for a reader that holds it, not reported";
  EXPECT_EQ(r.find(&function)->stub, stub(1));
  size_t current = 0;
  r.for_each_current_kernel(0, [&](const KernelState&) { ++current; });
  EXPECT_EQ(current, 2u);

  size_t gone = 0;
  unregistered(r, &h, &gone);
  EXPECT_EQ(gone, 2u) << "the stub's state and the function's";
  EXPECT_EQ(r.find(&function), nullptr);
  EXPECT_FALSE(r.has_fatbin(&h));
  EXPECT_FALSE(r.remove_fatbin(
      &h, [](const KernelState&) {}, [](ImageReport&&, uint64_t) {}));
}

// A retired kernel state stays valid (for a launch racing with its unload) until the quarantine
// is full; then it is reused, reset.
TEST(Registry, RetiredKernelStatesWaitInQuarantineBeforeReuse) {
  std::atomic<unsigned> gate{0};
  Probe probe{gate};  // never off here: asked only whether it is
  Registry r{gate, probe};
  static int module, function;
  r.add_module(&module, ModuleInfo{});
  r.add_module_function(&module, &function, "first", kNoTargets);
  const KernelState* first = r.find(&function);
  ASSERT_NE(first, nullptr);
  first->launches = 7;
  size_t gone = 0, images = 0;
  auto count_gone = [&](const KernelState& k) {
    ++gone;
    EXPECT_TRUE(k.retired);
  };
  auto count_images = [&](ImageReport&&, uint64_t) { ++images; };
  ASSERT_TRUE(r.remove_module(&module, count_gone, count_images));
  EXPECT_EQ(gone, 1u);
  EXPECT_EQ(r.find(&function), nullptr);
  EXPECT_EQ(r.find_module(&module), nullptr);
  EXPECT_FALSE(r.remove_module(&module, count_gone, count_images));
  // Each cycle retires one more state: the first is reused only once the quarantine holds more.
  bool reused = false;
  size_t cycles = 0;
  for (; cycles < 400 && !reused; ++cycles) {
    EXPECT_EQ(first->name, "first") << "still valid after " << cycles << " cycles";
    EXPECT_EQ(first->launches.load(), 7u);
    r.add_module(&module, ModuleInfo{});
    r.add_module_function(&module, &function, "again", kNoTargets);
    reused = r.find(&function) == first;
    ASSERT_TRUE(r.remove_module(&module, count_gone, count_images));
  }
  EXPECT_TRUE(reused);
  EXPECT_GT(cycles, 256u) << "not before the quarantine is full";
  EXPECT_EQ(first->name, "again") << "reset for its new kernel";
  EXPECT_EQ(first->launches.load(), 0u);
  EXPECT_EQ(images, 0u) << "the modules had no images";
}

// Stubs of unregistered fat binaries are not erased one by one; once they
// outnumber the rest (and Registry::kPruneAbove), they are erased at once,
// and what still counts is kept.
TEST(Registry, OwnersOfGoneFatBinariesArePrunedInBulk) {
  std::atomic<unsigned> gate{0};
  Probe probe{gate};  // never off here: asked only whether it is
  Registry r{gate, probe};
  static int kept, dup, gone, going;
  registered(r, &kept);
  registered(r, &dup);
  registered(r, &gone);
  registered(r, &going);
  r.add_function(&kept, stub(0), "k");
  r.add_function(&dup, stub(0), "k");
  const size_t n = Registry::kPruneAbove + 10;
  for (size_t i = 1; i <= 100; ++i) r.add_function(&gone, stub(n + i), "k");
  for (size_t i = 1; i <= n; ++i) r.add_function(&going, stub(i), "k");
  unregistered(r, &dup);
  unregistered(r, &gone);
  EXPECT_EQ(r.stub_owner_entries(), n + 101) << "not pruned below the threshold";
  EXPECT_EQ(r.owner_of(stub(n + 1)), nullptr) << "gone, if not erased";
  EXPECT_EQ(r.owner_of(stub(1)), &going);
  unregistered(r, &going);
  EXPECT_EQ(r.stub_owner_entries(), 1u) << "pruned: the going fat binary's and the gone one's";
  EXPECT_EQ(r.owner_of(stub(0)), &kept);
  EXPECT_EQ(r.owner_of(stub(5)), nullptr);
}

// The registry writes its three bits of the launch gate (guard.h) from its own state: a fat binary
// below Depth::Full, registrations waiting for the kernel table, a kernel with findings entered.
TEST(Registry, OwnsItsLaunchGateBits) {
  std::atomic<unsigned> gate{kGateProbe};  // the probe's bit is not the registry's: left alone
  Probe probe{gate};                       // never off here: asked only whether it is
  Registry r{gate, probe};
  static int a, b, module, clean, bad;
  registered(r, &a, Depth::Selection);
  registered(r, &b, Depth::Selection);
  EXPECT_EQ(gate.load(), kGateProbe | kGateNotCheckedInFull);
  registered(r, &b, Depth::Selection);  // registered anew, still to selection
  auto check = [](Bytes, const std::string& origin) {
    ImageReport rep;
    rep.origin = origin;
    return rep;
  };
  ASSERT_NE(r.check_in_full(&a, check, kNoTargets), nullptr);
  EXPECT_EQ(gate.load(), kGateProbe | kGateNotCheckedInFull) << "one is still below Full";
  unregistered(r, &b);
  EXPECT_EQ(gate.load(), kGateProbe);

  registered(r, &b);
  r.add_function(&a, stub(1), "a1");
  r.add_function(&a, stub(2), "a2");
  r.add_function(&b, stub(3), "b1");
  EXPECT_EQ(gate.load(), kGateProbe | kGateUnindexed);
  EXPECT_NE(launched(r, stub(1)), nullptr);
  EXPECT_EQ(gate.load(), kGateProbe | kGateUnindexed) << "b still waits";
  EXPECT_NE(r.find(stub(2)), nullptr) << "a's kernels entered together";
  EXPECT_EQ(r.find(stub(3)), nullptr);
  EXPECT_NE(launched(r, stub(3)), nullptr);
  EXPECT_EQ(gate.load(), kGateProbe);
  r.add_function(&a, stub(4), "a3");
  EXPECT_EQ(gate.load(), kGateProbe | kGateUnindexed);
  EXPECT_EQ(launched(r, stub(99)), nullptr) << "a key nobody registered indexes every fat binary";
  EXPECT_NE(r.find(stub(4)), nullptr);
  EXPECT_EQ(gate.load(), kGateProbe);

  r.add_module(&module, module_with_a_bad_kernel());
  r.add_module_function(&module, &clean, "good", kNoTargets);
  EXPECT_EQ(gate.load(), kGateProbe) << "a kernel without findings leaves the gate closed";
  r.add_module_function(&module, &bad, "bad", kNoTargets);
  EXPECT_EQ(gate.load(), kGateProbe | kGateFindings);
  ASSERT_NE(r.find(&bad), nullptr);
  EXPECT_TRUE(r.find(&bad)->blocking);
}
