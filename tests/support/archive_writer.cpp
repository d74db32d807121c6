// In-memory archives written with libarchive's writer, and the SHA-256 that names an image's blobs
// (archive_writer.h).
#include "archive_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/SHA256.h>

namespace hgtest {

namespace {

// `entries` written in `format` (ARCHIVE_FORMAT_AR_GNU: GNU ar) through `filter`.
std::string write_entries(int format, int filter, const std::vector<TarEntry>& entries, std::string* error) {
  std::string out;
  struct archive* a = archive_write_new();
  // Below `least` (ARCHIVE_OK, or ARCHIVE_WARN where libarchive may fall back to an external program).
  auto check = [&](int status, int least = ARCHIVE_OK) {
    if (status < least && error && error->empty()) *error = archive_error_string(a) ? archive_error_string(a) : "?";
  };
  if (format == ARCHIVE_FORMAT_AR_GNU) check(archive_write_set_format_ar_svr4(a));
  else check(archive_write_set_format(a, format));
  if (filter != ARCHIVE_FILTER_NONE) check(archive_write_add_filter(a, filter), ARCHIVE_WARN);
  archive_write_set_bytes_in_last_block(a, 1);
  auto write = [](struct archive*, void* o, const void* buf, size_t n) -> la_ssize_t {
    static_cast<std::string*>(o)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  };
  check(archive_write_open(a, &out, nullptr, write, nullptr));
  for (const TarEntry& t : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.name.c_str());
    archive_entry_set_filetype(e, t.type);
    archive_entry_set_perm(e, t.type == AE_IFDIR ? 0755 : 0644);
    if (!t.link.empty()) archive_entry_set_symlink(e, t.link.c_str());
    if (!t.hardlink.empty()) archive_entry_set_hardlink(e, t.hardlink.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(t.bytes.size()));
    check(archive_write_header(a, e));
    if (!t.bytes.empty()) archive_write_data(a, t.bytes.data(), t.bytes.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

}  // namespace

std::string write_archive(int format, int filter, const ArchiveMembers& members, std::string* error) {
  std::vector<TarEntry> entries;
  for (const auto& [name, bytes] : members) entries.push_back({name, bytes});
  return write_entries(format, filter, entries, error);
}

std::string write_tar(const std::vector<TarEntry>& entries, int filter, std::string* error) {
  return write_entries(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, filter, entries, error);
}

std::string sha256_hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b :
       llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())))
    hex += digits[b >> 4], hex += digits[b & 15];
  return hex;
}

}  // namespace hgtest
