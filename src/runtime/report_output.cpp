// The guard's side of HIPGUARD_REPORT and fork(): take and release every lock
// around fork(), write this process's report at exit (the sink journals each finding and keeps the
// file: findings.h, report_file.h).
#include <pthread.h>
#include <unistd.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hipguard/report.h"
#include "runtime/address.h"
#include "runtime/events.h"
#include "runtime/kernels.h"

namespace hipguard {

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
constinit thread_local ForkRecords<ForkLocks> t_fork_locks;  // past its depth, nothing taken: the child is unclean
}  // namespace

void events::before_fork(Kernels& k, SelectionMemo& memo, MappedFiles& files) {
  ForkLocks* record = t_fork_locks.push();
  if (!record) return;
  // The memo's and the mapped files' locks are never held with the others (the
  // mapped files' two in their own order, MappedFiles::lock_for_fork). The probe's and
  // the sink's come after Kernels::mu, as everywhere (two leaves, never
  // held together); the log's is the last leaf.
  ForkLocks& t = *record;
  t = kNoneTaken;
  // An unclean process's locks may be held for good (its children are unclean too).
  t.was_unclean = OwnedMutex::unclean_fork();
  if (t.was_unclean) return;
  t.memo = memo.lock_for_fork();
  t.files = files.lock_for_fork();
  t.state = k.mu.lock_for_fork();
  t.probe = k.probe.lock_for_fork();
  t.findings = k.out.sink().lock_for_fork();
  t.log = log_mutex().lock_for_fork();
}

void events::after_fork(Kernels& k, SelectionMemo& memo, MappedFiles& files, bool child) {
  const ForkLocks t = t_fork_locks.pop(kNoneTaken);
  FindingsSink& sink = k.out.sink();
  if (t.findings == Hold::Taken) {
    if (child) k.fork_seq = k.registry.last_seq();
    sink.after_fork(child);
  }
  // The heap's child handler, which runs first, may have found the child unclean.
  if (child && !t.was_unclean && (!t.all_taken() || OwnedMutex::unclean_fork())) k.out.say_unclean_fork();
  if (t.log == Hold::Taken) log_mutex().unlock_after_fork();
  if (t.findings == Hold::Taken) sink.unlock_after_fork();
  if (t.probe == Hold::Taken) k.probe.unlock_after_fork();
  if (t.state == Hold::Taken) k.mu.unlock_after_fork();
  files.unlock_after_fork(t.files);
  if (t.memo == Hold::Taken) memo.unlock_after_fork();
}

namespace {

// Kernels::mu held: what this process registered or loaded itself (a forked
// child: after the fork), a file per origin: fat binaries, then modules, then
// gone images, then the one a strict stop is at; and the report's "run": the
// process, its runtime events, and its kernels with findings or launches.
void add_run(Kernels& k, RunInfo& run);

std::vector<FileReport> reported_files(Kernels& k, RunInfo& run) {
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
  k.registry.for_each_image_since(k.fork_seq, add);  // fat binaries, then modules
  k.out.sink().add_to_report(k.fork_seq, add, run);  // gone images, the one a strict stop is at
  add_run(k, run);
  return files;
}

// Kernels::mu held: the report's "run".
void add_run(Kernels& k, RunInfo& run) {
  const GuardConfig& c = k.config;
  run.program = self_exe();
  run.pid = getpid();
  run.mode = c.mode == Mode::Strict ? "strict" : c.mode == Mode::Off ? "off" : "warn";
  run.target_source = c.target_source;
  for (const auto& t : c.targets) run.devices.push_back(t.label());
  // One record per kernel: launches by its host stub and by the hipFunction_t
  // hipGetFuncBySymbol returned for it (the same name, file and findings) are summed.
  std::map<std::tuple<std::string, std::string, std::vector<Code>>, size_t> listed;
  k.registry.for_each_current_kernel(k.fork_seq, [&](const KernelState& ks) {
    if (ks.findings().empty() && ks.launches == 0) return;
    KernelRecord rec{ks.name, ks.file_name(), ks.launches.load(), ks.blocked.load(), {}};
    for (const auto& d : ks.findings()) rec.codes.push_back(d.code);
    auto [at, fresh] = listed.try_emplace({rec.name, rec.file, rec.codes}, run.kernels.size());
    if (fresh) {
      run.kernels.push_back(std::move(rec));
    } else {
      run.kernels[at->second].launches += rec.launches;
      run.kernels[at->second].blocked += rec.blocked;
    }
  });
}

}  // namespace

// Once per process: every kernel indexed and checked in full, then the
// report (JSON, and JUnit for a .xml path) finishes the report file.
void events::write_report(Kernels& k) {
  const GuardConfig& c = k.config;
  FindingsSink& sink = k.out.sink();
  if (c.report_path.empty()) return;
  if (!sink.claim_report()) return;
  std::vector<const void*> not_in_full;  // the report covers every kernel: check their fat binaries in full
  {
    std::lock_guard lock(k.mu);
    // The kernels of what this process registered itself (a forked child
    // leaves what it inherited as it is), in registration order.
    k.registry.index_waiting(k.fork_seq, c.targets, k.to_probe());
    not_in_full = k.registry.all_below_full(k.fork_seq);
  }
  for (const void* h : not_in_full) k.check_in_full(h, /*say=*/false);
  std::vector<FileReport> files;
  RunInfo run;
  {
    std::lock_guard lock(k.mu);
    files = reported_files(k, run);
  }
  bool xml = is_junit_path(c.report_path);
  llvm::json::Object record;
  auto doc = llvm::json::parse(report_json(files, c.targets, &run));
  if (!doc) {
    llvm::consumeError(doc.takeError());  // report_json writes valid JSON; were it not, no record beats a broken one
    return;
  }
  record["report"] = std::move(*doc);
  if (xml) record["junit"] = report_junit(files, c.targets);
  std::optional<Diagnostic> report_problem;
  auto [path, written] = sink.finish_report(std::move(record), xml, &report_problem);
  if (report_problem) k.out.log("warn", format_line(*report_problem));
  if (!written) {
    const std::string& problem = written.error().message;
    k.out.say(make_diagnostic(Code::kReportNotWritten, path, "HIPGUARD_REPORT is incomplete: " + problem,
                              "free space (or raise the file size limit) where the report goes"));
  } else if (!path.empty()) {
    k.out.log("debug", "report written to " + path);
  }
}

}  // namespace hipguard
