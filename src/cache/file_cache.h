// The CLI's check cache for files (`hipguard check --cache DIR`): what checking a file gave, kept in DIR
// under a key of the file's content (XXH3-128 of its bytes), its path, the targets, how it is checked
// and the hipguard build that checked it, so that a file checked before is not parsed again.
#pragma once

#include <memory>
#include <string>

#include "hipguard/check_paths.h"

namespace hipguard {

// A recording larger than this is not kept (a which-GPUs report of a whole rocBLAS: its recording
// would be held in memory while the file is checked).
inline constexpr uint64_t kMaxCachedRecording = 64ull << 20;

// A FileCache (check_paths.h) in the directory `dir`, which must exist and be writable (the CLI makes
// it). Each file's result is one file of DIR, written under a temporary name and renamed into place
// (processes sharing DIR see whole entries or none); an entry that cannot be read back whole
// (report_codec.h: damaged, of another format version) is checked again and replaced. Not cached:
// archives and container images (their members' side files and layers are not recorded yet), files
// that cannot be opened, and files that start as no ELF, offload bundle or compressed bundle does.
// `identity`: the checking program's, part of every key (program_identity()).
std::unique_ptr<FileCache> file_cache(std::string dir, std::string identity);

// This program's identity: its GNU build ID, else the XXH3-128 of its executable; "" when neither
// can be read (then nothing should be cached: a rebuilt hipguard could be handed an older one's
// results).
std::string program_identity();

}  // namespace hipguard
