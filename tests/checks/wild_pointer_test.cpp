// Pointers handed to the shim come from someone else's memory. A fat binary
// wrapper or module image that points at unmapped memory, or whose headers
// claim sizes beyond the mapping, must be reported as unreadable or malformed:
// never a SIGSEGV in the host program. Memory here comes from mmap with a
// PROT_NONE guard page, so any over-read faults.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

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

std::string capture(const std::function<void()>& f) {
  testing::internal::CaptureStderr();
  f();
  return testing::internal::GetCapturedStderr();
}

class WildPointers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { checks::configure_guard_for_tests(); }
};

}  // namespace

TEST_F(WildPointers, WrapperInUnmappedMemory) {
  Guarded g(1);
  Decision v;
  std::string err = capture([&] { v = Guard::get().on_register_fatbin(g.guard); });
  EXPECT_EQ(v.action, Action::Exit) << "strict mode stops a program whose fat binary cannot be read";
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
  EXPECT_NE(err.find("wrapper"), std::string::npos) << err;
  // A wrapper straddling the end of the mapping is unreadable too.
  err = capture([&] { Guard::get().on_register_fatbin(g.guard - 8); });
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
}

TEST_F(WildPointers, BinaryPointerInUnmappedMemory) {
  Guarded g(1);
  auto* w = reinterpret_cast<FatbinWrapper*>(g.base);
  *w = FatbinWrapper{kHipFatbinMagic, 1, g.guard, nullptr};
  std::string err = capture([&] { Guard::get().on_register_fatbin(w); });
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
  *w = FatbinWrapper{kHipFatbinMagic, 1, reinterpret_cast<const void*>(uintptr_t{16}), nullptr};
  err = capture([&] { Guard::get().on_register_fatbin(w); });
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
  std::string err = capture([&] { Guard::get().on_register_fatbin(w); });
  EXPECT_NE(err.find("HG104"), std::string::npos) << err;
  // One entry whose payload offset/size point past the mapping.
  count = 1;
  memcpy(b + 24, &count, 8);
  uint64_t entry[3] = {4096, 1 << 20, 8};
  memcpy(b + 32, entry, sizeof entry);
  memcpy(b + 56, "hipv4-x", 8);
  err = capture([&] { Guard::get().on_register_fatbin(w); });
  EXPECT_NE(err.find("HG104"), std::string::npos) << err;
}

TEST_F(WildPointers, ElfWhoseHeadersClaimMoreThanIsMapped) {
  Guarded g(1);
  // A real-looking ELF header at the end of the page: AMDGPU, HSA, section headers far away.
  uint8_t* e = g.guard - 64;
  memset(e, 0, 64);
  memcpy(e, "\x7f" "ELF\x02\x01\x01\x40\x02", 9);
  uint16_t machine = 224, shentsize = 64, shnum = 30;
  uint64_t shoff = 1 << 30;
  uint32_t flags = 0x54c;  // gfx942, sramecc+, xnack any
  memcpy(e + 18, &machine, 2);
  memcpy(e + 40, &shoff, 8);
  memcpy(e + 48, &flags, 4);
  memcpy(e + 58, &shentsize, 2);
  memcpy(e + 60, &shnum, 2);
  Decision v;
  std::string err = capture([&] { v = Guard::get().on_module_load_data(e); });
  EXPECT_EQ(v.action, Action::Refuse);
  EXPECT_EQ(v.hip_error, kHipErrorInvalidImage);
  EXPECT_NE(err.find("HG106"), std::string::npos) << err;
}

TEST_F(WildPointers, ModuleImageInUnmappedMemory) {
  Guarded g(1);
  Decision v;
  std::string err = capture([&] { v = Guard::get().on_module_load_data(g.guard); });
  EXPECT_EQ(v.action, Action::Refuse);
  EXPECT_NE(err.find("HG101"), std::string::npos) << err;
  EXPECT_EQ(readable_extent(g.guard, 1 << 20), 0u);
  EXPECT_EQ(readable_extent(g.base, 1 << 20), kPage);
  EXPECT_EQ(readable_extent(nullptr, 1 << 20), 0u);
}
