// Every real code object of the corpus with 200 seeded random mutations of 1-8
// flipped bits each (half of the bits aimed at the bytes the parsers
// interpret: headers, section headers, notes, symbol and string tables,
// descriptors; half anywhere), checked against gfx942 and gfx950. A flip may
// leave a valid file, so the only requirement is no crash (ASan/UBSan in the
// sanitizer build) and a self-consistent report.
#include <iostream>

#include "robust_util.h"

namespace hgrobust {
namespace {

constexpr int kMutationsPerFile = 200;

TEST(Robustness, CorpusBitFlips) {
  auto files = corpus_files();
  if (files.empty()) GTEST_SKIP() << "AITER corpus not found at " << corpus_dir() << " (CI has it at ../shared/corpus)";
  const std::vector<hipguard::TargetId> targets = {target("gfx942"), target("gfx950")};
  Failures fail;
  uint64_t runs = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& path : files) {
    std::string name = path.filename().string();
    ByteVec f = read_bytes(path);
    ElfLayout layout = elf_layout(f);
    // The mutations are drawn up front (fixed seed per file), then checked in
    // a child process so one crash does not hide the others.
    Rng rng{seed_of(name, 1)};
    std::vector<std::string> flips(kMutationsPerFile);
    std::vector<ByteVec> mutants(kMutationsPerFile, f);
    for (int i = 0; i < kMutationsPerFile; ++i) flips[i] = flip_bits(mutants[i], rng, layout.structural);
    auto results = run_isolated(kMutationsPerFile, [&](uint64_t i) -> std::string {
      Exact copy(mutants[i].data(), mutants[i].size());
      hipguard::elf_image_size(copy.bytes());
      hipguard::ImageReport r = hipguard::check_image(copy.bytes(), name, targets);
      return report_problem(r, targets.size());
    });
    for (const auto& [i, what] : results)
      fail.add(name + " mutation " + std::to_string(i) + " (flipped byte:bit " + (i < flips.size() ? flips[i] : "") +
               "): " + what);
    runs += kMutationsPerFile;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ robustness ] " << runs << " bit-flipped code objects, " << secs << " s\n";
}

}  // namespace
}  // namespace hgrobust
