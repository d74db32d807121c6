// The ordered pool of check_paths: files checked by several threads, their
// reports handed on one at a time and in input order.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <variant>

#include "hipguard/check_paths.h"

namespace hipguard {

// What a file sends on while it is checked, in order: an image, or (archives)
// the begin (the member's path) or end of a member.
using FileEvent = std::variant<ImageReport, std::string, FileReport>;
using EventSink = std::function<void(FileEvent&&)>;

struct OrderedJobs {
  size_t count = 0;   // files 0 .. count-1
  unsigned jobs = 1;  // threads, this one among them
  // Checks file i, sending its events through `push`; any thread, concurrently.
  std::function<FileReport(size_t i, const EventSink& push, FileData::ReadBuffer& buffer)> check;
  // File i's events, then its report: one call at a time, files in input order.
  std::function<void(size_t i, FileEvent&&)> deliver;
  std::function<void(size_t i, FileReport&&)> finish;
};

// Runs the jobs. The file being delivered (the head) delivers its events as
// they come; the threads checking later files, at most 16 per thread ahead,
// queue theirs (4 at most, then wait). An exception from `check` stops the
// delivery at that file and is rethrown here once every thread has stopped.
void run_in_order(const OrderedJobs& jobs);

}  // namespace hipguard
