// The check cache for files (cache/file_cache.h) under check_paths: a second check of the same files
// checks none of them (but the files that hold no GPU code, which are not kept) and writes the same JSON
// report; a changed file, a damaged entry, other targets or another program identity are checked again. Inputs: the
// hipcc test programs and ROCm 7.2's rocBLAS 5 Tensile files with their kernel databases (kernel_database_step is the
// CLI's; here the reports of the files alone).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/file_cache.h"
#include "ccob.h"
#include "check_util.h"
#include "hipguard/report.h"

using namespace hipguard;

namespace {

namespace fs = std::filesystem;
using checks::exists;
using checks::kApps;

const std::string kRoot72 = HIPGUARD_ROCM72_ROOT;

// Counts the files the cache did not hold (their check ran).
class Counting : public FileCache {
 public:
  explicit Counting(FileCache& inner) : inner_(inner) {}
  FileReport check(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options,
                   FileSink& events, const std::function<FileReport(FileSink&)>& check) override {
    return inner_.check(path, targets, options, events, [&](FileSink& to) {
      ++checked;
      return check(to);
    });
  }
  std::atomic<int> checked{0};

 private:
  FileCache& inner_;
};

// The JSON report of checking `paths` for `targets` with `cache` (null: none), and how many files the
// check read.
std::pair<std::string, int> check_json(const std::vector<std::string>& paths, const std::vector<TargetId>& targets,
                                       FileCache* cache) {
  CheckPathsOptions options;
  options.targets = targets;
  options.depth = targets.empty() ? Depth::Full : Depth::ForTargets;
  options.jobs = 2;
  std::unique_ptr<Counting> counting = cache ? std::make_unique<Counting>(*cache) : nullptr;
  options.cache = counting.get();
  std::string out;
  llvm::raw_string_ostream os(out);
  std::unique_ptr<ReportWriter> w = make_report_writer(ReportFormat::Json, os, targets);
  check_paths(paths, options, *w);
  w->finish();
  os.flush();
  return {out, counting ? counting->checked.load() : -1};
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  return out;
}

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("hipguard-file-cache-" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

}  // namespace

TEST(FileCache, SecondCheckReadsNothingAndReportsTheSame) {
  ASSERT_TRUE(exists(kApps)) << "the hipcc test programs are built with the tests";
  if (!exists(kRoot72 + "/.hipguard-root")) GTEST_SKIP() << "the ROCm 7.2 root is not built (scripts/rocm-root.sh)";
  TempDir tmp;
  fs::path files = tmp.path / "files", library = tmp.path / "rocblas" / "library";
  fs::create_directories(files);
  fs::create_directories(library);
  for (const char* app : {"vector_add_multi.hipfb", "big_lds_gfx90a.hipfb", "fill_gfx1100.hipfb"})
    fs::copy_file(kApps + "/" + app, files / app);
  const std::string tensile = kRoot72 + "/usr/lib/x86_64-linux-gnu/rocblas/5/library";
  size_t objects = 0, databases = 0;  // code object files, kept; Tensile .dat files, read each time
  for (const auto& e : fs::directory_iterator(tensile)) {
    std::string name = e.path().filename().string();
    if ((name.find("gfx942") == std::string::npos && name.find("gfx1100") == std::string::npos) ||
        name.find("Type_SS_") == std::string::npos)
      continue;
    fs::create_symlink(e.path(), library / name);
    ++(e.path().extension() == ".dat" ? databases : objects);
  }
  ASSERT_GT(objects, 4u);
  ASSERT_GT(databases, 0u);
  const std::vector<std::string> paths = {files.string(), library.parent_path().string()};
  const std::vector<TargetId> mi300x = {*parse_target("mi300x"), *parse_target("gfx1100")};
  const std::string dir = (tmp.path / "cache").string();
  fs::create_directories(dir);
  std::unique_ptr<FileCache> cache = file_cache(dir, program_identity());
  ASSERT_FALSE(program_identity().empty());

  auto [uncached, none] = check_json(paths, mi300x, nullptr);
  auto [first, checked_first] = check_json(paths, mi300x, cache.get());
  EXPECT_EQ(first, uncached);
  const int kept = static_cast<int>(3 + objects), unkept = static_cast<int>(databases);
  EXPECT_EQ(checked_first, kept + unkept);
  EXPECT_EQ(static_cast<int>(entries(dir).size()), kept);
  auto [second, checked_second] = check_json(paths, mi300x, cache.get());
  EXPECT_EQ(checked_second, unkept);
  EXPECT_EQ(second, uncached);

  // A file changed in place: it alone is read again, and its report is the new content's.
  fs::copy_file(kApps + "/dyn_lds_gfx90a.hipfb", files / "big_lds_gfx90a.hipfb", fs::copy_options::overwrite_existing);
  auto [changed_uncached, n0] = check_json(paths, mi300x, nullptr);
  EXPECT_NE(changed_uncached, uncached);
  auto [changed, checked_changed] = check_json(paths, mi300x, cache.get());
  EXPECT_EQ(checked_changed, 1 + unkept);
  EXPECT_EQ(changed, changed_uncached);

  // A damaged entry is checked again and replaced; the others are still used.
  std::vector<std::string> in_dir = entries(dir);
  std::sort(in_dir.begin(), in_dir.end());
  {
    std::fstream f(in_dir.front(), std::ios::in | std::ios::out | std::ios::binary);
    auto middle = static_cast<std::streamoff>(fs::file_size(in_dir.front()) / 2);
    f.seekg(middle);
    char c = static_cast<char>(f.get());
    f.seekp(middle);
    f.put(static_cast<char>(c ^ 0xff));
  }
  auto [repaired, checked_repaired] = check_json(paths, mi300x, cache.get());
  EXPECT_EQ(checked_repaired, 1 + unkept);
  EXPECT_EQ(repaired, changed_uncached);
  auto [after, checked_after] = check_json(paths, mi300x, cache.get());
  EXPECT_EQ(checked_after, unkept);

  // Other targets, which GPUs (no target), another hipguard build: not the entries kept.
  auto [gfx90a, checked_gfx90a] = check_json(paths, {*parse_target("gfx90a")}, cache.get());
  EXPECT_EQ(checked_gfx90a, kept + unkept);
  auto [structural, checked_structural] = check_json(paths, {}, cache.get());
  EXPECT_EQ(checked_structural, kept + unkept);
  EXPECT_EQ(check_json(paths, {}, cache.get()).first, structural);
  std::unique_ptr<FileCache> rebuilt = file_cache(dir, program_identity() + "x");
  EXPECT_EQ(check_json(paths, mi300x, rebuilt.get()).second, kept + unkept);
}

// Without an identity of the program, nothing is kept (a rebuilt hipguard must not be handed results).
TEST(FileCache, NothingKeptWithoutAProgramIdentity) {
  ASSERT_TRUE(exists(kApps)) << "the hipcc test programs are built with the tests";
  TempDir tmp;
  std::unique_ptr<FileCache> cache = file_cache(tmp.path.string(), "");
  const std::vector<TargetId> gfx90a = {*parse_target("gfx90a")};
  EXPECT_EQ(check_json({kApps + "/vector_add_multi.hipfb"}, gfx90a, cache.get()).second, 1);
  EXPECT_EQ(check_json({kApps + "/vector_add_multi.hipfb"}, gfx90a, cache.get()).second, 1);
  EXPECT_TRUE(entries(tmp.path.string()).empty());
}

// A result that may differ next time (HG105: a compressed bundle that did not decode, which running out
// of memory also gives; HG101) is not kept: the file is checked again each time.
TEST(FileCache, FailedDecodingIsNotKept) {
  ASSERT_TRUE(exists(kApps)) << "the hipcc test programs are built with the tests";
  TempDir tmp;
  hgtest::ByteVec ccob = hgtest::make_ccob(checks::read_bytes(kApps + "/vector_add_multi.hipfb"), 3, 1);
  ASSERT_GT(ccob.size(), 256u);
  ccob.resize(ccob.size() * 3 / 5);  // the payload ends before the bundle the header claims
  const std::string file = (tmp.path / "damaged.hipfb").string();
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(ccob.data()), ccob.size());
  const std::string dir = (tmp.path / "cache").string();
  fs::create_directories(dir);
  std::unique_ptr<FileCache> cache = file_cache(dir, program_identity());
  const std::vector<TargetId> gfx90a = {*parse_target("gfx90a")};
  auto [first, checked_first] = check_json({file}, gfx90a, cache.get());
  EXPECT_NE(first.find("HG105"), std::string::npos) << first;
  EXPECT_EQ(checked_first, 1);
  EXPECT_EQ(check_json({file}, gfx90a, cache.get()).second, 1);
  EXPECT_TRUE(entries(dir).empty());
}
