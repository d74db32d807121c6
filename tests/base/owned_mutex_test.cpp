// OwnedMutex (include/hipguard/owned_mutex.h), the lock of every hipguard structure a fork handler
// holds across fork(): mutual exclusion under contention, exact ownership, and what lock_for_fork
// does for a thread that holds nothing, one that holds the lock, and one that holds another lock
// whose holder waits for it (a signal handler that interrupted hipguard). ForkRecords: the
// handlers' record of what they took, per depth of nested forks.
#include "hipguard/owned_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace hipguard {
// The two halves of unlock(), to stand for one a signal handler interrupted between them.
struct OwnedMutexTestPeer {
  static void release(OwnedMutex& mu) { mu.release(); }
  static void wake(OwnedMutex& mu) { mu.wake(); }
  static unsigned waiters(const OwnedMutex& mu) { return mu.waiters_.load(); }
};
}  // namespace hipguard

namespace {

using hipguard::OwnedMutex;
using hipguard::OwnedMutexTestPeer;
using Hold = OwnedMutex::ForkHold;
using Clock = std::chrono::steady_clock;

TEST(OwnedMutex, ExcludesUnderContention) {
  OwnedMutex mu;
  long counter = 0;  // not atomic: the lock alone keeps it right
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        std::lock_guard lock(mu);
        ++counter;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, 400000);
}

TEST(OwnedMutex, KnowsItsOwner) {
  OwnedMutex mu;
  EXPECT_FALSE(mu.held_by_this_thread());
  mu.lock();
  EXPECT_TRUE(mu.held_by_this_thread());
  EXPECT_FALSE(std::async(std::launch::async, [&] { return mu.held_by_this_thread(); }).get());
  EXPECT_FALSE(std::async(std::launch::async, [&] { return mu.try_lock(); }).get());
  mu.unlock();
  EXPECT_FALSE(mu.held_by_this_thread());
  EXPECT_TRUE(std::async(std::launch::async, [&] {
                bool got = mu.try_lock();
                if (got) mu.unlock();
                return got;
              }).get());
}

// An unlock interrupted after its release, before its wake-up (a signal handler that forks there
// runs its fork handlers first, and they may wait for a lock the sleeper holds): the sleeper still
// finds the lock free. Before: it slept until that unlock resumed, and three threads forking from
// signal handlers hung (Runtime.ForkFromASignalHandler).
TEST(OwnedMutex, AWaiterFindsTheLockFreeWhenAnUnlockHasNotWokenIt) {
  OwnedMutex mu;
  mu.lock();
  auto got = std::async(std::launch::async, [&] {
    mu.lock();
    mu.unlock();
  });
  while (OwnedMutexTestPeer::waiters(mu) == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // asleep in the futex by now
  OwnedMutexTestPeer::release(mu);
  bool woke = got.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  if (!woke) OwnedMutexTestPeer::wake(mu);
  EXPECT_TRUE(woke) << "the waiter slept on after the lock was released";
}

// The handler's own thread holds it: left to that thread (waiting would never end).
TEST(OwnedMutex, LeavesALockThisThreadHoldsToIt) {
  OwnedMutex mu;
  mu.lock();
  auto start = Clock::now();
  EXPECT_EQ(mu.lock_for_fork(), Hold::Mine);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(OwnedMutex::kForkPatienceMs));
  EXPECT_TRUE(mu.held_by_this_thread());
  mu.unlock();
}

// Holding none of hipguard's locks, or only those fork handlers took (in their order), a fork
// handler waits for another thread's, however long: the holder waits for none of them.
TEST(OwnedMutex, AThreadHoldingNoneButForkHandlersLocksWaitsForTheHolder) {
  for (bool after_another : {false, true}) {
    OwnedMutex first, mu;
    if (after_another) ASSERT_EQ(first.lock_for_fork(), Hold::Taken);
    std::promise<void> held;
    std::atomic<bool> released{false};
    std::thread holder([&] {
      mu.lock();
      held.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * OwnedMutex::kForkPatienceMs));
      released = true;
      mu.unlock();
    });
    held.get_future().wait();
    EXPECT_EQ(mu.lock_for_fork(), Hold::Taken) << after_another;
    EXPECT_TRUE(released) << "taken only once the holder let it go";
    EXPECT_TRUE(mu.held_by_this_thread());
    mu.unlock_after_fork();
    if (after_another) first.unlock_after_fork();
    holder.join();
  }
}

