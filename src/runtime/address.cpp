// Address-space facts for untrusted pointers: which file holds an address, how
// many bytes from it are readable (from the loader's segments, else
// /proc/self/maps, read with read(2) and no line length limit);
// releasing the read-only pages a check read.
#include "runtime/address.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace hipguard {

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "<program>";
  buf[n] = 0;
  return buf;
}

// glibc >= 2.35's _dl_find_object: the object holding an address in O(log n),
// where dladdr also searches the object's symbol table for the nearest symbol
// (~30 k instructions per call in librocsparse). Looked up at run time so the
// shim still loads on an older glibc, where dladdr is the fallback.
using FindObjectFn = int (*)(void*, void*);
FindObjectFn find_object_fn() {
  static FindObjectFn fn = reinterpret_cast<FindObjectFn>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  return fn;
}

// The file that holds `addr` (executable or shared library).
std::string origin_of(const void* addr) {
#ifdef DLFO_STRUCT_HAS_EH_DBASE
  if (FindObjectFn fn = find_object_fn()) {
    dl_find_object fo{};
    if (fn(const_cast<void*>(addr), &fo) == 0 && fo.dlfo_link_map) {
      const char* name = fo.dlfo_link_map->l_name;
      // The main program's link map has an empty name.
      if (name && *name && strchr(name, '/')) return name;
      if (!name || !*name) return self_exe();
    }
  }
#endif
  Dl_info info{};
  if (dladdr(addr, &info) && info.dli_fname && *info.dli_fname) {
    // glibc reports argv[0] for the main program; prefer the real path.
    std::string name = info.dli_fname;
    if (name.find('/') == std::string::npos || name == program_invocation_name) return self_exe();
    return name;
  }
  return self_exe();
}

std::string hex(const void* p) {
  char buf[32];
  snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// The runtime answers these when it has no usable GPU at all: a probe then says nothing.

namespace {
// Calls keep_going(line) for each line of /proc/self/maps (NUL-terminated, without its newline; a
// mapped file's path may be any length) until it returns false; none if the file cannot be opened.
// Not stdio: fopen takes glibc's list lock, and a fork() from a signal handler that interrupted a
// thread there waits for that lock forever (Runtime.ForkFromASignalHandler, three threads).
template <class F>
void for_each_maps_line(F&& keep_going) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string line;
  char buf[4096];
  for (bool more = true; more;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (const char *p = buf, *end = buf + n; p < end && more;) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
      line.append(p, nl ? nl : end);
      p = nl ? nl + 1 : end;
      if (!nl) continue;
      more = keep_going(line.c_str());
      line.clear();
    }
  }
  if (!line.empty()) keep_going(line.c_str());
  close(fd);
}

// "lo-hi perms ..." from one /proc/self/maps line; false when malformed.
bool parse_maps_line(const char* line, uintptr_t* lo, uintptr_t* hi, bool* readable) {
  char* end = nullptr;
  *lo = strtoull(line, &end, 16);
  if (*end != '-') return false;
  *hi = strtoull(end + 1, &end, 16);
  if (*end != ' ') return false;
  *readable = end[1] == 'r';
  return true;
}
}  // namespace

namespace {

// The PT_LOAD segment of a loaded object that holds [addr, addr + size)
// (dl_iterate_phdr): its object, how far it reaches from addr, and, when the
// caller asks (want_file), whether the bytes are the file's and where.
struct SegmentOf {
  uintptr_t addr = 0;
  uint64_t size = 0;
  bool want_file = false;
  bool found = false;
  bool readable = false;  // PF_R
  uint64_t extent = 0;    // bytes of the segment from addr on (p_memsz)
  uintptr_t base = 0;
  const char* name = nullptr;
  unsigned long long subs = 0;
  bool from_file = false;  // want_file: in the file-backed bytes of a read-only segment, no text relocations
  uint64_t file_offset = 0;
};

// DT_TEXTREL or DF_TEXTREL: the loader writes the object's read-only
// segments, which then differ from its file.
bool has_textrel(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_DYNAMIC) continue;
    const auto* d = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    for (size_t n = ph.p_memsz / sizeof(ElfW(Dyn)); n > 0 && d->d_tag != DT_NULL; --n, ++d)
      if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL))) return true;
  }
  return false;
}

int find_segment(dl_phdr_info* info, size_t info_size, void* data) {
  auto* c = static_cast<SegmentOf*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type != PT_LOAD || c->addr < lo || c->addr - lo >= ph.p_memsz) continue;
    uint64_t at = c->addr - lo;
    c->found = true;
    c->readable = ph.p_flags & PF_R;
    c->extent = ph.p_memsz - at;
    c->base = info->dlpi_addr;
    c->name = info->dlpi_name;
    if (info_size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) c->subs = info->dlpi_subs;
    c->from_file = c->want_file && c->readable && !(ph.p_flags & PF_W) && at <= ph.p_filesz &&
                   c->size <= ph.p_filesz - at && !has_textrel(info);
    c->file_offset = ph.p_offset + at;
    return 1;
  }
  return 0;
}

