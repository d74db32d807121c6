// A mutex whose lock word is its owner, for the fork handlers of a library that lives inside other
// people's processes.
//
// pthread_atfork's prepare handler takes each of hipguard's locks so that a child never starts with
// one held by a thread it does not have. A fork() from a signal handler that interrupted a thread
// inside hipguard must neither wait for that thread (itself) nor, holding one of hipguard's locks,
// wait for a thread that waits for it. Taking the lock is writing the owner (one compare-exchange),
// so at every instruction a handler can tell whether its own thread holds it (std::mutex's owner is
// not visible, and pthread's is written after the lock is taken). Waiters sleep on a futex. The
// slow paths only: the launch fast path takes no lock.
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace hipguard {

class OwnedMutex {
 public:
  // What lock_for_fork did: took the lock (the after-fork handler releases it), found it held by
  // this thread (which, resuming, releases it in parent and child alike), or left it held by
  // another thread (in a child, held for good: set_unclean_fork()).
  enum class ForkHold : unsigned char { Taken, Mine, Other };

  // A waiter looks again every kRecheckNs even unwoken: a signal handler that interrupted an
  // unlock between its release and its wake-up owes the wake-up until it returns, and a fork there
  // may wait for a lock that a thread sleeping here holds.
  static constexpr long kRecheckNs = 2 * 1000 * 1000;
  void lock() {
    if (try_lock()) return;
    waiters_.fetch_add(1);
    for (;;) {
      uint32_t seen = seq_.load();
      if (try_lock()) break;
      timespec recheck{0, kRecheckNs};
      syscall(SYS_futex, &seq_, FUTEX_WAIT_PRIVATE, seen, &recheck, nullptr, 0);
    }
    waiters_.fetch_sub(1);
  }
  // Counted as held by this thread just before the attempt, so that a handler never misses a lock
  // this thread holds (it may, for an instruction, count one it does not).
  bool try_lock() {
    ++t_held;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    uintptr_t none = 0;
    if (owner_.compare_exchange_strong(none, self())) return true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    --t_held;
    return false;
  }
  void unlock() {
    release();
    wake();
  }
  bool held_by_this_thread() const { return owner_.load() == self(); }

  // For fork handlers. A thread whose only locks are those fork handlers took, in their order,
  // waits as long as it takes (no holder waits for it). One that holds another (a handler that
  // interrupted it inside hipguard) tries for up to kForkPatienceMs: the holder may be waiting for
  // the lock this thread holds. Not at all when another thread's fork handlers hold it: they wait
  // for every lock after it, the one this thread holds perhaps too, and release it only after their
  // fork (so threads forking at once would each spend kForkPatienceMs a lock on the others'). A lock
  // Taken here is released with unlock_after_fork.
  static constexpr long kForkPatienceMs = 100;
  ForkHold lock_for_fork() {
    if (held_by_this_thread()) return ForkHold::Mine;
    if (t_held == t_fork_taken) {
      lock();
      return taken_for_fork();
    }
    for (long ms = 0; ms < kForkPatienceMs && !held_for_fork_.load(); ++ms) {
      if (try_lock()) return taken_for_fork();
      timespec one{0, 1000 * 1000};
      nanosleep(&one, nullptr);
    }
    return ForkHold::Other;
  }
  void unlock_after_fork() {
    held_for_fork_.store(false);
    --t_fork_taken;
    unlock();
  }
  // A child whose fork handlers did not take every one of hipguard's locks: one held by another
  // thread (ForkHold::Other) is never released there and what it guards may be half-written; one
  // held by the forking thread (Mine) is mid-change. Set by the child handlers; from then on
  // nothing in that process enters hipguard (hipguard::guarded).
  static void set_unclean_fork() { s_unclean_fork.store(true, std::memory_order_relaxed); }
  static bool unclean_fork() { return s_unclean_fork.load(std::memory_order_relaxed); }

 private:
  friend struct OwnedMutexTestPeer;
  // The futex word moves only when someone waits: a waiter counts itself in waiters_ before it
  // reads seq_ and tries the lock, and this store precedes the load of waiters_ (both seq_cst), so
  // a waiter not counted yet finds the lock free when it tries. An uncontended unlock is one store.
  void release() {
    owner_.store(0);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    --t_held;
    if (waiters_.load() != 0) seq_.fetch_add(1);
  }
  // Every waiter, not one: a waiter woken as a signal arrives runs the handler first, and a fork
  // there waits for locks other waiters' handlers hold; a single wake-up it took would be lost.
  void wake() {
    if (waiters_.load() != 0) syscall(SYS_futex, &seq_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
  static uintptr_t self() { return static_cast<uintptr_t>(pthread_self()); }  // never 0; kept by fork()
  ForkHold taken_for_fork() {
    ++t_fork_taken;
    held_for_fork_.store(true);
    return ForkHold::Taken;
  }

  std::atomic<uintptr_t> owner_{0};
  std::atomic<uint32_t> seq_{0};  // the futex: bumped by each unlock that finds a waiter
  std::atomic<uint32_t> waiters_{0};
  std::atomic<bool> held_for_fork_{false};               // by a fork handler (lock_for_fork), until unlock_after_fork
  static inline thread_local unsigned t_held = 0;        // locks this thread holds or is taking
  static inline thread_local unsigned t_fork_taken = 0;  // of those, the ones fork handlers took
  static inline std::atomic<bool> s_unclean_fork{false};
};

// What one pair of fork handlers took, kept per thread and per depth: a fork() from a signal handler
// raised inside another fork's handlers gets a record of its own. A thread_local of each pair of
// handlers. push() in the prepare handler: this fork's record, or null past kMaxDepth (take
// nothing). pop(none) in the after-fork handler: a copy of that record (`none` past kMaxDepth),
// copied before the depth is given back, so a fork nested from here on leaves it as it was.
// Declare a thread's records `constinit thread_local`: a fork handler is its thread's first use of
// them, maybe in a signal handler that interrupted malloc, and a thread_local that needs dynamic
// initialisation runs its file's TLS initialiser there, which registers the file's thread_local
// destructors with __cxa_thread_atexit, which allocates: the simulated runtime hung so (its
// std::vector of launch configurations), in malloc's lock, held by the interrupted malloc.
template <class Record, unsigned kMaxDepth = 4>
class ForkRecords {
 public:
  Record* push() {
    unsigned depth = depth_++;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return depth < kMaxDepth ? &records_[depth] : nullptr;
  }
  Record pop(const Record& none) {
    unsigned depth = depth_ - 1;
    Record r = depth < kMaxDepth ? records_[depth] : none;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    depth_ = depth;
    return r;
  }

 private:
  Record records_[kMaxDepth] = {};  // value-initialised: a thread_local of it is constinit (below)
  unsigned depth_ = 0;
};

}  // namespace hipguard
