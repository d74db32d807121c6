// Pointers handed to the shim come from someone else's memory. A fat binary
// wrapper or module image that points at unmapped memory, or whose headers
// claim sizes beyond the mapping, must be reported as unreadable or malformed:
// never a SIGSEGV in the host program. Memory here comes from mmap with a
// PROT_NONE guard page, so any over-read faults.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "runtime/address.h"
#include "runtime/guard.h"
#include "check_util.h"

using namespace hipguard;

namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// `n` readable pages followed by one PROT_NONE page.
struct Guarded {
  explicit Guarded(size_t n) : size((n + 1) * kPage) {
    base = static_cast<uint8_t*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    mprotect(base + n * kPage, kPage, PROT_NONE);
    guard = base + n * kPage;
  }
  ~Guarded() { munmap(base, size); }
  uint8_t* base;
  uint8_t* guard;
  size_t size;
};

// What `g` says while `f` runs: its findings (Guard::said) as log lines; the log itself is silenced.
std::string said_by(Guard& g, const std::function<void()>& f) {
  size_t mark = g.said().findings.size();
  testing::internal::CaptureStderr();
  f();
  testing::internal::GetCapturedStderr();
  return hgtest::lines(hgtest::said_since(g, mark));
}

class WildPointers : public hgtest::OwnGuardTest {
 protected:
  WildPointers() : OwnGuardTest(checks::strict_gfx942()) {}
};

}  // namespace

TEST_F(WildPointers, WrapperInUnmappedMemory) {
  Guarded g(1);
  Decision v;
  std::string err = said_by(guard(), [&] { v = hgtest::check_fatbin(guard(), g.guard); });
  EXPECT_EQ(v.action, Action::Exit) << "strict mode stops a program whose fat binary cannot be read";
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
  EXPECT_NE(err.find("wrapper"), std::string::npos) << err;
  // A wrapper straddling the end of the mapping is unreadable too.
  err = said_by(guard(), [&] { hgtest::check_fatbin(guard(), g.guard - 8); });
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
}

TEST_F(WildPointers, BinaryPointerInUnmappedMemory) {
  Guarded g(1);
  auto* w = reinterpret_cast<FatbinWrapper*>(g.base);
  *w = FatbinWrapper{kHipFatbinMagic, 1, g.guard, nullptr};
  std::string err = said_by(guard(), [&] { hgtest::check_fatbin(guard(), w); });
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
  *w = FatbinWrapper{kHipFatbinMagic, 1, reinterpret_cast<const void*>(uintptr_t{16}), nullptr};
  err = said_by(guard(), [&] { hgtest::check_fatbin(guard(), w); });
  EXPECT_NE(err.find("HG101"), std::string::npos) << "a near-null pointer: " << err;
}

TEST_F(WildPointers, BundleWhoseTableRunsPastTheMapping) {
  Guarded g(1);
  // An offload bundle at the end of the page claiming 1000 entries: the table would run into the guard page.
  uint8_t* b = g.guard - 64;
  memcpy(b, "__CLANG_OFFLOAD_BUNDLE__", 24);
  uint64_t count = 1000;
  memcpy(b + 24, &count, 8);
  auto* w = reinterpret_cast<FatbinWrapper*>(g.base);
  *w = FatbinWrapper{kHipFatbinMagic, 1, b, nullptr};
  std::string err = said_by(guard(), [&] { hgtest::check_fatbin(guard(), w); });
  EXPECT_NE(err.find("HG104"), std::string::npos) << err;
  // One entry whose payload offset/size point past the mapping.
  count = 1;
  memcpy(b + 24, &count, 8);
  uint64_t entry[3] = {4096, 1 << 20, 8};
  memcpy(b + 32, entry, sizeof entry);
  memcpy(b + 56, "hipv4-x", 8);
  err = said_by(guard(), [&] { hgtest::check_fatbin(guard(), w); });
  EXPECT_NE(err.find("HG104"), std::string::npos) << err;
}

TEST_F(WildPointers, ElfWhoseHeadersClaimMoreThanIsMapped) {
  Guarded g(1);
  // A real-looking ELF header at the end of the page: AMDGPU, HSA, section headers far away.
  uint8_t* e = g.guard - 64;
  memset(e, 0, 64);
  memcpy(e,
         "\x7f"
         "ELF\x02\x01\x01\x40\x02",
         9);
  uint16_t machine = 224, shentsize = 64, shnum = 30;
  uint64_t shoff = 1 << 30;
  uint32_t flags = 0x54c;  // gfx942, sramecc+, xnack any
  memcpy(e + 18, &machine, 2);
  memcpy(e + 40, &shoff, 8);
  memcpy(e + 48, &flags, 4);
  memcpy(e + 58, &shentsize, 2);
  memcpy(e + 60, &shnum, 2);
  Decision v;
  std::string err = said_by(guard(), [&] { v = hgtest::check_module_data(guard(), e); });
  EXPECT_EQ(v.action, Action::Refuse);
  EXPECT_EQ(v.hip_error, kHipErrorInvalidImage);
  EXPECT_NE(err.find("HG106"), std::string::npos) << err;
}

