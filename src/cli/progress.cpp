// The progress line of the CLI (progress.h).
#include "progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include "hipguard/diagnostic.h"

namespace hipguard {

Progress::Progress(bool enabled, unsigned delay_ms)
    : active_(enabled && isatty(STDERR_FILENO) == 1), delay_(delay_ms) {}

void Progress::file_done(size_t done, size_t total, const std::string& path) {
  if (!active_) return;
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) bytes_ += static_cast<uint64_t>(st.st_size);
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < delay_ || now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  char size[32];
  if (bytes_ >= (1ull << 30)) snprintf(size, sizeof size, "%.1f GiB", bytes_ / double(1ull << 30));
  else snprintf(size, sizeof size, "%.1f MiB", bytes_ / double(1ull << 20));
  std::string name = escape_text(path);
  if (name.size() > 60) name = "..." + name.substr(name.size() - 57);
  std::string line =
      "checked " + std::to_string(done) + " of " + std::to_string(total) + " files, " + size + ": " + name;
  size_t width = line.size();
  if (line.size() < shown_) line.append(shown_ - line.size(), ' ');  // over the longer line before
  fprintf(stderr, "\r%s", line.c_str());
  fflush(stderr);
  shown_ = width;
}

void Progress::clear() {
  if (!shown_) return;
  fprintf(stderr, "\r%s\r", std::string(shown_, ' ').c_str());
  fflush(stderr);
  shown_ = 0;
}

}  // namespace hipguard
