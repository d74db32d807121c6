// Container images read in place: an OCI image layout directory, an OCI archive and a docker-save
// archive; each image's layers read top first, so that what a layer removes or replaces (OCI image-spec
// layer.md: whiteouts, opaque whiteouts, a file over a directory) is never handed over from the layers
// below, and every other file of the image is, as an archive member "IMAGE!path".
#include "inputs/image.h"

#include <archive.h>
#include <archive_entry.h>
#include <nettle/sha2.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inputs/archive_walk.h"
#include "inputs/image_index.h"

namespace hipguard {
namespace {

constexpr std::string_view kWhiteout = ".wh.", kOpaque = ".wh..wh..opq";

// A tar's regular members, in place in the mapped tar (libarchive hands an uncompressed tar's member
// over as one block of the buffer it reads), and its symlinks, followed once inside the tar
// (docker-save: "<id>/layer.tar -> ../<hex>.tar").
class TarBlobs {
 public:
  // False: not a tar that libarchive reads.
  bool index(Bytes tar) {
    struct archive* a = archive_read_new();
    archive_read_support_format_tar(a);
    bool ok = archive_read_open_memory(a, tar.data(), tar.size()) == ARCHIVE_OK;
    struct archive_entry* e = nullptr;
    while (ok && archive_read_next_header(a, &e) == ARCHIVE_OK) add(a, e, tar);
    archive_read_free(a);
    return ok;
  }
  bool has(const std::string& name) const { return files_.count(name) || links_.count(name); }
  std::optional<Bytes> get(const std::string& name) const {
    auto link = links_.find(name);
    auto file = files_.find(link == links_.end() ? name : link->second);
    if (file == files_.end()) return std::nullopt;
    return file->second;
  }

 private:
  void add(struct archive* a, struct archive_entry* e, Bytes tar) {
    std::string name = clean(archive_entry_pathname(e));
    if (archive_entry_filetype(e) == AE_IFLNK && archive_entry_symlink(e)) {
      std::string dir = name.substr(0, name.rfind('/') + 1);  // "" at the top
      links_[name] = resolve(dir, archive_entry_symlink(e));
      return;
    }
    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) return;
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    auto declared = static_cast<uint64_t>(std::max<la_int64_t>(archive_entry_size(e), 0));
    if (declared == 0) return void(files_[name] = Bytes());
    if (archive_read_data_block(a, &block, &size, &offset) != ARCHIVE_OK || offset != 0 || size != declared) return;
    const auto* p = static_cast<const uint8_t*>(block);
    if (p < tar.data() || p + size > tar.data() + tar.size()) return;  // not in place: as if missing
    files_[name] = Bytes(p, size);
  }
  static std::string clean(const char* n) {
    std::string_view s(n ? n : "");
    while (s.substr(0, 2) == "./") s.remove_prefix(2);
    return std::string(s);
  }
  // `target` from the directory `dir`; ".." at the top stays at the top.
  static std::string resolve(const std::string& dir, const std::string& target) {
    std::vector<std::string> parts;
    std::string path = !target.empty() && target[0] == '/' ? target : dir + target;
    size_t at = 0;
    while (at <= path.size()) {
      size_t end = std::min(path.find('/', at), path.size());
      std::string part = path.substr(at, end - at);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      at = end + 1;
    }
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
    return out;
  }

