// Pointer -> kernel state map read without locks on the launch path, and the
// direct-mapped cache in front of it that the launch wrappers read inline
// (internal). Writers hold the guard's mutex; readers only load atomics. An
// erased key leaves a tombstone (null value) that a later insert reuses, so
// load/unload churn does not grow the table; the last kKeptArrays superseded
// arrays are kept for readers still probing them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace hipguard {

// What a launch needs to know about its kernel to skip the guard (the head of
// the guard's kernel state, so the shim's fast path reads it without a call).
struct LaunchFacts {
  // The key it is in the kernel table under (KernelTable::insert; null once
  // erased): what a launch cache entry is checked against.
  mutable std::atomic<const void*> key{nullptr};
  // Smallest (device LDS - static LDS) over the targets, bytes; UINT64_MAX: not known.
  uint64_t max_dynamic_lds = UINT64_MAX;
  // A launch with less dynamic LDS than this (bytes) may skip the guard: 0
  // unless clean (checked in full, probed or never to be, no finding), else
  // max_dynamic_lds + 1. One compare on the launch path decides both.
  // Written under the guard's mutex (set_clean), read without it.
  mutable std::atomic<uint64_t> skip_below{0};

  void set_clean(bool clean) const {
    uint64_t bound = !clean ? 0 : max_dynamic_lds == UINT64_MAX ? UINT64_MAX : max_dynamic_lds + 1;
    skip_below.store(bound, std::memory_order_release);
  }
  bool clean() const { return skip_below.load(std::memory_order_acquire) != 0; }
};

// A host pointer's hash. Kernel stubs lie 8 bytes apart: an identity-like
// hash (llvm::DenseMapInfo's) packs them into one run of buckets, where
// probing goes long (rocSPARSE's 12 k stubs: ~100 probes an insert).
inline size_t hash_pointer(const void* p) {
  uint64_t x = reinterpret_cast<uintptr_t>(p);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<size_t>(x);
}

// V: LaunchFacts or a type derived from it.
template <class V>
class KernelTable {
 public:
  KernelTable() { publish(new Array(64)); }

  // Lock-free; safe against concurrent insert().
  const V* find(const void* key) const {
    const Array* a = current_.load(std::memory_order_acquire);
    for (size_t i = hash(key) & a->mask, n = 0; n <= a->mask; i = (i + 1) & a->mask, ++n) {
      const void* k = a->slots[i].key.load(std::memory_order_acquire);
      if (k == key) return a->slots[i].value.load(std::memory_order_acquire);
      if (!k) return nullptr;
    }
    return nullptr;
  }

  // Caller holds the writer lock.
  bool empty() const { return live_ == 0; }

  // Caller holds the writer lock. `value` must stay valid for the life of the
  // process when the launch cache may point to it (the process's guard); a
  // guard of its own has no cache, and its values die with it. It records `key`.
  void insert(const void* key, const V* value) {
    if (!value) return erase(key);
    value->key.store(key, std::memory_order_release);
    Array* a = current_.load(std::memory_order_relaxed);
    if ((used_ + 1) * 2 > a->mask + 1) {
      // Tombstones are dropped: the new array holds the live keys only.
      size_t n = 64;
      while (n < (live_ + 1) * 4) n *= 2;
      auto* fresh = new Array(n);
      used_ = 0;
      for (size_t i = 0; i <= a->mask; ++i) {
        const void* k = a->slots[i].key.load(std::memory_order_relaxed);
        const V* v = a->slots[i].value.load(std::memory_order_relaxed);
        if (k && v) put(*fresh, k, v), ++used_;
      }
      publish(fresh);
      a = fresh;
    }
    switch (put(*a, key, value)) {
      case Put::Updated: break;
      case Put::Reused: ++live_; break;
      case Put::New: ++live_, ++used_; break;
    }
  }

  // Caller holds the writer lock. find(key) returns null from now on.
  void erase(const void* key) {
    Array* a = current_.load(std::memory_order_relaxed);
    for (size_t i = hash(key) & a->mask, n = 0; n <= a->mask; i = (i + 1) & a->mask, ++n) {
      const void* k = a->slots[i].key.load(std::memory_order_relaxed);
      if (!k) return;
      if (k == key) {
        if (const V* v = a->slots[i].value.exchange(nullptr, std::memory_order_release)) {
          const void* expected = key;
          v->key.compare_exchange_strong(expected, nullptr, std::memory_order_release);
          --live_;
        }
        return;
      }
    }
  }

