// The inputs layer: files as the checks read them. A regular file read whole (copied or mapped),
// the files below directory arguments, and archives (.deb, .whl/.zip, .tar(.gz/.xz/.zst/.bz2), .a)
// through a reader the caller passes in (the CLI's, libarchive; the shim passes none).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/diagnostic.h"
#include "hipguard/result.h"

namespace hipguard {

// A read-only view of a whole regular file: copied with pread up to
// kCopyLimit bytes (a file that shrinks while read is read short, never a
// SIGBUS), memory-mapped above (only the pages the checks touch are read).
// FIFOs, devices, sockets and directories are refused (HG101) without being
// opened for reading.
class FileData {
 public:
  static constexpr uint64_t kCopyLimit = 64ull << 20;
  // CopyAlways: never mapped, whatever the size (the shim: a host process has
  // no SIGBUS handler of ours, so a file truncated while read must not fault).
  enum class Access { MapLarge, CopyAlways };
  static Result<FileData> open(const std::string& path, Access access = Access::MapLarge);
  // A buffer one thread reuses from file to file (the offline check reads
  // thousands of small code objects: one allocation, no page faults per file).
  struct ReadBuffer {
    std::unique_ptr<uint8_t[]> data;
    uint64_t capacity = 0;
  };
  // `map_above`: files larger than this are mapped instead of copied (the CLI
  // maps from kCliMapAbove: only the pages the checks touch are read; the
  // shim keeps kCopyLimit). `reuse`: copy into this buffer, which must outlive
  // the FileData and is not used by another FileData meanwhile.
  // `seen_regular`: the caller has just seen that `path` is a regular file
  // (a directory walk): one stat fewer; the descriptor is still checked.
  static Result<FileData> open(const std::string& path, uint64_t map_above, ReadBuffer* reuse = nullptr,
                               bool seen_regular = false);
  Bytes bytes() const { return bytes_; }
  bool mapped() const { return mapped_; }
  // Mapped files: drops the pages wholly before `end` from this process's
  // memory (they are read again from the page cache if touched again), so a
  // 1.3 GB library checked bundle by bundle never holds more than one bundle.
  void release_before(const uint8_t* end) const;
  // Mapped files: drops the whole pages inside `range` (a part of bytes()) the same way: an archive
  // member or an image layer read once is not kept in memory while the rest is read.
  void release(Bytes range) const;
  // The first `size` bytes of the open file `fd` mapped read-only, released as above (the
  // descriptor may be closed afterwards). Empty when size is 0.
  static Result<FileData> map(int fd, uint64_t size, const std::string& name);

 private:
  std::shared_ptr<void> owner_;
  Bytes bytes_;
  bool mapped_ = false;
};

// Bytes too large to keep in memory (an archive member, a kernel database read from an archive),
// kept in a temporary file of our own instead: created under TMPDIR and unlinked at once (gone with
// the process, whatever happens to it), written with append() or write_at(), read through map(),
// whose pages are released as the checks read them, as an installed file's.
class SpillFile {
 public:
  // `prefix`: the file's name while it exists ("hipguard-member"). Fails when TMPDIR is not writable.
  static Result<SpillFile> create(const char* prefix);
  SpillFile(SpillFile&& o) noexcept : fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }
  SpillFile& operator=(SpillFile&& o) noexcept;
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  ~SpillFile();
  // At the end (one writer). False: written in part or not at all, errno says why (ENOSPC).
  bool append(Bytes data);
  uint64_t size() const { return size_; }
  // At `offset`, a range the caller reserved (several threads may each write their own); size()
  // does not count it.
  bool write_at(Bytes data, uint64_t offset) const;
  // The first `size` bytes (default: what append() wrote), mapped read-only.
  Result<FileData> map(uint64_t size) const { return FileData::map(fd_, size, "a temporary file"); }
  Result<FileData> map() const { return map(size_); }

 private:
  SpillFile() = default;
  int fd_ = -1;
  uint64_t size_ = 0;
};
inline constexpr uint64_t kCliMapAbove = 1ull << 20;
// Bytes the CLI holds in memory at most for one archive member or one compressed bundle's entry;
// beyond that they are written to a temporary file (SpillFile) and read mapped from it.
inline constexpr uint64_t kHeldInMemory = 16ull << 20;

