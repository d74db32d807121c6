// Archives for the CLI: walks ar, tar and zip (tar also gzip/xz/zstd/bzip2-compressed), nested
// ones included, in memory with libarchive and hands each member that may hold GPU code to the checks;
// a tar that holds a container image is read as the image (image.cpp).
#include "inputs/archive.h"
#include "inputs/archive_source.h"
#include "inputs/archive_walk.h"
#include "inputs/image.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace hipguard {
namespace {

constexpr size_t kHead = 512;         // tells ELF, bundles, CCOB and every format (tar: "ustar" at 257)
constexpr size_t kChunk = 256 << 10;  // bytes discarded per read; also the budget's granularity

bool starts(Bytes d, size_t at, std::string_view magic) {
  return d.size() >= at + magic.size() && std::memcmp(d.data() + at, magic.data(), magic.size()) == 0;
}

bool archive_magic(Bytes d) {
  using namespace std::string_view_literals;
  return starts(d, 0, "!<arch>\n"sv) || starts(d, 257, "ustar"sv) || starts(d, 0, "PK\x03\x04"sv) ||
         starts(d, 0, "PK\x05\x06"sv) || compressed_magic(d);
}

enum class Kind { Skip, Code, Archive };
Kind kind_of(Bytes head) {
  if (starts(head, 0,
             "\x7f"
             "ELF") ||
      classify(head) != PayloadKind::Unknown)
    return Kind::Code;
  return archive_magic(head) ? Kind::Archive : Kind::Skip;
}

std::string error_of(struct archive* a) {
  const char* e = archive_error_string(a);
  return e && *e ? e : "unknown libarchive error";
}

// Compressed, but no archive inside (a .gz of a text): libarchive's
// choose_format() says so with this message, before any header.
bool unrecognized(struct archive* a) { return error_of(a).rfind("Unrecognized archive format", 0) == 0; }

// A member's name as a label: "./usr/lib/x.so" -> "usr/lib/x.so". Never opened.
std::string entry_name(struct archive_entry* e, size_t index) {
  const char* n = archive_entry_pathname(e);
  if (!n) n = archive_entry_pathname_utf8(e);
  if (!n) return "(member " + std::to_string(index + 1) + ")";
  std::string_view s(n);
  while (s.substr(0, 2) == "./" || s.substr(0, 1) == "/") s.remove_prefix(s[0] == '.' ? 2 : 1);
  return std::string(s);
}

class Walker {
 public:
  Walker(const ArchiveLimits& limits, const std::string& path, const ArchiveReader::Member& member,
         const EntryFilter* filter, uint64_t* total, const ArchiveReader::SideFiles* side)
      : limits_(limits), path_(path), member_(member), filter_(filter), total_(*total), side_(side) {}
  // Walks the members of `a`, named `prefix` + member. False: `a` is not an archive at all.
  bool walk(struct archive* a, const std::string& prefix, unsigned depth);
  // A read error at `label` (HG113), once.
  void corrupt(const std::string& label, struct archive* a);
  std::vector<Diagnostic> diagnostics;
  // The names at the top that make a container image (read as an image when the archive is a plain tar).
  struct ImageNames {
    bool oci_layout = false, index = false, manifest = false, blobs = false;
    void see(const std::string& n) {
      oci_layout |= n == "oci-layout", index |= n == "index.json", manifest |= n == "manifest.json";
      blobs |= n.rfind("blobs/sha256/", 0) == 0 || (n.size() > 10 && n.compare(n.size() - 10, 10, "/layer.tar") == 0);
    }
    bool image() const { return (oci_layout && index) || (manifest && blobs); }
  } image_like;

 private:
  struct Source;  // a nested archive's bytes, pulled from its outer archive
  static la_ssize_t pull(struct archive* inner, void* source, const void** out);

  void entry(struct archive* a, struct archive_entry* e, const std::string& prefix, const std::string& name, bool deb,
             unsigned depth);
  void nested(struct archive* outer, std::vector<uint8_t> head, const std::string& prefix, const std::string& label,
              unsigned depth);
  void read_whole(struct archive* a, struct archive_entry* e, const std::vector<uint8_t>& head,
                  const std::string& label, unsigned depth, const ArchiveReader::Member& to, uint64_t limit);
  bool read_head(struct archive* a, std::vector<uint8_t>* head, const std::string& label);
  // The member is not read: `problem` handed to `to` instead, the rest of the member discarded.
  void refuse(struct archive* a, const std::string& label, unsigned depth, const ArchiveReader::Member& to,
              const Diagnostic& problem);
  bool discard(struct archive* a, const std::string& label, unsigned depth);
  bool count(uint64_t n, const std::string& label);
  void over(const std::string& label, std::string message, uint64_t value, uint64_t limit);