SegmentOf segment_of(uintptr_t addr, uint64_t size, bool want_file) {
  SegmentOf seg;
  seg.addr = addr;
  seg.size = size;
  seg.want_file = want_file;
  dl_iterate_phdr(find_segment, &seg);
  return seg;
}

// Inside a loaded object's readable PT_LOAD segment (where a fat binary
// registered by a program or library lives), the extent is that segment's end:
// no need to read /proc/self/maps, which costs ~100k instructions a call.
uint64_t loaded_segment_extent(uintptr_t addr) {
  SegmentOf seg = segment_of(addr, 0, false);
  return seg.found && seg.readable ? seg.extent : 0;
}
}  // namespace

std::vector<std::pair<uintptr_t, uintptr_t>> readonly_segments_of(const void* p) {
  struct Ctx {
    uintptr_t addr;
    std::vector<std::pair<uintptr_t, uintptr_t>> out;
  } ctx{reinterpret_cast<uintptr_t>(p), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          mine = ph.p_type == PT_LOAD && c->addr >= lo && c->addr < lo + ph.p_memsz;
        }
        if (!mine) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R) || (ph.p_flags & PF_W)) continue;
          uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          c->out.emplace_back(lo, lo + ph.p_filesz);  // file-backed bytes only
        }
        return 1;
      },
      &ctx);
  return std::move(ctx.out);
}

uint64_t readable_extent(const void* p, uint64_t cap) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  if (addr == 0) return 0;
  if (uint64_t in_object = loaded_segment_extent(addr)) return in_object < cap ? in_object : cap;
  uintptr_t want = addr;  // next address that must be covered
  uint64_t extent = 0;
  bool started = false;
  for_each_maps_line([&](const char* line) {
    uintptr_t lo, hi;
    bool readable;
    if (!parse_maps_line(line, &lo, &hi, &readable)) return true;
    if (!started) {
      if (addr >= hi) return true;
      if (addr < lo || !readable) return false;  // lines are sorted: addr is in a gap, or unreadable
      started = true;
      extent = hi - addr;
      want = hi;
    } else {
      if (lo != want || !readable) return false;  // gap or unreadable: stop
      extent += hi - lo;
      want = hi;
    }
    return extent < cap;
  });
  return extent < cap ? extent : cap;
}

namespace {

// /proc/self/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPagePresent = 1ull << 63, kPageSwapped = 1ull << 62, kPageFileOrShared = 1ull << 61;

// A page MADV_DONTNEED cannot lose anything of: not mapped, or mapped from the file unchanged.
bool clean_or_absent(uint64_t entry) {
  if (entry & kPageSwapped) return false;
  return !(entry & kPagePresent) || (entry & kPageFileOrShared);
}

// Releases the pages [lo, hi) (page-aligned), run by run of clean or absent pages.
uint64_t release_clean_runs(int pagemap, uintptr_t lo, uintptr_t hi, uintptr_t page) {
  uint64_t released = 0;
  uint64_t entries[512];
  uintptr_t run = lo;  // start of the current run of droppable pages
  for (uintptr_t at = lo; at < hi;) {
    size_t n = std::min<uintptr_t>((hi - at) / page, 512);
    ssize_t got = pread(pagemap, entries, n * sizeof(uint64_t), static_cast<off_t>(at / page * sizeof(uint64_t)));
    if (got != static_cast<ssize_t>(n * sizeof(uint64_t))) {  // keep what is not known to be clean
      hi = at;
      break;
    }
    for (size_t i = 0; i < n; ++i, at += page) {
      if (clean_or_absent(entries[i])) continue;
      if (run < at && madvise(reinterpret_cast<void*>(run), at - run, MADV_DONTNEED) == 0) released += at - run;
      run = at + page;
    }
  }
  if (run < hi && madvise(reinterpret_cast<void*>(run), hi - run, MADV_DONTNEED) == 0) released += hi - run;
  return released;
}

// The device, inode and file offset /proc/self/maps gives for `addr`.
struct MapsEntry {
  unsigned major = 0, minor = 0;
  unsigned long long ino = 0, offset = 0;
};
std::optional<MapsEntry> maps_entry_of(uintptr_t addr) {
  std::optional<MapsEntry> out;
  for_each_maps_line([&](const char* line) {
    unsigned long long lo, hi, off, ino;
    unsigned maj, min;
    if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off, &maj, &min, &ino) != 6) return true;
    if (addr >= hi) return true;
    if (addr >= lo) out = MapsEntry{maj, min, ino, off + (addr - lo)};
    return false;  // lines are sorted by address
  });
  return out;
}

