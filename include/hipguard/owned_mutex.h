// A mutex that knows whether the calling thread holds it, for the fork handlers of a library that
// lives inside other people's processes.
//
// pthread_atfork's prepare handler takes each of hipguard's locks so that a child never starts with
// one held by a thread it does not have. A fork() from a signal handler that interrupted this very
// thread while it held (or was taking) one of them would wait for itself forever: such a lock is
// skipped (lock_for_fork returns false), and in parent and child the interrupted thread, resuming,
// releases it as it would have. Locks other threads hold are waited for, as always. Costs a store per
// lock and unlock (the slow paths only: the launch fast path takes no lock).
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <mutex>

namespace hipguard {

class OwnedMutex {
 public:
  // Each step leaves, at every instruction, a state a signal handler on this thread can read:
  // owner_ is this thread from before mu_ is released until it is held by no one or another.
  // (t_taking is restored, not cleared: a fork handler takes several locks while the thread it
  // interrupted may be taking one of them.)
  void lock() {
    const OwnedMutex* was = t_taking;
    t_taking = this;  // held or not yet: lock_for_fork cannot tell, and tries
    std::atomic_signal_fence(std::memory_order_seq_cst);
    mu_.lock();
    owner_.store(pthread_self(), std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_taking = was;
  }
  bool try_lock() {
    const OwnedMutex* was = t_taking;
    t_taking = this;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    bool got = mu_.try_lock();
    if (got) owner_.store(pthread_self(), std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_taking = was;
    return got;
  }
  void unlock() {
    pthread_t self = pthread_self();
    mu_.unlock();
    std::atomic_signal_fence(std::memory_order_seq_cst);
    owner_.compare_exchange_strong(self, pthread_t{}, std::memory_order_relaxed);  // unless taken since
  }
  // For fork handlers: takes the lock unless this thread holds it; whether it did. Interrupted while
  // taking it, this thread may hold it already or still wait for another: tried for up to 200 ms.
  bool lock_for_fork() {
    if (pthread_equal(owner_.load(std::memory_order_relaxed), pthread_self())) return false;
    if (t_taking != this) {
      lock();
      return true;
    }
    for (int i = 0; i < 200; ++i) {
      if (mu_.try_lock()) {
        owner_.store(pthread_self(), std::memory_order_relaxed);
        return true;
      }
      timespec ms{0, 1000 * 1000};
      nanosleep(&ms, nullptr);
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::atomic<pthread_t> owner_{};
  static inline thread_local const OwnedMutex* t_taking = nullptr;
};

}  // namespace hipguard