  const ArchiveLimits& limits_;
  const std::string& path_;
  const ArchiveReader::Member& member_;
  const EntryFilter* filter_;             // top-level entries delivered (null: all)
  uint64_t& total_;                       // member bytes read, all levels (and all walks of one input)
  const ArchiveReader::SideFiles* side_;  // members without GPU code handed over too (null: none)
  bool stop_ = false;                     // a budget is spent or the top level is broken: no more members
};

void Walker::over(const std::string& label, std::string message, uint64_t value, uint64_t limit) {
  Diagnostic d = make_diagnostic(Code::kBudgetExceeded, path_, label + ": " + std::move(message),
                                 "extract the archive (dpkg-deb -x, tar -x, unzip) and check the extracted files");
  d.value = value;
  d.limit = limit;
  diagnostics.push_back(std::move(d));
}

// Once: the first error stops the walk (what follows it in the stream cannot be
// trusted), and an error caused by a spent budget is the budget's diagnostic.
void Walker::corrupt(const std::string& label, struct archive* a) {
  if (stop_) return;
  stop_ = true;
  diagnostics.push_back(make_diagnostic(
      Code::kUnreadableArchive, path_,
      label + ": cannot read the archive: " + error_of(a) + "; the members after this point were not checked",
      "the archive is truncated or damaged: download or build it again"));
}

bool Walker::count(uint64_t n, const std::string& label) {
  total_ += n;
  if (total_ <= limits_.total_bytes) return true;
  if (!stop_)
    over(label,
         "more than " + std::to_string(limits_.total_bytes) +
             " bytes of members read or decompressed from this archive; the members after this one were "
             "not checked",
         total_, limits_.total_bytes);
  stop_ = true;
  return false;
}

bool Walker::read_head(struct archive* a, std::vector<uint8_t>* head, const std::string& label) {
  head->resize(kHead);
  size_t len = 0;
  while (len < kHead) {
    la_ssize_t n = archive_read_data(a, head->data() + len, kHead - len);
    if (n < 0) return corrupt(label, a), false;
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  head->resize(len);
  return count(len, label);
}

// The rest of the current member, unread. Skipped without decoding where
// that is a seek (a top-level ar or tar, not compressed as a whole); else read
// and counted, so a compressed bomb stops at the budget (a zip member's skip
// may inflate it: read too).
bool Walker::discard(struct archive* a, const std::string& label, unsigned depth) {
  int format = archive_format(a) & ARCHIVE_FORMAT_BASE_MASK;
  if (depth == 0 && archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE &&
      (format == ARCHIVE_FORMAT_AR || format == ARCHIVE_FORMAT_TAR)) {
    if (archive_read_data_skip(a) == ARCHIVE_OK) return true;
    return corrupt(label, a), false;
  }
  std::vector<uint8_t> scratch(kChunk);
  for (;;) {
    la_ssize_t n = archive_read_data(a, scratch.data(), scratch.size());
    if (n < 0) return corrupt(label, a), false;
    if (n == 0) return true;
    if (!count(static_cast<uint64_t>(n), label)) return false;
  }
}

bool Walker::walk(struct archive* a, const std::string& prefix, unsigned depth) {
  bool deb = false;
  for (size_t index = 0; !stop_; ++index) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) return true;
    if ((r != ARCHIVE_OK && r != ARCHIVE_WARN) || !e) {
      if (index == 0 && unrecognized(a)) return false;
      corrupt(prefix.substr(0, prefix.size() - 1), a);
      return true;
    }
    // The raw format over bytes that were not decompressed: no archive (a
    // cut gzip header, or a .gz inside that holds something else).
    if (index == 0 && archive_format(a) == ARCHIVE_FORMAT_RAW && archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE)
      return false;
    std::string name = entry_name(e, index);
    if (index == 0 && (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_AR && name == "debian-binary")
      deb = true;
    // The decompressed stream itself (headers too): a bomb of empty members stops here.
    if ((depth > 0 || archive_filter_code(a, 0) != ARCHIVE_FILTER_NONE) &&
        static_cast<uint64_t>(archive_filter_bytes(a, 0)) > limits_.total_bytes) {
      over(prefix + name,
           "more than " + std::to_string(limits_.total_bytes) +
               " bytes decompressed at this level of the archive; the members after it were not checked",
           static_cast<uint64_t>(archive_filter_bytes(a, 0)), limits_.total_bytes);
      stop_ = true;
      return true;
    }
    // ar members carry permission bits only (GNU ar: "644"): file type 0 is a file too.
    unsigned type = archive_entry_filetype(e);
    const char* hardlink = archive_entry_hardlink(e);
    if (depth == 0) image_like.see(name);
    if (filter_ && depth == 0 && !(*filter_)(name, type, hardlink ? hardlink : "")) {
      discard(a, prefix + name, depth);
      continue;
    }
    if ((type == AE_IFREG || type == 0) && !hardlink) {
      entry(a, e, prefix, name, deb, depth);
      continue;
    }
    if (side_ && side_->link && (hardlink || (type == AE_IFLNK && archive_entry_symlink(e))))
      side_->link(prefix + name, hardlink ? hardlink : archive_entry_symlink(e), hardlink != nullptr);
    discard(a, prefix + name, depth);
  }
  return true;
}

void Walker::entry(struct archive* a, struct archive_entry* e, const std::string& prefix, const std::string& name,
                   bool deb, unsigned depth) {
  std::string label = prefix + name;
  std::vector<uint8_t> head;
  if (!read_head(a, &head, label)) return;
  Kind kind = kind_of(Bytes(head.data(), head.size()));
  if (kind == Kind::Code) return read_whole(a, e, head, label, depth, member_, limits_.member_bytes);
  if (kind == Kind::Skip && side_) {
    ArchiveReader::Want want = side_->wants(label);
    if (want == ArchiveReader::Want::Bytes)
      return read_whole(a, e, head, label, depth, side_->take, std::min(limits_.member_bytes, side_->max_bytes));
    if (want == ArchiveReader::Want::Name) side_->take(label, {}, FileData(), nullptr);
  }
  // A .deb's data.tar.* is opened transparently; its control.tar.* holds no GPU code.
  bool data_tar = deb && name.rfind("data.tar", 0) == 0;
  if (kind == Kind::Archive && (!deb || data_tar)) {
    if (depth + 1 > limits_.nesting) {
      over(label,
           "archive nested " + std::to_string(depth + 1) + " levels deep; hipguard opens at most " +
               std::to_string(limits_.nesting) + " levels of archives inside an archive",
           depth + 1, limits_.nesting);
    } else {
      nested(a, std::move(head), data_tar ? prefix : label + "!", label, depth + 1);
    }
  }
  if (!stop_) discard(a, label, depth);
}

struct Walker::Source {
  Walker* walker;
  struct archive* outer;
  std::vector<uint8_t> head;  // already read from `outer`, handed out first
  bool head_given = false;
  const std::string* label;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(kChunk);
};

la_ssize_t Walker::pull(struct archive* inner, void* source, const void** out) {
  auto* s = static_cast<Source*>(source);
  if (!s->head_given) {
    s->head_given = true;
    *out = s->head.data();
    return static_cast<la_ssize_t>(s->head.size());
  }
  la_ssize_t n = archive_read_data(s->outer, s->buffer.data(), s->buffer.size());
  if (n < 0) {
    // Said by the inner level's error (HG113), with the outer's reason.
    archive_set_error(inner, -1 /* ARCHIVE_ERRNO_MISC */, "%s", error_of(s->outer).c_str());
    return ARCHIVE_FATAL;
  }
  if (n > 0 && !s->walker->count(static_cast<uint64_t>(n), *s->label)) {
    archive_set_error(inner, -1 /* ARCHIVE_ERRNO_MISC */, "over hipguard's budget");
    return ARCHIVE_FATAL;
  }
  *out = s->buffer.data();
  return n;
}

void Walker::nested(struct archive* outer, std::vector<uint8_t> head, const std::string& prefix,
                    const std::string& label, unsigned depth) {
  Source source{this, outer, std::move(head), false, &label};
  Reader inner(compressed_magic(Bytes(source.head.data(), source.head.size())));
  // A compressed member with no archive inside is skipped like any member without GPU code.
  if (archive_read_open(inner.a, &source, nullptr, pull, nullptr) != ARCHIVE_OK) {
    if (!unrecognized(inner.a)) corrupt(label, inner.a);
    return;
  }
  walk(inner.a, prefix, depth);
}

// HG111 about a member over `limit` bytes (`at_least`: its size is not known, only that it is over).
Diagnostic over_member(const std::string& label, uint64_t size, bool at_least, uint64_t limit) {
  Diagnostic d =
      make_diagnostic(Code::kBudgetExceeded, label,
                      "archive member is " + std::string(at_least ? "more than " : "") + std::to_string(size) +
                          " bytes; hipguard reads at most " + std::to_string(limit) + " bytes of one archive member",
                      "extract it (dpkg-deb -x, tar -x, unzip) and check the extracted file");
  d.value = size;
  d.limit = limit;
  return d;
}

// HG111 about a member kept neither in a temporary file (it failed part way: ENOSPC) nor in memory.
Diagnostic unkept_member(const std::string& label, uint64_t size, const std::string& why) {
  Diagnostic d = make_diagnostic(Code::kBudgetExceeded, label,
                                 "archive member of more than " + std::to_string(size) +
                                     " bytes could be kept neither in a temporary file (" + why + ") nor in memory",
                                 "free space in TMPDIR (or set TMPDIR to a larger file system), or extract "
                                 "the archive and check the extracted file");
  d.value = size;
  return d;
}

void Walker::refuse(struct archive* a, const std::string& label, unsigned depth, const ArchiveReader::Member& to,
                    const Diagnostic& problem) {
  to(label, {}, FileData(), &problem);
  discard(a, label, depth);
}

// The member handed to `to` (or, over `limit` bytes, HG111 about it): held in memory up to
// kHeldInMemory bytes, beyond that written to a temporary file and handed over mapped from it, so
// that the checks release its pages as they read them (in memory whole only when no temporary file
// can be written: TMPDIR not writable or full).
void Walker::read_whole(struct archive* a, struct archive_entry* e, const std::vector<uint8_t>& head,
                        const std::string& label, unsigned depth, const ArchiveReader::Member& to, uint64_t limit) {
  uint64_t declared =
      archive_entry_size_is_set(e) ? static_cast<uint64_t>(std::max<la_int64_t>(archive_entry_size(e), 0)) : 0;
  auto too_big = [&](uint64_t size, bool at_least) {
    refuse(a, label, depth, to, over_member(label, size, at_least, limit));
  };
  auto unkept = [&](uint64_t size, const std::string& why) {
    refuse(a, label, depth, to, unkept_member(label, size, why));
  };
  if (declared > limit) return too_big(declared, false);
  // Grown with realloc (mremap for large blocks: no copy); a size claimed by a
  // header costs memory only as the bytes really arrive.
  uint64_t cap = std::max<uint64_t>(std::min(declared ? declared : kChunk, kHeldInMemory), head.size());
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::malloc(cap ? cap : 1)), &std::free);
  if (!buf) return too_big(cap, false);
  std::memcpy(buf.get(), head.data(), head.size());
  uint64_t len = head.size();  // bytes in buf (once spilled: not yet written to the file)
  std::optional<SpillFile> spill;
  bool no_spill = false;  // no temporary file could be written: held in memory
  auto written = [&] { return spill ? spill->size() : 0; };
  // A temporary file that fails part way (ENOSPC, a full tmpfs): the part it holds is read back and
  // the member is held in memory from here on, as where there is none. False: no memory for it.
  auto back_to_memory = [&]() -> bool {
    uint64_t w = written();
    Result<FileData> part = spill->map();
    uint64_t need = std::min(w + cap, limit);  // >= w + len: the reads stop short of the limit
    auto* p = part ? static_cast<uint8_t*>(std::realloc(buf.get(), need)) : nullptr;
    if (!p) return false;
    buf.release();
    buf.reset(p);
    std::memmove(p + w, p, len);
    if (w) std::memcpy(p, part->bytes().data(), w);
    spill.reset(), no_spill = true;
    len += w, cap = need;
    return true;
  };
  auto spill_failed = [&] {
    std::string why = std::strerror(errno);
    return back_to_memory() ? std::string() : why;
  };
  for (;;) {
    if (len == cap && !spill && !no_spill && cap >= kHeldInMemory) {
      auto file = SpillFile::create("hipguard-member");
      if (file && file->append(Bytes(buf.get(), len))) spill.emplace(std::move(*file)), len = 0;
      else no_spill = true;
    }
    if (len == cap && spill) {
      if (spill->append(Bytes(buf.get(), len))) len = 0;
      else if (std::string why = spill_failed(); !why.empty()) return unkept(written(), why);
    }
    if (len == cap) {
      if (cap >= limit) return too_big(cap, true);
      uint64_t grown = std::min(std::max(cap * 2, declared), limit);
      auto* p = static_cast<uint8_t*>(std::realloc(buf.get(), grown));
      if (!p) return too_big(grown, false);
      buf.release();
      buf.reset(p);
      cap = grown;
    }
    if (written() + len >= limit) return too_big(written() + len, true);
    la_ssize_t n =
        archive_read_data(a, buf.get() + len, std::min<uint64_t>({cap - len, 16 * kChunk, limit - written() - len}));
    if (n < 0) return corrupt(label, a);
    if (n == 0) break;
    len += static_cast<uint64_t>(n);
    if (!count(static_cast<uint64_t>(n), label)) return;
  }
  if (spill && !spill->append(Bytes(buf.get(), len)))
    if (std::string why = spill_failed(); !why.empty()) return unkept(written(), why);
  if (!spill) return to(label, Bytes(buf.get(), len), FileData(), nullptr);
  buf.reset();
  Result<FileData> mapped = spill->map();
  if (!mapped) return unkept(written(), mapped.error().message);
  to(label, mapped->bytes(), *mapped, nullptr);
}

