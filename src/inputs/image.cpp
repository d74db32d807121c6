// Container images read in place: an OCI image layout directory, an OCI archive and a docker-save
// archive; each image's layers read top first through the archive walk, so that what a layer removes
// or replaces (image_overlay.h) is never handed over from the layers below, and every other file of
// the image is, as an archive member "IMAGE!path". Then the image as one machine: the program its
// config starts, with what it loads found in the image (image_tree.h) as its dynamic loader finds it.
#include "inputs/image.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "inputs/archive_walk.h"
#include "inputs/image_index.h"
#include "inputs/image_overlay.h"
#include "inputs/image_tree.h"

namespace hipguard {
namespace {

constexpr uint64_t kLayerExpansion = 100;  // a layer may decompress to this many times its blob (real: 2-5x)
// The PATH a container runs with when its config sets none (moby oci/defaults.go DefaultPathEnv).
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A tar's regular members, in place in the mapped tar (libarchive hands an uncompressed tar's member
// over as one block of the buffer it reads), and its symlinks, followed once inside the tar
// (docker-save: "<id>/layer.tar -> ../<hex>.tar"). A store tarred under one directory of its own
// ("img/oci-layout") is read from inside it.
class TarBlobs {
 public:
  // False: not a tar libarchive reads to its end.
  bool index(Bytes tar) {
    std::unique_ptr<struct archive, int (*)(struct archive*)> a(archive_read_new(), archive_read_free);
    archive_read_support_format_tar(a.get());
    if (archive_read_open_memory(a.get(), tar.data(), tar.size()) != ARCHIVE_OK) return false;
    struct archive_entry* e = nullptr;
    int r;
    while ((r = archive_read_next_header(a.get(), &e)) == ARCHIVE_OK) add(a.get(), e, tar);
    if (r != ARCHIVE_EOF) return false;  // damaged: read as an ordinary archive, which says where (HG113)
    if (files_.count("oci-layout") || files_.count("manifest.json")) return true;
    for (const auto& [name, bytes] : files_) {
      size_t slash = name.find('/');
      if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) continue;
      std::string base = name.substr(slash + 1);
      if (base == "oci-layout" || base == "manifest.json") prefix_ = name.substr(0, slash + 1);
    }
    return true;
  }
  bool has(const std::string& name) const { return files_.count(prefix_ + name) != 0; }
  Result<Bytes> get(const std::string& name) const {
    auto link = links_.find(prefix_ + name);
    auto file = files_.find(link == links_.end() ? prefix_ + name : link->second);
    if (file == files_.end()) return ParseError{Code::kUnreadableImage, "the image has no " + name};
    return file->second;
  }

 private:
  void add(struct archive* a, struct archive_entry* e, Bytes tar) {
    std::optional<std::string> name = Overlay::normalize(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    if (!name) return;
    if (archive_entry_filetype(e) == AE_IFLNK && archive_entry_symlink(e)) {
      std::string dir = name->substr(0, name->rfind('/') + 1);  // "" at the top
      if (auto target = Overlay::normalize(dir + archive_entry_symlink(e))) links_[*name] = *target;
      return;
    }
    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) return;
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    auto declared = static_cast<uint64_t>(std::max<la_int64_t>(archive_entry_size(e), 0));
    if (declared == 0) return void(files_[*name] = Bytes());
    if (archive_read_data_block(a, &block, &size, &offset) != ARCHIVE_OK || offset != 0 || size != declared) return;
    const auto* p = static_cast<const uint8_t*>(block);
    if (p < tar.data() || p + size > tar.data() + tar.size()) return;  // not in place: as if missing
    files_[*name] = Bytes(p, size);
  }

