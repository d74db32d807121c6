// The guard's registry (internal): what it knows of each kernel, fat binary
// and module, from registration or load to unregistration or unload, and the
// kernel table over it. One part of Guard::State (state.h), under its mutex.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/report.h"
#include "llvm/ADT/DenseMap.h"
#include "format/read_code_object.h"
#include "runtime/guard.h"
#include "runtime/kernel_index.h"
#include "runtime/kernel_table.h"

namespace hipguard {

struct FatbinState {
  ImageReport report;
  uint64_t seq = 0;
  Bytes data;                                 // the registered image (valid while registered)
  Depth depth = Depth::Full;                  // below Full: its kernels are checked in full at first use
  std::shared_ptr<const std::string> origin;  // report.origin, shared with its kernels
  std::unique_ptr<ImageIndex> index;          // built when its kernels are first indexed
  std::vector<const void*> host_functions;    // indexed kernels (in the kernel table)
  // Registered, not indexed yet: host function and device name. A name in a
  // read-only segment of the object that registered the fat binary (readonly;
  // hipcc's registration code passes string literals) is kept as a pointer: it
  // lives as long as that object, which unregisters its fat binaries before it
  // is unmapped. Any other name is copied (the runtime copies it too, so a
  // program may free its own after __hipRegisterFunction returns), one after
  // the other into unindexed_names: no allocation per kernel.
  struct Unindexed {
    const void* host_function;  // null: its registration was dropped (settle_claims)
    const char* name_in_image;  // or null: the name starts at unindexed_names[name_at]
    size_t name_at;
  };
  std::vector<Unindexed> unindexed;
  std::string unindexed_names;                            // NUL-terminated names
  std::vector<std::pair<uintptr_t, uintptr_t>> readonly;  // readonly_segments_of(its wrapper)
};

struct ModuleInfo {
  std::string origin;
  uint64_t seq = 0;
  std::vector<ImageReport> images;
  std::set<std::string> kernels;
  std::set<std::string> device_functions;
  std::vector<const void*> functions;  // hipFunction_t handed out for it
};

// Its invariants: every kernel in the table is a live state of `kernels`
// (retired ones wait in `quarantine` before reuse); a stub's owner counts
// while the fat binary that registered it first is registered (owner_of); `unindexed_order`
// lists exactly the fat binaries with unindexed registrations (some may be dropped);
// the launch gate's kGateFindings, kGateNotCheckedInFull and kGateUnindexed bits (guard.h) are
// written here only (enter, depth_changed, unindexed / indexed / all_indexed), under State::mu.
struct Registry {
  explicit Registry(std::atomic<unsigned>& gate) : gate_(gate) {}

  // Enters kernel `k` in the table under `key` (a host stub or a hipFunction_t): from now on its
  // launches are decided by its state; one with findings opens the gate for good (kGateFindings).
  void enter(const void* key, KernelState& k) {
    table.insert(key, &k);
    if (!k.findings().empty() && !(gate_.load(std::memory_order_relaxed) & kGateFindings))
      gate_.fetch_or(kGateFindings, std::memory_order_release);
  }
  // A registered fat binary's depth went from `from` to `to` (Depth::Full for one that is new or
  // gone): kGateNotCheckedInFull is set while some fat binary is checked below Depth::Full.
  void depth_changed(Depth from, Depth to) {
    bool was = from != Depth::Full, is = to != Depth::Full;
    if (is && !was && below_full_++ == 0) gate_.fetch_or(kGateNotCheckedInFull, std::memory_order_release);
    if (was && !is && --below_full_ == 0) gate_.fetch_and(~kGateNotCheckedInFull, std::memory_order_release);
  }
  // A registration of fat binary `handle` waits for the kernel table (`first`: its first one since
  // it was last indexed): kGateUnindexed is set until indexed() or all_indexed() says none waits.
  void unindexed(const void* handle, bool first) {
    if (first) unindexed_order.push_back(handle);
    if (!(gate_.load(std::memory_order_relaxed) & kGateUnindexed))
      gate_.fetch_or(kGateUnindexed, std::memory_order_release);
  }
  void indexed(const void* handle) {
    std::erase(unindexed_order, handle);
    if (unindexed_order.empty()) gate_.fetch_and(~kGateUnindexed, std::memory_order_release);
  }
  void all_indexed() {
    unindexed_order.clear();
    gate_.fetch_and(~kGateUnindexed, std::memory_order_release);
  }