class LibarchiveReader : public ArchiveReader {
 public:
  LibarchiveReader(const ArchiveLimits& limits, const Platform& platform, const RuntimeInfo* runtime)
      : limits_(limits), platform_(platform), runtime_(runtime) {}
  bool is_archive(Bytes data) const override { return archive_magic(data); }
  Result read(Bytes data, const std::string& path, const Member& member, const FileData* source = nullptr,
              const SideFiles* side = nullptr) const override {
    ImageReading how{limits_, platform_, source, side, runtime_};
    if (auto image = read_image_archive(data, path, how, member)) return std::move(*image);
    if (auto image = read_compressed_image(data, path, how, member)) return std::move(*image);
    uint64_t total = 0;
    return read_installed_archive(data, path, ArchiveWalk{&limits_, path + "!", nullptr, &total, true, source, side},
                                  member);
  }
  bool is_image_directory(const std::string& dir) const override { return is_image_layout(dir); }
  Result read_image_directory(const std::string& dir, const Member& member,
                              const SideFiles* side = nullptr) const override {
    return read_image_layout(dir, {limits_, platform_, nullptr, side, runtime_}, member);
  }

 private:
  ArchiveLimits limits_;
  Platform platform_;
  const RuntimeInfo* runtime_;
};

}  // namespace

