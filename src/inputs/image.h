// Container images read in place (image.cpp): an OCI image layout directory, an OCI archive and a
// `docker save` archive, each image's files as its layers leave them, handed over as archive members.
#pragma once

#include <optional>
#include <string>

#include "inputs/archive.h"
#include "inputs/archive_walk.h"

namespace hipguard {

// How images are read: the reader's budgets, and the platform picked from a multi-platform index.
struct ImageReading {
  const ArchiveLimits& limits;
  const Platform& platform;
  const FileData* source;  // the mapped file an image archive is (null: none, or a layout directory)
  const ArchiveReader::SideFiles* side = nullptr;  // visible files without GPU code handed over too
  const RuntimeInfo* runtime = nullptr;            // the runtime the check selects as (--runtime); null: the newest
};

// Whether `dir` is an OCI image layout (an oci-layout file and index.json; OCI image-layout.md).
bool is_image_layout(const std::string& dir);

// `tar` (an uncompressed tar) read as the image(s) it holds, as ArchiveReader::read describes;
// nullopt when it holds none (then it is an ordinary archive).
std::optional<ArchiveReader::Result> read_image_archive(Bytes tar, const std::string& path, const ImageReading& how,
                                                        const ArchiveReader::Member& member);

// `data` compressed (gzip, zstd, xz, bzip2) around a tar that holds an image (`docker save | gzip`):
// read as read_image_archive reads the tar, which is decompressed to a temporary file first; nullopt
// when it holds none or cannot be decompressed there (then it is an ordinary archive, HG118).
std::optional<ArchiveReader::Result> read_compressed_image(Bytes data, const std::string& path, const ImageReading& how,
                                                           const ArchiveReader::Member& member);

// A plain archive (a .whl, a tar, a .deb) walked as `walk` says, as the files it installs: each
// rocBLAS and hipBLASLt in it is also asked for its Tensile directory among them (HG123 without one).
ArchiveReader::Result read_installed_archive(Bytes data, const std::string& path, ArchiveWalk walk,
                                             const ArchiveReader::Member& member);

// An OCI image layout directory read the same way; only index.json and blobs/sha256/<digest> are opened.
ArchiveReader::Result read_image_layout(const std::string& dir, const ImageReading& how,
                                        const ArchiveReader::Member& member);

}  // namespace hipguard