  std::unordered_map<std::string, Bytes> files_;
  std::unordered_map<std::string, std::string> links_;
  std::string prefix_;
};

// An OCI layout directory's blobs, each mapped once and kept while the image is read. Only
// index.json and blobs/sha256/<digest> (built from validated digests) are opened, never through a
// symlink: nothing outside the layout is read.
class DirectoryBlobs {
 public:
  explicit DirectoryBlobs(std::string dir) : dir_(std::move(dir)) {}
  Result<Bytes> get(const std::string& name) {
    if (auto it = open_.find(name); it != open_.end()) return it->second.bytes();
    bool blob = name.rfind("blobs/sha256/", 0) == 0 && is_sha256_digest("sha256:" + name.substr(13));
    if (name != "index.json" && !blob) return missing(name, "not a name of the layout");
    std::string path = dir_ + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return missing(name, "no such file");
    if (!S_ISREG(st.st_mode)) return missing(name, "not a regular file (a symlink is not followed)");
    Result<FileData> file = FileData::open(path, kCliMapAbove);
    if (!file) return missing(name, file.error().message);
    return open_.emplace(name, std::move(*file)).first->second.bytes();
  }
  const FileData* file_of(const std::string& name) const {
    auto it = open_.find(name);
    return it == open_.end() ? nullptr : &it->second;
  }

 private:
  static ParseError missing(const std::string& name, const std::string& why) {
    return {Code::kUnreadableImage, "the image has no " + name + " (" + why + ")"};
  }
  std::string dir_;
  std::map<std::string, FileData> open_;
};

// The mapped file a blob is part of (its pages are released as the blob is read), or null.
using BlobFile = std::function<const FileData*(const std::string& blob)>;

// Reads the images of one store into the members and diagnostics of one Result.
class ImageWalk {
 public:
  ImageWalk(const BlobSource& blobs, const BlobFile& files, const std::string& path, const ImageReading& how,
            const ArchiveReader::Member& member)
      : blobs_(blobs),
        files_(files),
        path_(path),
        limits_(how.limits),
        side_(how.side),
        runtime_(how.runtime),
        member_(member) {}

  ArchiveReader::Result read(const ImageList& list) {
    result_.archive = true;
    for (const auto& p : list.problems)
      say(p.code, p.message, p.code == Code::kImageDigestMismatch ? "" : "pull or save the image again");
    for (const auto& image : list.images) read_image(image);
    return std::move(result_);
  }

 private:
  void read_image(const ImageDescription& image) {
    Overlay overlay;
    std::string prefix = path_ + "!" + (image.name.empty() ? "" : image.name + "!");
    ImageTree tree(prefix);
    tree_ = &tree;
    tree.expect_program(image.run.program_path());
    bool whole = true;
    for (size_t i = image.layers.size(); i-- > 0;) {
      const ImageLayer& layer = image.layers[i];
      std::string what = (image.name.empty() ? "" : image.name + ", ") + "layer " + std::to_string(i + 1) + " of " +
                         std::to_string(image.layers.size()) + " (" +
                         (layer.digest.empty() ? layer.blob : layer.digest.substr(0, 19)) + ")";
      if (!read_layer(layer, what, prefix, overlay)) overlay.layer_incomplete(), whole = false;
      overlay.end_layer();
      tree.end_layer();
    }
    std::vector<std::string> unmatched = overlay.unmatched_whiteouts();
    if (!unmatched.empty())
      say(Code::kWhiteoutOfNothing,
          std::to_string(unmatched.size()) +
              " whiteout(s) remove a path no lower layer has, the first: " + unmatched.front(),
          "nothing to fix for the GPU check; the image builder wrote a whiteout for a path it did not find");
    std::set<std::pair<uint64_t, uint64_t>> loaded = check_program(image, tree, prefix);
    if (whole)  // a Tensile directory in a layer not read is not missing
      for (Diagnostic& d : kernel_directory_findings(tree, run_options(image), std::move(loaded)))
        result_.diagnostics.push_back(std::move(d));
    tree_ = nullptr;
  }

