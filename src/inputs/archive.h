// The CLI's ArchiveReader (libarchive): .deb, .whl/.zip, .tar(.gz/.xz/.zst/.bz2) and .a read in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "hipguard/inputs.h"
#include "hipguard/runtime_version.h"

namespace hipguard {

// Budgets of one archive named on the command line (docs/limits.md). Over
// one: HG111 naming the member, never an allocation of what a header claims.
inline constexpr uint64_t kMaxArchiveMemberBytes = 4ull << 30;  // one member read (librocsolver.so.0: 1.9 GB)
inline constexpr uint64_t kMaxArchiveBytes = 16ull << 30;  // member bytes read or decompressed, all levels together
inline constexpr unsigned kMaxArchiveNesting = 3;          // archives inside the archive (a .deb's data.tar is one)

struct ArchiveLimits {
  uint64_t member_bytes = kMaxArchiveMemberBytes;
  uint64_t total_bytes = kMaxArchiveBytes;
  unsigned nesting = kMaxArchiveNesting;
};

// The image a multi-platform container image index is read for (OCI image-index.md "platform";
// `variant` "" matches any).
struct Platform {
  std::string os = "linux", architecture = "amd64", variant;
  // "os/architecture[/variant]" ("linux/arm64/v8"), or nullopt.
  static std::optional<Platform> parse(std::string_view s);
  std::string str() const { return os + "/" + architecture + (variant.empty() ? "" : "/" + variant); }
};

// A reader with `limits` (tests shrink them to hit each one cheaply) that picks `platform`'s image, for a
// check whose code objects `runtime` selects (--runtime; null: the newest, default_runtime()).
std::unique_ptr<ArchiveReader> make_archive_reader(const ArchiveLimits& limits = {}, const Platform& platform = {},
                                                   const RuntimeInfo* runtime = nullptr);
// The reader with the documented limits, shared (it keeps no state between reads).
const ArchiveReader& archive_reader();

}  // namespace hipguard