  std::map<const void*, FatbinState> fatbins;
  // The fat binary __hipRegisterFunction last found (its kernels come one after
  // another): no map lookup per kernel. Reset when fat binaries go.
  const void* last_fatbin_handle = nullptr;
  FatbinState* last_fatbin = nullptr;
  std::map<const void*, ModuleInfo> modules;
  // Counts registrations, module loads and kernel states; a forked child's
  // report lists only what has a seq above State::fork_seq (what it did itself).
  uint64_t seq = 0;
  std::deque<KernelState> kernels;  // stable addresses: the table points into it
  // Retired kernel states wait here before reuse: a launch racing with the
  // unload of its own kernel (a program bug) still reads a valid state.
  std::deque<KernelState*> quarantine;
  static constexpr size_t kQuarantine = 256;
  KernelTable<LaunchFacts> table;            // values are KernelStates (enter)
  std::vector<const void*> unindexed_order;  // fat binaries with unindexed kernels, in registration order
  // Host stub -> the fat binary (handle, and its registration's seq) whose
  // registration of it counts: the first. The runtime keeps a stub's first
  // registration and drops any later one until that fat binary is
  // unregistered, when the stub is gone (CLR hip_code_object.cpp,
  // StatCO::RegisterFunction and RemoveFatBinary). An entry whose fat binary
  // is gone (or registered anew under its handle) no longer counts: entries
  // are not erased one by one as fat binaries go (at exit: 22 k random
  // erases for rocSOLVER, between the runtime's own walks), but pruned when
  // the gone ones outnumber the rest (forget_kernels_of).
  struct StubOwner {
    const void* handle;
    uint64_t seq;  // FatbinState::seq
  };
  struct StubHash : llvm::DenseMapInfo<const void*> {
    static unsigned getHashValue(const void* p) { return static_cast<unsigned>(hash_pointer(p)); }
  };
  llvm::DenseMap<const void*, StubOwner, StubHash> stub_owner;
  size_t gone_stubs = 0;  // entries of stub_owner whose fat binary is gone, at most (an estimate: prunes when large)
  static constexpr size_t kPruneAbove = 64 * 1024;

  // Registrations not claimed in stub_owner yet, in registration order: each
  // is claimed when first needed (settle_claims: the first index, lookup or
  // report), which decides as claiming it at its registration would, because
  // what a claim finds changes only when a fat binary goes (forget_kernels_of,
  // which settles them first unless none of another fat binary's came after
  // the going one registered, as at exit, where fat binaries go newest first).
  // A library's registrations then cost no lookup in stub_owner while it
  // loads, nor when it is unloaded unused.
  // One run of a fat binary's registrations in a row (a library registers
  // its kernels fat binary by fat binary: a run each, not an entry per kernel).
  struct PendingClaims {
    const void* handle;
    uint64_t seq;         // the fat binary's FatbinState::seq
    uint64_t last_at;     // Registry::seq when its last claim was made
    size_t first, count;  // entries of the fat binary's `unindexed`
  };
  std::vector<PendingClaims> pending_claims;
  void add_claim(const void* handle, uint64_t fatbin_seq, size_t entry) {
    if (!pending_claims.empty()) {
      PendingClaims& run = pending_claims.back();
      if (run.handle == handle && run.seq == fatbin_seq && run.first + run.count == entry) {
        ++run.count;
        run.last_at = seq;
        return;
      }
    }
    pending_claims.push_back({handle, fatbin_seq, seq, entry, 1});
  }
  // Each claim is made once: a run advances past each claim made, and what
  // was settled is erased if a claim throws (std::bad_alloc), so that a later
  // settle goes on from the claim that failed.
  void settle_claims() {
    size_t r = 0;
    try {
      for (; r < pending_claims.size(); ++r) {
        PendingClaims& run = pending_claims[r];
        auto it = fatbins.find(run.handle);
        if (it == fatbins.end() || it->second.seq != run.seq) continue;
        std::vector<FatbinState::Unindexed>& entries = it->second.unindexed;
        for (; run.count > 0; ++run.first, --run.count)
          if (run.first < entries.size() && !claim_stub(entries[run.first].host_function, run.handle, run.seq))
            entries[run.first].host_function = nullptr;  // the runtime drops it
      }
    } catch (...) {
      pending_claims.erase(pending_claims.begin(), pending_claims.begin() + static_cast<std::ptrdiff_t>(r));
      throw;
    }
    pending_claims.clear();
  }
  // Before the fat binary `handle` (registered as `seq`) goes: its pending
  // claims are dropped when every other pending claim was made before it
  // registered (none can have found one of its stubs claimed), else all are settled.
  void claims_before_going(const void* handle, uint64_t fatbin_seq) {
    size_t tail = pending_claims.size();
    while (tail > 0 && pending_claims[tail - 1].handle == handle && pending_claims[tail - 1].seq == fatbin_seq) --tail;
    if (tail == 0 || pending_claims[tail - 1].last_at < fatbin_seq) pending_claims.resize(tail);
    else settle_claims();
  }

