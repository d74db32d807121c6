// The registry's operations (registry.h): fat binaries, their registrations and the stubs they
// claim, kernel states and their quarantine, modules, and what the report reads; Kernels::mu held.
#include "runtime/registry.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hipguard {

void Registry::add_fatbin(const void* handle, PendingFatbin&& pending, GoneKernel gone) {
  // A null handle (the runtime refused outright) still gets its report kept, keyed by null.
  FatbinState& fb = fatbins_[handle];
  forget_kernels_of(handle, fb, gone);  // registered anew under the same handle: its kernels are registered anew
  fb.seq = ++seq_;
  const Depth was = fb.depth;  // below Full: registered anew under the same handle
  fb.report = std::move(pending.report);
  fb.data = pending.data;
  fb.depth = pending.depth;
  fb.index.reset();
  fb.origin.reset();
  fb.readonly = std::move(pending.readonly);
  depth_changed(was, fb.depth);
}

bool Registry::remove_fatbin(const void* handle, GoneKernel gone, GoneImage keep) {
  auto it = fatbins_.find(handle);
  if (it == fatbins_.end()) return false;
  forget_kernels_of(handle, it->second, gone);
  depth_changed(it->second.depth, Depth::Full);  // gone: no longer below Full
  keep(std::move(it->second.report), it->second.seq);
  fatbins_.erase(it);
  last_fatbin_handle_ = nullptr;
  last_fatbin_ = nullptr;
  return true;
}

void Registry::add_function(const void* handle, const void* host_function, const char* device_name) {
  if (handle != last_fatbin_handle_ || !last_fatbin_) {
    auto it = fatbins_.find(handle);
    if (it == fatbins_.end()) return;
    last_fatbin_handle_ = handle;
    last_fatbin_ = &it->second;
  }
  FatbinState& fb = *last_fatbin_;
  // Listed (and the gate opened) before anything here can throw: a registration is never left
  // waiting unlisted (a launch may index it only after this call, which holds the mutex).
  unindexed(handle, fb.unindexed.empty());
  uintptr_t at = reinterpret_cast<uintptr_t>(device_name);
  bool in_image = false;
  for (const auto& [lo, hi] : fb.readonly) in_image = in_image || (at >= lo && at < hi);
  if (in_image) {
    fb.unindexed.push_back({host_function, device_name, 0});
  } else {
    fb.unindexed.push_back({host_function, nullptr, fb.unindexed_names.size()});
    fb.unindexed_names.append(device_name).push_back('\0');
  }
  // A stub registered already, by a fat binary still registered: the runtime
  // drops this registration, whatever its code objects hold (stub_owner_,
  // claimed when first needed, once the entry is there: pending_claims_).
  add_claim(handle, fb.seq, fb.unindexed.size() - 1);
}

bool Registry::below_full(const void* handle, uint64_t after_seq) const {
  auto it = fatbins_.find(handle);
  return it != fatbins_.end() && it->second.depth != Depth::Full && it->second.seq > after_seq;
}

std::vector<const void*> Registry::all_below_full(uint64_t after_seq) const {
  std::vector<const void*> out;
  for (const auto& [h, fb] : fatbins_)
    if (fb.depth != Depth::Full && fb.seq > after_seq) out.push_back(h);
  return out;
}

const ImageReport* Registry::check_in_full(const void* handle, CheckInFull check,
                                           const std::vector<TargetId>& targets) {
  auto it = fatbins_.find(handle);
  if (it == fatbins_.end() || it->second.depth == Depth::Full) return nullptr;
  FatbinState& fb = it->second;
  const Depth was = fb.depth;
  fb.report = check(fb.data, fb.report.origin);
  fb.depth = Depth::Full;
  fb.index = std::make_unique<ImageIndex>(build_index(fb.report, targets));
  // Fresh kernel states (readers may hold the old ones, which stay valid).
  for (const void* f : fb.host_functions) {
    const KernelState* old = find(f);
    if (!old) continue;
    old->superseded = true;
    old->set_clean(false);
    KernelState& k = new_kernel();
    quarantine_.push_back(const_cast<KernelState*>(old));  // after new_kernel: never reused as its own successor
    k.name = old->name;
    k.file = old->file;
    k.fatbin = handle;
    k.stub = old->stub;
    fill_kernel(k, *fb.index);
    k.launches = old->launches.load();
    k.blocked = old->blocked.load();
    k.warned = old->warned.load();
    k.lds_warned = old->lds_warned.load();
    k.probed = old->probed.load();
    k.seq = old->seq;
    refresh_clean(k, probe_.off());
    enter(f, k);
  }
  depth_changed(was, Depth::Full);
  return &fb.report;
}

const void* Registry::owner_of(const void* stub) {
  settle_claims();
  auto it = stub_owner_.find(stub);
  return it != stub_owner_.end() && registered(it->second) ? it->second.handle : nullptr;
}

