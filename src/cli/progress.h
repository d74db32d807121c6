// The progress line of `hipguard check` and `inspect` over many files (stderr, terminals only).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hipguard {

// "checked 412 of 970 files, 1.2 GiB: rocblas/4.4.1/library/..." rewritten in
// place on stderr ("\r", no escape sequences: NO_COLOR holds) at most ten
// times a second once a run has taken half a second (--progress-delay), and
// erased when done, so quick runs, logs and pipes (stderr not a terminal)
// never see it.
class Progress {
 public:
  // Active only when stderr is a terminal and `enabled` (not --quiet); the
  // first line after `delay_ms`.
  Progress(bool enabled, unsigned delay_ms);
  ~Progress() { clear(); }
  // After each file (CheckPathsOptions::progress).
  void file_done(size_t done, size_t total, const std::string& path);
  // Erases the line (before the results are printed).
  void clear();

 private:
  bool active_ = false;
  std::chrono::milliseconds delay_;
  size_t shown_ = 0;  // length of the line on screen
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

}  // namespace hipguard
