// Archives read in place (src/inputs/archive.cpp): the libarchive walk on arbitrary bytes, each member
// handed over checked with check_image, and every other member handed over as a side file (as kernel
// databases are); damage and budgets must be diagnostics, never a crash.
#include <string>
#include <vector>

#include "inputs/archive.h"
#include "fuzz_common.h"
#include "hipguard/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Members of at most 8 MiB, 32 MiB read in all (the real limits, shrunk to fuzzing's scale); on top of
  // them, what an xz header can make liblzma allocate: its dictionary, up to LZMA2's 1.5 GiB (libarchive
  // sets liblzma no memory limit; docs/limits.md).
  static const hipguard::ArchiveLimits limits{8ull << 20, 32ull << 20, hipguard::kMaxArchiveNesting};
  static const auto reader = hipguard::make_archive_reader(limits);
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor, (3ull << 29) + 2 * limits.member_bytes);
  static const std::vector<hipguard::TargetId> targets = {*hipguard::parse_target_id("gfx942")};
  hipguard::Bytes bytes(data, size);
  if (!reader->is_archive(bytes)) return 0;
  const std::string path = "fuzz.tar";
  size_t members = 0;
  auto member = [&](const std::string& name, hipguard::Bytes b, const hipguard::FileData&,
                    const hipguard::Diagnostic* problem) {
    ++members;
    HG_FUZZ_CHECK(name.rfind(path + "!", 0) == 0);
    HG_FUZZ_CHECK(problem ? b.empty() : true);
    HG_FUZZ_CHECK(b.size() <= limits.member_bytes);
    if (problem) return hgfuzz::check_diagnostic(*problem);
    hipguard::ImageReport r = hipguard::check_image(b, name, targets);
    for (const auto& d : r.diagnostics) hgfuzz::check_diagnostic(d);
  };
  // Every member without GPU code: alternately its bytes and its name only.
  size_t side_members = 0;
  hipguard::ArchiveReader::SideFiles side;
  side.wants = [&](const std::string& name) {
    HG_FUZZ_CHECK(name.rfind(path + "!", 0) == 0);
    return ++side_members % 2 ? hipguard::ArchiveReader::Want::Bytes : hipguard::ArchiveReader::Want::Name;
  };
  side.take = [&](const std::string& name, hipguard::Bytes b, const hipguard::FileData&,
                  const hipguard::Diagnostic* problem) {
    HG_FUZZ_CHECK(name.rfind(path + "!", 0) == 0);
    HG_FUZZ_CHECK(b.size() <= limits.member_bytes && (problem ? b.empty() : true));
    if (problem) hgfuzz::check_diagnostic(*problem);
  };
  hipguard::ArchiveReader::Result result = reader->read(bytes, path, member, nullptr, &side);
  for (const auto& d : result.diagnostics) hgfuzz::check_diagnostic(d);
  if (!result.archive) HG_FUZZ_CHECK(members == 0 && result.diagnostics.empty());
  return 0;
}