  // How a container of the image runs its programs, from the config's Env.
  static DependencyOptions run_options(const ImageDescription& image) {
    DependencyOptions options;
    options.library_path = image.run.get("LD_LIBRARY_PATH").value_or("");
    options.rocblas_tensile_libpath = image.run.get("ROCBLAS_TENSILE_LIBPATH").value_or("");
    options.hipblaslt_tensile_libpath = image.run.get("HIPBLASLT_TENSILE_LIBPATH").value_or("");
    return options;
  }

  // The program a container of the image starts, found as runc finds it (the config's PATH, else
  // Docker's default), with the libraries it loads found in the image with the config's Env. Returns
  // the files it loads (FileTree identities).
  std::set<std::pair<uint64_t, uint64_t>> check_program(const ImageDescription& image, const ImageTree& tree,
                                                        const std::string& prefix) {
    std::set<std::pair<uint64_t, uint64_t>> loaded;
    const std::string program = image.run.program();
    if (program.empty()) return loaded;
    const std::string from = image.run.entrypoint.empty() ? "Cmd" : "Entrypoint";
    const std::string what = (image.name.empty() ? "" : image.name + ": ") + "the " + from + " program " + program;
    std::string at;
    if (program.find('/') != std::string::npos) {
      at = image.run.program_path();
    } else {
      std::string dirs = image.run.get("PATH").value_or(kDefaultPath);
      for (size_t i = 0; at.empty() && i <= dirs.size();) {
        size_t end = std::min(dirs.find(':', i), dirs.size());
        auto file = tree.find(dirs.substr(i, end - i) + "/" + program);
        if (file && !file->directory && end > i) at = file->at;
        i = end + 1;
      }
    }
    auto file = at.empty() ? std::nullopt : tree.find(at);
    if (!file || file->directory) {
      say(Code::kImageProgramMissing,
          what + " is not in the image" +
              (at.empty() ? " (searched PATH: " + image.run.get("PATH").value_or(kDefaultPath) + ")" : "") +
              ": a container of it would not start",
          "add the program to the image, or correct the config's " + from);
      return loaded;
    }
    Dependencies deps = find_dependencies_in(tree, at, run_options(image));
    for (Diagnostic& d : deps.diagnostics) {
      d.message = what + ": " + d.message;
      d.file = path_;
      result_.diagnostics.push_back(std::move(d));
    }
    say_runtime(what, deps.hip_runtime);
    for (const auto& o : deps.objects)  // named as the tree labels them, prefix + path
      if (o.kind != Dependency::Kind::KernelFile && o.path.compare(0, prefix.size(), prefix) == 0)
        if (auto f = tree.find("/" + o.path.substr(prefix.size()))) loaded.insert(f->identity);
    return loaded;
  }

  // HG125 when the program's HIP runtime is not the one the check selected as: the image's files were
  // read (top layer first) before the runtime, in a lower layer, was found.
  void say_runtime(const std::string& what, const std::string& hip_runtime) {
    std::string version;
    const RuntimeInfo* loads = runtime_for_library(hip_runtime, &version);
    if (runtime_ || !loads || loads == &default_runtime()) return;  // --runtime: the user's choice
    say(Code::kRootHipRuntime,
        what + " loads HIP " + version + " (" + hip_runtime + "): the image's code objects were selected as " +
            runtime_label(default_runtime()) + ", the newest, selects them, not as its own runtime does",
        "check again with --runtime " + version + " to select them as the image's runtime does");
  }

