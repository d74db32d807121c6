// The guard's state (internal): its registry (what it knows of each kernel,
// fat binary and module, and their lifetimes), with the findings sink
// (findings.h) and the probe's state (probe.h) beside it, under one mutex.
// Guard's parts (registration, modules, launch_gate, probe, report_output,
// exit_status) share it.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hipguard/report.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"
#include "format/name_hash.h"
#include "format/read_code_object.h"
#include "runtime/findings.h"
#include "runtime/guard.h"
#include "runtime/kernel_table.h"
#include "runtime/probe.h"

namespace hipguard {

// What hipguard knows about one kernel, by host function or hipFunction_t.
struct KernelState : LaunchFacts {
  std::string name;
  // Shared by every kernel of its image: registration copies a pointer, not the path.
  std::shared_ptr<const std::string> file;
  const std::string& file_name() const {
    static const std::string none;
    return file ? *file : none;
  }
  // Errors and warnings that concern this kernel; image-wide ones are shared
  // by every kernel of the image (thousands of kernels, one vector).
  std::shared_ptr<const std::vector<Diagnostic>> findings_ptr;
  bool blocking = false;  // an error among them: cannot run on some target
  uint64_t static_lds = 0;
  // max_dynamic_lds (LaunchFacts): smallest (device LDS - static LDS) over the targets
  std::string lds_target;                 // the target that sets max_dynamic_lds
  uint64_t lds_limit = 0;
  // Per target (index into GuardConfig::targets), when there are several:
  // {static LDS, max dynamic LDS, limit}; max dynamic UINT64_MAX = not known.
  struct TargetLds {
    uint64_t static_lds = 0, max_dynamic = UINT64_MAX, limit = 0;
  };
  std::vector<TargetLds> lds_by_target;
  const void* fatbin = nullptr;  // registration handle (null for module functions)
  // A hipFunction_t that hipGetFuncBySymbol returned: its kernel's host stub,
  // whose state shares what was said (once per kernel, whichever key launched).
  const void* stub = nullptr;
  Depth depth = Depth::Full;     // how far its fat binary is checked (below Full: in full at first use)
  // Replaced by a fresh state after the full check (readers may still hold this
  // one, so it is kept, but the report lists only the current state).
  mutable bool superseded = false;  // written and read under the state mutex
  // Its module was unloaded or its fat binary unregistered: in quarantine,
  // then reused (Guard::State::new_kernel). Under the state mutex.
  mutable bool retired = false;
  uint64_t seq = 0;  // Guard::State::seq when created: a forked child reports only what came after the fork
  mutable std::atomic<uint64_t> launches{0}, blocked{0};
  mutable std::atomic<bool> warned{false}, lds_warned{false};
  // Its fat binary's kernels were probed (or are never probed: module kernels):
  // launches need not take the state mutex to find out.
  mutable std::atomic<bool> probed{false};
  // LaunchFacts::skip_below: non-zero while clean (checked in full, probed or
  // never to be, no finding), so that launches with dynamic LDS up to
  // max_dynamic_lds skip the guard (launch_known_clean). Set under the state
  // mutex (refresh_clean).

  const std::vector<Diagnostic>& findings() const {
    static const std::vector<Diagnostic> none;
    return findings_ptr ? *findings_ptr : none;
  }