// Holding lock a (interrupted inside hipguard), a fork handler needs b, whose holder waits for a:
// after kForkPatienceMs it gives b up instead of waiting forever, and everyone goes on.
TEST(OwnedMutex, AThreadHoldingAnotherGivesUpOnACycle) {
  OwnedMutex a, b;
  a.lock();
  std::promise<void> b_held;
  std::thread other([&] {
    std::lock_guard lb(b);
    b_held.set_value();
    std::lock_guard la(a);  // waits for this test's thread
  });
  b_held.get_future().wait();
  auto start = Clock::now();
  EXPECT_EQ(b.lock_for_fork(), Hold::Other);
  auto waited = Clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(OwnedMutex::kForkPatienceMs));
  EXPECT_LT(waited, std::chrono::seconds(5));
  a.unlock();
  other.join();
  // Free again, both are taken at once.
  EXPECT_EQ(b.lock_for_fork(), Hold::Taken);
  EXPECT_EQ(a.lock_for_fork(), Hold::Taken);
  a.unlock_after_fork();
  b.unlock_after_fork();
}

// Holding lock a, a fork handler does not wait at all for a lock another thread's fork handlers
// hold: they release it only after their fork, and may be waiting for a.
TEST(OwnedMutex, AThreadHoldingAnotherLeavesALockForkHandlersHoldAtOnce) {
  OwnedMutex a, b;
  a.lock();
  std::promise<void> b_held, done;
  std::thread forking([&] {
    ASSERT_EQ(b.lock_for_fork(), Hold::Taken);
    b_held.set_value();
    done.get_future().wait();
    b.unlock_after_fork();
  });
  b_held.get_future().wait();
  auto start = Clock::now();
  EXPECT_EQ(b.lock_for_fork(), Hold::Other);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(OwnedMutex::kForkPatienceMs));
  done.set_value();
  forking.join();
  // Released by the fork handler, it is tried again as any other lock.
  EXPECT_EQ(b.lock_for_fork(), Hold::Taken);
  b.unlock_after_fork();
  a.unlock();
}

// A handler's fork inside another fork's handlers finds every lock the outer one took its own.
TEST(OwnedMutex, AForkInsideAForkFindsTheOuterLocksItsOwn) {
  OwnedMutex a, b;
  EXPECT_EQ(a.lock_for_fork(), Hold::Taken);
  EXPECT_EQ(b.lock_for_fork(), Hold::Taken);
  EXPECT_EQ(a.lock_for_fork(), Hold::Mine);
  EXPECT_EQ(b.lock_for_fork(), Hold::Mine);
  b.unlock_after_fork();
  a.unlock_after_fork();
  EXPECT_FALSE(a.held_by_this_thread());
  EXPECT_FALSE(b.held_by_this_thread());
}

}  // namespace

// The per-depth records of a pair of fork handlers: a nested fork's record leaves the outer one's
// as it was; past the depth, no record, and pop answers `none`.
TEST(ForkRecords, KeepsOneRecordPerNestedFork) {
  hipguard::ForkRecords<int, 2> records;
  int* outer = records.push();
  ASSERT_NE(outer, nullptr);
  *outer = 1;
  int* inner = records.push();
  ASSERT_NE(inner, nullptr);
  EXPECT_NE(inner, outer);
  *inner = 2;
  EXPECT_EQ(records.push(), nullptr);  // a third level
  EXPECT_EQ(records.pop(-1), -1);
  EXPECT_EQ(records.pop(-1), 2);
  EXPECT_EQ(records.pop(-1), 1);
  int* again = records.push();
  EXPECT_EQ(again, outer);
  *again = 3;
  EXPECT_EQ(records.pop(-1), 3);
}
