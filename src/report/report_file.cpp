// The HIPGUARD_REPORT file: a journal while processes run, the merged document at the end (report_file.h; merging:
// merge.cpp).
#include "report/report_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "base/write_all.h"
#include "hipguard/report.h"
#include "llvm/Support/raw_ostream.h"

namespace hipguard {
namespace {

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link (never followed)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string compact(llvm::json::Value v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << v;
  os.flush();
  return out;
}

ParseError not_written(std::string why) { return {Code::kReportNotWritten, std::move(why)}; }

}  // namespace

Status ReportFile::open(const std::string& path, llvm::json::Object header) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return not_written(path + " is " + kind_of(st.st_mode));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return not_written("cannot open " + path + ": " + strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced between the two calls
    close(fd);
    return not_written(path + " is " + kind_of(st.st_mode));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    // Nobody else writes it: an earlier run's report, never left to pass for this one's.
    if (ftruncate(fd, 0) != 0) {
      ParseError why = not_written("cannot empty " + path + ": " + strerror(errno));
      close(fd);
      return why;
    }
    flock(fd, LOCK_SH);
  } else {
    // Other processes of this job write it; a merge holds it exclusively for a moment.
    for (int i = 0; i < 200 && flock(fd, LOCK_SH | LOCK_NB) != 0; ++i) usleep(5000);
  }
  fd_ = fd;
  path_ = path;
  header_ = std::move(header);
  pid_ = 0;  // append() writes the header first
  append({});
  return ok();
}

bool ReportFile::write_line(const std::string& line) {
  if (write_all(fd_, line.data(), line.size())) return true;
  if (written_) written_ = not_written(errno ? strerror(errno) : "short write");
  return false;
}

void ReportFile::append(llvm::json::Object record) {
  if (fd_ < 0) return;
  pid_t pid = getpid();
  if (pid != pid_) {  // this process's first record (a forked child's too): who it is
    llvm::json::Object header = header_;
    header["pid"] = static_cast<int64_t>(pid);
    header["ppid"] = static_cast<int64_t>(getppid());
    pid_ = pid;
    write_line(compact(std::move(header)) + "\n");
  }
  if (record.empty()) return;
  record["pid"] = static_cast<int64_t>(pid);
  write_line(compact(std::move(record)) + "\n");
}

Status ReportFile::finish(llvm::json::Object record, bool xml) {
  if (fd_ < 0) return ok();
  append(std::move(record));
  // Unlock first, then try for the file alone: of processes ending together
  // one gets it, after the others' last records are in.
  flock(fd_, LOCK_UN);
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    std::string content;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      ssize_t n = pread(fd_, buf, sizeof buf, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      content.append(buf, static_cast<size_t>(n));
      at += n;
    }
    std::string doc = merge_report(content, xml);
    if (ftruncate(fd_, 0) != 0 && written_) written_ = not_written(strerror(errno));
    write_line(doc);
  }
  close(fd_);
  fd_ = -1;
  return written_;
}

void ReportFile::prepare_fork() {
  if (fd_ < 0) return;
  // A new open file description: its lock is the child's own. No allocation: fork() may come with
  // the heap exhausted.
  char self[40];
  snprintf(self, sizeof self, "/proc/self/fd/%d", fd_);
  child_fd_ = ::open(self, O_RDWR | O_APPEND | O_CLOEXEC);
  if (child_fd_ >= 0) flock(child_fd_, LOCK_SH | LOCK_NB);
}

void ReportFile::parent_after_fork() {
  if (child_fd_ >= 0) close(child_fd_);
  child_fd_ = -1;
}

void ReportFile::child_after_fork() {
  if (child_fd_ < 0) return;  // keeps the inherited descriptor: appends still land
  close(fd_);
  fd_ = child_fd_;
  child_fd_ = -1;
}

void ReportFile::close_inherited() {
  if (child_fd_ >= 0) close(child_fd_);
  if (fd_ >= 0) close(fd_);  // the parent's lock stays: it holds the same description
  fd_ = child_fd_ = -1;
}

}  // namespace hipguard