  // Back to a fresh state, for reuse after its quarantine.
  void reset() {
    name.clear();
    file.reset();
    findings_ptr.reset();
    blocking = false;
    static_lds = 0;
    max_dynamic_lds = UINT64_MAX;
    lds_target.clear();
    lds_limit = 0;
    lds_by_target.clear();
    fatbin = nullptr;
    stub = nullptr;
    depth = Depth::Full;
    superseded = retired = false;
    seq = 0;
    launches = blocked = 0;
    warned = lds_warned = probed = false;
    set_clean(false);
    key = nullptr;
  }
};

// What an image report says per kernel, computed once per image so that
// registering its (possibly thousands of) kernels stays linear.
struct ImageIndex {
  struct LdsFit {
    uint64_t static_lds = 0, max_dynamic = UINT64_MAX, limit = 0;
    std::string target;
  };
  std::shared_ptr<const std::vector<Diagnostic>> image_findings;  // errors about the whole image
  std::unordered_map<std::string, std::vector<Diagnostic>> by_kernel;
  std::unordered_map<std::string, LdsFit> lds;
  // Per kernel and target index, when there are several targets.
  std::unordered_map<std::string, std::vector<LdsFit>> lds_by_target;
  // Per target with a parsed selected code object: the kernels it holds. A
  // registered kernel missing there cannot be launched on that target (HG409).
  // Names are views into `names`, so the report's code objects may be dropped.
  // Strict registration asks once per kernel (rocSOLVER: 13.8 k): a hash set,
  // not a sorted list of long mangled names; sorted only for an HG409 message.
  struct Selected {
    const TargetId* target;
    std::string entry;
    std::string names;  // the kernel names, one after another
    std::vector<std::string_view> kernels;  // in the code object's order
    llvm::DenseSet<llvm::StringRef, NameHash> held;  // the same names
    bool holds(std::string_view name) const { return held.contains(llvm::StringRef(name.data(), name.size())); }
  };
  std::vector<Selected> selected;
  std::string origin;
};

struct FatbinState {
  ImageReport report;
  uint64_t seq = 0;
  Bytes data;            // the registered image (valid while registered)
  Depth depth = Depth::Full;  // below Full: its kernels are checked in full at first use
  std::shared_ptr<const std::string> origin;  // report.origin, shared with its kernels
  std::unique_ptr<ImageIndex> index;  // built when its kernels are first indexed
  // Strict registration of an uncompressed bundle (Depth::Headers): per
  // target, the selected code object, where each registered
  // kernel's descriptor is looked up, and the target's LDS limit (bytes). Built
  // at its first registered kernel; dropped, and the pages read released, when
  // the next fat binary registers (State::reads_pending).
  struct Selected {
    std::optional<DescriptorLookup> lookup;  // none: no lookup possible, every kernel goes to the check in full
    uint64_t lds_limit = 0;
  };
  std::optional<std::vector<Selected>> lookups;
  bool looks_up = false;  // registered at Depth::Headers: its kernels are looked up as they register, checked in full or not
  std::vector<const void*> host_functions;  // indexed kernels (in the kernel table)
  // Registered, not indexed yet: host function and device name. A name in a
  // read-only segment of the object that registered the fat binary (readonly;
  // hipcc's registration code passes string literals) is kept as a pointer: it
  // lives as long as that object, which unregisters its fat binaries before it
  // is unmapped. Any other name is copied (the runtime copies it too, so a
  // program may free its own after __hipRegisterFunction returns), one after
  // the other into unindexed_names: no allocation per kernel.
  struct Unindexed {
    const void* host_function;
    const char* name_in_image;  // or null: the name starts at unindexed_names[name_at]
    size_t name_at;
  };
  std::vector<Unindexed> unindexed;
  std::string unindexed_names;  // NUL-terminated names
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

struct Guard::State {
  // The process's guard (Guard::get()) keeps the process-wide launch gate and
  // cache, which the shim's launch wrappers read; a guard built on its own
  // keeps its own gate and no cache (no wrapper reads it).
  State(std::atomic<unsigned>* launch_gate, LaunchCache* cache)
      : gate(launch_gate ? *launch_gate : own_gate), launch_cache(cache) {}
  std::mutex mu;
  GuardConfig config;
  std::shared_ptr<spdlog::logger> logger;
  std::once_flag setup_said;  // the set-up findings, said at first use (config())
  std::atomic<unsigned> own_gate{0};
  std::atomic<unsigned>& gate;  // the kGate* bits (guard.h): g_launch_gate or own_gate
  LaunchCache* launch_cache;     // g_launch_cache, or null
  FindingsSink findings;  // what was said, what the report keeps, the exit status's counts
  ProbeState probe;
  std::map<const void*, FatbinState> fatbins;
  // Registration's selections by bundle entry IDs (warn and strict mode): its
  // own lock, taken by check_image outside this mutex.
  SelectionMemo selection_memo;
  // The fat binary __hipRegisterFunction last found (its kernels come one after
  // another): no map lookup per kernel. Reset when fat binaries go.
  const void* last_fatbin_handle = nullptr;
  FatbinState* last_fatbin = nullptr;
  // The fat binary registered last at Depth::Headers: the pages its registration
  // read are released when the next one registers, or at the first launch or
  // lookup (release_registration_reads).
  const void* reads_pending = nullptr;
  std::map<const void*, ModuleInfo> modules;
  // Counts registrations, module loads and kernel states; a forked child's
  // report lists only what has a seq above fork_seq (what it did itself).
  uint64_t seq = 0;
  uint64_t fork_seq = 0;
  std::deque<KernelState> kernels;        // stable addresses: the table points into it
  // Retired kernel states wait here before reuse: a launch racing with the
  // unload of its own kernel (a program bug) still reads a valid state.
  std::deque<KernelState*> quarantine;
  static constexpr size_t kQuarantine = 256;

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
  // Forgets `key` in the kernel table; its state goes to quarantine (and, with
  // a report, what it found or how often it ran into findings.gone_kernels).
  void retire(const void* key) {
    const KernelState* k = find(key);
    table.erase(key);
    if (!k || k->retired) return;
    if (!k->superseded && !config.report_path.empty() && (!k->findings().empty() || k->launches != 0)) {
      KernelRecord rec{k->name, k->file_name(), k->launches.load(), k->blocked.load(), {}};
      for (const auto& d : k->findings()) rec.codes.push_back(d.code);
      findings.keep_gone_kernel(std::move(rec), k->seq);
    }
    k->retired = true;
    k->set_clean(false);
    quarantine.push_back(const_cast<KernelState*>(k));
  }
  // The fat binary's kernels leave the kernel table and its stubs their owner:
  // the runtime forgets them when it is unregistered (StatCO::RemoveFatBinary),
  // and host addresses may be reused by a library loaded later.
  void forget_kernels_of(const void* handle, FatbinState& fb) {
    for (const void* f : fb.host_functions) {
      retire(f);
      stub_owner.erase(f);
    }
    for (const auto& u : fb.unindexed) stub_owner.erase(u.host_function);
    fb.host_functions.clear();
    fb.unindexed.clear();
    fb.unindexed_names.clear();
    if (probe.unprobed.erase(handle) && probe.unprobed.empty())
      gate.fetch_and(~kGateProbe, std::memory_order_release);
    // Its handle may be reused by a fat binary registered later, which must not take this one's place in the order.
    std::erase(unindexed_order, handle);
  }
  KernelTable<LaunchFacts> table;  // values are KernelStates
  const KernelState* find(const void* key) const { return static_cast<const KernelState*>(table.find(key)); }
  size_t fatbins_not_checked_in_full = 0;  // registered fat binaries checked to selection only
  std::vector<const void*> unindexed_order;  // fat binaries with unindexed kernels, in registration order
  // Host stub -> the fat binary (handle) whose registration of it counts: the
  // first. The runtime keeps a stub's first registration and drops any later
  // one until that fat binary is unregistered, when the stub is gone (CLR
  // hip_code_object.cpp, StatCO::RegisterFunction and RemoveFatBinary).
  struct StubHash : llvm::DenseMapInfo<const void*> {
    static unsigned getHashValue(const void* p) { return static_cast<unsigned>(hash_pointer(p)); }
  };
  llvm::DenseMap<const void*, const void*, StubHash> stub_owner;
};

struct PendingFatbin {
  ImageReport report;
  Bytes data;
  std::vector<std::pair<uintptr_t, uintptr_t>> readonly;
  Depth depth = Depth::Full;
};

// Set once the guard's state exists: the process called HIP. The exit status
// handler does nothing before that.
extern std::atomic<bool> g_state_ready;

// The runtime answers these when it has no usable GPU at all: a probe then says nothing.
inline bool no_device_error(int e) { return e == 100 || e == 101 || e == 35 || e == 3; }

// Per-kernel facts from an image's report (kernel_index.cpp).
// lds false: findings and Selected only, no LDS facts (HG409 at a strict registration).
ImageIndex build_index(const ImageReport& r, const std::vector<TargetId>& targets, bool lds = true);
std::vector<Diagnostic> missing_kernel(std::string_view name, const ImageIndex& idx);
void add_hotswap(ImageReport& report, const GuardConfig& c);
void fill_kernel(KernelState& k, const ImageIndex& idx);
std::string first_finding(const KernelState& k);
// Under the state mutex, after anything that decides a kernel's fast path changed.
void refresh_clean(const KernelState& k, bool probe_off);

}  // namespace hipguard
