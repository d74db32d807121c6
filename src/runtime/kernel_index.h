// Per-kernel facts (internal): what the guard knows of one kernel (KernelState), what an image's
// report says per kernel (ImageIndex), and the functions that make them from a report
// (kernel_index.cpp). The registry (registry.h) keeps the kernels; these only describe them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/report.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"
#include "format/name_hash.h"
#include "runtime/config.h"
#include "runtime/kernel_table.h"

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
  std::string lds_target;  // the target that sets max_dynamic_lds
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
  Depth depth = Depth::Full;  // how far its fat binary is checked (below Full: in full at first use)
  // Replaced by a fresh state after the full check (readers may still hold this
  // one, so it is kept, but the report lists only the current state).
  mutable bool superseded = false;  // written and read under Kernels::mu
  // Its module was unloaded or its fat binary unregistered: in quarantine,
  // then reused (Registry::new_kernel). Under Kernels::mu.
  mutable bool retired = false;
  uint64_t seq = 0;  // Registry::last_seq() when created: a forked child reports only what came after the fork
  mutable std::atomic<uint64_t> launches{0}, blocked{0};
  mutable std::atomic<bool> warned{false}, lds_warned{false};
  // Its fat binary's kernels were probed (or are never probed: module kernels):
  // launches need not take Kernels::mu to find out.
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
  // Asked once per kernel when its fat binary's kernels are indexed (a library has thousands): a
  // hash set, not a sorted list of long mangled names; sorted only for an HG409 message.
  struct Selected {
    const TargetId* target;
    std::string entry;
    std::string names;                               // the kernel names, one after another
    std::vector<std::string_view> kernels;           // in the code object's order
    llvm::DenseSet<llvm::StringRef, NameHash> held;  // the same names
    bool holds(std::string_view name) const { return held.contains(llvm::StringRef(name.data(), name.size())); }
  };
  std::vector<Selected> selected;
  std::string origin;
};

// Per-kernel facts from an image's report (kernel_index.cpp).
// lds false: findings and Selected only, no LDS facts (HG409 at a strict registration).
ImageIndex build_index(const ImageReport& r, const std::vector<TargetId>& targets, bool lds = true);
std::vector<Diagnostic> missing_kernel(std::string_view name, const ImageIndex& idx);
void add_hotswap(ImageReport& report, const GuardConfig& c);
void fill_kernel(KernelState& k, const ImageIndex& idx);
std::string first_finding(const KernelState& k);
// Under Kernels::mu, after anything that decides a kernel's fast path changed.
void refresh_clean(const KernelState& k, bool probe_off);

}  // namespace hipguard
