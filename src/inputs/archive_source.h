// libarchive set up for archive.cpp: the formats and decoders read (Reader), and an archive's bytes
// as it reads them: a mapped file handed over a chunk at a time, in place, its pages released as they
// are read; anything else as one block in memory.
#pragma once

#include <archive.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "hipguard/inputs.h"

namespace hipguard {

// A libarchive reader of ar, tar and zip, plain or compressed with the decoders built into
// libarchive (gzip, xz, lzma, zstd, bzip2; one that would run an external program is not
// registered). `compressed`: the stream starts like gzip/xz/zstd/bzip2; then a stream with no
// archive inside is read as one member ("data", libarchive's raw format), so that a damaged stream
// is a read error (HG113), not "no archive". `stream_only`: the decompressed stream alone, as that
// one member, whatever it holds.
struct Reader {
  struct archive* a = archive_read_new();
  explicit Reader(bool compressed, bool stream_only = false);
  ~Reader() { archive_read_free(a); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
};

// A mapped file handed to libarchive a chunk at a time, in place, each chunk's pages released once
// the next one is asked for (what a walk has read is not kept in memory; read again, it comes back
// from the page cache).
struct MappedChunks {
  static constexpr size_t kChunk = 16 << 20;
  Bytes data;
  const FileData* file;
  size_t at = 0;
  size_t released = 0;  // the pages before it are released already

  static la_ssize_t read(struct archive*, void* self, const void** out) {
    auto* c = static_cast<MappedChunks*>(self);
    c->release_read();
    size_t n = std::min(kChunk, c->data.size() - c->at);
    *out = c->data.data() + c->at;
    c->at += n;
    return static_cast<la_ssize_t>(n);
  }
  static la_int64_t skip(struct archive*, void* self, la_int64_t request) {
    auto* c = static_cast<MappedChunks*>(self);
    size_t n = std::min<uint64_t>(static_cast<uint64_t>(std::max<la_int64_t>(request, 0)), c->data.size() - c->at);
    c->at += n;
    return static_cast<la_int64_t>(n);
  }
  // As archive_read_open_memory's: zip's seekable reader reads the central directory at the end (without
  // a seek callback libarchive falls back to its streaming zip reader, which reads less).
  static la_int64_t seek(struct archive*, void* self, la_int64_t offset, int whence) {
    auto* c = static_cast<MappedChunks*>(self);
    la_int64_t base = whence == SEEK_SET   ? 0
                      : whence == SEEK_CUR ? static_cast<la_int64_t>(c->at)
                                           : static_cast<la_int64_t>(c->data.size());
    la_int64_t to = base + offset;
    if (to < 0) return ARCHIVE_FATAL;
    c->at = std::min<uint64_t>(static_cast<uint64_t>(to), c->data.size());
    return static_cast<la_int64_t>(c->at);
  }
  // The chunks before the one handed out last, once each (a seek back leaves them released: read
  // again, they come back from the page cache).
  void release_read() {
    size_t end = at > kChunk ? at - kChunk : 0;
    if (end <= released) return;
    file->release(Bytes(data.data() + released, end - released));
    released = end;
  }
};

// Opens `data` on `a`: in chunks, released as read, when it is a mapped file's (`chunks` holds the
// place and must outlive `a`); else as one block.
int open_source(struct archive* a, Bytes data, const FileData* file, MappedChunks* chunks);

}  // namespace hipguard
