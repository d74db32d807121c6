// In-process micro-benchmarks of the core (Google Benchmark): figures, not tests.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>
#include <vector>

#include "runtime/guard.h"
#include "hipguard/check_paths.h"

using namespace hipguard;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

const std::string kCorpus = std::string(HIPGUARD_CORPUS_DIR) + "/aiter/";
const char* kRocsparse = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";

// The first bundle of rocSPARSE's .hip_fatbin (8 entries), copied out.
std::vector<uint8_t> rocsparse_bundle() {
  auto f = FileData::open(kRocsparse);
  if (!f) return {};
  Bytes d = f->bytes();
  std::string_view hay(reinterpret_cast<const char*>(d.data()), d.size());
  size_t pos = hay.find(kBundleMagic);
  if (pos == std::string_view::npos) return {};
  auto b = parse_bundle(d.subspan(pos));
  if (!b) return {};
  return std::vector<uint8_t>(d.data() + pos, d.data() + pos + b->encoded_size);
}

void BM_ParseBundle(benchmark::State& st) {
  auto v = rocsparse_bundle();
  if (v.empty()) return st.SkipWithError("librocsparse0 not installed");
  for (auto _ : st) benchmark::DoNotOptimize(parse_bundle(Bytes(v.data(), v.size())));
}
BENCHMARK(BM_ParseBundle);

void BM_ParseCodeObject(benchmark::State& st) {
  auto v = read_file(kCorpus + "gfx942_pa_pa_fp16_pertokenFp8_gqa16_1tg_4w_mtp_msk1.co");
  if (v.empty()) return st.SkipWithError("corpus not found");
  for (auto _ : st) benchmark::DoNotOptimize(parse_code_object(Bytes(v.data(), v.size())));
  st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(v.size()));
}
BENCHMARK(BM_ParseCodeObject);

void BM_SelectAndCheck(benchmark::State& st) {
  auto v = rocsparse_bundle();
  if (v.empty()) return st.SkipWithError("librocsparse0 not installed");
  std::vector<TargetId> t = {*parse_target("gfx90a:xnack-")};
  for (auto _ : st) benchmark::DoNotOptimize(check_image(Bytes(v.data(), v.size()), "b", t));
}
BENCHMARK(BM_SelectAndCheck);

void BM_SelectNoMatch(benchmark::State& st) {
  auto v = rocsparse_bundle();
  if (v.empty()) return st.SkipWithError("librocsparse0 not installed");
  std::vector<TargetId> t = {*parse_target("gfx942")};
  for (auto _ : st) benchmark::DoNotOptimize(check_image(Bytes(v.data(), v.size()), "b", t));
}
BENCHMARK(BM_SelectNoMatch);

void BM_ParseTarget(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(parse_target("mi300x:sramecc+:xnack-"));
}
BENCHMARK(BM_ParseTarget);

void BM_LaunchFastPathCheck(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(launch_needs_check(0));
}
BENCHMARK(BM_LaunchFastPathCheck);

}  // namespace

BENCHMARK_MAIN();
