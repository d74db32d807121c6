// libarchive set up for archive.cpp: Reader and open_source (archive_source.h).
#include "inputs/archive_source.h"

#include <vector>

namespace hipguard {

namespace {
using Support = int (*)(struct archive*);
bool builtin(Support s) {
  struct archive* a = archive_read_new();
  bool ok = s(a) == ARCHIVE_OK;
  archive_read_free(a);
  return ok;
}
}  // namespace

Reader::Reader(bool compressed, bool stream_only) {
  static const std::vector<Support> filters = [] {
    std::vector<Support> v;
    for (Support s :
         {archive_read_support_filter_gzip, archive_read_support_filter_xz, archive_read_support_filter_lzma,
          archive_read_support_filter_zstd, archive_read_support_filter_bzip2})
      if (builtin(s)) v.push_back(s);
    return v;
  }();
  for (Support s : filters) s(a);
  if (stream_only) {
    archive_read_support_format_raw(a);
    return;
  }
  archive_read_support_format_ar(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_zip(a);
  if (compressed) archive_read_support_format_raw(a);
}

int open_source(struct archive* a, Bytes data, const FileData* file, MappedChunks* chunks) {
  if (!file || !file->mapped()) return archive_read_open_memory(a, data.data(), data.size());
  *chunks = MappedChunks{data, file};
  archive_read_set_read_callback(a, MappedChunks::read);
  archive_read_set_skip_callback(a, MappedChunks::skip);
  archive_read_set_seek_callback(a, MappedChunks::seek);
  archive_read_set_callback_data(a, chunks);
  return archive_read_open1(a);
}

}  // namespace hipguard
