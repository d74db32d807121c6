// The check cache's recordings (cache/report_codec.h): the reports of real inputs (hipcc 7 and 5
// programs, AITER's code objects, ROCm 6.4's and 7.2's libraries and Tensile files, which GPUs and
// named targets) replayed from their recording give the same JSON report, byte for byte, and record
// again to the same bytes; damaged recordings are refused whole.
#include <gtest/gtest.h>
#include <llvm/Support/xxhash.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cache/report_codec.h"
#include "check_util.h"
#include "hipguard/report.h"

using namespace hipguard;

namespace {

namespace fs = std::filesystem;
using checks::exists;
using checks::kApps;
using checks::kCorpus;

const std::string kRoot64 = HIPGUARD_ROCM_ROOT;
const std::string kRoot72 = HIPGUARD_ROCM72_ROOT;
const std::string kLibdir = "/usr/lib/x86_64-linux-gnu";

Bytes bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// Hands every event to both sinks (images copied: each sink takes its own).
class Tee : public FileSink {
 public:
  Tee(FileSink& a, FileSink& b) : a_(a), b_(b) {}
  void begin_file(const std::string& path) override { a_.begin_file(path), b_.begin_file(path); }
  void image(ImageReport&& img) override {
    ImageReport copy = img;
    a_.image(std::move(copy));
    b_.image(std::move(img));
  }
  void end_file(FileReport&& file) override {
    FileReport copy = file;
    a_.end_file(std::move(copy));
    b_.end_file(std::move(file));
  }
  void library(LibrarySummary&& library) override {
    LibrarySummary copy = library;
    a_.library(std::move(copy));
    b_.library(std::move(library));
  }

 private:
  FileSink &a_, &b_;
};

// Counts what it is handed.
struct Counting : FileSink {
  void begin_file(const std::string&) override { ++events; }
  void image(ImageReport&& img) override {
    ++events;
    for (const auto& c : img.code_objects) kernels += c.co.kernels.size(), ++code_objects;
    diagnostics += img.diagnostics.size();
  }
  void end_file(FileReport&& f) override { ++events, diagnostics += f.diagnostics.size(); }
  void library(LibrarySummary&&) override { ++events, ++libraries; }
  size_t events = 0, kernels = 0, code_objects = 0, diagnostics = 0, libraries = 0;
};

std::string json_from(const std::function<void(FileSink&)>& feed, const std::vector<TargetId>& targets) {
  std::string out;
  llvm::raw_string_ostream os(out);
  std::unique_ptr<ReportWriter> w = make_report_writer(ReportFormat::Json, os, targets);
  feed(*w);
  w->finish();
  os.flush();
  return out;
}

// Checks `paths` as `hipguard check` does (ForTargets) for each set of targets (none: which GPUs'
// structural check at full depth) and expects the replayed recording to write the same JSON report
// and to record again to the same bytes. Returns what the replays handed over.
Counting expect_replayed_as_checked(const std::vector<std::string>& paths) {
  Counting seen;
  for (const char* targets : {"", "gfx942 gfx90a:xnack+ gfx1100"}) {
    CheckPathsOptions options;
    std::string t = targets;
    for (size_t i = 0; i < t.size();) {
      size_t end = std::min(t.find(' ', i), t.size());
      options.targets.push_back(*parse_target(t.substr(i, end - i)));
      i = end + 1;
    }
    options.depth = options.targets.empty() ? Depth::Full : Depth::ForTargets;
    options.jobs = 2;
    RecordingSink recorder;
    std::string checked = json_from(
        [&](FileSink& writer) {
          Tee tee(writer, recorder);
          check_paths(paths, options, tee);
        },
        options.targets);
    std::string recording = recorder.finish();
    std::string replayed = json_from(
        [&](FileSink& writer) { ASSERT_TRUE(replay(bytes_of(recording), &writer)) << "targets: " << targets; },
        options.targets);
    EXPECT_EQ(replayed, checked) << "targets: " << targets;
    RecordingSink again;
    EXPECT_TRUE(replay(bytes_of(recording), &again));
    EXPECT_TRUE(again.finish() == recording) << "recorded again, targets: " << targets;
    EXPECT_TRUE(replay(bytes_of(recording), &seen));
  }
  return seen;
}

// A directory of symlinks to `files` named `dir` in a temporary directory: a kernel library of a few of a
// real one's files (check_paths follows symlinks to files).
std::string sample_library(const std::string& name, const std::vector<std::string>& files) {
  fs::path dir = fs::temp_directory_path() / ("hipguard-codec-" + std::to_string(getpid())) / name;
  fs::create_directories(dir);
  for (const auto& f : files) fs::create_symlink(f, dir / fs::path(f).filename());
  return dir.string();
}

// The first file of `dir` whose name holds every one of `parts`, or "" when none does.
std::string file_named(const std::string& dir, const std::vector<std::string>& parts) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& n : names)
    if (std::all_of(parts.begin(), parts.end(), [&](const std::string& p) { return n.find(p) != std::string::npos; }))
      return dir + "/" + n;
  return "";
}

