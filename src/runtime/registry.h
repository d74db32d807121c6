// The guard's registry (internal): what it knows of each kernel, fat binary
// and module, from registration or load to unregistration or unload, and the
// kernel table over it. One part of Kernels (kernels.h), under its mutex;
// the method bodies that are not one-liners are in registry.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/report.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "format/bytes.h"
#include "format/read_code_object.h"
#include "runtime/guard.h"
#include "runtime/kernel_index.h"
#include "runtime/kernel_table.h"
#include "runtime/probe.h"

namespace hipguard {

// A fat binary checked at registration, waiting for the runtime's handle (the shim's hook carries
// it from before the call to after it: PendingFatbinPtr, guard.h).
struct PendingFatbin {
  ImageReport report;
  Bytes data;
  std::vector<std::pair<uintptr_t, uintptr_t>> readonly;
  Depth depth = Depth::Full;
};

// A registered fat binary, as the registry keeps it.
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

// A loaded module (the pending one, from its check to its handle, too: PendingModulePtr).
struct ModuleInfo {
  std::string origin;
  uint64_t seq = 0;
  std::vector<ImageReport> images;
  std::set<std::string> kernels;
  std::set<std::string> device_functions;
  std::vector<const void*> functions;  // hipFunction_t handed out for it
};

// Its invariants: every kernel in the table is a live state of `kernels_`
// (retired ones wait in `quarantine_` before reuse, superseded ones too); a stub's owner counts
// while the fat binary that registered it first is registered (owner_of); `unindexed_order_`
// lists exactly the fat binaries with unindexed registrations (some may be dropped); `seq_`
// numbers registrations, module loads and kernel states in order; the launch gate's
// kGateFindings, kGateNotCheckedInFull and kGateUnindexed bits (guard.h) are written here only
// (enter, depth_changed, unindexed / indexed / all_indexed).
// Every method but find() requires Kernels::mu held: the registry has no lock of its own.
class Registry {
 public:
  // Told of each live kernel that leaves the registry, and of each image report that does.
  using GoneKernel = llvm::function_ref<void(const KernelState&)>;
  using GoneImage = llvm::function_ref<void(ImageReport&&, uint64_t seq)>;
  // Told of the kernels of fat binary `handle` that entered the kernel table (for the probe).
  using Entered = llvm::function_ref<void(const void* handle, std::span<const void* const> host_functions)>;
  // The full check of a registered image (its bytes and origin): check_image at Depth::Full.
  using CheckInFull = llvm::function_ref<ImageReport(Bytes data, const std::string& origin)>;

  // `probe` is only asked whether it is off (a kernel is clean without its probe then).
  Registry(std::atomic<unsigned>& gate, const Probe& probe) : gate_(gate), probe_(probe) {}

  // The kernel under `key` (a host stub or a hipFunction_t), or null. The one method that needs
  // no lock: the kernel table is read lock-free (kernel_table.h).
  const KernelState* find(const void* key) const { return static_cast<const KernelState*>(table_.find(key)); }

  // Fat binaries.
  // `handle` registered (anew: its earlier registration's kernels go first, each live one passed
  // to `gone`), as `pending` was checked.
  void add_fatbin(const void* handle, PendingFatbin&& pending, GoneKernel gone);
  bool has_fatbin(const void* handle) const { return fatbins_.count(handle) != 0; }
  // `handle` unregistered: its kernels leave the table (each live one passed to `gone`), its
  // report goes to `keep`. False when it was not registered.
  bool remove_fatbin(const void* handle, GoneKernel gone, GoneImage keep);
  // __hipRegisterFunction of `host_function` by fat binary `handle` (nothing when it is not
  // registered): waits for the kernel table; its claim of the stub is made when first needed.
  void add_function(const void* handle, const void* host_function, const char* device_name);
  // Is `handle` registered after `after_seq` and checked below Depth::Full?
  bool below_full(const void* handle, uint64_t after_seq) const;
  // The fat binaries registered after `after_seq` and checked below Depth::Full.
  std::vector<const void*> all_below_full(uint64_t after_seq) const;
  // `handle`, checked below Depth::Full, is checked in full by `check`; its kernels get fresh
  // states (readers may hold the old ones, which stay valid). Its new report, or null when there
  // was nothing to do (not registered, or in full already).
  const ImageReport* check_in_full(const void* handle, CheckInFull check, const std::vector<TargetId>& targets);

  // The kernel table, filled lazily. The registered fat binary whose registration of `stub` counts,
  // or null (pending claims are settled first).
  const void* owner_of(const void* stub);
  // The registrations of fat binary `handle` enter the kernel table.
  void index_kernels_of(const void* handle, const std::vector<TargetId>& targets, Entered entered);
  // Those of the fat binary whose registration of `key` counts; of every fat binary when none does
  // (so that the gate stops asking about a key that nobody registered).
  void index_kernel(const void* key, const std::vector<TargetId>& targets, Entered entered);
  // Those of the fat binaries registered after `after_seq`, in registration order (for the
  // report: they stay listed as waiting, with nothing left to index).
  void index_waiting(uint64_t after_seq, const std::vector<TargetId>& targets, Entered entered);
  // The hipFunction_t `function` that hipGetFuncBySymbol returned for the indexed kernel
  // `host_function` enters the table with its facts, in its fat binary's kernels.
  void enter_function_of(const void* host_function, const void* function);