  // False: the layer was not read whole.
  bool read_layer(const ImageLayer& layer, const std::string& what, const std::string& prefix, Overlay& overlay) {
    Result<Bytes> blob = blobs_(layer.blob);
    if (!blob)
      return say(Code::kUnreadableImage, what + ": " + blob.error().message + "; its files were not checked",
                 "pull or save the image again"),
             false;
    if (!digest_matches(layer, *blob, what)) return false;
    // Its own budget, by its size: a bomb stops early, a 30 GB layer of a ROCm image does not.
    ArchiveLimits limits = limits_;
    limits.total_bytes = std::max(limits_.total_bytes, kLayerExpansion * blob->size());
    uint64_t total = 0;
    EntryFilter filter = [&](std::string& name, unsigned type, const std::string& hardlink) {
      if (!overlay.visible(name, type, hardlink)) return false;
      name = *Overlay::normalize(name);  // "usr/lib/../lib64/x" is named "usr/lib64/x", as it is installed
      tree_->entry(name, type, hardlink.empty() ? "" : Overlay::normalize(hardlink).value_or(""));
      return true;
    };
    const FileData* file = files_(layer.blob);
    ArchiveReader::SideFiles side = side_files(prefix);
    ArchiveReader::Member member = [&](const std::string& label, Bytes data, const FileData& bytes_file,
                                       const Diagnostic* problem) {
      deliver(prefix, label, data, bytes_file, problem);
    };
    ArchiveReader::Result r =
        walk_archive(*blob, path_, ArchiveWalk{&limits, prefix, &filter, &total, false, file, &side}, member);
    bool whole = r.archive && r.diagnostics.empty();
    if (!r.archive)
      say(Code::kUnreadableImage, what + ": not a tar (plain, gzip, zstd, xz or bzip2); its files were not checked",
          "pull or save the image again");
    name_the_layer(r.diagnostics, what, prefix);
    for (const auto& name : overlay.outside)
      say(Code::kImagePathOutside, what + ": member '" + name + "' leaves the image; it was not checked", "");
    if (!overlay.relinked.empty()) read_relinked(*blob, file, limits, prefix, overlay, what);
    return whole;
  }

  // Hard links whose target an upper layer hides: the target's bytes, read again, under each link's name.
  void read_relinked(Bytes blob, const FileData* file, const ArchiveLimits& limits, const std::string& prefix,
                     const Overlay& overlay, const std::string& what) {
    std::multimap<std::string, std::string> links;  // target label -> link label
    for (const auto& [link, target] : overlay.relinked) links.emplace(prefix + target, prefix + link);
    EntryFilter targets = [&](std::string& name, unsigned, const std::string& hardlink) {
      auto n = Overlay::normalize(name);
      if (!hardlink.empty() || !n || !links.count(prefix + *n)) return false;
      name = *n;
      return true;
    };
    ArchiveReader::Member renamed = [&](const std::string& name, Bytes data, const FileData& bytes_file,
                                        const Diagnostic* problem) {
      auto [from, to] = links.equal_range(name);
      for (auto it = from; it != to; ++it) deliver(prefix, it->second, data, bytes_file, problem);
    };
    uint64_t total = 0;
    ArchiveReader::Result r =
        walk_archive(blob, path_, ArchiveWalk{&limits, prefix, &targets, &total, false, file}, renamed);
    name_the_layer(r.diagnostics, what, prefix);
  }

  // A member handed over; an ELF file of the image is recorded in the tree too.
  void deliver(const std::string& prefix, const std::string& label, Bytes data, const FileData& file,
               const Diagnostic* problem) {
    if (!problem && label.compare(0, prefix.size(), prefix) == 0) tree_->member(label.substr(prefix.size()), data);
    member_(label, data, file, problem);
  }

  // The caller's side files, and the image's ld.so.conf files and links, which the tree records.
  ArchiveReader::SideFiles side_files(const std::string& prefix) { return recording_side_files(tree_, prefix, side_); }

  // The walk's own diagnostics (HG111, HG113), named after the layer; their fix for an image.
  void name_the_layer(std::vector<Diagnostic>& diagnostics, const std::string& what, const std::string& prefix) {
    for (auto& d : diagnostics) {
      for (const std::string& label : {path_ + ": ", prefix.substr(0, prefix.size() - 1) + ": "})
        if (d.message.rfind(label, 0) == 0) d.message.erase(0, label.size());
      d.message = what + ": " + d.message;
      if (d.code == Code::kBudgetExceeded)
        d.fix = "unpack the image (umoci unpack, or skopeo copy to dir:) and check the unpacked files";
      result_.diagnostics.push_back(std::move(d));
    }
  }

