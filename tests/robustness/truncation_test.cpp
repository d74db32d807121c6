// Every real code object of the corpus, truncated at every byte offset
// (HIPGUARD_ROBUSTNESS_STRIDE=N samples outside the header, table and note
// regions instead), checked against gfx942 and gfx950. Each prefix lives in an exactly-sized heap block so ASan sees
// any over-read.
//
// What a truncated object must produce: the runtime sizes a raw code object
// from its headers (elf_image_size, rocclr getElfSize). A prefix shorter than
// that size is missing bytes the loader would read, so hipguard must report an
// error of the input/ELF (HG1xx) or metadata (HG4xx) family and fail the image.
// A prefix at least that long has lost only trailing bytes nobody reads and
// must give exactly the diagnostics of the whole file.
#include <iostream>

#include "robust_util.h"

namespace hgrobust {
namespace {

TEST(Robustness, CorpusTruncatedAtEveryOffset) {
  auto files = corpus_files();
  if (files.empty()) GTEST_SKIP() << "AITER corpus not found at " << corpus_dir() << " (CI has it at ../shared/corpus)";
  const std::vector<hipguard::TargetId> targets = {target("gfx942"), target("gfx950")};
  Failures fail;
  uint64_t parses = 0, bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& path : files) {
    std::string name = path.filename().string();
    ByteVec f = read_bytes(path);
    std::optional<uint64_t> image = hipguard::elf_image_size(span(f));
    ASSERT_TRUE(image.has_value()) << name;
    ASSERT_LE(*image, f.size()) << name;
    hipguard::ImageReport full = check_image(span(f), name, targets);
    std::string full_codes = codes(full);
    ElfLayout layout = elf_layout(f);
    std::vector<uint64_t> points = truncation_points(f.size(), layout.dense, {*image});
    auto where = [&](uint64_t k) {
      return name + " truncated to " + std::to_string(k) + " of " + std::to_string(f.size()) + " bytes (image size " +
             std::to_string(*image) + ")";
    };
    auto results = run_isolated(points.size(), [&](uint64_t i) -> std::string {
      uint64_t k = points[i];
      Exact prefix(f.data(), k);
      hipguard::ImageReport r = hipguard::check_image(prefix.bytes(), name, targets);
      if (std::string p = report_problem(r, targets.size()); !p.empty()) return p;
      if (k < *image) {
        if (!has_structural_error(r) || r.ok())
          return "no HG1xx/HG4xx error, or the image still passes; diagnostics: " + codes(r) + summary(r);
      } else if (codes(r) != full_codes) {
        return "diagnostics differ from the whole file's (" + full_codes + "): " + codes(r);
      }
      return "";
    });
    for (const auto& [i, what] : results) fail.add((i < points.size() ? where(points[i]) : name) + ": " + what);
    parses += points.size();
    for (uint64_t k : points) bytes += k;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ robustness ] " << files.size() << " code objects, " << parses << " truncated copies ("
            << bytes / 1048576 << " MiB copied), stride " << stride() << ", " << secs << " s\n";
  RecordProperty("truncations", std::to_string(parses));
}

}  // namespace
}  // namespace hgrobust