// A recording of one file with `diagnostic` in it, and of `file`.
std::string recording_of(const FileReport& file) {
  RecordingSink r;
  r.begin_file(file.path);
  FileReport copy = file;
  r.end_file(std::move(copy));
  return r.finish();
}

// `recording` with its body changed by `edit` and its checksum made right again.
std::string edited(std::string recording, const std::function<void(std::string&)>& edit) {
  recording.resize(recording.size() - 8);
  edit(recording);
  uint64_t sum = llvm::xxHash64(recording);
  for (unsigned i = 0; i < 8; ++i) recording.push_back(static_cast<char>(sum >> (8 * i)));
  return recording;
}

}  // namespace

TEST(ReportCodec, HipccProgramsReplayAsRecorded) {
  ASSERT_TRUE(exists(kApps)) << "the hipcc test programs are built with the tests";
  Counting seen = expect_replayed_as_checked({kApps});
  EXPECT_GT(seen.kernels, 0u);
  EXPECT_GT(seen.diagnostics, 0u) << "the programs built to fail carry findings";
}

TEST(ReportCodec, CorpusReplaysAsRecorded) {
  if (!exists(kCorpus)) GTEST_SKIP() << "no corpus at " << kCorpus;
  Counting seen = expect_replayed_as_checked({kCorpus});
  EXPECT_GT(seen.kernels, 0u);
  EXPECT_GT(seen.libraries, 0u) << "AITER's hsa/<processor>/ directories are one kernel library";
}

// A fixed sample of every library and processor family: ROCm 6.4's rocBLAS and hipBLASLt (Tensile files
// for gfx90a, gfx1100, gfx1201) and rocFFT's fat binaries, ROCm 7.2's rocBLAS 5 (gfx942, gfx1100) and RCCL
// (one 1.19 GB compressed bundle). (librocblas.so's structural report is 300 MB of JSON: not here.)
TEST(ReportCodec, RocmLibrariesReplayAsRecorded) {
  if (!exists(kRoot64 + "/.hipguard-root") || !exists(kRoot72 + "/.hipguard-root"))
    GTEST_SKIP() << "the ROCm 6.4 and 7.2 roots are not built (scripts/rocm-root.sh)";
  struct Sample {
    std::string name, dir;
    std::vector<std::string> processors;
  };
  std::vector<std::string> paths;
  for (const Sample& s :
       std::vector<Sample>{{"rocblas-4", kRoot64 + kLibdir + "/rocblas/4.4.1/library", {"gfx90a", "gfx1100"}},
                           {"hipblaslt", kRoot64 + kLibdir + "/hipblaslt/library", {"gfx90a", "gfx1201"}},
                           {"rocblas-5", kRoot72 + kLibdir + "/rocblas/5/library", {"gfx942", "gfx1100"}}}) {
    std::vector<std::string> files;
    for (const auto& proc : s.processors) {
      for (const char* ext : {".co", ".hsaco"})
        if (std::string f = file_named(s.dir, {proc, ext}); !f.empty()) files.push_back(f);
      EXPECT_TRUE(std::any_of(files.begin(), files.end(),
                              [&](const std::string& f) { return f.find(proc) != std::string::npos; }))
          << "no " << proc << " file in " << s.dir;
    }
    paths.push_back(sample_library(s.name + "/library", files));
  }
  paths.push_back(kRoot72 + kLibdir + "/librccl.so.1.0");
  paths.push_back(kRoot64 + kLibdir + "/librocfft.so.0.1");
  Counting seen = expect_replayed_as_checked(paths);
  fs::remove_all(fs::path(paths[0]).parent_path().parent_path());
  EXPECT_GT(seen.kernels, 1000u);
  EXPECT_GE(seen.libraries, 3u);
}

