// The HIPGUARD_REPORT file (internal): a journal of findings while processes
// run, the complete document once the last of them is done.
//
// Every process that writes the file appends records, one JSON object per
// line, each with one write(2) on an O_APPEND descriptor: its header
// ({"pid", "ppid", "program"}), each finding as it is said ({"pid",
// "diagnostic"}), and at exit its whole report ({"pid", "report"}, plus
// "junit" for an .xml report). A crash, _exit or SIGKILL therefore still
// leaves what was found. Each writer holds a shared flock(2) on the file while
// it lives; the one that finds no other writer left (an exclusive lock
// succeeds) replaces the content with the merged document. A file nobody
// holds when a process opens it is an earlier run's and is emptied first.
// `hipguard run --report` holds the lock for the whole job, so every process
// of it ends up in one document, merged when the command is done.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "hipguard/result.h"
#include "llvm/Support/JSON.h"

namespace hipguard {

// The document for a report file's content: journal lines, possibly after an
// earlier merged document of the same job. One process with a complete
// report: that report unchanged. Several: "processes" lists each (pid, ppid,
// program, complete, findings, run) and "files" holds all of their files,
// with the findings of a process that ended early as file-level diagnostics.
// `xml`: JUnit, the processes' test suites together, one suite for each
// process that ended early. Lines that do not parse (a write cut short) are skipped.
std::string merge_report(std::string_view content, bool xml);

// "%p" in a report path (replaced by each process's pid): a file per process.
inline bool is_per_process_path(std::string_view path) { return path.find("%p") != std::string_view::npos; }

// A report path ending in ".xml" asks for JUnit; any other, for JSON.
inline bool is_junit_path(std::string_view path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".xml") == 0;
}

class ReportFile {
 public:
  // Opens `path` for this process and appends its header (`header` plus
  // "pid" and "ppid"; a forked child writes its own before its first record). Refuses what is not
  // a regular file (a directory, a device such as /dev/full or /dev/stdout, a
  // FIFO) and symlinks, creating nothing; fails with why (HG603, kReportNotWritten).
  Status open(const std::string& path, llvm::json::Object header);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

  // Appends one record with this process's "pid". Write errors are kept for finish().
  void append(llvm::json::Object record);

  // Appends this process's last record; then, if no other process writes the
  // file any more, replaces its content with merge_report(). Closes the file.
  // Fails with the first write error (HG603, its strerror text, e.g. for ENOSPC), if any.
  Status finish(llvm::json::Object record, bool xml);

  // pthread_atfork: the child gets a descriptor (and lock) of its own, so the
  // parent's exit does not merge while the child still writes.
  void prepare_fork();
  void parent_after_fork();
  void child_after_fork();
  // A forked child that writes a file of its own ("%p"): lets go of the parent's.
  void close_inherited();

 private:
  bool write_line(const std::string& line);
  int fd_ = -1;
  int child_fd_ = -1;
  pid_t pid_ = 0;              // the process whose header was written
  llvm::json::Object header_;  // "program", and "launcher" for hipguard run
  std::string path_;
  Status written_ = ok();  // else the first write error, which finish() returns
};

}  // namespace hipguard
