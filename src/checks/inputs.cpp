// Checking files: host ELF sections, bundles, archive members, and check_paths over many files
// (reading a file: file_data.cpp; directory walking: expand_paths.cpp; the ordered pool: ordered_pool.cpp).
#include "hipguard/inputs.h"

#include "base/regular_file.h"
#include "checks/library.h"
#include "hipguard/dependencies.h"
#include "checks/database_hook.h"
#include "checks/expand_paths.h"
#include "format/offloading.h"
#include "checks/ordered_pool.h"

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
#include <filesystem>
#include <thread>
#include <unordered_set>
#include <variant>

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
  auto malformed = [](std::string why) { return ParseError{std::string(code::kMalformedElf), std::move(why)}; };
  using ElfFile = llvm::object::ELFFile<llvm::object::ELF64LE>;
  auto file = ElfFile::create(llvm::StringRef(reinterpret_cast<const char*>(data.data()), data.size()));
  if (!file) return malformed(llvm::toString(file.takeError()));
  auto sections = file->sections();
  if (!sections) return malformed(llvm::toString(sections.takeError()));
  HostSections out;
  for (const auto& sec : *sections) {
    if (sec.sh_type == llvm::ELF::SHT_LLVM_OFFLOADING && out.offloading.empty()) {
      if (auto contents = file->getSectionContents(sec)) out.offloading = Bytes(contents->data(), contents->size());
      else llvm::consumeError(contents.takeError());
      continue;
    }
    auto name = file->getSectionName(sec);
    if (!name) {
      llvm::consumeError(name.takeError());
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
        code::kNoHipFatbin, path,
        "no GPU code to check yet: the .llvm.offloading section holds " + (kinds.empty() ? "no image" : kinds) +
            ", which becomes a code object only when the program is linked (-fgpu-rdc, --offload-new-driver)",
        "check the linked program or shared library"));
}

// Every bundle of `data` (a .hip_fatbin section or a file holding one or more
// bundles back to back; `base`: its offset in the file), each an image of `r`
// or handed to `sink`. The pages
// of a mapped file are dropped bundle by bundle behind the check. `depth`:
// Full, or Library for a kernel library's bundle file.
void check_bundles(Bytes data, uint64_t base, const std::string& path, const std::vector<TargetId>& targets,
                   FileReport& r, const ImageSink* sink, const FileData& file, const Machine& machine,
                   Depth depth = Depth::Full) {
  auto bundles = split_fatbin_section(data);
  size_t n = 0;
  for (auto& sb : bundles) {
    std::string where = ".hip_fatbin bundle " + std::to_string(++n) + "/" + std::to_string(bundles.size()) + " @0x" +
                        llvm::utohexstr(sb.offset, /*LowerCase=*/true);
    ImageReport img = check_image(data.subspan(sb.offset), path, targets, bundles.size() > 1 ? where : "", depth, machine);
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
bool check_archive(Bytes data, const std::string& path, const std::vector<TargetId>& targets,
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
  if (options.archives && options.archives->is_archive(data) && check_archive(data, path, targets, options, r))
    return r;
  bool elf = data.size() >= 64 && std::equal(data.begin(), data.begin() + 4, "\x7f" "ELF");
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
        r.diagnostics.push_back(make_diagnostic(code::kMalformedBundle, path, ".hip_fatbin holds no offload bundle",
                                          "rebuild the program; its GPU code is missing"));
      return r;
    }
    if (!offloading.empty()) return check_offloading(offloading, path, targets, options, r), r;
  }
  if (explicit_arg)
    r.diagnostics.push_back(make_diagnostic(code::kNoHipFatbin, path,
                                      "no GPU code: not a code object, not an offload bundle, and no .hip_fatbin section",
                                      "if this program loads its kernels at run time (hipModuleLoad), check those files "
                                      "instead, or run it under 'hipguard run'"));
  return r;
}

FileReport check_one_file(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options) {
  FileReport r;
  r.path = path;
  auto file = FileData::open(path, options.map_above, options.reuse, options.seen_regular);
  if (!file) {
    r.diagnostics.push_back(make_diagnostic(code::kUnreadable, path, file.error().message, "check the path and permissions"));
    return r;
  }
  return std::move(check_data(file->bytes(), *file, path, targets, options, r));
}
}  // namespace

FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, const CheckFileOptions& options) {
  if (!options.library_file) return check_one_file(path, targets, options);
  // A kernel library's file (library.h): files for other processors are counted, not checked.
  auto mark = [](ImageReport& img) {
    if (library::is_library_image(img)) library::mark_other_targets(img);
  };
  CheckFileOptions o = options;
  if (o.depth == Depth::ForTargets) o.depth = Depth::Library;
  ImageSink marked = [&](ImageReport&& img) {
    mark(img);
    (*options.sink)(std::move(img));
  };
  if (options.sink) o.sink = &marked;
  FileReport r = check_one_file(path, targets, o);
  for (auto& img : r.images) mark(img);
  return r;
}