// Values no real input has (negative entry offsets, numbers at their types' limits, names that are not
// UTF-8, the last value of each enumeration) come back exactly.
TEST(ReportCodec, ValuesAtTheirLimitsReplayExactly) {
  ImageReport img;
  img.origin = std::string("lib\xff\x00x.so", 9);
  img.kind = PayloadKind::Unknown;
  img.file_offset = UINT64_MAX;
  CodeObjectSummary& c = img.code_objects.emplace_back();
  c.co.processor = find_processor("gfx942");
  c.co.mach = c.co.processor->mach;
  c.co.target = *parse_target_id("gfx942:sramecc+:xnack-");
  c.co.dropped_severity = Severity::Error;
  for (int64_t offset : {INT64_MIN, int64_t(-4096), int64_t(-1), int64_t(0), INT64_MAX}) {
    KernelInfo& k = c.co.kernels.emplace_back();
    k.name = "k\x80";
    k.descriptor.emplace().kernel_code_entry_byte_offset = offset;
    k.descriptor->kernel_code_properties = UINT16_MAX;
    k.reqd_workgroup_size = std::array<uint64_t, 3>{1, UINT64_MAX, 0};
  }
  c.co.kernels[1].agpr_count = 0;
  TargetVerdict& v = img.verdicts.emplace_back();
  v.target = c.co.target;
  v.selection = Selection::None;
  img.diagnostics.push_back(make_diagnostic(static_cast<Code>(all_codes().size() - 1), "f", "m", "x"));
  img.diagnostics.back().limit = UINT64_MAX;
  RecordingSink r;
  ImageReport copy = img;
  r.image(std::move(copy));
  std::string recording = r.finish();
  struct Keep : FileSink {
    void begin_file(const std::string&) override {}
    void image(ImageReport&& i) override { images.push_back(std::move(i)); }
    void end_file(FileReport&&) override {}
    std::vector<ImageReport> images;
  } kept;
  ASSERT_TRUE(replay(bytes_of(recording), &kept));
  ASSERT_EQ(kept.images.size(), 1u);
  const ImageReport& back = kept.images[0];
  EXPECT_EQ(back.origin, img.origin);
  EXPECT_EQ(back.file_offset, UINT64_MAX);
  EXPECT_EQ(back.kind, PayloadKind::Unknown);
  ASSERT_EQ(back.code_objects.size(), 1u);
  const CodeObject& co = back.code_objects[0].co;
  EXPECT_EQ(co.processor, c.co.processor);
  EXPECT_EQ(co.target, c.co.target);
  EXPECT_EQ(co.dropped_severity, Severity::Error);
  ASSERT_EQ(co.kernels.size(), c.co.kernels.size());
  for (size_t i = 0; i < co.kernels.size(); ++i) {
    EXPECT_EQ(co.kernels[i].name, "k\x80");
    ASSERT_TRUE(co.kernels[i].descriptor);
    EXPECT_EQ(co.kernels[i].descriptor->kernel_code_entry_byte_offset,
              c.co.kernels[i].descriptor->kernel_code_entry_byte_offset);
    EXPECT_EQ(co.kernels[i].descriptor->kernel_code_properties, UINT16_MAX);
    EXPECT_EQ(co.kernels[i].reqd_workgroup_size, c.co.kernels[i].reqd_workgroup_size);
    EXPECT_EQ(co.kernels[i].agpr_count, c.co.kernels[i].agpr_count);
  }
  ASSERT_EQ(back.verdicts.size(), 1u);
  EXPECT_EQ(back.verdicts[0].selection, Selection::None);
  EXPECT_EQ(back.verdicts[0].target, v.target);
  ASSERT_EQ(back.diagnostics.size(), 1u);
  EXPECT_EQ(back.diagnostics[0].code, img.diagnostics[0].code);
  EXPECT_EQ(back.diagnostics[0].limit, UINT64_MAX);
  EXPECT_FALSE(back.diagnostics[0].value);
}

TEST(ReportCodec, DamagedRecordingsAreRefusedWhole) {
  FileReport file;
  file.path = "a.out";
  file.hip = true;
  file.diagnostics.push_back(make_diagnostic(Code::kLdsOverLimit, "a.out", "LDS", "less"));
  file.diagnostics.back().value = 70000;
  std::string good = recording_of(file);
  Counting nothing;
  ASSERT_TRUE(replay(bytes_of(good), &nothing));
  EXPECT_EQ(nothing.events, 2u);
  auto refused = [](const std::string& r) {
    Counting sink;
    bool ok = static_cast<bool>(replay(bytes_of(r), &sink));
    return !ok && sink.events == 0;
  };
  for (size_t n = 0; n < good.size(); ++n) EXPECT_TRUE(refused(good.substr(0, n))) << "cut at " << n;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string flipped = good;
    flipped[i] ^= 0x10;
    EXPECT_TRUE(refused(flipped)) << "byte " << i << " flipped";
  }
  // Checksummed, and still refused: another version, an unknown event, a code not in diagnostics.def,
  // a severity out of range, bytes after the end.
  EXPECT_TRUE(refused(edited(good, [](std::string& b) { b[4] = 2; })));
  EXPECT_TRUE(refused(edited(good, [](std::string& b) { b[8] = 9; })));
  FileReport bad = file;
  bad.diagnostics[0].code = static_cast<Code>(all_codes().size());
  EXPECT_TRUE(refused(recording_of(bad)));
  bad = file;
  bad.diagnostics[0].severity = static_cast<Severity>(3);
  EXPECT_TRUE(refused(recording_of(bad)));
  EXPECT_TRUE(refused(edited(good, [](std::string& b) { b.push_back(0); })));
  EXPECT_TRUE(refused(edited(good, [](std::string& b) { b.insert(b.size() - 1, 1, '\0'); })));
}

TEST(ReportCodec, MembersNestedBeyondTheLimitAreRefused) {
  auto nested = [](unsigned depth) {
    FileReport f;
    f.path = "a.deb";
    for (unsigned i = 0; i < depth; ++i) {
      FileReport outer;
      outer.path = "a.deb";
      outer.members.push_back(std::move(f));
      f = std::move(outer);
    }
    return recording_of(f);
  };
  EXPECT_TRUE(replay(bytes_of(nested(kMaxRecordedNesting - 1)), nullptr));
  EXPECT_FALSE(replay(bytes_of(nested(kMaxRecordedNesting)), nullptr));
}