bool compressed_magic(Bytes d) {
  using namespace std::string_view_literals;
  return starts(d, 0, "\x1f\x8b"sv) ||
         starts(d, 0,
                "\xfd"
                "7zXZ\0"sv) ||
         starts(d, 0, "\x28\xb5\x2f\xfd"sv) || starts(d, 0, "BZh"sv);
}

ArchiveReader::Result walk_archive(Bytes data, const std::string& path, const ArchiveWalk& walk,
                                   const ArchiveReader::Member& member) {
  ArchiveReader::Result result;
  Walker walker(*walk.limits, path, member, walk.filter, walk.total, walk.side);
  MappedChunks chunks{};  // before `top`: it outlives the archive that reads it
  Reader top(compressed_magic(data));
  // Opening reads ahead: a stream cut short can fail here already (HG113).
  if (open_source(top.a, data, walk.source, &chunks) != ARCHIVE_OK) {
    if (unrecognized(top.a)) return result;
    result.archive = true;
    walker.corrupt(walk.prefix.substr(0, walk.prefix.size() - 1), top.a);
  } else {
    result.archive = walker.walk(top.a, walk.prefix, 0);
  }
  if (walk.source) walk.source->release(data);
  result.diagnostics = std::move(walker.diagnostics);
  if (walk.note_images && walker.image_like.image())
    result.diagnostics.push_back(make_diagnostic(
        Code::kImageReadAsArchive, path,
        "a container image stored compressed (or not as a plain tar) is read as an ordinary archive: its layers "
        "are not applied, so files a later layer deletes are checked and each layer's files are named after it",
        "let it decompress the tar to a temporary file (a writable TMPDIR with room for it), or decompress it "
        "(gunzip, zstd -d) and check the plain tar, or give its OCI layout directory"));
  return result;
}

std::unique_ptr<ArchiveReader> make_archive_reader(const ArchiveLimits& limits, const Platform& platform,
                                                   const RuntimeInfo* runtime) {
  return std::make_unique<LibarchiveReader>(limits, platform, runtime);
}

const ArchiveReader& archive_reader() {
  static const LibarchiveReader reader{ArchiveLimits{}, Platform{}, nullptr};
  return reader;
}

}  // namespace hipguard
