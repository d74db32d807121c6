// Reading a file whole: copied with pread when small, mapped when large (FileData, inputs.h); bytes
// kept in a temporary file of our own (SpillFile), among them a compressed bundle's large entries.
#include "hipguard/inputs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "base/regular_file.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>

namespace hipguard {
namespace {
// Below this, a file is always copied (a mapping costs more than the copy).
constexpr uint64_t kMinMapBytes = 64 << 10;
}  // namespace

Result<FileData> FileData::open(const std::string& path, Access access) {
  return open(path, access == Access::CopyAlways ? UINT64_MAX : kCopyLimit);
}

Result<FileData> FileData::open(const std::string& path, uint64_t map_above, ReadBuffer* reuse, bool seen_regular) {
  auto fail = [&](std::string why) { return ParseError{Code::kUnreadable, "cannot read " + path + ": " + why}; };
  struct stat st {};
  Result<int> opened = open_regular_file(path, &st, seen_regular);
  if (!opened) return fail(opened.error().message);
  int fd = *opened;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  uint64_t size = static_cast<uint64_t>(st.st_size);
  FileData f;
  if (size <= map_above || size <= kMinMapBytes) {
    // Small files are copied with pread: a file that shrinks meanwhile is read
    // short (and checked as such), never a SIGBUS. Not zero-filled first.
    uint8_t* dst;
    if (reuse) {
      if (reuse->capacity < size) {
        reuse->data.reset();
        reuse->data.reset(new uint8_t[size]);
        reuse->capacity = size;
      }
      dst = reuse->data.get();
    } else {
      std::shared_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
      dst = copy.get();
      f.owner_ = std::move(copy);
    }
    uint64_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd, dst + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(strerror(errno));
      if (n == 0) break;  // shrank
      done += static_cast<uint64_t>(n);
    }
    f.bytes_ = Bytes(dst, done);
    return f;
  }
  // Large files (a 1.3 GB rocSPARSE) are mapped: only the pages the checks touch
  // are read. The CLI turns a SIGBUS from a file truncated meanwhile into a clean error.
  return map(fd, size, path);
}

Result<FileData> FileData::map(int fd, uint64_t size, const std::string& name) {
  FileData f;
  if (size == 0) return f;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) return ParseError{Code::kUnreadable, "cannot read " + name + ": " + strerror(errno)};
  f.owner_ = std::shared_ptr<void>(map, [size](void* p) { ::munmap(p, size); });
  f.bytes_ = Bytes(static_cast<const uint8_t*>(map), size);
  f.mapped_ = true;
  return f;
}

void FileData::release(Bytes range) const {
  if (!mapped_ || range.empty()) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t lo = std::max(reinterpret_cast<uintptr_t>(range.data()), reinterpret_cast<uintptr_t>(bytes_.data()));
  uintptr_t hi = std::min(reinterpret_cast<uintptr_t>(range.data() + range.size()),
                          reinterpret_cast<uintptr_t>(bytes_.data() + bytes_.size()));
  lo = (lo + page - 1) & ~(page - 1);
  hi &= ~(page - 1);
  // Never written (read-only): a page touched again is read back from the page cache.
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void FileData::release_before(const uint8_t* end) const {
  if (!mapped_ || end <= bytes_.data()) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(bytes_.data());  // page-aligned: mapped at offset 0
  uintptr_t stop = std::min(reinterpret_cast<uintptr_t>(end), start + bytes_.size()) & ~(page - 1);
  if (stop > start) ::madvise(reinterpret_cast<void*>(start), stop - start, MADV_DONTNEED);
}

Result<SpillFile> SpillFile::create(const char* prefix) {
  SpillFile f;
  llvm::SmallString<128> name;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(prefix, "bin", f.fd_, name))
    return ParseError{Code::kUnreadable, "cannot create a temporary file (TMPDIR): " + ec.message()};
  if (::unlink(name.c_str()) != 0)
    return ParseError{Code::kUnreadable,
                      "cannot unlink the temporary file " + std::string(name) + ": " + strerror(errno)};
  return f;
}

SpillFile& SpillFile::operator=(SpillFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_, size_ = o.size_, o.fd_ = -1;
  }
  return *this;
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool SpillFile::append(Bytes data) {
  if (!write_at(data, size_)) return false;
  size_ += data.size();
  return true;
}

bool SpillFile::write_at(Bytes data, uint64_t offset) const {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

namespace {

// A compressed bundle's entry in a SpillFile, mapped once whole.
class TemporaryFileSpill : public DecodedSpill {
 public:
  explicit TemporaryFileSpill(SpillFile file) : file_(std::move(file)) {}
  bool append(Bytes data) override { return file_.append(data); }
  bool map() override {
    Result<FileData> mapped = file_.map();
    if (!mapped) return false;
    mapped_ = std::move(*mapped);
    return true;
  }
  Bytes bytes() const override { return mapped_.bytes(); }

 private:
  SpillFile file_;
  FileData mapped_;
};

}  // namespace

EntrySpill temporary_file_spill(uint64_t above, uint64_t whole_above) {
  // Created before anything is decoded: where no temporary file can be had, the entry goes to memory
  // at once. Never throws (the checks' worker threads call it).
  auto create = []() -> std::unique_ptr<DecodedSpill> {
    try {
      Result<SpillFile> file = SpillFile::create("hipguard-entry");
      return file ? std::make_unique<TemporaryFileSpill>(std::move(*file)) : nullptr;
    } catch (const std::exception&) {
      return nullptr;
    }
  };
  return {above, create, whole_above};
}

}  // namespace hipguard
