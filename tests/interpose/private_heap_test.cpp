// The shim's own heap (interpose/private_heap.cpp), linked into this test
// alone: every operator new and delete here (gtest's too) goes through it.
// Blocks keep their contents and alignment under random sizes, alignments and
// unsized deletes, from several threads, and across fork(); they never come
// from the malloc heap.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Block {
  unsigned char* p;
  size_t n;
  size_t align;  // 0: plain new
  unsigned char tag;
};

Block make(std::mt19937_64& rng) {
  size_t n = rng() % 8 == 0 ? rng() % 150000 : rng() % 700;
  size_t align = rng() % 6 == 0 ? size_t(8) << (rng() % 11) : 0;  // 8 B to 8 KiB
  auto* p = static_cast<unsigned char*>(align ? ::operator new(n, std::align_val_t(align)) : ::operator new(n));
  auto tag = static_cast<unsigned char>(rng());
  memset(p, tag, n);
  return {p, n, align, tag};
}

// Checks and frees `b`, by a sized or an unsized delete.
::testing::AssertionResult check_and_free(const Block& b, bool sized) {
  uintptr_t at = reinterpret_cast<uintptr_t>(b.p);
  if (at % (b.align ? b.align : 16)) return ::testing::AssertionFailure() << "misaligned " << b.align;
  for (size_t i = 0; i < b.n; ++i)
    if (b.p[i] != b.tag) return ::testing::AssertionFailure() << "byte " << i << " of " << b.n << " changed";
  if (b.align) {
    if (sized) ::operator delete(b.p, b.n, std::align_val_t(b.align));
    else ::operator delete(b.p, std::align_val_t(b.align));
  } else {
    if (sized) ::operator delete(b.p, b.n);
    else ::operator delete(b.p);
  }
  return ::testing::AssertionSuccess();
}

void churn(uint64_t seed, int ops) {
  std::mt19937_64 rng(seed);
  std::vector<Block> live;
  for (int i = 0; i < ops; ++i) {
    if (live.empty() || rng() % 100 < 55) {
      live.push_back(make(rng));
    } else {
      size_t k = rng() % live.size();
      ASSERT_TRUE(check_and_free(live[k], rng() % 2));
      live[k] = live.back();
      live.pop_back();
    }
  }
  for (const Block& b : live) ASSERT_TRUE(check_and_free(b, false));
}

// The mapping /proc/self/maps names for `p`: "[heap]" for the malloc heap.
std::string mapping_of(const void* p) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return "";
  char line[512];
  std::string out = "(none)";
  auto at = reinterpret_cast<uintptr_t>(p);
  while (fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    char name[256] = "";
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &lo, &hi, name) < 2) continue;
    if (at >= lo && at < hi) {
      out = name[0] ? name : "(anonymous)";
      break;
    }
  }
  fclose(f);
  return out;
}

}  // namespace

TEST(PrivateHeap, BlocksKeepTheirBytesAndAlignment) { churn(1, 200000); }

TEST(PrivateHeap, NotFromTheMallocHeap) {
  std::vector<std::unique_ptr<int>> small;
  for (int i = 0; i < 1000; ++i) small.push_back(std::make_unique<int>(i));
  std::string big(300000, 'x');
  void* from_malloc = malloc(32);
  EXPECT_EQ(mapping_of(from_malloc), "[heap]") << "the check itself sees the malloc heap";
  free(from_malloc);
  for (const auto& p : small) ASSERT_EQ(mapping_of(p.get()), "(anonymous)");
  EXPECT_EQ(mapping_of(big.data()), "(anonymous)");
}

TEST(PrivateHeap, ManyThreads) {
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) threads.emplace_back(churn, 100 + t, 50000);
  for (auto& th : threads) th.join();
}

// A thread allocates without pause while the main thread forks: each child
// allocates too and exits. Without the heap's lock held across fork(), a child
// forked while the other thread held it would wait forever.
TEST(PrivateHeap, ForkWhileAnotherThreadAllocates) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    std::mt19937_64 rng(7);
    while (!stop.load()) {
      Block b = make(rng);
      check_and_free(b, false);
    }
  });
  int hung = 0;
  for (int i = 0; i < 40; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(10);  // a child stuck on the heap's lock dies by SIGALRM
      std::vector<std::string> v(100, std::string(100, 'c'));
      _exit(v.size() == 100 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++hung;
  }
  stop = true;
  busy.join();
  EXPECT_EQ(hung, 0) << "children that did not exit cleanly";
}