  // The blob's sha256 against its name's digest, or (a docker-save layer named otherwise, stored
  // uncompressed) against its diff ID; once per blob. A blob that does not match is not read.
  bool digest_matches(const ImageLayer& layer, Bytes blob, const std::string& what) {
    std::string expected = !layer.digest.empty() ? layer.digest : compressed_magic(blob) ? "" : layer.diff_id;
    if (!is_sha256_digest(expected)) return true;
    auto known = checked_.find(layer.blob);
    if (known == checked_.end()) known = checked_.emplace(layer.blob, digest_of_bytes(blob, files_(layer.blob))).first;
    if (known->second == expected) return true;
    say(Code::kImageDigestMismatch,
        what + ": its sha256 is " + known->second + ", the manifest says " + expected + "; its files were not checked",
        "");
    return false;
  }

  void say(Code code, std::string message, std::string fix) {
    result_.diagnostics.push_back(make_diagnostic(code, path_, std::move(message), std::move(fix)));
  }

  const BlobSource& blobs_;
  const BlobFile& files_;
  const std::string& path_;
  const ArchiveLimits& limits_;
  const ArchiveReader::SideFiles* side_;
  const RuntimeInfo* runtime_;
  const ArchiveReader::Member& member_;
  ArchiveReader::Result result_;
  std::unordered_map<std::string, std::string> checked_;  // blob -> its sha256 (a blob shared by images)
  ImageTree* tree_ = nullptr;                             // the image being read
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
  if (!tar_blobs.index(tar)) return std::nullopt;
  bool oci = tar_blobs.has("oci-layout") && tar_blobs.has("index.json");
  bool docker = !oci && tar_blobs.has("manifest.json");
  if (!oci && !docker) return std::nullopt;
  BlobSource blobs = [&](const std::string& name) { return tar_blobs.get(name); };
  ImageList list = oci ? read_oci_index(blobs, how.platform) : read_docker_manifest(blobs);
  if (docker && !list.recognized) return std::nullopt;  // a manifest.json of another kind: an ordinary tar
  BlobFile files = [&](const std::string&) { return how.source; };
  return ImageWalk(blobs, files, path, how, member).read(list);
}

ArchiveReader::Result read_installed_archive(Bytes data, const std::string& path, ArchiveWalk walk,
                                             const ArchiveReader::Member& member) {
  ImageTree tree(walk.prefix);
  ArchiveReader::SideFiles side = recording_side_files(&tree, walk.prefix, walk.side);
  walk.side = &side;
  ArchiveReader::Member recorded = [&](const std::string& label, Bytes bytes, const FileData& file,
                                       const Diagnostic* problem) {
    if (!problem && label.compare(0, walk.prefix.size(), walk.prefix) == 0)
      if (auto name = Overlay::normalize(label.substr(walk.prefix.size()))) tree.member(*name, bytes);
    member(label, bytes, file, problem);
  };
  ArchiveReader::Result r = walk_archive(data, path, walk, recorded);
  // Not over what was read in part (a member after a damage or a spent budget is unknown), nor over
  // an image read as an archive (HG118: each layer's files apart).
  if (std::none_of(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& d) {
        return d.severity == Severity::Error || d.code == Code::kImageReadAsArchive;
      }))
    for (Diagnostic& d : kernel_directory_findings(tree, {}, {})) r.diagnostics.push_back(std::move(d));
  return r;
}

ArchiveReader::Result read_image_layout(const std::string& dir, const ImageReading& how,
                                        const ArchiveReader::Member& member) {
  DirectoryBlobs store(dir);
  BlobSource blobs = [&](const std::string& name) { return store.get(name); };
  std::string name = dir;  // "pytorch-oci/" names its files "pytorch-oci!path"
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  BlobFile files = [&](const std::string& blob) { return store.file_of(blob); };
  return ImageWalk(blobs, files, name, how, member).read(read_oci_index(blobs, how.platform));
}

}  // namespace hipguard
