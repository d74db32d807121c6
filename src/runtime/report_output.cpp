// The guard's side of HIPGUARD_REPORT: open it, journal each finding, follow
// forks, write this process's report at exit (report_file.h keeps the file).
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
  std::string path = s.config.report_path;
  for (size_t p; (p = path.find("%p")) != std::string::npos;) path.replace(p, 2, std::to_string(getpid()));
  if (auto why = s.findings.report_file.open(path, llvm::json::Object{{"program", self_exe()}})) {
    Diagnostic d = make_diagnostic(code::kReportNotWritten, path, "HIPGUARD_REPORT not written: " + *why,
                                   "give HIPGUARD_REPORT the path of a regular file (or of one to create), e.g. "
                                   "hipguard-%p.json");
    log_warning(*s.logger, format_line(d));
  }
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
constexpr ForkLocks kNoneTaken{Hold::Mine, Hold::Mine, Hold::Mine, Hold::Mine, Hold::Mine, {Hold::Mine, Hold::Mine}, false};
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
  t.findings = s.findings.mu.lock_for_fork();
  t.log = log_mutex().lock_for_fork();
  // With "%p" the child opens a file of its own. Under the sink's lock only.
  if (t.findings == Hold::Taken && !is_per_process_path(s.config.report_path)) s.findings.report_file.prepare_fork();
}

void Guard::after_fork(bool child) {
  State& s = state();
  const ForkLocks t = t_fork_locks.pop(kNoneTaken);
  if (t.findings == Hold::Taken) {
    if (child) {
      s.fork_seq = s.registry.seq;
      s.findings.consequences_at_fork = s.findings.consequences.size();
      s.findings.said_at_fork = s.findings.said.size();
      s.findings.report_written_by = 0;
      if (is_per_process_path(s.config.report_path)) {
        s.findings.report_file.close_inherited();
        s.findings.report_reopen = true;
      } else {
        s.findings.report_file.child_after_fork();
      }
    } else {
      s.findings.report_file.parent_after_fork();
    }
  }
  // The heap's child handler, which runs first, may have found the child unclean.
  if (child && !t.was_unclean && (!t.all_taken() || OwnedMutex::unclean_fork())) say_unclean_fork(s);
  if (t.log == Hold::Taken) log_mutex().unlock_after_fork();
  if (t.findings == Hold::Taken) s.findings.mu.unlock_after_fork();
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

// Under the sink's lock: a forked child with "%p" in the path opens its own
// file at its first record.
void Guard::reopen_report_if_forked(State& s) {
  if (!s.findings.report_reopen) return;
  s.findings.report_reopen = false;
  open_report(s);
}

// Under the sink's lock: the journal record of a finding just said.
void Guard::journal(State& s, const Diagnostic& d) {
  reopen_report_if_forked(s);
  s.findings.report_file.append(llvm::json::Object{{"diagnostic", diagnostic_json(d)}});
}


// The state mutex and the sink's lock held: what this process registered or loaded itself (a forked
// child: after the fork), a file per origin: fat binaries, then modules, then
// gone images, then the one a strict stop is at.
std::vector<FileReport> Guard::reported_files(State& s) {
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
  for (const auto& [h, fb] : s.registry.fatbins)
    if (fb.seq > s.fork_seq) add(fb.report);
  for (const auto& [m, mi] : s.registry.modules)
    if (mi.seq > s.fork_seq)
      for (const auto& img : mi.images) add(img);
  for (const auto& g : s.findings.unregistered)
    if (g.seq > s.fork_seq) add(g.report);
  // A strict-mode stop comes between a fat binary's check and its registration.
  if (s.findings.stopped_at) add(*s.findings.stopped_at);
  return files;
}

// The state mutex and the sink's lock held: the report's "run": the process, its runtime events, and
// its kernels with findings or launches.
RunInfo Guard::reported_run(State& s) {
  RunInfo run;
  run.program = self_exe();
  run.pid = getpid();
  run.mode = s.config.mode == Mode::Strict ? "strict" : s.config.mode == Mode::Off ? "off" : "warn";
  run.target_source = s.config.target_source;
  for (const auto& t : s.config.targets) run.devices.push_back(t.label());
  run.consequences = s.findings.consequences_here();
  for (const auto& [id, gone] : s.findings.gone_kernels)
    if (gone.seq > s.fork_seq) run.kernels.push_back(gone.record);
  run.not_listed = s.findings.not_listed;
  // One record per kernel: launches by its host stub and by the hipFunction_t
  // hipGetFuncBySymbol returned for it (the same name, file and findings) are summed.
  std::map<std::tuple<std::string, std::string, std::vector<std::string>>, size_t> listed;
  for (const auto& k : s.registry.kernels) {
    if (k.superseded || k.retired || k.seq <= s.fork_seq || (k.findings().empty() && k.launches == 0)) continue;
    KernelRecord rec{k.name, k.file_name(), k.launches.load(), k.blocked.load(), {}};
    for (const auto& d : k.findings()) rec.codes.push_back(d.code);
    auto [at, fresh] = listed.try_emplace({rec.name, rec.file, rec.codes}, run.kernels.size());
    if (fresh) {
      run.kernels.push_back(std::move(rec));
    } else {
      run.kernels[at->second].launches += rec.launches;
      run.kernels[at->second].blocked += rec.blocked;
    }
  }
  return run;
}

// Once per process: every kernel indexed and checked in full, then the
// report (JSON, and JUnit for a .xml path) finishes the report file.
void Guard::write_report() try {
  State& s = state();
  if (s.config.report_path.empty()) return;
  {
    std::lock_guard lock(s.findings.mu);
    if (s.findings.report_written_by == getpid()) return;
    s.findings.report_written_by = getpid();
  }
  std::vector<const void*> not_in_full;  // the report covers every kernel: check their fat binaries in full
  {
    std::lock_guard lock(s.mu);
    // The kernels of what this process registered itself (a forked child
    // leaves what it inherited as it is), in registration order.
    for (const void* h : s.registry.unindexed_order)
      if (auto it = s.registry.fatbins.find(h); it != s.registry.fatbins.end() && it->second.seq > s.fork_seq) index_kernels_of(h);
    for (const auto& [h, fb] : s.registry.fatbins)
      if (fb.depth != Depth::Full && fb.seq > s.fork_seq) not_in_full.push_back(h);
  }
  for (const void* h : not_in_full) check_in_full(h, /*say=*/false);
  std::vector<FileReport> files;
  RunInfo run;
  {
    std::lock_guard lock(s.mu);
    std::lock_guard sink_lock(s.findings.mu);
    files = reported_files(s);
    run = reported_run(s);
  }
  bool xml = is_junit_path(s.config.report_path);
  llvm::json::Object record;
  auto doc = llvm::json::parse(report_json(files, s.config.targets, &run));
  if (!doc) {
    llvm::consumeError(doc.takeError());
    return;
  }
  record["report"] = std::move(*doc);
  if (xml) record["junit"] = report_junit(files, s.config.targets);
  std::optional<std::string> problem;
  std::string path;
  {
    std::lock_guard lock(s.findings.mu);
    reopen_report_if_forked(s);
    path = s.findings.report_file.path();
    problem = s.findings.report_file.finish(std::move(record), xml);
  }
  if (problem) {
    report_once(make_diagnostic(code::kReportNotWritten, path, "HIPGUARD_REPORT is incomplete: " + *problem,
                                "free space (or raise the file size limit) where the report goes"));
  } else if (!path.empty()) {
    log("debug", "report written to " + path);
  }
} catch (...) {
}

}  // namespace hipguard
