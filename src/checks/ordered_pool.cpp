// The ordered pool of check_paths (ordered_pool.h).
#include "checks/ordered_pool.h"

#include "base/run_on_threads.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace hipguard {
namespace {

// One file being checked, not yet delivered: its events wait here until it
// is the head (at most kMaxQueued, then its thread waits).
struct Slot {
  static constexpr size_t kMaxQueued = 4;
  std::deque<FileEvent> queue;
  bool done = false;
  FileReport report;
  std::exception_ptr error;
};

// The threads' shared state. Everything `jobs.deliver` and `jobs.finish` see
// happens under `m`, in input order.
class Pool {
 public:
  explicit Pool(const OrderedJobs& jobs) : jobs_(jobs), window_(16 * static_cast<size_t>(jobs.jobs)), slots_(window_) {}

  void run() {
    run_on_threads(jobs_.jobs, [this] { work(); });  // fewer, if no more can be started
    if (failed_) std::rethrow_exception(failed_);
  }

 private:
  // Takes files in order, at most window_ ahead of the head.
  void work() {
    FileData::ReadBuffer buffer;
    for (;;) {
      size_t i = next_.fetch_add(1);
      if (i >= jobs_.count) return;
      Slot* slot;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || i < head_ + window_; });
        if (stop_) return;
        slot = &slots_[i % window_];
      }
      FileReport r;
      std::exception_ptr error;
      try {
        r = jobs_.check(
            i, [&](FileEvent&& e) { push(i, *slot, std::move(e)); }, buffer);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(m_);
      slot->report = std::move(r);
      slot->error = error;
      slot->done = true;
      if (i == head_) advance();
    }
  }

  // An event of file i: delivered now when i is the head, else queued.
  void push(size_t i, Slot& slot, FileEvent&& e) {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return stop_ || i == head_ || slot.queue.size() < Slot::kMaxQueued; });
    if (stop_) return;
    if (i == head_) {
      drain(i, slot);
      jobs_.deliver(i, std::move(e));
    } else {
      slot.queue.push_back(std::move(e));
    }
  }

  // Under m_: delivers the head while it is complete, then wakes the waiting threads.
  void advance() {
    for (;;) {
      Slot& s = slots_[head_ % window_];
      drain(head_, s);
      if (!s.done) break;
      finish(head_, s);
      if (++head_ >= jobs_.count) break;
    }
    cv_.notify_all();
  }

  // Under m_: the queued events of the head.
  void drain(size_t i, Slot& s) {
    while (!s.queue.empty()) {
      FileEvent e = std::move(s.queue.front());
      s.queue.pop_front();
      if (!stop_) jobs_.deliver(i, std::move(e));
    }
  }

  // Under m_: the head's report; a file whose check threw stops the delivery.
  void finish(size_t i, Slot& s) {
    if (s.error) {
      if (!failed_) failed_ = s.error;
      stop_ = true;
    } else if (!stop_) {
      jobs_.finish(i, std::move(s.report));
    }
    s = Slot();
  }

  const OrderedJobs& jobs_;
  const size_t window_;
  std::vector<Slot> slots_;
  std::mutex m_;
  std::condition_variable cv_;
  size_t head_ = 0;  // the first file not yet delivered
  bool stop_ = false;
  std::exception_ptr failed_;
  std::atomic<size_t> next_{0};
};

}  // namespace

void run_in_order(const OrderedJobs& jobs) {
  if (jobs.jobs > 1) return Pool(jobs).run();
  FileData::ReadBuffer buffer;
  for (size_t i = 0; i < jobs.count; ++i) {
    FileReport r = jobs.check(
        i, [&](FileEvent&& e) { jobs.deliver(i, std::move(e)); }, buffer);
    jobs.finish(i, std::move(r));
  }
}

}  // namespace hipguard