void Registry::index_kernels_of(const void* handle, const std::vector<TargetId>& targets, Entered entered) {
  settle_claims();  // which of its registrations count
  auto it = fatbins_.find(handle);
  if (it == fatbins_.end() || it->second.unindexed.empty()) return;
  FatbinState& fb = it->second;
  if (std::none_of(fb.unindexed.begin(), fb.unindexed.end(), [](const auto& e) { return e.host_function; })) {
    fb.unindexed.clear();  // every registration dropped: nothing to index
    fb.unindexed_names.clear();
    return;
  }
  if (!fb.index) fb.index = std::make_unique<ImageIndex>(build_index(fb.report, targets));
  if (!fb.origin) fb.origin = std::make_shared<const std::string>(fb.report.origin);
  const size_t first = fb.host_functions.size();
  for (const auto& [host_function, name_in_image, name_at] : fb.unindexed) {
    if (!host_function) continue;  // dropped: another fat binary's registration of its stub counts
    KernelState& k = new_kernel();
    k.name = name_in_image ? name_in_image : fb.unindexed_names.c_str() + name_at;
    k.file = fb.origin;
    k.fatbin = handle;
    k.depth = fb.depth;
    fill_kernel(k, *fb.index);
    refresh_clean(k, probe_.off());
    k.seq = fb.seq;  // a forked child's report lists the kernels of what it registered itself
    fb.host_functions.push_back(host_function);
    enter(host_function, k);
  }
  entered(handle, std::span(fb.host_functions).subspan(first));
  fb.unindexed.clear();
  fb.unindexed.shrink_to_fit();
  fb.unindexed_names.clear();
  fb.unindexed_names.shrink_to_fit();
}

// Only the fat binary whose registration of `key` counts (stub_owner_) is
// indexed: a library's other fat binaries (rocSPARSE has 111, with 12 k
// kernels) wait for a launch of one of their own kernels, a lookup, or the
// report. A key that no fat binary registered indexes them all, so that the
// gate stops asking (a program may launch such a key over and over).
void Registry::index_kernel(const void* key, const std::vector<TargetId>& targets, Entered entered) {
  const void* handle = owner_of(key);
  if (!handle) {
    for (const void* h : unindexed_order_) index_kernels_of(h, targets, entered);
    return all_indexed();
  }
  index_kernels_of(handle, targets, entered);
  indexed(handle);
}

void Registry::index_waiting(uint64_t after_seq, const std::vector<TargetId>& targets, Entered entered) {
  for (const void* h : unindexed_order_)
    if (auto it = fatbins_.find(h); it != fatbins_.end() && it->second.seq > after_seq)
      index_kernels_of(h, targets, entered);
}

// The hipFunction_t that hipGetFuncBySymbol returned for a registered kernel
// is launched through the module entry points (AITER does): it gets the
// kernel's facts under its own key, in its fat binary's kernels, so that it is
// checked in full, renewed and forgotten with them.
void Registry::enter_function_of(const void* host_function, const void* function) {
  const KernelState* k = find(host_function);
  if (!k || !k->fatbin || find(function)) return;  // not registered, or looked up before
  auto it = fatbins_.find(k->fatbin);
  if (it == fatbins_.end() || !it->second.index) return;
  FatbinState& fb = it->second;
  KernelState& f = new_kernel();
  f.name = k->name;
  f.file = k->file;
  f.fatbin = k->fatbin;
  f.stub = host_function;
  f.depth = k->depth;
  fill_kernel(f, *fb.index);
  f.probed = true;  // the runtime found the kernel for this device: what a probe asks
  refresh_clean(f, probe_.off());
  fb.host_functions.push_back(function);
  enter(function, f);
}

void Registry::add_module(const void* module, ModuleInfo&& info) {
  info.seq = ++seq_;
  modules_[module] = std::move(info);
}

const ModuleInfo* Registry::find_module(const void* module) const {
  auto it = modules_.find(module);
  return it == modules_.end() ? nullptr : &it->second;
}

void Registry::add_module_function(const void* module, const void* function, const char* name,
                                   const std::vector<TargetId>& targets) {
  auto it = modules_.find(module);
  if (it == modules_.end()) return;
  ModuleInfo& m = it->second;
  // The runtime hands out the same hipFunction_t for the same name again: known already.
  if (const KernelState* known = find(function); known && known->name == name) return;
  KernelState& k = new_kernel();
  k.name = name;
  k.probed = true;  // module kernels are checked at load and lookup, not probed
  k.file = std::make_shared<const std::string>(m.origin);
  for (const auto& img : m.images) fill_kernel(k, build_index(img, targets));
  refresh_clean(k, probe_.off());
  m.functions.push_back(function);
  enter(function, k);
}

bool Registry::remove_module(const void* module, GoneKernel gone, GoneImage keep) {
  auto it = modules_.find(module);
  if (it == modules_.end()) return false;
  for (const void* f : it->second.functions)
    if (const KernelState* k = retire(f)) gone(*k);
  for (auto& img : it->second.images) keep(std::move(img), it->second.seq);
  modules_.erase(it);
  return true;
}

void Registry::for_each_image_since(uint64_t after_seq, llvm::function_ref<void(const ImageReport&)> fn) const {
  for (const auto& [h, fb] : fatbins_)
    if (fb.seq > after_seq) fn(fb.report);
  for (const auto& [m, mi] : modules_)
    if (mi.seq > after_seq)
      for (const auto& img : mi.images) fn(img);
}

