// hipguard check without --target: which of the product table's GPUs the inputs run on.
#include "cli/support.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "base/run_on_threads.h"
#include "cli/common.h"

namespace hipguard {

// Rows checked at once: an image or a single big file is one job of check_paths (one thread), so
// the rows share the machine's threads instead, each checking its files with its share of them
// (a row's kernel-database step adds threads of its own); at most this many rows, each holding
// its members in memory (peak memory up to this many times one check's).
constexpr unsigned kMaxRowsAtOnce = 4;

std::vector<SupportRow> check_support(const std::vector<std::string>& paths, CheckPathsOptions options,
                                      Progress& progress) {
  std::vector<SupportRow> rows = support_rows();
  unsigned threads = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  unsigned lanes = std::min<unsigned>({threads, kMaxRowsAtOnce, static_cast<unsigned>(rows.size())});
  options.jobs = std::max(1u, threads / std::max(1u, lanes));
  std::mutex progress_mu;  // the rows' files, as they are done
  auto file_done = options.progress;
  options.progress = [&](size_t done, size_t total, const std::string& path) {
    std::lock_guard<std::mutex> lock(progress_mu);
    if (file_done) file_done(done, total, path);
  };
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> failed(rows.size());
  auto lane = [&] {
    for (size_t i; (i = next.fetch_add(1)) < rows.size();) {
      try {
        CheckPathsOptions row_options = options;
        row_options.targets = {rows[i].target};
        CollectSink sink(/*keep_parsed=*/false, {}, /*keep=*/true);
        CheckPathsResult result = check_paths(paths, row_options, sink);
        judge_support(rows[i], result.ok, sink.reports);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  run_on_threads(lanes, lane);
  progress.clear();
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
  return rows;
}

void print_support(const std::vector<SupportRow>& rows, bool color) {
  printf("which GPUs (no --target: every product as shipped; --target names the ones a CI gate checks)\n");
  printf("  %s %s %s %s\n", pad("RESULT", 12).c_str(), pad("TARGET ID", 24).c_str(), pad("PRODUCTS", 34).c_str(),
         "FIRST CAUSE");
  for (const auto& r : rows) {
    std::string products;
    for (const auto& p : r.products) products += (products.empty() ? "" : " ") + p;
    printf("  %s %s %s %s\n", paint(color, r.runs ? "32" : "1;31", pad(r.runs ? "runs" : "does not run", 12)).c_str(),
           pad(r.target.str(), 24).c_str(), pad(products, 34).c_str(), r.cause.c_str());
  }
  printf("\n");
}

}  // namespace hipguard
