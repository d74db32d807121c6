// What a container image's JSON documents say: the images an OCI image layout or a `docker save`
// archive holds, each as its layers in order (OCI Image Format Specification: image-layout.md,
// image-index.md, manifest.md, config.md, descriptor.md; Docker's `docker save` manifest.json).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/result.h"
#include "inputs/archive.h"

namespace hipguard {

inline constexpr uint64_t kMaxImageDocumentBytes = 16ull << 20;  // an index, manifest or config (real: < 100 KiB)
inline constexpr size_t kMaxImageLayers = 1000;                  // per image (Docker's overlay2 stacks at most 128)

// A blob of the image by its name in the store: "index.json", "blobs/sha256/<hex>" (OCI), or a path in a
// docker-save archive ("<hex>.tar", "<id>/layer.tar"); or why it cannot be had (HG114).
using BlobSource = std::function<Result<Bytes>(const std::string& name)>;

struct ImageLayer {
  std::string blob;     // its name in the BlobSource
  std::string digest;   // "sha256:<hex>" its bytes must have, or "" (a docker-save name that says none)
  std::string diff_id;  // "sha256:<hex>" of the layer uncompressed (the config's rootfs.diff_ids), or ""
};

// How a container started from the image runs (OCI config.md, the config's "config" object; Docker's
// the same): what a check of the image as one machine starts from.
struct ImageRun {
  std::vector<std::string> env;         // "NAME=value", in order (a later one of the same name wins)
  std::vector<std::string> entrypoint;  // the program and its first arguments
  std::vector<std::string> cmd;         // its default arguments; the program when there is no entrypoint
  std::string working_dir;              // "" is "/"
  // The value of `name` in env, or nullopt when it is not set.
  std::optional<std::string> get(std::string_view name) const;
  // The program a container runs: Entrypoint[0], else Cmd[0]; "" when neither says.
  std::string program() const;
  // The same as a path inside the image: absolute (a relative one from WorkingDir), or a bare name
  // the container's PATH finds.
  std::string program_path() const;
};

struct ImageDescription {
  std::string name;                // its tag or reference when the store holds several images, else ""
  std::vector<ImageLayer> layers;  // bottom first, as the runtime applies them
  ImageRun run;
};

struct ImageList {
  bool recognized = false;  // the top document has the shape of its kind (a manifest.json may be anything else)
  std::vector<ImageDescription> images;
  std::vector<ParseError> problems;  // documents that cannot be used (HG114), or do not match their digest (HG115)
};

// An OCI image layout (index.json, following nested indexes): each image manifest for `platform`
// (or without a platform). Artifacts (signatures, SBOMs, attestations: a config that is not an image
// config, or an artifactType) are not images.
ImageList read_oci_index(const BlobSource& blobs, const Platform& platform);
// A `docker save` / `podman save` archive (manifest.json): each image it lists.
ImageList read_docker_manifest(const BlobSource& blobs);

// "sha256:" followed by 64 lowercase hex digits (the only algorithm registries use; OCI descriptor.md).
bool is_sha256_digest(std::string_view digest);
// "sha256:<hex>" of `bytes` (Nettle, whose names are macros: sha256_digest is nettle_sha256_digest);
// `file`: the mapped file they are part of, whose pages are released as they are hashed.
std::string digest_of_bytes(Bytes bytes, const FileData* file = nullptr);

}  // namespace hipguard