bool pread_all(int fd, uint8_t* out, uint64_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t got = pread(fd, out, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    size -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

struct Fd {  // closed on every path out
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};
}  // namespace

bool MappedFiles::read(const void* p, uint64_t size, uint8_t* out) {
  if (!p || size == 0 || size > static_cast<uint64_t>(SSIZE_MAX)) return false;
  SegmentOf seg = segment_of(reinterpret_cast<uintptr_t>(p), size, true);
  if (!seg.from_file) return false;
  std::string path = seg.name && *seg.name ? seg.name : "/proc/self/exe";  // the program's name is empty
  if (path[0] != '/') return false;                                        // the vDSO, or a name that is not a path
  auto same_object = [&](const MappedFile& m) { return m.base == seg.base && m.path == path; };
  std::optional<MappedFile> file;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(known_.begin(), known_.end(), same_object);
    if (it != known_.end() && it->subs != seg.subs) known_.erase(it);  // an object was unloaded since: check again
    else if (it != known_.end()) file = *it;
  }
  if (file && !file->same) return false;  // checked already, and not the file mapped
  std::lock_guard io(io_mu_);
  struct stat st;
  // The file read last, if the descriptor is still the one opened for it: a
  // program may have closed it (then it is forgotten, never closed here).
  bool kept = kept_is_ours();
  if (!kept) kept_fd_ = -1;
  if (kept && file && file->dev == kept_dev_ && file->ino == kept_ino_)
    return pread_all(kept_fd_, out, size, seg.file_offset);
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  bool ok = f.fd >= 0 && fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!file) {
    // Once per object: the file opened is the one mapped, at this offset. Not
    // so on some file systems (overlayfs shows the lower file's device and
    // inode in /proc/self/maps): remembered too, so that the check is not repeated.
    std::optional<MapsEntry> m = ok ? maps_entry_of(seg.addr) : std::nullopt;
    ok = m && m->major == major(st.st_dev) && m->minor == minor(st.st_dev) && m->ino == st.st_ino &&
         m->offset == seg.file_offset;
    file = MappedFile{seg.base, path, ok ? st.st_dev : 0, ok ? st.st_ino : 0, seg.subs, ok};
    std::lock_guard lock(mu_);
    if (std::none_of(known_.begin(), known_.end(), same_object))
      known_.push_back(*file);  // unless another thread checked it meanwhile
  }
  ok = ok && file->dev == st.st_dev && file->ino == st.st_ino && pread_all(f.fd, out, size, seg.file_offset);
  if (ok) {  // kept for the next read, in place of the last file's
    // Closed only if still the one opened for it: the program may have closed
    // it since the check above, and its number been reused (by f too).
    if (kept && kept_fd_ != f.fd && kept_is_ours()) close(kept_fd_);
    kept_fd_ = std::exchange(f.fd, -1);
    kept_dev_ = st.st_dev;
    kept_ino_ = st.st_ino;
  }
  return ok;
}

bool MappedFiles::kept_is_ours() const {
  struct stat st;
  return kept_fd_ >= 0 && fstat(kept_fd_, &st) == 0 && st.st_dev == kept_dev_ && st.st_ino == kept_ino_;
}

std::vector<MappedFile> MappedFiles::known() const {
  std::lock_guard lock(mu_);
  return known_;
}

uint64_t release_read_pages(const std::vector<std::pair<const void*, uint64_t>>& ranges,
                            const std::vector<std::pair<uintptr_t, uintptr_t>>& readonly) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (page == 0 || (page & (page - 1))) return 0;
  int pagemap = -1;  // opened once, for the first range that has pages to release
  uint64_t released = 0;
  for (const auto& [p, size] : ranges) {
    uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + size;
    if (!p || size == 0 || end < begin) continue;
    for (const auto& [seg_lo, seg_hi] : readonly) {
      // Whole pages of the segment only: a page it shares with another segment may be written.
      uintptr_t lo = std::max((seg_lo + page - 1) & ~(page - 1), begin & ~(page - 1));
      uintptr_t hi = std::min(seg_hi & ~(page - 1), (end + page - 1) & ~(page - 1));
      if (lo >= hi) continue;
      if (pagemap < 0 && (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) return released;
      released += release_clean_runs(pagemap, lo, hi, page);
    }
  }
  if (pagemap >= 0) close(pagemap);
  return released;
}

uint64_t release_read_pages(const void* p, uint64_t size,
                            const std::vector<std::pair<uintptr_t, uintptr_t>>& readonly) {
  return release_read_pages({{p, size}}, readonly);
}

}  // namespace hipguard
