// In-memory archives written with libarchive's writer: the .deb, .tar.*, .zip, .a and container-image inputs of the
// tests and fuzz seeds.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hgtest {

using ArchiveMembers = std::vector<std::pair<std::string, std::string>>;  // name, bytes

// An archive of `members` (regular files, mode 0644): `format` ARCHIVE_FORMAT_*
// (ARCHIVE_FORMAT_AR_GNU writes GNU ar, long names in "//"), `filter`
// ARCHIVE_FILTER_*. libarchive's first refusal, if any, goes to *error.
std::string write_archive(int format, int filter, const ArchiveMembers& members, std::string* error = nullptr);

// A tar entry of any kind: a regular file (`bytes`), a directory (AE_IFDIR), a symlink (AE_IFLNK to
// `link`), or a hard link to an earlier entry (`hardlink` set; no bytes of its own).
struct TarEntry {
  std::string name, bytes;
  unsigned type = 0100000;  // AE_IFREG
  std::string link, hardlink;
};
// A pax tar of `entries` in order, `filter` ARCHIVE_FILTER_*.
std::string write_tar(const std::vector<TarEntry>& entries, int filter = 0, std::string* error = nullptr);

// The SHA-256 of `bytes` in lowercase hex, as container images name their blobs (LLVM's, not the
// Nettle one hipguard checks digests with: the tests' digests do not come from the code they test).
std::string sha256_hex(const std::string& bytes);

}  // namespace hgtest
