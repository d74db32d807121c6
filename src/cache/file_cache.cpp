// The check cache for files (file_cache.h): keys, entries on disk, and a file's recorded events replayed
// in place of its check.
#include "cache/file_cache.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/write_all.h"
#include "cache/report_codec.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hipguard {
namespace {

std::string hex128(XXH128_hash_t h) {
  char out[33];
  std::snprintf(out, sizeof out, "%016" PRIx64 "%016" PRIx64, h.high64, h.low64);
  return out;
}

// XXH3-128 of `data`, the pages of a mapped file released behind the hash (a 1 GB library is not kept).
std::string content_hash(const FileData& file) {
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(), XXH3_freeState);
  if (!state) return "";
  XXH3_128bits_reset(state.get());
  Bytes all = file.bytes();
  constexpr uint64_t kChunk = 16ull << 20;
  for (uint64_t at = 0; at < all.size(); at += kChunk) {
    Bytes part = all.subspan(at, std::min(kChunk, all.size() - at));
    XXH3_128bits_update(state.get(), part.data(), part.size());
    file.release(part);
  }
  return hex128(XXH3_128bits_digest(state.get()));
}

// Whether check_file may find GPU code in `data`: an ELF, an offload bundle, a compressed bundle. Other
// files (a library's databases, text) are not kept: telling them apart costs less than hashing them.
bool may_hold_gpu_code(Bytes data) {
  static constexpr uint8_t kElf[4] = {0x7f, 'E', 'L', 'F'};
  bool elf = data.size() >= 4 && std::memcmp(data.data(), kElf, 4) == 0;
  return elf || classify(data) != PayloadKind::Unknown;
}

// What, besides the file's bytes, decides its report: its path (every report names it), the targets
// as given (alias and LDS size are in messages), and how check_file reads it.
std::string context(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& o) {
  std::string k = path + '\0';
  for (const auto& t : targets) k += t.str() + '\0' + t.alias + '\0' + std::to_string(t.lds_bytes) + '\0';
  k += "depth " + std::to_string(static_cast<int>(o.depth)) + " explicit " + std::to_string(o.explicit_arg) +
       " library " + std::to_string(o.library_file) + " runtime " +
       std::string(o.machine.runtime ? o.machine.runtime->name : "default") + " one-process " +
       std::to_string(o.machine.one_process);
  return k;
}

// Forwards a file's replayed events to `to` (or only reads them, when null): members' begin_file, image
// and end_file, the file's own images, and keeps its own report (the end_file no begin_file opened),
// which must come last.
class Replayed : public FileSink {
 public:
  explicit Replayed(FileSink* to) : to_(to) {}
  void begin_file(const std::string& path) override {
    bad_ = bad_ || member_ || report_;
    member_ = true;
    if (to_ && !bad_) to_->begin_file(path);
  }
  void image(ImageReport&& img) override {
    bad_ = bad_ || report_;
    if (to_ && !bad_) to_->image(std::move(img));
  }
  void end_file(FileReport&& file) override {
    bad_ = bad_ || report_;
    if (bad_) return;
    if (!member_) return void(report_ = std::move(file));
    member_ = false;
    if (to_) to_->end_file(std::move(file));
  }
  // The file's report, when the events were a file's.
  std::optional<FileReport> take() { return bad_ || member_ ? std::nullopt : std::move(report_); }

 private:
  FileSink* to_;
  bool bad_ = false, member_ = false;
  std::optional<FileReport> report_;
};

// A result that may not be the file's next time (HG101: an open or a map that failed, out of memory or
// descriptors; HG105: a compressed bundle whose decoding failed, also out of memory): never kept.
bool transient(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
    return d.code == Code::kUnreadable || d.code == Code::kMalformedCompressed;
  });
}

// Hands each event to `events` and records it.
class Recorded : public FileSink {
 public:
  Recorded(FileSink& events, RecordingSink& recording) : events_(events), recording_(recording) {}
  void begin_file(const std::string& path) override { recording_.begin_file(path), events_.begin_file(path); }
  void image(ImageReport&& img) override {
    transient_ = transient_ || transient(img.diagnostics);
    recording_.record(img), events_.image(std::move(img));
  }
  void end_file(FileReport&& file) override {
    transient_ = transient_ || transient(file.diagnostics);
    recording_.record(file), events_.end_file(std::move(file));
  }
  bool transient_result() const { return transient_; }

 private:
  FileSink& events_;
  RecordingSink& recording_;
  bool transient_ = false;
};

