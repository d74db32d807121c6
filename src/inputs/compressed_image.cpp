// A container image saved compressed (`docker save IMAGE | gzip`, zstd, xz): its tar decompressed to
// a temporary file and read there as the image it holds. A manifest names the layers in an order the
// tar need not follow, so an image is read at random, which a compressed stream cannot be.
#include <archive.h>
#include <archive_entry.h>

#include <array>
#include <cctype>
#include <exception>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include "inputs/archive_source.h"
#include "inputs/image.h"
#include "inputs/image_overlay.h"

namespace hipguard {
namespace {

// The most a compressed image's tar may decompress to, as a multiple of its compressed size (gzip and
// zstd shrink a tar of programs and libraries 2-5x): a bomb fills no more of the temporary directory.
constexpr uint64_t kImageExpansion = 32;

// Whether a member name is one an image's tar starts with: OCI image-layout.md's files
// ("oci-layout", "index.json", "blobs/..."), docker-save's ("manifest.json", "repositories",
// "<64 hex digits>", "<64 hex digits>.json" or ".tar"), normalized (Overlay::normalize: no "./" before
// it, as tar -C DIR . writes, nor "/" after a directory).
bool image_member(std::string_view name) {
  for (std::string_view top : {"oci-layout", "index.json", "manifest.json", "repositories"})
    if (name == top) return true;
  if (name.substr(0, 6) == "blobs/" || name == "blobs") return true;
  if (name.size() < 64) return false;
  for (char c : name.substr(0, 64))
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  std::string_view rest = name.substr(64);
  return rest.empty() || rest[0] == '/' || rest == ".json" || rest == ".tar";
}

// Whether `data` is a compressed tar whose first member is an image's, "./" aside (what reading it
// costs: the stream up to that member's header).
bool starts_like_image(Bytes data, const FileData* source) {
  MappedChunks chunks{};  // before the reader: it outlives the archive that reads it
  Reader r(false);
  struct archive_entry* e = nullptr;
  if (open_source(r.a, data, source, &chunks) != ARCHIVE_OK) return false;
  for (int i = 0; i < 4 && archive_read_next_header(r.a, &e) == ARCHIVE_OK; ++i) {
    if ((archive_format(r.a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR) return false;
    std::optional<std::string> name = Overlay::normalize(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    if (!name) return false;                         // leaves the tar's root: no image's
    if (!name->empty()) return image_member(*name);  // else "./" itself: the next one tells
  }
  return false;
}

// The decompressed stream in a temporary file, mapped; nullopt when no temporary file can be
// written, the stream is damaged or it decompresses to more than `limit` bytes (then the walk
// reads it and says so).
std::optional<FileData> decompressed(Bytes data, const FileData* source, uint64_t limit) {
  MappedChunks chunks{};
  Reader r(true, /*stream_only=*/true);
  struct archive_entry* e = nullptr;
  if (open_source(r.a, data, source, &chunks) != ARCHIVE_OK || archive_read_next_header(r.a, &e) != ARCHIVE_OK)
    return std::nullopt;
  Result<SpillFile> file = SpillFile::create("hipguard-image");
  if (!file) return std::nullopt;
  std::vector<uint8_t> block;
  try {
    block.resize(1 << 20);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (;;) {
    la_ssize_t n = archive_read_data(r.a, block.data(), block.size());
    if (n < 0 || file->size() + static_cast<uint64_t>(n) > limit) return std::nullopt;
    if (n == 0) break;
    if (!file->append(Bytes(block.data(), static_cast<size_t>(n)))) return std::nullopt;
  }
  if (source) source->release(data);
  Result<FileData> mapped = file->map();
  if (!mapped) return std::nullopt;
  return std::move(*mapped);
}

}  // namespace

std::optional<ArchiveReader::Result> read_compressed_image(Bytes data, const std::string& path, const ImageReading& how,
                                                           const ArchiveReader::Member& member) {
  if (!compressed_magic(data) || !starts_like_image(data, how.source)) return std::nullopt;
  std::optional<FileData> tar = decompressed(data, how.source, kImageExpansion * data.size());
  if (!tar) return std::nullopt;
  ImageReading plain = how;
  plain.source = &*tar;
  return read_image_archive(tar->bytes(), path, plain, member);
}

}  // namespace hipguard