namespace {
// An archive's members with GPU code, each checked as a file named
// "archive!member" and handed to options.members (or kept in r.members).
// False: not an archive after all.
bool check_archive(Bytes data, const std::string& path, const std::vector<TargetId>& targets,
                   const CheckFileOptions& options, FileReport& r) {
  size_t reported = 0;  // members with GPU code or a problem of their own
  FileSink* files = options.members;
  auto member = [&](const std::string& name, Bytes bytes, const Diagnostic* problem) {
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
    o.library_file = false;  // a member is a file of its own, in no directory's kernel library
    if (o.depth == Depth::Library) o.depth = Depth::ForTargets;
    o.sink = files ? &to_files : nullptr;
    if (problem) m.diagnostics.push_back(*problem);
    else check_data(bytes, FileData(), name, targets, o, m);
    if (!begun && !m.hip && m.diagnostics.empty()) return;
    ++reported;
    if (!files) return r.members.push_back(std::move(m));
    if (!begun) files->begin_file(name);
    files->end_file(std::move(m));
  };
  ArchiveReader::Result result = options.archives->read(data, path, member);
  if (!result.archive) return false;
  r.diagnostics = std::move(result.diagnostics);
  if (reported == 0 && r.diagnostics.empty() && options.explicit_arg)
    r.diagnostics.push_back(make_diagnostic(code::kNoHipFatbin, path,
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

namespace {

// The dependency search of check_paths: the sysroot, and the targets (rocBLAS's <processor>/ directories).
DependencyOptions dependency_options(const CheckPathsOptions& options) {
  DependencyOptions o;
  o.sysroot = options.sysroot;
  for (const auto& t : options.dependency_targets.empty() ? options.targets : options.dependency_targets)
    o.processors.push_back(t.str());
  return o;
}

// An archive's members (CheckFileOptions::members) as FileEvents.
class MemberEvents : public FileSink {
 public:
  explicit MemberEvents(const EventSink& to) : to_(to) {}
  void begin_file(const std::string& path) override { to_(FileEvent(std::in_place_type<std::string>, path)); }
  void image(ImageReport&& img) override { to_(FileEvent(std::move(img))); }
  void end_file(FileReport&& file) override { to_(FileEvent(std::move(file))); }

 private:
  const EventSink& to_;
};

// Delivers files to the sink in input order and keeps the verdict.
class Delivery {
 public:
  Delivery(FileSink& sink, CheckPathsResult& result, library::Tally& libraries)
      : sink_(sink), result_(result), libraries_(libraries) {}
  DatabaseHook* databases = nullptr;  // sees each image's parsed code objects (kernel databases)

  // Files that need no check (HG101, HG110 reports): delivered whole.
  void whole(FileReport&& r) {
    sink_.begin_file(r.path);
    for (auto& img : r.images) image_ok(img), sink_.image(std::move(img));
    r.images.clear();
    end(std::move(r));
  }
  // The images of the file being delivered: the file begins with its first image.
  // `library`: the kernel library of a file found in a directory walk, or "".
  void image(const std::string& path, ImageReport&& img, const std::string& library) {
    if (!begun_) sink_.begin_file(path), begun_ = true;
    if (!library.empty() && !in_member_ && library::is_library_image(img)) libraries_.add(library, img), in_library_ = true;
    image_ok(img);
    if (databases) databases->observe(img);
    sink_.image(std::move(img));
  }
  // The end of a checked file; one that is not HIP and says nothing is skipped.
  // Returns whether it (or a member of it) held GPU code.
  bool finish(FileReport&& r) {
    bool hip = r.hip || member_hip_;
    if (in_library_) r.library = libraries_.last_name();
    in_library_ = false;
    if (begun_ || r.hip || !r.diagnostics.empty()) {
      if (!begun_) sink_.begin_file(r.path);
      end(std::move(r));
    }
    begun_ = member_hip_ = false;
    return hip;
  }
  // The begin or end of an archive member, a file of its own inside the file
  // being delivered (its images come through image(): in no library).
  void member(FileEvent&& e) {
    if (auto* path = std::get_if<std::string>(&e)) return sink_.begin_file(*path), void(begun_ = in_member_ = true);
    FileReport& r = std::get<FileReport>(e);
    member_hip_ = member_hip_ || r.hip;
    end(std::move(r));
    begun_ = in_member_ = false;
  }

 private:
  void image_ok(const ImageReport& img) {
    if (!img.ok()) result_.ok = false;
  }
  void end(FileReport&& r) {
    for (const auto& d : r.diagnostics) {
      if (d.severity == Severity::Error) result_.ok = false;
      if (d.code == code::kUnreadable || d.code == code::kUnreadableArchive) result_.unreadable = true;
    }
    sink_.end_file(std::move(r));
  }

  FileSink& sink_;
  CheckPathsResult& result_;
  library::Tally& libraries_;
  bool begun_ = false;
  bool in_library_ = false;  // the file being delivered has a library image
  bool in_member_ = false;   // an archive member has begun and not ended
  bool member_hip_ = false;  // a member of the file being delivered held GPU code
};

// What check_paths checks: the files below the paths, in order, and what each one is.
struct Plan {
  std::vector<std::string> files;
  std::vector<bool> regular;                       // its stat or directory entry said "regular file"
  std::vector<PathProblem> problems;               // paths that cannot be read (HG101)
  std::unordered_set<std::string> explicit_files;  // named on the command line (a hash set: thousands are looked up)
  std::vector<std::pair<std::string, size_t>> found_below;  // GPU-code files found in each directory argument
  std::vector<DependencyFile> deps;                // what the named files load (dependencies.h), by file
  std::vector<std::string> library_of;             // the kernel library of a file found in a directory walk, or ""

  Plan(const std::vector<std::string>& paths, const CheckPathsOptions& options) {
    files = expand(paths, &problems, &regular);
    for (const auto& p : paths) {
      std::error_code ec;
      if (std::filesystem::is_directory(p, ec)) found_below.emplace_back(p, 0);
      else explicit_files.insert(p);
    }
    // Each after the file that needs it.
    if (options.dependencies) add_dependencies(&files, &regular, explicit_files, dependency_options(options), &deps);
    library_of.resize(files.size());
    for (size_t i = 0; i < files.size(); ++i)
      if (!explicit_files.count(files[i]) && !is_dependency_library(i))
        library_of[i] = library::library_name(files[i]);  // and the kernel files of a dependency
  }

  bool is_dependency_library(size_t i) const { return i < deps.size() && deps[i].shared_library; }

  // How files[i] is checked, whichever thread checks it. Files named on the
  // command line get HG107 when they carry no GPU code; files found inside
  // directories are skipped silently.
  CheckFileOptions file_options(size_t i, const CheckPathsOptions& options, const ImageSink* sink,
                                FileData::ReadBuffer* buffer, FileSink* members) const {
    CheckFileOptions o;
    o.archives = options.archives;
    o.members = members;
    o.explicit_arg = explicit_files.count(files[i]) != 0 && !(i < deps.size() && deps[i].dependencies_have_gpu_code);
    o.sink = sink;
    o.map_above = kCliMapAbove;
    o.reuse = buffer;
    o.seen_regular = regular[i];
    o.depth = options.depth;
    o.machine = options.machine;
    o.library_file = !library_of[i].empty();
    return o;
  }

  // files[i]'s report with what the loader search found about it.
  FileReport with_deps(size_t i, FileReport&& r) {
    if (i >= deps.size()) return std::move(r);
    r.needed_by = deps[i].needed_by;
    for (auto& d : deps[i].diagnostics) r.diagnostics.push_back(std::move(d));
    return std::move(r);
  }

  // A file with GPU code counts for the directory arguments it is below.
  void count_hip(const std::string& f) {
    for (auto& [dir, n] : found_below)
      if (f.size() > dir.size() && f.compare(0, dir.size(), dir) == 0 && (dir.back() == '/' || f[dir.size()] == '/')) ++n;
  }
};

}  // namespace

CheckPathsResult check_paths(const std::vector<std::string>& paths, const CheckPathsOptions& options, FileSink& sink) {
  CheckPathsResult result;
  library::Tally libraries(options.targets);
  Delivery out(sink, result, libraries);
  DatabaseHook databases(paths, options);  // kernel databases: after the files (database_hook.h)
  if (databases.active()) out.databases = &databases;
  Plan plan(paths, options);
  for (const auto& p : plan.problems) out.whole(path_problem_report(p));

  OrderedJobs jobs;
  jobs.count = plan.files.size();
  jobs.jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs.jobs = static_cast<unsigned>(std::min<size_t>(jobs.jobs, std::max<size_t>(jobs.count, 1)));
  jobs.check = [&](size_t i, const EventSink& push, FileData::ReadBuffer& buffer) {
    ImageSink to_sink = [&](ImageReport&& img) { push(FileEvent(std::move(img))); };
    MemberEvents members(push);
    return plan.with_deps(i, check_file(plan.files[i], options.targets,
                                        plan.file_options(i, options, &to_sink, &buffer, &members)));
  };
  jobs.deliver = [&](size_t i, FileEvent&& e) {
    if (auto* img = std::get_if<ImageReport>(&e)) out.image(plan.files[i], std::move(*img), plan.library_of[i]);
    else out.member(std::move(e));
  };
  jobs.finish = [&](size_t i, FileReport&& r) {
    if (out.finish(std::move(r))) plan.count_hip(plan.files[i]);
    if (options.progress) options.progress(i + 1, plan.files.size(), plan.files[i]);
  };
  run_in_order(jobs);

  databases.finish([&](FileReport&& r) { out.whole(std::move(r)); });
  for (auto& r : libraries.missing_targets()) out.whole(std::move(r));
  for (auto& l : libraries.take()) sink.library(std::move(l));
  if (options.empty_directory_is_error)
    for (const auto& [dir, n] : plan.found_below)
      if (n == 0) out.whole(empty_directory_report(dir));
  return result;
}

}  // namespace hipguard