// The file as the cache saw it when it hashed it: the result is kept only if the check read the same.
struct Seen {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  bool same(const Seen& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};
std::optional<Seen> seen(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Seen{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

class DiskCache : public FileCache {
 public:
  DiskCache(std::string dir, std::string identity) : dir_(std::move(dir)), identity_(std::move(identity)) {}

  FileReport check(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options,
                   FileSink& events, const std::function<FileReport(FileSink&)>& check) override {
    std::optional<Seen> before = seen(path);
    std::string entry = before ? entry_of(path, targets, options) : "";
    if (entry.empty()) return check(events);
    if (std::optional<FileReport> kept = replayed(entry, events)) return std::move(*kept);
    RecordingSink recording(kMaxCachedRecording);
    Recorded both(events, recording);
    FileReport report = check(both);
    recording.record(report);
    std::optional<Seen> after = seen(path);
    if (!both.transient_result() && !transient(report.diagnostics) && after && after->same(*before))
      store(entry, recording.finish());
    return report;
  }

 private:
  // The entry's file for `path` as it is now, or "" when it is not cached.
  std::string entry_of(const std::string& path, const std::vector<TargetId>& targets,
                       const CheckFileOptions& options) const {
    if (identity_.empty()) return "";
    if (options.archives && options.archives->is_image_directory(path)) return "";
    Result<FileData> file = FileData::open(path, kCliMapAbove);
    if (!file) return "";
    if (!may_hold_gpu_code(file->bytes())) return "";
    if (options.archives && options.archives->is_archive(file->bytes())) return "";
    std::string content = content_hash(*file);
    if (content.empty()) return "";
    std::string key = std::string("hipguard file cache") + '\0' + identity_ + '\0' +
                      std::to_string(kReportCodecVersion) + '\0' + content + '\0' + context(path, targets, options);
    return dir_ + "/" + hex128(XXH3_128bits(key.data(), key.size())) + ".hgrc";
  }

  // The file's events from `entry` into `events`, and its report; none when the entry is absent or
  // cannot be read back whole (events then got nothing). The entry is copied, not mapped: both passes
  // read the same bytes whatever is written to the file meanwhile.
  static std::optional<FileReport> replayed(const std::string& entry, FileSink& events) {
    struct stat st;
    if (::stat(entry.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) > kMaxCachedRecording + 4096)
      return std::nullopt;
    Result<FileData> kept = FileData::open(entry, UINT64_MAX);
    if (!kept || kept->bytes().size() > kMaxCachedRecording + 4096) return std::nullopt;
    Replayed shape(nullptr);
    if (!replay(kept->bytes(), &shape) || !shape.take()) return std::nullopt;
    Replayed to(&events);
    if (!replay(kept->bytes(), &to)) return std::nullopt;  // read whole above: cannot fail
    return to.take();
  }

  // Written under a temporary name, then renamed into place; a failure leaves no entry.
  void store(const std::string& entry, const std::string& recording) const {
    if (recording.empty()) return;  // over kMaxCachedRecording
    std::string temporary = entry + ".tmp.XXXXXX";
    int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
    if (fd < 0) return;
    ::fchmod(fd, 0644);
    bool written = write_all(fd, recording.data(), recording.size());
    written = ::close(fd) == 0 && written;
    if (!written || ::rename(temporary.c_str(), entry.c_str()) != 0) ::unlink(temporary.c_str());
  }

  std::string dir_, identity_;
};

// The main program's NT_GNU_BUILD_ID, hex; "" when it has none.
std::string build_id() {
  std::string id;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) {
        auto& id = *static_cast<std::string*>(out);
        for (int i = 0; i < info->dlpi_phnum && id.empty(); ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
          for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= ph.p_memsz;) {
            const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p + at);
            size_t name = (n->n_namesz + 3) & ~size_t(3), desc = (n->n_descsz + 3) & ~size_t(3);
            const uint8_t* d = p + at + sizeof(ElfW(Nhdr)) + name;
            if (at + sizeof(ElfW(Nhdr)) + name + desc > ph.p_memsz) break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
                std::memcmp(p + at + sizeof(ElfW(Nhdr)), "GNU", 4) == 0)
              for (size_t b = 0; b < n->n_descsz; ++b)
                id += "0123456789abcdef"[d[b] >> 4], id += "0123456789abcdef"[d[b] & 15];
            at += sizeof(ElfW(Nhdr)) + name + desc;
          }
        }
        return 1;  // the first object is the main program
      },
      &id);
  return id;
}

}  // namespace

std::unique_ptr<FileCache> file_cache(std::string dir, std::string identity) {
  return std::make_unique<DiskCache>(std::move(dir), std::move(identity));
}

std::string program_identity() {
  if (std::string id = build_id(); !id.empty()) return "build-id " + id;
  Result<FileData> self = FileData::open("/proc/self/exe", kCliMapAbove);
  return self ? "executable " + content_hash(*self) : "";
}

}  // namespace hipguard
