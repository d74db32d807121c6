// Opening a path only when it is a regular file (internal).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "hipguard/result.h"

namespace hipguard {

// Opens `path` read-only when it is a regular file: stat before open (opening a
// FIFO blocks, or takes a writer's data; a device may never end), then fstat the
// descriptor (the path may have changed in between). Returns the descriptor,
// with *st filled, or fails (HG101, kUnreadable) with what the path is or what failed.
// `seen_regular`: the caller's own stat (or directory entry) just said the
// path is a regular file: the stat before open is skipped, the fstat is not.
inline Result<int> open_regular_file(const std::string& path, struct stat* st, bool seen_regular = false) {
  auto kind = [](mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
  };
  auto unreadable = [](std::string why) { return ParseError{Code::kUnreadable, std::move(why)}; };
  if (!seen_regular && ::stat(path.c_str(), st) != 0) return unreadable(strerror(errno));
  if (!seen_regular && !S_ISREG(st->st_mode))
    return unreadable(std::string(kind(st->st_mode)) + ", not a regular file: not read");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return unreadable(strerror(errno));
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    ::close(fd);
    return unreadable("changed while being opened: not read");
  }
  return fd;
}

}  // namespace hipguard
