// Checking one file: host ELF sections, bundles, archive members (many paths in order: check_paths.cpp;
// reading a file: inputs/file_data.cpp).
#include "hipguard/check_paths.h"

#include "base/regular_file.h"
#include "checks/library.h"
#include "format/offloading.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/ADT/StringExtras.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>

namespace hipguard {
bool FileReport::ok() const {
  for (const auto& d : diagnostics)
    if (d.severity == Severity::Error) return false;
  for (const auto& i : images)
    if (!i.ok()) return false;
  for (const auto& m : members)
    if (!m.ok()) return false;
  return true;
}

namespace {

// The device code sections of a host ELF: .hip_fatbin, and the new offload
// driver's SHT_LLVM_OFFLOADING section (.llvm.offloading), which counts only
// without .hip_fatbin. Empty when absent.
struct HostSections {
  Bytes hip_fatbin, offloading;
};

// HG106 (kMalformedElf) when the file is not a usable ELF of the host kind.
Result<HostSections> find_host_sections(Bytes data) {
  auto malformed = [](std::string why) { return ParseError{Code::kMalformedElf, std::move(why)}; };
  using ElfFile = llvm::object::ELFFile<llvm::object::ELF64LE>;
  auto file = ElfFile::create(llvm::StringRef(reinterpret_cast<const char*>(data.data()), data.size()));
  if (!file) return malformed(llvm::toString(file.takeError()));
  auto sections = file->sections();
  if (!sections) return malformed(llvm::toString(sections.takeError()));
  HostSections out;
  for (const auto& sec : *sections) {
    if (sec.sh_type == llvm::ELF::SHT_LLVM_OFFLOADING && out.offloading.empty()) {
      if (auto contents = file->getSectionContents(sec)) out.offloading = Bytes(contents->data(), contents->size());
      else llvm::consumeError(contents.takeError());  // unreadable: as if absent, .hip_fatbin may still be found
      continue;
    }
    auto name = file->getSectionName(sec);
    if (!name) {
      llvm::consumeError(name.takeError());  // a section without a readable name is not .hip_fatbin
      continue;
    }
    if (*name != ".hip_fatbin") continue;
    auto contents = file->getSectionContents(sec);
    if (!contents) return malformed(".hip_fatbin: " + llvm::toString(contents.takeError()));
    out.hip_fatbin = Bytes(contents->data(), contents->size());
    return out;
  }
  return out;
}

// The AMDGPU code objects of a .llvm.offloading section, each an image of `r`
// (or handed to `sink`). Images of LLVM IR (-fgpu-rdc) become code objects
// only when the program is linked: nothing to check, said when `explicit_arg`.
void check_offloading(Bytes section, const std::string& path, const std::vector<TargetId>& targets,
                      const CheckFileOptions& options, FileReport& r) {
  auto images = read_offloading_section(section);
  if (!images) {
    if (options.explicit_arg)
      r.diagnostics.push_back(make_diagnostic(images.error().code, path,
                                              "cannot read .llvm.offloading: " + images.error().message,
                                              "the file is damaged; rebuild it"));
    return;
  }
  std::string kinds;
  size_t n = 0;
  for (auto& image : *images) {
    kinds += (kinds.empty() ? "" : ", ") + image.kind + " for " + image.arch;
    if (!image.code_object) continue;
    r.hip = true;
    std::string where = ".llvm.offloading image " + std::to_string(++n) + " (" + image.arch + ")";
    ImageReport img = check_image(Bytes(reinterpret_cast<const uint8_t*>(image.bytes.data()), image.bytes.size()), path,
                                  targets, where, options.depth, options.machine);
    if (options.sink) (*options.sink)(std::move(img));
    else r.images.push_back(std::move(img));
  }
  if (!r.hip && options.explicit_arg)
    r.diagnostics.push_back(make_diagnostic(
        Code::kNoHipFatbin, path,
        "no GPU code to check yet: the .llvm.offloading section holds " + (kinds.empty() ? "no image" : kinds) +
            ", which becomes a code object only when the program is linked (-fgpu-rdc, --offload-new-driver)",
        "check the linked program or shared library"));
}

// Every bundle of `data` (a .hip_fatbin section or a file holding one or more
// bundles back to back; `base`: its offset in the file), each an image of `r`
// or handed to `sink`. The pages
// of a mapped file are dropped bundle by bundle behind the check, and a compressed bundle's behind
// its decoder. `depth`:
// Full, or Library for a kernel library's bundle file.
void check_bundles(Bytes data, uint64_t base, const std::string& path, const std::vector<TargetId>& targets,
                   FileReport& r, const ImageSink* sink, const FileData& file, const Machine& machine,
                   Depth depth = Depth::Full) {
  auto bundles = split_fatbin_section(data);
  auto release = [&file](Bytes read) { file.release_before(read.data() + read.size()); };
  size_t n = 0;
  for (auto& sb : bundles) {
    std::string where = ".hip_fatbin bundle " + std::to_string(++n) + "/" + std::to_string(bundles.size()) + " @0x" +
                        llvm::utohexstr(sb.offset, /*LowerCase=*/true);
    ImageReport img = check_image(data.subspan(sb.offset), path, targets, bundles.size() > 1 ? where : "", depth,
                                  machine, nullptr, {}, release);
    img.file_offset = base + sb.offset;
    if (sink) (*sink)(std::move(img));
    else r.images.push_back(std::move(img));
    uint64_t end = sb.bundle ? sb.offset + sb.bundle->encoded_size : sb.offset;
    if (end <= data.size()) file.release_before(data.data() + end);
  }
}

}  // namespace

FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, bool explicit_arg,
                      FileData::Access access) {
  CheckFileOptions o;
  o.explicit_arg = explicit_arg;
  o.map_above = access == FileData::Access::CopyAlways ? UINT64_MAX : FileData::kCopyLimit;
  return check_file(path, targets, o);
}

