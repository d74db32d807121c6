// Runs one piece of work on several threads at once, the calling thread among them.
#pragma once

#include <thread>
#include <vector>

namespace hipguard {

// Runs `work` on `threads` threads, this one among them, and returns once every one has returned.
// Where no more threads can be started, those running (at least this one) do the rest: `work`
// must take its items from a shared counter or queue, not expect a number of threads.
template <class F>
void run_on_threads(unsigned threads, const F& work) {
  std::vector<std::thread> started;
  try {
    started.reserve(threads);
    for (unsigned t = 1; t < threads; ++t) started.emplace_back(work);
  } catch (...) {
    // no more threads
  }
  work();
  for (auto& t : started) t.join();
}

}  // namespace hipguard
