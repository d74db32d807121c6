// One archive stream walked in memory with an ArchiveReader's budgets (archive.cpp): for the reader
// itself, and for each layer of a container image (image.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "inputs/archive.h"

namespace hipguard {

// Whether a top-level entry of the walk is delivered (or opened, if an archive): `name` as members are
// named ("./usr/lib/x" -> "usr/lib/x"; a directory may end in '/'), which the filter may rewrite (the
// member is then named so), `filetype` libarchive's AE_IF* (0: an ar member), `hardlink` the earlier
// entry it is a hard link to, or "".
using EntryFilter = std::function<bool(std::string& name, unsigned filetype, const std::string& hardlink)>;

struct ArchiveWalk {
  const ArchiveLimits* limits = nullptr;
  std::string prefix;                   // members are named prefix + name ("pkg.deb!", "image.tar!")
  const EntryFilter* filter = nullptr;  // null: every entry
  uint64_t* total = nullptr;            // member bytes read so far by the walks of one input (its budget)
  bool note_images = false;             // HG118 when the top holds a container image (not read as one)
  const FileData* source = nullptr;     // the mapped file the data is part of: read in chunks, released as read
  const ArchiveReader::SideFiles* side = nullptr;  // members without GPU code handed over too (null: none)
};

// Whether `data` starts like a compressed stream libarchive reads: gzip, xz, zstd or bzip2.
bool compressed_magic(Bytes data);

// Walks `data`, handing members to `member` as ArchiveReader::read does; diagnostics name `path`.
ArchiveReader::Result walk_archive(Bytes data, const std::string& path, const ArchiveWalk& walk,
                                   const ArchiveReader::Member& member);

}  // namespace hipguard