  // Is this registration of `stub` by the fat binary `handle` the one that
  // counts? Yes unless a registered fat binary holds it already (the runtime
  // drops this one); the stub is then `handle`'s.
  bool claim_stub(const void* stub, const void* handle, uint64_t seq) {
    auto [it, fresh] = stub_owner.try_emplace(stub, StubOwner{handle, seq});
    if (fresh) return true;
    if (registered(it->second)) return false;
    it->second = {handle, seq};
    return true;
  }
  // The registered fat binary whose registration of `stub` counts, or null.
  const void* owner_of(const void* stub) const {
    auto it = stub_owner.find(stub);
    return it != stub_owner.end() && registered(it->second) ? it->second.handle : nullptr;
  }
  bool registered(const StubOwner& o) const {
    auto fb = fatbins.find(o.handle);
    return fb != fatbins.end() && fb->second.seq == o.seq;
  }

  const KernelState* find(const void* key) const { return static_cast<const KernelState*>(table.find(key)); }
  KernelState& new_kernel() {
    KernelState* k;
    if (quarantine.size() <= kQuarantine) {
      k = &kernels.emplace_back();
    } else {
      k = quarantine.front();
      quarantine.pop_front();
      k->reset();
    }
    k->seq = ++seq;
    return *k;
  }
  // Forgets `key` in the kernel table; its state goes to quarantine. Returns
  // the state when it was live (what it found may be kept: State::retire).
  const KernelState* retire(const void* key) {
    const KernelState* k = find(key);
    table.erase(key);
    if (!k || k->retired) return nullptr;
    k->retired = true;
    k->set_clean(false);
    quarantine.push_back(const_cast<KernelState*>(k));
    return k;
  }
  // The fat binary's kernels leave the kernel table (each live one passed to
  // `gone`) and its stubs their owner (its seq no longer counts once it is
  // unregistered or registered anew): the runtime forgets them when it is
  // unregistered (StatCO::RemoveFatBinary), and host addresses may be reused
  // by a library loaded later.
  template <class Gone>
  void forget_kernels_of(const void* handle, FatbinState& fb, Gone&& gone) {
    if (fb.seq) claims_before_going(handle, fb.seq);  // 0: a fat binary entered now, never registered
    for (const void* f : fb.host_functions)
      if (const KernelState* k = retire(f)) gone(*k);
    gone_stubs += fb.host_functions.size() + fb.unindexed.size();
    if (gone_stubs > kPruneAbove && gone_stubs > stub_owner.size() / 2) prune_stubs(handle);
    fb.host_functions.clear();
    fb.unindexed.clear();
    fb.unindexed_names.clear();
    // Its handle may be reused by a fat binary registered later, which must not take this one's place in the order.
    std::erase(unindexed_order, handle);
  }
  // Erases the entries of stub_owner that no longer count, and those of
  // `going` (its seq still registered, about to change).
  void prune_stubs(const void* going) {
    for (auto it = stub_owner.begin(); it != stub_owner.end(); ++it)
      if (it->second.handle == going || !registered(it->second)) stub_owner.erase(it);
    gone_stubs = 0;
  }

 private:
  std::atomic<unsigned>& gate_;  // State::gate
  size_t below_full_ = 0;        // registered fat binaries checked below Depth::Full
};

}  // namespace hipguard
