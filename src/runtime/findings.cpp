// The findings sink: say-once, the lists the report keeps, the report file and the exit status's counts.
#include "runtime/findings.h"

#include <unistd.h>

#include <algorithm>

#include "runtime/address.h"

namespace hipguard {

std::vector<Diagnostic> FindingsSink::since(const std::vector<Diagnostic>& all, size_t at) {
  return {all.begin() + static_cast<std::ptrdiff_t>(std::min(at, all.size())), all.end()};
}

std::optional<Diagnostic> FindingsSink::open_report() {
  std::lock_guard lock(mu_);
  return open_report_locked();
}

// The report file for this process ("%p" = its pid). A path that cannot be a
// report (a directory, /dev/full, a symlink) is said once, and nothing is created.
std::optional<Diagnostic> FindingsSink::open_report_locked() {
  std::string path = report_path_;
  for (size_t p; (p = path.find("%p")) != std::string::npos;) path.replace(p, 2, std::to_string(getpid()));
  Status opened = report_file_.open(path, llvm::json::Object{{"program", self_exe()}});
  if (opened) return std::nullopt;
  return make_diagnostic(Code::kReportNotWritten, path, "HIPGUARD_REPORT not written: " + opened.error().message,
                         "give HIPGUARD_REPORT the path of a regular file (or of one to create), e.g. "
                         "hipguard-%p.json");
}

// A forked child with "%p" in the path opens its own file at its first record.
std::optional<Diagnostic> FindingsSink::reopen_if_forked() {
  if (!report_reopen_) return std::nullopt;
  report_reopen_ = false;
  return open_report_locked();
}

bool FindingsSink::say(const Diagnostic& d, const std::string& line, bool fails,
                       std::optional<Diagnostic>* report_problem) {
  std::lock_guard lock(mu_);
  if (!logged_.insert(line).second) return false;
  if (said_.size() < kMaxSaid) said_.push_back(d);
  if (report_file_.is_open() || report_reopen_) {
    *report_problem = reopen_if_forked();
    report_file_.append(llvm::json::Object{{"diagnostic", diagnostic_json(d)}});
  }
  if (fails) {
    if (findings_pid_ != getpid()) findings_pid_ = getpid(), failing_ = 0;
    if (failing_++ == 0)
      first_failing_ = std::string(code_string(d.code)) + (d.kernel.empty() ? "" : " kernel '" + d.kernel + "'");
  }
  return true;
}

bool FindingsSink::add_consequence(const Diagnostic& d, const std::string& cause_line) {
  std::lock_guard lock(mu_);
  if (!logged_.count(cause_line)) return false;
  if (consequences_.size() < kMaxConsequences) consequences_.push_back(d);
  return true;
}

std::vector<Diagnostic> FindingsSink::said_here() const {
  std::lock_guard lock(mu_);
  return since(said_, said_at_fork_);
}

std::vector<Diagnostic> FindingsSink::consequences_here() const {
  std::lock_guard lock(mu_);
  return since(consequences_, consequences_at_fork_);
}

std::pair<size_t, std::string> FindingsSink::failing_here() const {
  std::lock_guard lock(mu_);
  if (findings_pid_ != getpid()) return {0, ""};
  return {failing_, first_failing_};
}

void FindingsSink::stop_at(const ImageReport& report) {
  std::lock_guard lock(mu_);
  stopped_at_ = report;
}

void FindingsSink::keep_gone_image(ImageReport&& img, uint64_t image_seq) {
  std::string key = img.origin;
  for (const auto& d : img.diagnostics) key.append("\n").append(format_line(d));
  std::lock_guard lock(mu_);
  if (unregistered_keys_.count(key)) return;
  if (unregistered_.size() >= kMaxGoneImages) {
    ++not_listed_;
    return;
  }
  unregistered_keys_.insert(std::move(key));
  unregistered_.push_back(GoneImage{std::move(img), image_seq});
}

void FindingsSink::keep_gone_kernel(KernelRecord rec, uint64_t kernel_seq) {
  auto id = std::make_pair(rec.name, rec.file);
  std::lock_guard lock(mu_);
  auto it = gone_kernels_.find(id);
  if (it == gone_kernels_.end() && gone_kernels_.size() < kMaxGoneKernels) {
    KernelRecord first{rec.name, rec.file, 0, 0, rec.codes};
    it = gone_kernels_.emplace(std::move(id), GoneKernel{std::move(first), 0}).first;
  }
  if (it == gone_kernels_.end()) {
    ++not_listed_;
    return;
  }
  it->second.record.launches += rec.launches;
  it->second.record.blocked += rec.blocked;
  it->second.seq = kernel_seq;
}

bool FindingsSink::report_written() const {
  std::lock_guard lock(mu_);
  return report_written_by_ == getpid();
}

bool FindingsSink::claim_report() {
  std::lock_guard lock(mu_);
  if (report_written_by_ == getpid()) return false;
  report_written_by_ = getpid();
  return true;
}

void FindingsSink::add_to_report(uint64_t fork_seq, const std::function<void(const ImageReport&)>& add,
                                 RunInfo& run) const {
  std::lock_guard lock(mu_);
  for (const auto& g : unregistered_)
    if (g.seq > fork_seq) add(g.report);
  // A strict-mode stop comes between a fat binary's check and its registration.
  if (stopped_at_) add(*stopped_at_);
  run.consequences = since(consequences_, consequences_at_fork_);
  for (const auto& [id, gone] : gone_kernels_)
    if (gone.seq > fork_seq) run.kernels.push_back(gone.record);
  run.not_listed = not_listed_;
}

std::pair<std::string, Status> FindingsSink::finish_report(llvm::json::Object record, bool xml,
                                                           std::optional<Diagnostic>* report_problem) {
  std::lock_guard lock(mu_);
  *report_problem = reopen_if_forked();
  std::string path = report_file_.path();
  return {path, report_file_.finish(std::move(record), xml)};
}

// With "%p" the child opens a file of its own; otherwise the report file's descriptor and lock
// are made ready for the child under the sink's lock.
OwnedMutex::ForkHold FindingsSink::lock_for_fork() {
  OwnedMutex::ForkHold hold = mu_.lock_for_fork();
  if (hold == OwnedMutex::ForkHold::Taken && !is_per_process_path(report_path_)) report_file_.prepare_fork();
  return hold;
}

void FindingsSink::after_fork(bool child) {
  if (!child) {
    report_file_.parent_after_fork();
    return;
  }
  consequences_at_fork_ = consequences_.size();
  said_at_fork_ = said_.size();
  report_written_by_ = 0;
  if (is_per_process_path(report_path_)) {
    report_file_.close_inherited();
    report_reopen_ = true;
  } else {
    report_file_.child_after_fork();
  }
}

}  // namespace hipguard
