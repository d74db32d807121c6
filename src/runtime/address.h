// Address-space facts for untrusted pointers (address.cpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hipguard/owned_mutex.h"

namespace hipguard {

// The running program's path (/proc/self/exe), or "<program>".
std::string self_exe();
// The file that holds `addr`: the executable or shared library mapped there
// (_dl_find_object, else dladdr), else the program.
std::string origin_of(const void* addr);
// "0x..." for messages.
std::string hex(const void* p);
// Bytes readable from `p` on, at most `cap`: within a loaded object's PT_LOAD
// segments, else the run of readable mappings in /proc/self/maps. 0 for null
// or unmapped addresses. Never dereferences `p`.
uint64_t readable_extent(const void* p, uint64_t cap);
// The read-only (no PF_W) PT_LOAD segments, [begin, end), of the loaded object
// that holds `p`: what lies there stays as it is while the object is loaded.
// Empty when `p` is in no loaded object.
std::vector<std::pair<uintptr_t, uintptr_t>> readonly_segments_of(const void* p);
// The file a loaded object maps, checked to be the one mapped there:
// /proc/self/maps names each mapping's device, inode and offset, which must be
// the file's (the object's path may name another file since it was loaded).
struct MappedFile {
  uintptr_t base = 0;  // the object's load address (dlpi_addr)
  std::string path;    // its file; /proc/self/exe for the program
  uint64_t dev = 0, ino = 0;
  unsigned long long subs = 0;  // dlpi_subs when checked: an object unloaded since, it is checked again
  bool same = false;            // the check's outcome: false, its bytes are read in memory
};
// The loaded objects' files that bytes were read from instead of their
// mappings, each checked once (a library registers hundreds of fat binaries;
// the check reads /proc/self/maps), matching or not. The file read last stays
// open for the next read: a library's fat binaries (hundreds) register one
// after another, and an open for each would cost more than its read. It is
// checked by fstat before each use, so a descriptor the program closed is
// forgotten, never read or closed here; one the program closed and reopened
// on the same file under the same number is the one hole left. Two locks:
// one for the list, one for the kept descriptor and the file I/O; the list's
// is taken under the other, never the other way round.
class MappedFiles {
 public:
  // Copies [p, p + size) into `out` from the file mapped there, without
  // touching p's pages (a read fault maps the page cache's 64 KiB window around
  // it into the program's RSS, release_read_pages's work), when p lies within
  // the file-backed bytes of a read-only PT_LOAD segment of a loaded object
  // that has no text relocations: pages the program cannot have written, so
  // memory and file agree. Returns false, `out` unspecified, when the bytes
  // cannot be read so: read the memory then. Trusted, not checked: that no one
  // made a read-only segment writable and wrote it, or mapped over part of an
  // object after its first check.
  bool read(const void* p, uint64_t size, uint8_t* out);
  std::vector<MappedFile> known() const;  // a copy of the list
  // Held across fork() by the guard's fork handlers (events::before_fork, installed with the guard's state).
  // Both locks, in read()'s order (OwnedMutex::lock_for_fork); unlock_after_fork releases those taken.
  struct ForkHolds {
    OwnedMutex::ForkHold io, list;
  };
  ForkHolds lock_for_fork() { return {io_mu_.lock_for_fork(), mu_.lock_for_fork()}; }
  void unlock_after_fork(ForkHolds h) {
    if (h.list == OwnedMutex::ForkHold::Taken) mu_.unlock_after_fork();
    if (h.io == OwnedMutex::ForkHold::Taken) io_mu_.unlock_after_fork();
  }

 private:
  mutable OwnedMutex mu_;
  std::vector<MappedFile> known_;
  OwnedMutex io_mu_;
  int kept_fd_ = -1;  // the file read last (O_CLOEXEC), or -1
  uint64_t kept_dev_ = 0, kept_ino_ = 0;
  bool kept_is_ours() const;  // kept_fd_ still names the file it was opened for (io_mu_ held)
};
// Unmaps from this process the clean file-backed pages of [p, p + size) that
// lie wholly in one of the `readonly` ranges (MADV_DONTNEED), so that the pages
// a check read (and the kernel's fault-around, 64 KiB per touch) stop counting
// in the program's RSS; the page cache keeps them and a later read faults them
// back in. A page /proc/self/pagemap shows as anonymous or swapped (written
// after an mprotect, text relocations) is kept; without pagemap nothing is.
// Returns the bytes released.
uint64_t release_read_pages(const void* p, uint64_t size, const std::vector<std::pair<uintptr_t, uintptr_t>>& readonly);
// The same for several ranges (start, bytes), with one read of the page map.
uint64_t release_read_pages(const std::vector<std::pair<const void*, uint64_t>>& ranges,
                            const std::vector<std::pair<uintptr_t, uintptr_t>>& readonly);

}  // namespace hipguard
