// Pointer -> kernel state map read without locks on the launch path (internal).
// Writers hold the guard's mutex; readers only load atomics. Superseded
// arrays are kept (never freed) so a concurrent reader can finish its probe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace hipguard {

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

  // Caller holds the writer lock. `value` must outlive the table.
  void insert(const void* key, const V* value) {
    Array* a = current_.load(std::memory_order_relaxed);
    if ((count_ + 1) * 2 > a->mask + 1) {
      auto* bigger = new Array((a->mask + 1) * 2);
      for (size_t i = 0; i <= a->mask; ++i)
        if (const void* k = a->slots[i].key.load(std::memory_order_relaxed))
          put(*bigger, k, a->slots[i].value.load(std::memory_order_relaxed));
      publish(bigger);
      a = bigger;
    }
    if (put(*a, key, value)) ++count_;
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

  static size_t hash(const void* p) {
    uint64_t x = reinterpret_cast<uintptr_t>(p);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x);
  }

  // Returns true when `key` was new. Value is stored before the key is published.
  static bool put(Array& a, const void* key, const V* value) {
    for (size_t i = hash(key) & a.mask;; i = (i + 1) & a.mask) {
      const void* k = a.slots[i].key.load(std::memory_order_relaxed);
      if (k == key) {
        a.slots[i].value.store(value, std::memory_order_release);
        return false;
      }
      if (!k) {
        a.slots[i].value.store(value, std::memory_order_release);
        a.slots[i].key.store(key, std::memory_order_release);
        return true;
      }
    }
  }

  void publish(Array* a) {
    arrays_.emplace_back(a);
    current_.store(a, std::memory_order_release);
  }

  std::atomic<Array*> current_{nullptr};
  std::vector<std::unique_ptr<Array>> arrays_;  // all generations, kept for concurrent readers
  size_t count_ = 0;
};

}  // namespace hipguard