  std::unordered_map<std::string, Bytes> files_;
  std::unordered_map<std::string, std::string> links_;
};

// What the layers above the one being read hide below them (OCI layer.md "Whiteouts"): paths
// whited out or replaced by a non-directory (and all below them), opaque directories (all below
// them), and directories (a lower file of that name). A layer's own entries are never hidden by
// what the same layer hides.
class Overlay {
 public:
  // Whether an entry of the current layer is a file of the image; records what it hides below.
  bool visible(const std::string& raw, unsigned filetype) {
    std::optional<std::string> path = normalize(raw);
    if (!path) return outside.push_back(raw), false;
    size_t slash = path->rfind('/');
    std::string dir = slash == std::string::npos ? "" : path->substr(0, slash);
    std::string base = path->substr(slash + 1);
    if (base == kOpaque) return layer_opaque_.push_back(dir), false;
    if (base.rfind(kWhiteout, 0) == 0) {
      std::string target = (dir.empty() ? "" : dir + "/") + base.substr(kWhiteout.size());
      whiteouts_.emplace(target, false);
      return layer_gone_.push_back(std::move(target)), false;
    }
    if (hidden(*path) || (filetype != AE_IFDIR && dirs_.count(*path))) return false;
    (filetype == AE_IFDIR ? layer_dirs_ : layer_gone_).push_back(*path);
    return true;
  }
  // The layer is read: what it hides applies to the layers below it.
  void end_layer() {
    gone_.insert(layer_gone_.begin(), layer_gone_.end());
    opaque_.insert(layer_opaque_.begin(), layer_opaque_.end());
    dirs_.insert(layer_dirs_.begin(), layer_dirs_.end());
    layer_gone_.clear();
    layer_opaque_.clear();
    layer_dirs_.clear();
  }
  // Whiteouts that hid nothing in the layers read so far, sorted.
  std::vector<std::string> unmatched_whiteouts() const {
    std::vector<std::string> out;
    for (const auto& [path, matched] : whiteouts_)
      if (!matched) out.push_back(path);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> outside;  // entries of the current layer whose path leaves the image

 private:
  // "./usr//lib/" -> "usr/lib"; nullopt for a path with "..".
  static std::optional<std::string> normalize(const std::string& raw) {
    std::string out;
    size_t at = 0;
    while (at <= raw.size()) {
      size_t end = std::min(raw.find('/', at), raw.size());
      std::string_view part(raw.data() + at, end - at);
      if (part == "..") return std::nullopt;
      if (!part.empty() && part != ".") out += (out.empty() ? "" : "/") + std::string(part);
      at = end + 1;
    }
    return out;
  }
  // Whether an upper layer whited out or replaced `path` or a directory above it, or made a
  // directory above it opaque.
  bool hidden(const std::string& path) {
    if (path.empty() || opaque_.count("")) return !path.empty();
    std::string_view p(path);
    for (bool self = true;; self = false) {
      std::string prefix(p);
      if (gone_.count(prefix)) {
        if (auto w = whiteouts_.find(prefix); w != whiteouts_.end()) w->second = true;
        return true;
      }
      if (!self && opaque_.count(prefix)) return true;
      size_t slash = p.rfind('/');
      if (slash == std::string_view::npos) return false;
      p = p.substr(0, slash);
    }
  }

  std::unordered_set<std::string> gone_, opaque_;
  std::unordered_set<std::string> dirs_;  // directories of upper layers: a lower file there is replaced
  std::vector<std::string> layer_gone_, layer_opaque_, layer_dirs_;
  std::unordered_map<std::string, bool> whiteouts_;  // path -> it hid something below
};

// "sha256:<hex>" of `bytes`.
std::string sha256_digest(Bytes bytes) {
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, bytes.size(), bytes.data());
  uint8_t hash[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof hash, hash);
  static const char digits[] = "0123456789abcdef";
  std::string s = "sha256:";
  for (uint8_t b : hash) s += digits[b >> 4], s += digits[b & 15];
  return s;
}

bool compressed(Bytes b) {
  return (b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b) ||
         (b.size() >= 4 && std::memcmp(b.data(), "\x28\xb5\x2f\xfd", 4) == 0);
}

// Reads the images of one store into the members and diagnostics of one Result.
class ImageWalk {
 public:
  ImageWalk(const BlobSource& blobs, const std::string& path, const ArchiveLimits& limits,
            const ArchiveReader::Member& member)
      : blobs_(blobs), path_(path), limits_(limits), member_(member) {}

  ArchiveReader::Result read(const ImageList& list) {
    result_.archive = true;
    for (const auto& p : list.problems) say(code::kUnreadableImage, p, "pull or save the image again");
    for (const auto& image : list.images) read_image(image);
    return std::move(result_);
  }

 private:
  void read_image(const ImageDescription& image) {
    Overlay overlay;
    std::string prefix = path_ + "!" + (image.name.empty() ? "" : image.name + "!");
    for (size_t i = image.layers.size(); i-- > 0;) {
      const ImageLayer& layer = image.layers[i];
      std::string what = (image.name.empty() ? "" : image.name + ", ") + "layer " + std::to_string(i + 1) + " of " +
                         std::to_string(image.layers.size()) + " (" +
                         (layer.digest.empty() ? layer.blob : layer.digest.substr(0, 19)) + ")";
      read_layer(layer, what, prefix, overlay);
    }
    std::vector<std::string> unmatched = overlay.unmatched_whiteouts();
    if (!unmatched.empty())
      say(code::kWhiteoutOfNothing,
          std::to_string(unmatched.size()) +
              " whiteout(s) remove a path no lower layer has, the first: " + unmatched.front(),
          "nothing to fix for the GPU check; the image builder wrote a whiteout for a path it did not find");
  }