 private:
  struct Slot {
    std::atomic<const void*> key{nullptr};
    std::atomic<const V*> value{nullptr};
  };
  struct Array {
    explicit Array(size_t n) : mask(n - 1), slots(new Slot[n]) {}
    size_t mask;
    std::unique_ptr<Slot[]> slots;
  };

  static size_t hash(const void* p) { return hash_pointer(p); }

  enum class Put { Updated, Reused, New };
  // A new key goes into the first tombstone of its probe sequence, else into
  // the empty slot that ends it. Into an empty slot the value is stored before
  // the key is published. Into a tombstone the key goes first: a reader racing
  // with it sees the new key with no value yet (not found), never the old
  // key with the new value.
  static Put put(Array& a, const void* key, const V* value) {
    Slot* tomb = nullptr;
    for (size_t i = hash(key) & a.mask;; i = (i + 1) & a.mask) {
      const void* k = a.slots[i].key.load(std::memory_order_relaxed);
      if (k == key) {
        bool was_live = a.slots[i].value.exchange(value, std::memory_order_release) != nullptr;
        return was_live ? Put::Updated : Put::Reused;
      }
      if (k && !tomb && !a.slots[i].value.load(std::memory_order_relaxed)) tomb = &a.slots[i];
      if (!k) {
        if (tomb) {
          tomb->key.store(key, std::memory_order_release);
          tomb->value.store(value, std::memory_order_release);
          return Put::Reused;
        }
        a.slots[i].value.store(value, std::memory_order_release);
        a.slots[i].key.store(key, std::memory_order_release);
        return Put::New;
      }
    }
  }

  // A reader holds an array for one probe sequence: the few most recent
  // superseded arrays are kept for it, older ones freed.
  static constexpr size_t kKeptArrays = 8;
  void publish(Array* a) {
    arrays_.emplace_back(a);
    current_.store(a, std::memory_order_release);
    if (arrays_.size() > kKeptArrays + 1) arrays_.erase(arrays_.begin());
  }

  std::atomic<Array*> current_{nullptr};
  std::vector<std::unique_ptr<Array>> arrays_;  // the current array and the last superseded ones
  size_t used_ = 0;                             // slots with a key (live or tombstone)
  size_t live_ = 0;                             // keys with a value
};

// The launch cache: one slot per (key >> 4) mod 4096 (host functions of one
// library lie a few dozen bytes apart, so its kernels do not collide), each
// the facts of the last clean kernel launched with a key of that slot. An
// entry is valid while its facts are still under that key (LaunchFacts::key);
// facts are never freed (kernel states are reused, not deleted), so a stale
// entry is a miss, never a dangling read. Filled by the slow path
// (launch_cache_remember); no writer ever needs to clear it.
struct LaunchCache {
  static constexpr size_t kSlots = 4096;
  std::atomic<const LaunchFacts*> slots[kSlots] = {};
  static size_t index(const void* key) { return (reinterpret_cast<uintptr_t>(key) >> 4) & (kSlots - 1); }
};
extern LaunchCache g_launch_cache;

// See guard.h. Inline, and short enough that the launch wrappers keep the
// arguments in their registers: a call or a table probe here would make
// them spill the arguments and keep a frame (docs/performance.md, P3b).
inline bool launch_known_clean(const void* key, uint64_t dynamic_lds_bytes) noexcept {
  const LaunchFacts* k = g_launch_cache.slots[LaunchCache::index(key)].load(std::memory_order_acquire);
  return k && k->key.load(std::memory_order_relaxed) == key &&
         dynamic_lds_bytes < k->skip_below.load(std::memory_order_relaxed);
}

// A launch of `key` with `facts` (from the kernel table) was decided on the slow path: later
// launches of it take the fast path while its facts stay clean.
// Into `cache`, when there is one (a guard built on its own has none).
inline void launch_cache_remember(LaunchCache* cache, const void* key, const LaunchFacts* facts) noexcept {
  if (cache && facts && facts->key.load(std::memory_order_acquire) == key && facts->clean())
    cache->slots[LaunchCache::index(key)].store(facts, std::memory_order_release);
}

}  // namespace hipguard