void Registry::for_each_current_kernel(uint64_t after_seq, llvm::function_ref<void(const KernelState&)> fn) const {
  for (const auto& k : kernels_)
    if (!k.superseded && !k.retired && k.seq > after_seq) fn(k);
}

KernelState& Registry::new_kernel() {
  KernelState* k;
  if (quarantine_.size() <= kQuarantine) {
    k = &kernels_.emplace_back();
  } else {
    k = quarantine_.front();
    quarantine_.pop_front();
    k->reset();
  }
  k->seq = ++seq_;
  return *k;
}

// Forgets `key` in the kernel table; its state goes to quarantine. Returns
// the state when it was live (what it found may be kept: Kernels::keep_gone).
const KernelState* Registry::retire(const void* key) {
  const KernelState* k = find(key);
  table_.erase(key);
  if (!k || k->retired) return nullptr;
  k->retired = true;
  k->set_clean(false);
  quarantine_.push_back(const_cast<KernelState*>(k));
  return k;
}

// The fat binary's kernels leave the kernel table (each live one passed to
// `gone`) and its stubs their owner (its seq no longer counts once it is
// unregistered or registered anew): the runtime forgets them when it is
// unregistered (StatCO::RemoveFatBinary), and host addresses may be reused
// by a library loaded later.
void Registry::forget_kernels_of(const void* handle, FatbinState& fb, GoneKernel gone) {
  if (fb.seq) claims_before_going(handle, fb.seq);  // 0: a fat binary entered now, never registered
  for (const void* f : fb.host_functions)
    if (const KernelState* k = retire(f)) gone(*k);
  gone_stubs_ += fb.host_functions.size() + fb.unindexed.size();
  if (gone_stubs_ > kPruneAbove && gone_stubs_ > stub_owner_.size() / 2) prune_stubs(handle);
  fb.host_functions.clear();
  fb.unindexed.clear();
  fb.unindexed_names.clear();
  // Its handle may be reused by a fat binary registered later, which must not take this one's place in the order.
  std::erase(unindexed_order_, handle);
}

void Registry::add_claim(const void* handle, uint64_t fatbin_seq, size_t entry) {
  if (!pending_claims_.empty()) {
    PendingClaims& run = pending_claims_.back();
    if (run.handle == handle && run.seq == fatbin_seq && run.first + run.count == entry) {
      ++run.count;
      run.last_at = seq_;
      return;
    }
  }
  pending_claims_.push_back({handle, fatbin_seq, seq_, entry, 1});
}

// Each claim is made once: a run advances past each claim made, and what
// was settled is erased if a claim throws (std::bad_alloc), so that a later
// settle goes on from the claim that failed.
void Registry::settle_claims() {
  size_t r = 0;
  try {
    for (; r < pending_claims_.size(); ++r) {
      PendingClaims& run = pending_claims_[r];
      auto it = fatbins_.find(run.handle);
      if (it == fatbins_.end() || it->second.seq != run.seq) continue;
      std::vector<FatbinState::Unindexed>& entries = it->second.unindexed;
      for (; run.count > 0; ++run.first, --run.count)
        if (run.first < entries.size() && !claim_stub(entries[run.first].host_function, run.handle, run.seq))
          entries[run.first].host_function = nullptr;  // the runtime drops it
    }
  } catch (...) {
    pending_claims_.erase(pending_claims_.begin(), pending_claims_.begin() + static_cast<std::ptrdiff_t>(r));
    throw;
  }
  pending_claims_.clear();
}

// Before the fat binary `handle` (registered as `fatbin_seq`) goes: its pending
// claims are dropped when every other pending claim was made before it
// registered (none can have found one of its stubs claimed), else all are settled.
void Registry::claims_before_going(const void* handle, uint64_t fatbin_seq) {
  size_t tail = pending_claims_.size();
  while (tail > 0 && pending_claims_[tail - 1].handle == handle && pending_claims_[tail - 1].seq == fatbin_seq) --tail;
  if (tail == 0 || pending_claims_[tail - 1].last_at < fatbin_seq) pending_claims_.resize(tail);
  else settle_claims();
}

// Is this registration of `stub` by the fat binary `handle` the one that
// counts? Yes unless a registered fat binary holds it already (the runtime
// drops this one); the stub is then `handle`'s.
bool Registry::claim_stub(const void* stub, const void* handle, uint64_t seq) {
  auto [it, fresh] = stub_owner_.try_emplace(stub, StubOwner{handle, seq});
  if (fresh) return true;
  if (registered(it->second)) return false;
  it->second = {handle, seq};
  return true;
}

// Erases the entries of stub_owner_ that no longer count, and those of
// `going` (its seq still registered, about to change).
void Registry::prune_stubs(const void* going) {
  for (auto it = stub_owner_.begin(); it != stub_owner_.end(); ++it)
    if (it->second.handle == going || !registered(it->second)) stub_owner_.erase(it);
  gone_stubs_ = 0;
}

}  // namespace hipguard
