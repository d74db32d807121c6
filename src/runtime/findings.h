// The guard's findings sink (internal): what this process has said, what its
// report keeps of fat binaries, modules and kernels that are gone, the report
// file, and the counts behind the exit status. Reporting::sink (reporting.h); every
// method takes the sink's own lock unless it says otherwise.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
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

class FindingsSink {
 public:
  static constexpr size_t kMaxSaid = 4096;          // findings kept for Guard::said
  static constexpr size_t kMaxConsequences = 1000;  // runtime events kept for the report's run
  static constexpr size_t kMaxGoneImages = 256;
  static constexpr size_t kMaxGoneKernels = 1024;

  // HIPGUARD_REPORT's path ("%p": the pid; "" none). Set once, before use.
  void set_report(std::string path) { report_path_ = std::move(path); }

  // Opens this process's report file; why it cannot be (HG603), to be logged.
  std::optional<Diagnostic> open_report();

  // Saying a finding. `line` is its text (format_line), the key of say-once: false when said
  // already. Otherwise it is kept (at most kMaxSaid), journaled to the report file, and, when
  // `fails` (at or above HIPGUARD_FAIL_ON), counted for the exit status. A forked child with "%p"
  // opens its own report at its first record: why it could not is put in `report_problem`.
  bool say(const Diagnostic& d, const std::string& line, bool fails, std::optional<Diagnostic>* report_problem);
  // A runtime event (HG501/HG502/HG503) whose cause (`cause_line`) was said: kept for the report's
  // run (at most kMaxConsequences) and true; false when the cause was not said.
  bool add_consequence(const Diagnostic& d, const std::string& cause_line);
  // What this process said, or caused, itself (a forked child: since the fork).
  std::vector<Diagnostic> said_here() const;
  std::vector<Diagnostic> consequences_here() const;
  // The findings at or above HIPGUARD_FAIL_ON this process said, and the first ("HG301 kernel 'k'").
  std::pair<size_t, std::string> failing_here() const;

  // The report of the fat binary a strict-mode stop is at (it never reaches on_registered_fatbin).
  void stop_at(const ImageReport& report);
  // Keeps a gone fat binary's or module's report unless one like it is kept (at most kMaxGoneImages).
  void keep_gone_image(ImageReport&& img, uint64_t image_seq);
  // Sums a gone kernel's launches and refusals into its (name, file) record (at most kMaxGoneKernels).
  void keep_gone_kernel(KernelRecord rec, uint64_t kernel_seq);

  // Whether this process's report is written already; claim_report: it is about to be (false: it was).
  bool report_written() const;
  bool claim_report();
  // What the report keeps of this process since `fork_seq`: the gone images and the one a strict
  // stop is at, to `add`; the consequences, gone kernels and the count of those not listed, to `run`.
  void add_to_report(uint64_t fork_seq, const std::function<void(const ImageReport&)>& add, RunInfo& run) const;
  // Finishes the report file with `record`: its path, and whether it was written (else the first
  // write error, HG603).
  std::pair<std::string, Status> finish_report(llvm::json::Object record, bool xml,
                                               std::optional<Diagnostic>* report_problem);

  // Around fork() (events::before_fork / after_fork): the lock taken for the fork (a leaf, after
  // Kernels::mu); the child's lists and counts start afresh, its report file its own.
  OwnedMutex::ForkHold lock_for_fork();
  void after_fork(bool child);  // the lock taken for the fork held
  void unlock_after_fork() { mu_.unlock_after_fork(); }

 private:
  struct GoneImage {
    ImageReport report;
    uint64_t seq;  // registration order (Registry::last_seq)
  };
  struct GoneKernel {
    KernelRecord record;
    uint64_t seq;  // of the last one summed in
  };
  static std::vector<Diagnostic> since(const std::vector<Diagnostic>& all, size_t at);
  std::optional<Diagnostic> open_report_locked();  // the lock held
  std::optional<Diagnostic> reopen_if_forked();    // the lock held

  // Guards every field below. A leaf: taken alone, or after Kernels::mu
  // (a registry change leaving something with the sink, the report, fork);
  // nothing is locked while it is held but the report file's flock. Saying a
  // finding therefore never waits for a whole registration.
  mutable OwnedMutex mu_;

  std::set<std::string> logged_;  // every line said
  std::vector<Diagnostic> said_;  // in order, at most kMaxSaid
  size_t said_at_fork_ = 0;       // a forked child's start
  std::vector<Diagnostic> consequences_;
  size_t consequences_at_fork_ = 0;
  std::optional<ImageReport> stopped_at_;  // set once: the process exits right after

  std::deque<GoneImage> unregistered_;  // one per distinct (origin, findings); no copies on growth
  std::set<std::string> unregistered_keys_;
  std::map<std::pair<std::string, std::string>, GoneKernel> gone_kernels_;  // by (name, file)
  size_t not_listed_ = 0;                                                   // images and kernels over those bounds

  std::string report_path_;
  ReportFile report_file_;
  bool report_reopen_ = false;   // a forked child with "%p" in the path opens its own
  pid_t report_written_by_ = 0;  // the report is written once per process (a forked child writes its own)

  pid_t findings_pid_ = 0;  // a forked child starts counting afresh
  size_t failing_ = 0;
  std::string first_failing_;
};

}  // namespace hipguard