  void read_layer(const ImageLayer& layer, const std::string& what, const std::string& prefix, Overlay& overlay) {
    std::optional<Bytes> blob = blobs_(layer.blob);
    if (!blob)
      return say(code::kUnreadableImage, what + ": the image has no such blob; its files were not checked",
                 "pull or save the image again");
    if (!digest_matches(layer, *blob, what)) return;
    EntryFilter filter = [&](const std::string& name, unsigned type, bool) { return overlay.visible(name, type); };
    ArchiveReader::Result r = walk_archive(*blob, path_, ArchiveWalk{&limits_, prefix, &filter, &total_}, member_);
    if (!r.archive)
      say(code::kUnreadableImage, what + ": not a tar, gzip or zstd layer; its files were not checked",
          "pull or save the image again");
    for (auto& d : r.diagnostics) {
      // The walk names the layer's stream after the image; the layer's name says more.
      if (d.message.rfind(path_ + ": ", 0) == 0) d.message.erase(0, path_.size() + 2);
      d.message = what + ": " + d.message;
      result_.diagnostics.push_back(std::move(d));
    }
    for (const auto& name : overlay.outside)
      say(code::kImagePathOutside, what + ": member '" + name + "' leaves the image; it was not checked", "");
    overlay.outside.clear();
    overlay.end_layer();
  }

  // The blob's sha256 against its name's digest, or (a docker-save layer named otherwise, stored
  // uncompressed) against its diff ID. A blob that does not match is not read.
  bool digest_matches(const ImageLayer& layer, Bytes blob, const std::string& what) {
    const std::string& expected = !layer.digest.empty() ? layer.digest : compressed(blob) ? "" : layer.diff_id;
    if (!is_sha256_digest(expected)) return true;
    std::string actual = sha256_digest(blob);
    if (actual == expected) return true;
    say(code::kImageDigestMismatch,
        what + ": its sha256 is " + actual + ", the manifest says " + expected + "; its files were not checked", "");
    return false;
  }

  void say(std::string_view code, std::string message, std::string fix) {
    result_.diagnostics.push_back(make_diagnostic(code, path_, std::move(message), std::move(fix)));
  }

  const BlobSource& blobs_;
  const std::string& path_;
  const ArchiveLimits& limits_;
  const ArchiveReader::Member& member_;
  ArchiveReader::Result result_;
  uint64_t total_ = 0;  // member bytes read from all layers (ArchiveLimits::total_bytes)
};

bool starts_like_tar(Bytes b) { return b.size() >= 262 && std::memcmp(b.data() + 257, "ustar", 5) == 0; }

bool is_regular(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

bool is_image_layout(const std::string& dir) {
  return is_regular(dir + "/oci-layout") && is_regular(dir + "/index.json");
}

std::optional<ArchiveReader::Result> read_image_archive(Bytes tar, const std::string& path, const ImageReading& how,
                                                        const ArchiveReader::Member& member) {
  if (!starts_like_tar(tar)) return std::nullopt;
  TarBlobs tar_blobs;
  bool oci = false, docker = false;
  if (!tar_blobs.index(tar)) return std::nullopt;
  oci = tar_blobs.has("oci-layout") && tar_blobs.has("index.json");
  docker = !oci && tar_blobs.has("manifest.json");
  if (!oci && !docker) return std::nullopt;
  BlobSource blobs = [&](const std::string& name) { return tar_blobs.get(name); };
  ImageList list = oci ? read_oci_index(blobs, how.platform) : read_docker_manifest(blobs);
  if (docker && !list.recognized) return std::nullopt;  // a manifest.json of another kind: an ordinary tar
  return ImageWalk(blobs, path, how.limits, member).read(list);
}

ArchiveReader::Result read_image_layout(const std::string& dir, const ImageReading& how,
                                        const ArchiveReader::Member& member) {
  std::deque<FileData> open;  // every blob stays mapped while the image is read
  BlobSource blobs = [&](const std::string& name) -> std::optional<Bytes> {
    // Only the names the documents lead to, built from digests (image_index.cpp): nothing else is opened.
    if (name != "index.json" && !(name.rfind("blobs/sha256/", 0) == 0 && is_sha256_digest("sha256:" + name.substr(13))))
      return std::nullopt;
    Result<FileData> file = FileData::open(dir + "/" + name, kCliMapAbove);
    if (!file) return std::nullopt;
    open.push_back(std::move(*file));
    return open.back().bytes();
  };
  std::string name = dir;  // "pytorch-oci/" names its files "pytorch-oci!path"
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  return ImageWalk(blobs, name, how.limits, member).read(read_oci_index(blobs, how.platform));
}

}  // namespace hipguard
