// What a container image's JSON documents say: the images an OCI image layout or a `docker save`
// archive holds, each as its layers in order (OCI Image Format Specification: image-layout.md,
// image-index.md, manifest.md, config.md; Docker's `docker save` manifest.json).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hipguard/bundle.h"
#include "inputs/archive.h"

namespace hipguard {

// A blob of the image by its name in the store: "index.json", "blobs/sha256/<hex>" (OCI), or a path in a
// docker-save archive ("<hex>.tar", "<id>/layer.tar"). nullopt: the store has no such blob.
using BlobSource = std::function<std::optional<Bytes>(const std::string& name)>;

struct ImageLayer {
  std::string blob;     // its name in the BlobSource
  std::string digest;   // "sha256:<hex>" its bytes must have, or "" (a docker-save name that says none)
  std::string diff_id;  // "sha256:<hex>" of the layer uncompressed (the config's rootfs.diff_ids), or ""
};

struct ImageDescription {
  std::string name;                // its tag or reference when the store holds several images, else ""
  std::vector<ImageLayer> layers;  // bottom first, as the runtime applies them
};

struct ImageList {
  bool recognized = false;  // the top document has the shape of its kind (a manifest.json may be anything else)
  std::vector<ImageDescription> images;
  std::vector<std::string> problems;  // a document that cannot be used, a missing blob: one sentence each
};

// An OCI image layout (index.json, following nested indexes): each image manifest for `platform`
// (or without a platform); attestation manifests are not images.
ImageList read_oci_index(const BlobSource& blobs, const Platform& platform);
// A `docker save` / `podman save` archive (manifest.json): each image it lists.
ImageList read_docker_manifest(const BlobSource& blobs);

// "sha256:" followed by 64 lowercase hex digits (the only algorithm registries use; OCI descriptor.md).
bool is_sha256_digest(std::string_view digest);

}  // namespace hipguard