namespace {
using ReadMembers = std::function<ArchiveReader::Result(const ArchiveReader::Member&)>;
bool check_archive(const ReadMembers& read, const std::string& path, const std::vector<TargetId>& targets,
                   const CheckFileOptions& options, FileReport& r);

// check_file on bytes already read: a file's, or an archive member's (`file`
// then owns nothing and release_before does nothing).
FileReport& check_data(Bytes data, const FileData& file, const std::string& path, const std::vector<TargetId>& targets,
                       const CheckFileOptions& options, FileReport& r) {
  bool explicit_arg = options.explicit_arg;
  const ImageSink* sink = options.sink;
  PayloadKind kind = classify(data);
  if (kind == PayloadKind::CodeObject) {
    r.hip = true;
    ImageReport img = check_image(data, path, targets, "", options.depth, options.machine);
    if (sink) (*sink)(std::move(img));
    else r.images.push_back(std::move(img));
    return r;
  }
  if (kind == PayloadKind::OffloadBundle || kind == PayloadKind::CompressedBundle) {
    // A bundle file, or a dumped .hip_fatbin section: several bundles back to back.
    r.hip = true;
    check_bundles(data, 0, path, targets, r, sink, file, options.machine,
                  options.depth == Depth::Library ? Depth::Library : Depth::Full);
    return r;
  }
  if (options.archives && options.archives->is_archive(data)) {
    auto read = [&](const ArchiveReader::Member& member) {
      return options.archives->read(data, path, member, &file, options.side_files);
    };
    if (check_archive(read, path, targets, options, r)) return r;
  }
  bool elf = data.size() >= 64 && std::equal(data.begin(), data.begin() + 4,
                                             "\x7f"
                                             "ELF");
  if (elf && data[4] == 2 && data[5] == 1) {
    auto sections = find_host_sections(data);
    if (!sections) {
      if (explicit_arg)
        r.diagnostics.push_back(make_diagnostic(sections.error().code, path,
                                                "cannot read the host ELF: " + sections.error().message,
                                                "the file is damaged; rebuild it"));
      return r;
    }
    Bytes section = sections->hip_fatbin, offloading = sections->offloading;
    if (!section.empty()) {
      r.hip = true;
      size_t images = 0;
      ImageSink counting;
      if (sink) counting = [&](ImageReport&& img) { ++images, (*sink)(std::move(img)); };
      check_bundles(section, static_cast<uint64_t>(section.data() - data.data()), path, targets, r,
                    sink ? &counting : nullptr, file, options.machine);
      if (r.images.empty() && images == 0)
        r.diagnostics.push_back(make_diagnostic(Code::kMalformedBundle, path, ".hip_fatbin holds no offload bundle",
                                                "rebuild the program; its GPU code is missing"));
      return r;
    }
    if (!offloading.empty()) return check_offloading(offloading, path, targets, options, r), r;
  }
  if (explicit_arg)
    r.diagnostics.push_back(make_diagnostic(
        Code::kNoHipFatbin, path, "no GPU code: not a code object, not an offload bundle, and no .hip_fatbin section",
        "if this program loads its kernels at run time (hipModuleLoad), check those files "
        "instead, or run it under 'hipguard run'"));
  return r;
}

// A kernel library's file (library.h): an image built only for other processors is marked
// other_target and counted, not reported as an error for them.
void mark_library_image(ImageReport& img) {
  if (library::is_library_image(img)) library::mark_other_targets(img);
}

// `options` for a kernel library's file, a file found in a directory walk or an archive's member:
// checked to Depth::Library, each image marked before it reaches options.sink (through `marked`,
// which must outlive the check).
CheckFileOptions library_file_options(const CheckFileOptions& options, ImageSink& marked) {
  CheckFileOptions o = options;
  if (o.depth == Depth::ForTargets) o.depth = Depth::Library;
  if (options.sink) {
    marked = [sink = options.sink](ImageReport&& img) {
      mark_library_image(img);
      (*sink)(std::move(img));
    };
    o.sink = &marked;
  }
  return o;
}

FileReport check_one_file(const std::string& path, const std::vector<TargetId>& targets,
                          const CheckFileOptions& options) {
  FileReport r;
  r.path = path;
  if (options.archives && !options.seen_regular && options.archives->is_image_directory(path)) {
    auto read = [&](const ArchiveReader::Member& member) {
      return options.archives->read_image_directory(path, member, options.side_files);
    };
    return check_archive(read, path, targets, options, r), r;
  }
  auto file = FileData::open(path, options.map_above, options.reuse, options.seen_regular);
  if (!file) {
    r.diagnostics.push_back(
        make_diagnostic(Code::kUnreadable, path, file.error().message, "check the path and permissions"));
    return r;
  }
  return std::move(check_data(file->bytes(), *file, path, targets, options, r));
}
}  // namespace

FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options) {
  if (!options.library_file) return check_one_file(path, targets, options);
  ImageSink marked;
  FileReport r = check_one_file(path, targets, library_file_options(options, marked));
  for (auto& img : r.images) mark_library_image(img);
  return r;
}

namespace {
// An archive's members with GPU code, each checked as a file named
// "archive!member" and handed to options.members (or kept in r.members).
// False: not an archive after all.
bool check_archive(const ReadMembers& read, const std::string& path, const std::vector<TargetId>& targets,
                   const CheckFileOptions& options, FileReport& r) {
  size_t reported = 0;  // members with GPU code or a problem of their own
  FileSink* files = options.members;
  auto member = [&](const std::string& name, Bytes bytes, const FileData& file, const Diagnostic* problem) {
    FileReport m;
    m.path = name;
    bool begun = false;
    ImageSink to_files = [&](ImageReport&& img) {
      if (!begun) files->begin_file(name), begun = true;
      files->image(std::move(img));
    };
    CheckFileOptions o = options;
    o.explicit_arg = false;  // a member without GPU code is skipped, like a file found in a directory
    o.archives = nullptr;    // nested archives are the reader's
    o.sink = files ? &to_files : nullptr;
    // A member is a file of the kernel library its directory in the archive is, as the same file
    // found in a directory walk once the archive is installed (check_paths delivers it to that library).
    ImageSink marked;
    o = library_file_options(o, marked);
    if (problem) m.diagnostics.push_back(*problem);
    else check_data(bytes, file, name, targets, o, m);
    for (auto& img : m.images) mark_library_image(img);
    if (!begun && !m.hip && m.diagnostics.empty()) return;
    ++reported;
    if (!files) return r.members.push_back(std::move(m));
    if (!begun) files->begin_file(name);
    files->end_file(std::move(m));
  };
  ArchiveReader::Result result = read(member);
  if (!result.archive) return false;
  r.diagnostics = std::move(result.diagnostics);
  // Its databases' files may be missing from what was read: not to be called missing.
  if (options.side_files && options.side_files->incomplete &&
      std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                  [](const Diagnostic& d) { return d.severity == Severity::Error; }))
    options.side_files->incomplete(path);
  if (reported == 0 && r.diagnostics.empty() && options.explicit_arg)
    r.diagnostics.push_back(make_diagnostic(Code::kNoHipFatbin, path,
                                            "no GPU code in this archive: no member is a code object, an offload "
                                            "bundle or a program with a .hip_fatbin section",
                                            "check the package or build output that holds the kernels"));
  return true;
}
}  // namespace

void CollectSink::begin_file(const std::string& path) {
  current_ = FileReport();
  current_.path = path;
}

void CollectSink::image(ImageReport&& img) {
  if (on_image_) on_image_(img);
  if (!keep_parsed_) {
    std::deque<CodeObjectSummary>().swap(img.code_objects);
    std::vector<BundleEntry>().swap(img.entries);
  }
  current_.images.push_back(std::move(img));
}

void CollectSink::end_file(FileReport&& file) {
  current_.diagnostics = std::move(file.diagnostics);
  current_.hip = file.hip;
  current_.library = std::move(file.library);
  current_.needed_by = std::move(file.needed_by);
  if (on_file_) on_file_(current_);
  if (keep_) reports.push_back(std::move(current_));
  current_ = FileReport();
}

FileReport path_problem_report(const PathProblem& p) {
  FileReport r;
  r.path = p.path;
  std::string why = p.reason;
  if (!why.empty()) why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
  r.diagnostics.push_back(make_diagnostic(Code::kUnreadable, p.path, why, "check the path and its permissions"));
  return r;
}

FileReport empty_directory_report(const std::string& path) {
  FileReport r;
  r.path = path;
  r.diagnostics.push_back(make_diagnostic(Code::kNothingToCheck, path,
                                          "no GPU code found below this directory (no code object, offload bundle or "
                                          "program with a .hip_fatbin section): nothing was checked",
                                          "check the path; name the build outputs that hold the kernels"));
  return r;
}

}  // namespace hipguard