TEST_F(WildPointers, ModuleImageInUnmappedMemory) {
  Guarded g(1);
  Decision v;
  std::string err = said_by(guard(), [&] { v = hgtest::check_module_data(guard(), g.guard); });
  EXPECT_EQ(v.action, Action::Refuse);
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
  EXPECT_EQ(readable_extent(g.guard, 1 << 20), 0u);
  EXPECT_EQ(readable_extent(g.base, 1 << 20), kPage);
  EXPECT_EQ(readable_extent(nullptr, 1 << 20), 0u);
}

// release_read_pages acts on the program's own mappings: it may unmap pages
// that are still the file's, never a page written since (its content would be
// lost), and nothing outside the read-only ranges it is given.
TEST(ReleaseReadPages, DropsCleanFilePagesKeepsWrittenOnesAndStaysInItsRanges) {
  char path[] = "/tmp/hipguard-release-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const size_t pages = 16;
  std::vector<uint8_t> bytes(pages * kPage);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i / kPage + 1);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  auto* base = static_cast<uint8_t*>(mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  close(fd);
  unlink(path);
  ASSERT_NE(base, MAP_FAILED);
  auto present = [&](size_t page) {
    uint64_t entry = 0;
    int pm = open("/proc/self/pagemap", O_RDONLY);
    pread(pm, &entry, sizeof entry, static_cast<off_t>(reinterpret_cast<uintptr_t>(base + page * kPage) / kPage * 8));
    close(pm);
    return (entry >> 63) & 1;
  };
  volatile uint8_t sum = 0;
  for (size_t p = 0; p < pages; ++p) sum = sum + base[p * kPage];
  base[5 * kPage] = 0xee;  // a private copy of page 5 now: anonymous memory
  for (size_t p = 0; p < pages; ++p) ASSERT_TRUE(present(p)) << p;

  const uintptr_t lo = reinterpret_cast<uintptr_t>(base);
  // Ranges that end mid-page cover whole pages only: pages 2..9 of the range [1.5, 10.5).
  std::vector<std::pair<uintptr_t, uintptr_t>> readonly = {{lo + kPage + kPage / 2, lo + 10 * kPage + kPage / 2}};
  EXPECT_EQ(release_read_pages(base, bytes.size(), readonly), 7 * kPage);  // 2..9 without 5
  for (size_t p = 0; p < pages; ++p) EXPECT_EQ(present(p), p == 5 || p < 2 || p > 9 ? 1u : 0u) << "page " << p;
  EXPECT_EQ(base[5 * kPage], 0xee) << "the written page is kept";
  EXPECT_EQ(base[3 * kPage], 4) << "a released page reads the file again";
  // Nothing of a pointer outside the ranges, nor of an empty or null one.
  EXPECT_EQ(release_read_pages(base + 12 * kPage, kPage, readonly), 0u);
  EXPECT_EQ(release_read_pages(nullptr, kPage, readonly), 0u);
  EXPECT_EQ(release_read_pages(base, 0, readonly), 0u);
  munmap(base, bytes.size());
}

namespace {
// The first read-only PT_LOAD segment of the loaded object `path`: its address, or null.
const uint8_t* readonly_segment(const std::string& path) {
  struct Ctx {
    const std::string& path;
    const uint8_t* found;
  } ctx{path, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        if (!info->dlpi_name || c->path != info->dlpi_name) return 0;
        for (int i = 0; i < info->dlpi_phnum && !c->found; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && !(ph.p_flags & PF_W) && ph.p_filesz >= 64)
            c->found = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
        }
        return 1;
      },
      &ctx);
  return ctx.found;
}

// Does /proc/self/maps name `path`'s device and inode for `addr`? Not on every
// file system (overlayfs names the lower file): MappedFiles::read then reads
// nothing, and its tests skip.
bool maps_names(const void* addr, const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(maps, line)) {
    unsigned long long lo, hi, off, ino;
    unsigned maj, min;
    if (sscanf(line.c_str(), "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off, &maj, &min, &ino) != 6) continue;
    if (at >= lo && at < hi) return maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino;
  }
  return false;
}
// The lowest descriptor of this process open on `path`, or -1.
int fd_naming(const std::string& path) {
  int lowest = -1;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::filesystem::path target = std::filesystem::read_symlink(e.path(), ec);
    int fd = atoi(e.path().filename().c_str());
    if (!ec && target == path && (lowest < 0 || fd < lowest)) lowest = fd;
  }
  return lowest;
}
}  // namespace

