// The shim's own heap: operator new and delete of everything linked into the
// shim (its code, and the LLVM and libstdc++ it carries, all static) take
// memory from pages of its own, pooled by std::pmr, never from the host's
// malloc heap. Blocks the shim keeps while a library registers would
// otherwise lie between the runtime's per-kernel objects and slow the
// runtime's own walks over them (docs/performance.md, "R2 met").
// C code (zlib, zstd, libc) still uses malloc. HIPGUARD_HEAP=malloc sends the
// shim's allocations to malloc instead (for heap profilers, and for the test
// that makes them fail). Left out of sanitizer builds, which must see every
// allocation.
#include <pthread.h>
#include <strings.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <mutex>
#include <new>

#include "hipguard/owned_mutex.h"
#include "hipguard/settings.h"

namespace {

// Whole pages from mmap, returned with munmap: the pool's chunks, and blocks
// larger than its largest pool.
constexpr size_t kPage = 4096;
constexpr uintptr_t round_up(uintptr_t x, uintptr_t to) { return (x + to - 1) & ~(to - 1); }

class Pages final : public std::pmr::memory_resource {
  // Beyond a page, the pool asks for its chunks aligned to their size: map
  // more, and unmap what lies before and after the aligned part.
  void* do_allocate(size_t bytes, size_t alignment) override {
    bytes = round_up(bytes, kPage);
    size_t extra = alignment > kPage ? alignment : 0;
    if (bytes == 0 || bytes + extra < bytes) throw std::bad_alloc();
    void* m = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto at = reinterpret_cast<uintptr_t>(m);
    if (!extra) return m;
    uintptr_t aligned = round_up(at, alignment);
    if (aligned > at) munmap(m, aligned - at);
    if (at + extra > aligned) munmap(reinterpret_cast<void*>(aligned + bytes), at + extra - aligned);
    return reinterpret_cast<void*>(aligned);
  }
  void do_deallocate(void* p, size_t bytes, size_t) override { munmap(p, round_up(bytes, kPage)); }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
};

// One lock around an unsynchronized pool: the shim allocates on its slow paths
// only (registration, first launches, reports), mostly under the guard's own
// lock already. Held across fork() (pthread_atfork), as glibc holds malloc's.
// A fork() from a signal handler that interrupted this thread inside the heap
// leaves the lock to it (OwnedMutex::lock_for_fork): the thread, resuming,
// releases it. Kept per depth: a handler's fork inside another fork's handlers.
// A child that did not get the lock (the pool half-changed, or the lock held
// for good) abandons the pool: blocks come from whole pages and are never
// given back, and the child is unclean (OwnedMutex::unclean_fork).
std::atomic<bool> g_pool_abandoned{false};
constinit thread_local hipguard::ForkRecords<hipguard::OwnedMutex::ForkHold> t_heap_fork_hold;

struct Heap {
  hipguard::OwnedMutex mu;
  Pages pages;
  // Blocks up to 64 KiB pooled; larger ones straight from Pages.
  std::pmr::unsynchronized_pool_resource pool{{0, 64 * 1024}, &pages};
  Heap() {
    pthread_atfork(
        before_fork, [] { after_fork(false); }, [] { after_fork(true); });
  }
  static void before_fork() {
    auto* hold = t_heap_fork_hold.push();
    if (!hold) return;
    // An abandoned pool's lock may be held for good: not waited for.
    *hold = g_pool_abandoned.load(std::memory_order_relaxed) ? hipguard::OwnedMutex::ForkHold::Mine
                                                             : heap().mu.lock_for_fork();
  }
  static void after_fork(bool child) {
    using Hold = hipguard::OwnedMutex::ForkHold;
    if (t_heap_fork_hold.pop(Hold::Mine) == Hold::Taken) {
      heap().mu.unlock_after_fork();
    } else if (child) {
      g_pool_abandoned.store(true, std::memory_order_relaxed);
      hipguard::OwnedMutex::set_unclean_fork();
    }
  }
  static Heap& heap() {
    // Built in place at first use (an allocation during static initialisation
    // included) and never destroyed: static destructors may still free.
    alignas(Heap) static unsigned char storage[sizeof(Heap)];
    static Heap* h = ::new (storage) Heap;
    return *h;
  }
};

// A block from the pool holds a header, padding up to the alignment asked
// for, and the object: the header's two words, just below the object, are
// the object's distance from the block's start and the block's size, so that
// an unsized delete finds both. The pool is asked for 16-byte alignment only
// (libstdc++ 12's pools do not keep larger ones) and sizes that are multiples
// of 16; larger alignments are made here.
constexpr size_t kMinAlign = 16;

// HIPGUARD_HEAP=malloc (any case; config.cpp says a value it does not
// accept): read at the first allocation, before the guard reads its
// settings, and kept, so that every block goes back where it came from.
bool uses_malloc() {
  static const bool m = [] {
    const char* v = getenv(hipguard::variable(hipguard::Setting::Heap));
    return v && strcasecmp(v, "malloc") == 0;
  }();
  return m;
}

void* from_malloc(size_t n, size_t align) {
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) p = malloc(n ? n : 1);
  else if (posix_memalign(&p, align, n ? n : 1) != 0) p = nullptr;
  if (!p) throw std::bad_alloc();
  return p;
}

