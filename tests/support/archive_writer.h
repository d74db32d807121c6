// In-memory archives written with libarchive's writer: the .deb, .tar.*, .zip and .a inputs of the tests and fuzz
// seeds.
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

}  // namespace hgtest