  // Modules.
  void add_module(const void* module, ModuleInfo&& info);
  const ModuleInfo* find_module(const void* module) const;
  // `function`, which the runtime handed out for `name` in `module`, enters the kernel table
  // (known already when the runtime hands out the same one again).
  void add_module_function(const void* module, const void* function, const char* name,
                           const std::vector<TargetId>& targets);
  // `module` unloaded: its functions leave the table (each live one passed to `gone`), its image
  // reports go to `keep`. False when it was not loaded.
  bool remove_module(const void* module, GoneKernel gone, GoneImage keep);

  // The report. A forked child's lists only what has a seq above the last one at the fork.
  uint64_t last_seq() const { return seq_; }
  // The image reports of the fat binaries, then of the modules, registered after `after_seq`.
  void for_each_image_since(uint64_t after_seq, llvm::function_ref<void(const ImageReport&)> fn) const;
  // Each current kernel state (neither superseded nor retired) made after `after_seq`.
  void for_each_current_kernel(uint64_t after_seq, llvm::function_ref<void(const KernelState&)> fn) const;
  // Entries kept for stub owners, those of gone fat binaries until they are pruned.
  size_t stub_owner_entries() const { return stub_owner_.size(); }
  static constexpr size_t kPruneAbove = 64 * 1024;

 private:
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
  // Registrations not claimed in stub_owner_ yet, in registration order: each
  // is claimed when first needed (settle_claims: the first index, lookup or
  // report), which decides as claiming it at its registration would, because
  // what a claim finds changes only when a fat binary goes (forget_kernels_of,
  // which settles them first unless none of another fat binary's came after
  // the going one registered, as at exit, where fat binaries go newest first).
  // A library's registrations then cost no lookup in stub_owner_ while it
  // loads, nor when it is unloaded unused.
  // One run of a fat binary's registrations in a row (a library registers
  // its kernels fat binary by fat binary: a run each, not an entry per kernel).
  struct PendingClaims {
    const void* handle;
    uint64_t seq;         // the fat binary's FatbinState::seq
    uint64_t last_at;     // seq_ when its last claim was made
    size_t first, count;  // entries of the fat binary's `unindexed`
  };
  static constexpr size_t kQuarantine = 256;

  // The launch gate's bits.
  // Enters kernel `k` in the table under `key` (a host stub or a hipFunction_t): from now on its
  // launches are decided by its state; one with findings opens the gate for good (kGateFindings).
  void enter(const void* key, KernelState& k) {
    table_.insert(key, &k);
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
    if (first) unindexed_order_.push_back(handle);
    if (!(gate_.load(std::memory_order_relaxed) & kGateUnindexed))
      gate_.fetch_or(kGateUnindexed, std::memory_order_release);
  }
  void indexed(const void* handle) {
    std::erase(unindexed_order_, handle);
    if (unindexed_order_.empty()) gate_.fetch_and(~kGateUnindexed, std::memory_order_release);
  }
  void all_indexed() {
    unindexed_order_.clear();
    gate_.fetch_and(~kGateUnindexed, std::memory_order_release);
  }

  // Kernel states: fresh or reused from quarantine; retired into it.
  KernelState& new_kernel();
  const KernelState* retire(const void* key);
  // The fat binary's kernels leave the kernel table and its stubs their owner.
  void forget_kernels_of(const void* handle, FatbinState& fb, GoneKernel gone);

  // Stub owners and the claims that wait for them.
  void add_claim(const void* handle, uint64_t fatbin_seq, size_t entry);
  void settle_claims();
  void claims_before_going(const void* handle, uint64_t fatbin_seq);
  bool claim_stub(const void* stub, const void* handle, uint64_t seq);
  bool registered(const StubOwner& o) const {
    auto fb = fatbins_.find(o.handle);
    return fb != fatbins_.end() && fb->second.seq == o.seq;
  }
  void prune_stubs(const void* going);

  std::atomic<unsigned>& gate_;  // Kernels::gate
  const Probe& probe_;           // Kernels::probe
  size_t below_full_ = 0;        // registered fat binaries checked below Depth::Full
  std::map<const void*, FatbinState> fatbins_;
  // The fat binary __hipRegisterFunction last found (its kernels come one after
  // another): no map lookup per kernel. Reset when fat binaries go.
  const void* last_fatbin_handle_ = nullptr;
  FatbinState* last_fatbin_ = nullptr;
  std::map<const void*, ModuleInfo> modules_;
  // Counts registrations, module loads and kernel states; a forked child's
  // report lists only what has a seq above Kernels::fork_seq (what it did itself).
  uint64_t seq_ = 0;
  std::deque<KernelState> kernels_;  // stable addresses: the table points into it
  // Retired kernel states wait here before reuse: a launch racing with the
  // unload of its own kernel (a program bug) still reads a valid state.
  std::deque<KernelState*> quarantine_;
  KernelTable<LaunchFacts> table_;            // values are KernelStates (enter)
  std::vector<const void*> unindexed_order_;  // fat binaries with unindexed kernels, in registration order
  llvm::DenseMap<const void*, StubOwner, StubHash> stub_owner_;
  size_t gone_stubs_ = 0;  // entries of stub_owner_ whose fat binary is gone, at most (an estimate: prunes when large)
  std::vector<PendingClaims> pending_claims_;
};

}  // namespace hipguard