void* take(size_t n, size_t align) {
  if (uses_malloc()) return from_malloc(n, align);
  if (align < kMinAlign) align = kMinAlign;
  size_t pad = align > kMinAlign ? align : 0;  // room to align the object by hand
  if (n > SIZE_MAX - 2 * kMinAlign - pad) throw std::bad_alloc();
  size_t total = round_up(n + kMinAlign + pad, kMinAlign);
  Heap& h = Heap::heap();
  void* block;
  if (g_pool_abandoned.load(std::memory_order_relaxed)) {
    block = h.pages.allocate(total, kMinAlign);
  } else {
    std::lock_guard lock(h.mu);
    block = h.pool.allocate(total, kMinAlign);
  }
  uintptr_t start = reinterpret_cast<uintptr_t>(block);
  uintptr_t user = round_up(start + kMinAlign, align);
  reinterpret_cast<size_t*>(user)[-2] = user - start;
  reinterpret_cast<size_t*>(user)[-1] = total;
  return reinterpret_cast<void*>(user);
}

void give_back(void* p) noexcept {
  if (!p) return;
  if (uses_malloc()) return free(p);
  auto user = reinterpret_cast<uintptr_t>(p);
  size_t offset = reinterpret_cast<size_t*>(user)[-2];
  size_t total = reinterpret_cast<size_t*>(user)[-1];
  Heap& h = Heap::heap();
  if (g_pool_abandoned.load(std::memory_order_relaxed)) return;  // a fork's child: kept (see before_fork)
  std::lock_guard lock(h.mu);
  h.pool.deallocate(reinterpret_cast<void*>(user - offset), total, kMinAlign);
}

void* take_nothrow(size_t n, size_t align) noexcept {
  try {
    return take(n, align);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

#define HIPGUARD_HEAP
HIPGUARD_HEAP void* operator new(size_t n) { return take(n, kMinAlign); }
HIPGUARD_HEAP void* operator new[](size_t n) { return take(n, kMinAlign); }
HIPGUARD_HEAP void* operator new(size_t n, std::align_val_t a) { return take(n, static_cast<size_t>(a)); }
HIPGUARD_HEAP void* operator new[](size_t n, std::align_val_t a) { return take(n, static_cast<size_t>(a)); }
HIPGUARD_HEAP void* operator new(size_t n, const std::nothrow_t&) noexcept { return take_nothrow(n, kMinAlign); }
HIPGUARD_HEAP void* operator new[](size_t n, const std::nothrow_t&) noexcept { return take_nothrow(n, kMinAlign); }
HIPGUARD_HEAP void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return take_nothrow(n, static_cast<size_t>(a));
}
HIPGUARD_HEAP void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return take_nothrow(n, static_cast<size_t>(a));
}
HIPGUARD_HEAP void operator delete(void* p) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete[](void* p) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete(void* p, size_t) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete[](void* p, size_t) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete(void* p, std::align_val_t) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete[](void* p, std::align_val_t) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete(void* p, size_t, std::align_val_t) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete[](void* p, size_t, std::align_val_t) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete(void* p, const std::nothrow_t&) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete[](void* p, const std::nothrow_t&) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { give_back(p); }
HIPGUARD_HEAP void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { give_back(p); }
