// The guard's findings sink (internal): what this process has said, what its
// report keeps of fat binaries, modules and kernels that are gone, the report
// file, and the counts behind the exit status. Guard::State::findings, under
// its own lock.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hipguard/check.h"
#include "hipguard/owned_mutex.h"
#include "hipguard/report.h"
#include "report/report_file.h"

namespace hipguard {

struct FindingsSink {
  // Guards every field below. A leaf: taken alone, or after the state mutex
  // (a registry change leaving something with the sink, the report, fork);
  // nothing is locked while it is held but spdlog's lock and the report
  // file's flock. Saying a finding (Guard::report_once) therefore never waits
  // for a whole registration, only for the sink's own short sections.
  OwnedMutex mu;

  // Every line said (format_line): a finding is said once per guard.
  std::set<std::string> logged;
  // The findings said, in order, at most kMaxSaid (Guard::findings: what a test or an embedder asks
  // instead of reading the log); a forked child's start at said_at_fork.
  std::vector<Diagnostic> said;
  size_t said_at_fork = 0;
  static constexpr size_t kMaxSaid = 4096;
  // Runtime events (HG501/HG502/HG503) whose cause was said already: in the
  // report under the run, not as more log lines. Bounded (Guard::kMaxConsequences).
  std::vector<Diagnostic> consequences;
  size_t consequences_at_fork = 0;  // a forked child's report lists the ones after
  // What this process said, or caused, itself (a forked child: since the fork). The lock held.
  std::vector<Diagnostic> said_here() const { return since(said, said_at_fork); }
  std::vector<Diagnostic> consequences_here() const { return since(consequences, consequences_at_fork); }
  // The fat binary whose check stops the process (strict mode): its report,
  // for the report file, as it never reaches on_registered_fatbin. Set once:
  // the process exits right after (tests that go on keep the last one).
  std::optional<ImageReport> stopped_at;

  // Fat binaries and modules seen but gone, for the report: one per distinct
  // (origin, findings), at most kMaxGoneImages; the rest are counted in not_listed.
  struct GoneImage {
    ImageReport report;
    uint64_t seq;  // registration order (Registry::seq)
  };
  std::deque<GoneImage> unregistered;  // no copies on growth
  std::set<std::string> unregistered_keys;
  // Kernels of unloaded modules / unregistered fat binaries that had findings
  // or launches, summed per (name, file), at most kMaxGoneKernels.
  struct GoneKernel {
    KernelRecord record;
    uint64_t seq;  // of the last one summed in
  };
  std::map<std::pair<std::string, std::string>, GoneKernel> gone_kernels;
  size_t not_listed = 0;  // images and kernels over those bounds
  static constexpr size_t kMaxGoneImages = 256;
  static constexpr size_t kMaxGoneKernels = 1024;

  // HIPGUARD_REPORT: findings appended as said, the document at exit.
  ReportFile report_file;
  bool report_reopen = false;   // a forked child with "%p" in the path opens its own
  pid_t report_written_by = 0;  // the report is written once per process (a forked child writes its own)

  // The findings this process reported (for HIPGUARD_FAIL_ON / strict exit
  // status): how many at or above config.fail_on, the first of them.
  pid_t findings_pid = 0;  // a forked child starts counting afresh
  size_t failing = 0;
  std::string first_failing;

  static std::vector<Diagnostic> since(const std::vector<Diagnostic>& all, size_t at) {
    return {all.begin() + static_cast<std::ptrdiff_t>(std::min(at, all.size())), all.end()};
  }

  // The report of the fat binary a strict-mode stop is at. Takes the lock.
  void stop_at(const ImageReport& report) {
    std::lock_guard lock(mu);
    stopped_at = report;
  }

  // Keeps `img` for the report unless one like it is kept already. Takes the lock.
  void keep_gone_image(ImageReport&& img, uint64_t image_seq) {
    std::string key = img.origin;
    for (const auto& d : img.diagnostics) key.append("\n").append(format_line(d));
    std::lock_guard lock(mu);
    if (unregistered_keys.count(key)) return;
    if (unregistered.size() >= kMaxGoneImages) {
      ++not_listed;
      return;
    }
    unregistered_keys.insert(std::move(key));
    unregistered.push_back(GoneImage{std::move(img), image_seq});
  }

  // Sums a gone kernel's launches and refusals into its (name, file) record. Takes the lock.
  void keep_gone_kernel(KernelRecord rec, uint64_t kernel_seq) {
    auto id = std::make_pair(rec.name, rec.file);
    std::lock_guard lock(mu);
    auto it = gone_kernels.find(id);
    if (it == gone_kernels.end() && gone_kernels.size() < kMaxGoneKernels) {
      KernelRecord first{rec.name, rec.file, 0, 0, rec.codes};
      it = gone_kernels.emplace(std::move(id), GoneKernel{std::move(first), 0}).first;
    }
    if (it == gone_kernels.end()) {
      ++not_listed;
      return;
    }
    it->second.record.launches += rec.launches;
    it->second.record.blocked += rec.blocked;
    it->second.seq = kernel_seq;
  }
};

}  // namespace hipguard