// A compressed bundle's large entries decoded into temporary files (SpillFile) rather than memory
// (EntrySpill, bundle.h): entries of `above` bytes or more, and bundles decoded whole of
// `whole_above` or more (below, memory is faster: rocSOLVER 7.2's which-GPUs check spent 1.8 s more
// system time writing its bundles out and faulting them in again, 5.9 s against 4.1 s).
inline constexpr uint64_t kWholeBundleHeldInMemory = 256ull << 20;
EntrySpill temporary_file_spill(uint64_t above = kHeldInMemory, uint64_t whole_above = kWholeBundleHeldInMemory);

// Archives as the checks read them, in memory and in place: each member that
// may hold GPU code is handed over as bytes, never extracted to disk (the
// files a check after them wants, SideFiles, are handed to it likewise); member
// names are labels only, never opened. The CLI's reader (libarchive, with the
// budgets of docs/limits.md) is archive_reader() in src/inputs/archive.h; the
// shim passes none, so it never opens an archive nor links libarchive.
class ArchiveReader {
 public:
  // One member that may hold GPU code (an ELF, offload bundle or CCOB), named
  // "archive!member" ("a.tar!lib/libx.a!x.o" inside a nested archive; a .deb's
  // data.tar.* is opened transparently: "pkg.deb!usr/lib/librocsparse.so.1"),
  // with its bytes (valid during the call only) and `file`, the temporary file they are mapped from
  // when the member was too large to hold in memory (FileData::release drops what was read; else an
  // empty FileData); or, when it could not be read within the budget, no bytes and `problem` (HG111,
  // about the member).
  using Member =
      std::function<void(const std::string& name, Bytes data, const FileData& file, const Diagnostic* problem)>;
  struct Result {
    bool archive = false;  // false: not an archive after all (a compressed file of another kind)
    // The archive's own: damaged or truncated (HG113), a budget spent (HG111); a rocBLAS or hipBLASLt
    // in it without its Tensile directory among its files (HG123).
    std::vector<Diagnostic> diagnostics;
  };
  // Members without GPU code that a check after the files reads (a kernel library's databases:
  // Tensile .dat, AITER .csv), on the reading thread; every function must be thread-safe.
  //  - `wants` says which, by member name, and whether their bytes or only their names;
  //  - `take` gets each one as `member` would (valid during the call only; no bytes when only the
  //    name is wanted, or, with `problem` (HG111), when it is over `max_bytes`);
  //  - `link` gets every symbolic link and hard link: its name, and its target as the archive
  //    stores it (a symlink's relative to the link's directory; a hard link's an archive name);
  //  - `incomplete` is told of an archive (its path) whose reading stopped short (an error of its
  //    own: HG111, HG113-HG116), by whoever reads it (check_file).
  enum class Want { Nothing, Name, Bytes };
  struct SideFiles {
    std::function<Want(const std::string& name)> wants;
    Member take;
    std::function<void(const std::string& name, const std::string& target, bool hard)> link;
    std::function<void(const std::string& archive)> incomplete;
    uint64_t max_bytes = UINT64_MAX;
  };
  virtual ~ArchiveReader() = default;
  // Whether `data` starts like an archive (ar, tar, zip; gzip, xz, zstd, bzip2).
  virtual bool is_archive(Bytes data) const = 0;
  // Calls `member` for each member in archive order. Never throws by itself
  // (a damaged archive is a diagnostic); what `member` throws propagates.
  // A container image stored as a tar (an OCI archive, a `docker save`
  // archive) is read as the image: its files as the image's layers leave them
  // (whiteouts applied), each named "IMAGE!path" ("IMAGE!TAG!path" when the
  // archive holds several images), in the order of its layers, top first.
  // `source`: the file `data` is read from, when it is mapped; its pages are released as they are read.
  // `side`: members without GPU code handed over as well (null: none).
  virtual Result read(Bytes data, const std::string& path, const Member& member, const FileData* source = nullptr,
                      const SideFiles* side = nullptr) const = 0;
  // An OCI image layout directory (oci-layout, index.json, blobs/sha256/;
  // OCI Image Layout Specification), read as one image like an archive of one.
  virtual bool is_image_directory(const std::string& /*dir*/) const { return false; }
  virtual Result read_image_directory(const std::string& /*dir*/, const Member& /*member*/,
                                      const SideFiles* /*side*/ = nullptr) const {
    return {};
  }
};

// A path that could not be used: missing, unreadable directory, symlink loop,
// name too long, ... (reported as HG101 by the CLI).
struct PathProblem {
  std::string path, reason;
};

// Expands directories recursively (sorted, regular files only, symlinks to
// files followed, symlinked directories not walked); plain files are kept as
// given. Never throws: each path or directory that cannot be read is a problem.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<PathProblem>* problems);

}  // namespace hipguard
