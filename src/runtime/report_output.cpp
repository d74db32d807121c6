// The guard's side of HIPGUARD_REPORT and fork(): open the report, take and release every lock
// around fork(), write this process's report at exit (the sink journals each finding and keeps the
// file: findings.h, report_file.h).
#include <pthread.h>
#include <unistd.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/write_all.h"
#include "hipguard/report.h"
#include "runtime/address.h"
#include "runtime/state.h"

namespace hipguard {

// HIPGUARD_REPORT for this process ("%p" = its pid). A path that cannot be a
// report (a directory, /dev/full, a symlink) is said once, and nothing is created.
void Guard::open_report(State& s) {
  s.findings.set_report(s.config.report_path);
  if (auto problem = s.findings.open_report()) log_warning(*s.logger, format_line(*problem));
}

// Around fork(): the child starts with the guard unlocked, its own report
// descriptor (or, with "%p", its own file, opened at its first record), and
// counts and lists only what it does itself. A fork() from a signal handler
// that interrupted a thread inside the guard cannot take every lock
// (OwnedMutex::lock_for_fork): the parent goes on as before, and the child
// never enters the guard (OwnedMutex::unclean_fork; said once, HG605). What
// was taken is kept per thread and per depth (a handler's fork inside another
// fork's handlers) for after_fork; nothing here allocates.
namespace {
using Hold = OwnedMutex::ForkHold;
struct ForkLocks {
  Hold memo, state, probe, findings, log;
  MappedFiles::ForkHolds files;
  bool was_unclean;  // the process was unclean already: nothing taken, nothing said
  bool all_taken() const {
    for (Hold h : {memo, state, probe, findings, log, files.io, files.list})
      if (h != Hold::Taken) return false;
    return true;
  }
};
constexpr ForkLocks kNoneTaken{Hold::Mine, Hold::Mine, Hold::Mine, Hold::Mine, Hold::Mine, {Hold::Mine, Hold::Mine},
                               false};
thread_local ForkRecords<ForkLocks> t_fork_locks;  // past its depth, nothing taken: the child is unclean
}  // namespace

void Guard::before_fork() {
  State& s = state();
  ForkLocks* record = t_fork_locks.push();
  if (!record) return;
  // The memo's and the mapped files' locks are never held with the others (the
  // mapped files' two in their own order, MappedFiles::lock_for_fork). The probe's and
  // the sink's come after the state mutex, as everywhere (two leaves, never
  // held together); the log's is the last leaf.
  ForkLocks& t = *record;
  t = kNoneTaken;
  // An unclean process's locks may be held for good (its children are unclean too).
  t.was_unclean = OwnedMutex::unclean_fork();
  if (t.was_unclean) return;
  t.memo = s.selection_memo.lock_for_fork();
  t.files = s.mapped_files.lock_for_fork();
  t.state = s.mu.lock_for_fork();
  t.probe = s.probe.lock_for_fork();
  t.findings = s.findings.lock_for_fork();
  t.log = log_mutex().lock_for_fork();
}

void Guard::after_fork(bool child) {
  State& s = state();
  const ForkLocks t = t_fork_locks.pop(kNoneTaken);
  if (t.findings == Hold::Taken) {
    if (child) s.fork_seq = s.registry.last_seq();
    s.findings.after_fork(child);
  }
  // The heap's child handler, which runs first, may have found the child unclean.
  if (child && !t.was_unclean && (!t.all_taken() || OwnedMutex::unclean_fork())) say_unclean_fork(s);
  if (t.log == Hold::Taken) log_mutex().unlock_after_fork();
  if (t.findings == Hold::Taken) s.findings.unlock_after_fork();
  if (t.probe == Hold::Taken) s.probe.unlock_after_fork();
  if (t.state == Hold::Taken) s.mu.unlock_after_fork();
  s.mapped_files.unlock_after_fork(t.files);
  if (t.memo == Hold::Taken) s.selection_memo.unlock_after_fork();
}

// In a child that after_fork left unclean: from now on the guard is not
// entered; HG605 said with write(2) (no lock, no allocation), unless quiet.
void Guard::say_unclean_fork(State& s) {
  OwnedMutex::set_unclean_fork();
  if (s.config.mode != Mode::Off) write_all(2, s.unclean_fork_line.data(), s.unclean_fork_line.size());
}

// The state mutex held: what this process registered or loaded itself (a forked
// child: after the fork), a file per origin: fat binaries, then modules, then
// gone images, then the one a strict stop is at; and the report's "run": the
// process, its runtime events, and its kernels with findings or launches.
std::vector<FileReport> Guard::reported_files(State& s, RunInfo& run) {
  std::vector<FileReport> files;
  std::map<std::string, size_t> by_origin;
  auto add = [&](const ImageReport& img) {
    auto [it, fresh] = by_origin.emplace(img.origin, files.size());
    if (fresh) {
      files.emplace_back();
      files.back().path = img.origin;
      files.back().hip = true;
    }
    files[it->second].images.push_back(img);
  };
  s.registry.for_each_image_since(s.fork_seq, add);  // fat binaries, then modules
  s.findings.add_to_report(s.fork_seq, add, run);    // gone images, the one a strict stop is at
  add_run(s, run);
  return files;
}

void Guard::add_run(State& s, RunInfo& run) {
  run.program = self_exe();
  run.pid = getpid();
  run.mode = s.config.mode == Mode::Strict ? "strict" : s.config.mode == Mode::Off ? "off" : "warn";
  run.target_source = s.config.target_source;
  for (const auto& t : s.config.targets) run.devices.push_back(t.label());
  // One record per kernel: launches by its host stub and by the hipFunction_t
  // hipGetFuncBySymbol returned for it (the same name, file and findings) are summed.
  std::map<std::tuple<std::string, std::string, std::vector<std::string>>, size_t> listed;
  s.registry.for_each_current_kernel(s.fork_seq, [&](const KernelState& k) {
    if (k.findings().empty() && k.launches == 0) return;
    KernelRecord rec{k.name, k.file_name(), k.launches.load(), k.blocked.load(), {}};
    for (const auto& d : k.findings()) rec.codes.push_back(d.code);
    auto [at, fresh] = listed.try_emplace({rec.name, rec.file, rec.codes}, run.kernels.size());
    if (fresh) {
      run.kernels.push_back(std::move(rec));
    } else {
      run.kernels[at->second].launches += rec.launches;
      run.kernels[at->second].blocked += rec.blocked;
    }
  });
}

// Once per process: every kernel indexed and checked in full, then the
// report (JSON, and JUnit for a .xml path) finishes the report file.
void Guard::write_report() try {
  State& s = state();
  if (s.config.report_path.empty()) return;
  if (!s.findings.claim_report()) return;
  std::vector<const void*> not_in_full;  // the report covers every kernel: check their fat binaries in full
  {
    std::lock_guard lock(s.mu);
    // The kernels of what this process registered itself (a forked child
    // leaves what it inherited as it is), in registration order.
    s.registry.index_waiting(s.fork_seq, s.config.targets, s.to_probe());
    not_in_full = s.registry.all_below_full(s.fork_seq);
  }
  for (const void* h : not_in_full) check_in_full(h, /*say=*/false);
  std::vector<FileReport> files;
  RunInfo run;
  {
    std::lock_guard lock(s.mu);
    files = reported_files(s, run);
  }
  bool xml = is_junit_path(s.config.report_path);
  llvm::json::Object record;
  auto doc = llvm::json::parse(report_json(files, s.config.targets, &run));
  if (!doc) {
    llvm::consumeError(doc.takeError());  // report_json writes valid JSON; were it not, no record beats a broken one
    return;
  }
  record["report"] = std::move(*doc);
  if (xml) record["junit"] = report_junit(files, s.config.targets);
  std::optional<Diagnostic> report_problem;
  auto [path, problem] = s.findings.finish_report(std::move(record), xml, &report_problem);
  if (report_problem) log_warning(*s.logger, format_line(*report_problem));
  if (problem) {
    report_once(make_diagnostic(code::kReportNotWritten, path, "HIPGUARD_REPORT is incomplete: " + *problem,
                                "free space (or raise the file size limit) where the report goes"));
  } else if (!path.empty()) {
    log("debug", "report written to " + path);
  }
} catch (...) {
}

}  // namespace hipguard