// Warn-mode registration reads a bundle's table from the file mapped at its
// address (MappedFiles::read): the program's own (its name is empty to the
// loader) and a library's read-only bytes, never a writable segment or the
// heap, nor a file that has since replaced the mapped one at its path.
TEST(MappedFiles, CopiesReadOnlyBytesFromTheMappedFileOnly) {
  MappedFiles known;
  static const char kLiteral[] = "a string literal, in the program's read-only data";
  if (!maps_names(kLiteral, "/proc/self/exe"))
    GTEST_SKIP() << "/proc/self/maps does not name the program's file here (overlayfs?): nothing is read from files";
  std::vector<uint8_t> out(sizeof kLiteral);
  ASSERT_TRUE(known.read(kLiteral, sizeof kLiteral, out.data()));
  EXPECT_EQ(memcmp(out.data(), kLiteral, sizeof kLiteral), 0);
  ASSERT_EQ(known.known().size(), 1u);
  EXPECT_EQ(known.known()[0].path, "/proc/self/exe");
  ASSERT_TRUE(known.read(kLiteral, sizeof kLiteral, out.data()));  // from what is known
  EXPECT_EQ(known.known().size(), 1u);
  static char writable[64] = "in the program's writable data";
  EXPECT_FALSE(known.read(writable, sizeof writable, out.data()));
  std::vector<uint8_t> heap(64, 1);
  EXPECT_FALSE(known.read(heap.data(), heap.size(), out.data()));
  EXPECT_FALSE(known.read(nullptr, 8, out.data()));

  // A copy of libz in a directory of its own: a library of its own to the loader.
  void* system = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(system, nullptr) << dlerror();
  link_map* lm = nullptr;
  ASSERT_EQ(dlinfo(system, RTLD_DI_LINKMAP, &lm), 0);
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("hipguard-mapped-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string copy = (dir / "libz-copy.so").string();
  std::filesystem::copy_file(lm->l_name, copy, std::filesystem::copy_options::overwrite_existing);
  void* lib = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const uint8_t* ro = readonly_segment(copy);
  ASSERT_NE(ro, nullptr);
  if (!maps_names(ro, copy)) {
    dlclose(lib);
    dlclose(system);
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "/proc/self/maps does not name files in " << dir << " here";
  }
  std::vector<uint8_t> bytes(64);
  ASSERT_TRUE(known.read(ro, bytes.size(), bytes.data()));
  EXPECT_EQ(memcmp(bytes.data(), ro, bytes.size()), 0);
  EXPECT_EQ(known.known().back().path, copy);

  // The file read last stays open for the next read: one descriptor however many reads.
  const int kept = fd_naming(copy);
  ASSERT_GE(kept, 0) << "the read's descriptor is kept";
  ASSERT_TRUE(known.read(ro, bytes.size(), bytes.data()));
  EXPECT_EQ(fd_naming(copy), kept);
  // The program closes it and reuses its number: read anew, and the program's
  // descriptor is never closed, also not when another file's read replaces the kept one.
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  ASSERT_EQ(dup2(null_fd, kept), kept);
  close(null_fd);
  ASSERT_TRUE(known.read(ro, bytes.size(), bytes.data()));
  EXPECT_EQ(memcmp(bytes.data(), ro, bytes.size()), 0);
  ASSERT_TRUE(known.read(kLiteral, sizeof kLiteral, out.data()));
  std::error_code ec;
  EXPECT_EQ(std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(kept), ec), "/dev/null")
      << "the program's descriptor was closed";
  EXPECT_EQ(fd_naming(copy), -1) << "the copy's descriptor is closed once another file is read";
  close(kept);

  // Another file renamed over the library's path: its mapping is still the old file.
  const std::string other = copy + ".new";
  std::filesystem::copy_file(copy, other, std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(rename(other.c_str(), copy.c_str()), 0);
  EXPECT_FALSE(known.read(ro, bytes.size(), bytes.data())) << "the known file is no longer at its path";
  MappedFiles fresh;
  EXPECT_FALSE(fresh.read(ro, bytes.size(), bytes.data())) << "/proc/self/maps names another inode";
  ASSERT_EQ(fresh.known().size(), 1u) << "the mismatch is remembered, not checked again";
  EXPECT_FALSE(fresh.known()[0].same);
  EXPECT_FALSE(fresh.read(ro, bytes.size(), bytes.data()));
  dlclose(lib);
  dlclose(system);
  std::filesystem::remove_all(dir);
}
