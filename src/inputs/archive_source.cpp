// An archive's bytes as libarchive reads them: open_source (archive_source.h).
#include "inputs/archive_source.h"

namespace hipguard {

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
