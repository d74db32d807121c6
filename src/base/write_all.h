// Writing all of a buffer to a descriptor with write(2) (internal): no lock, no allocation, so
// usable from a fork handler.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace hipguard {

// Writes the `size` bytes at `data` to `fd`, again after a short write or EINTR. False on an
// error (errno says which; 0 when write(2) wrote nothing).
inline bool write_all(int fd, const char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace hipguard
