// check_paths: the files below many paths checked in parallel and delivered in input order, each
// with its dependencies (dependencies.h) and kernel library (library.h) (directory walking:
// inputs/expand_paths.cpp; one file: check_file.cpp; the ordered pool: ordered_pool.cpp).
#include "hipguard/check_paths.h"

#include "inputs/expand_paths.h"
#include "checks/library.h"
#include "checks/ordered_pool.h"
#include "hipguard/dependencies.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace hipguard {

namespace {

// The dependency search of check_paths: the sysroot, and the targets (rocBLAS's <processor>/ directories).
DependencyOptions dependency_options(const CheckPathsOptions& options) {
  DependencyOptions o;
  o.sysroot = options.sysroot;
  for (const auto& t : options.dependency_targets.empty() ? options.targets : options.dependency_targets)
    o.processors.push_back(t.str());
  return o;
}

// A file's images and its archive's members (CheckFileOptions::sink and ::members) as FileEvents.
class FileEvents : public FileSink {
 public:
  explicit FileEvents(const EventSink& to) : to_(to) {}
  void begin_file(const std::string& path) override { to_(FileEvent(std::in_place_type<std::string>, path)); }
  void image(ImageReport&& img) override { to_(FileEvent(std::move(img))); }
  void end_file(FileReport&& file) override { to_(FileEvent(std::move(file))); }

 private:
  const EventSink& to_;
};

// An archive member's kernel library: its directory inside the archive, named as library_name
// names an installed file's ("pkg.deb!usr/lib/rocblas/library", "lib.tar!hsa/<processor>"); a member
// at the archive's top is in the archive's own ("pkg.tar!."), never in the directory that holds the
// archive. Member names are "ARCHIVE!MEMBER" (nested: "A!B!MEMBER").
std::string member_library(const std::string& member) {
  const size_t bang = member.rfind('!');
  if (bang == std::string::npos) return library::library_name(member);
  return member.substr(0, bang + 1) + library::library_name(member.substr(bang + 1));
}

// Delivers files to the sink in input order and keeps the verdict.
class Delivery {
 public:
  Delivery(FileSink& sink, CheckPathsResult& result, library::Tally& libraries)
      : sink_(sink), result_(result), libraries_(libraries) {}
  DatabaseStep* databases = nullptr;  // sees each image's parsed code objects (kernel databases)

  // Files that need no check (HG101, HG110 reports): delivered whole.
  void whole(FileReport&& r) {
    sink_.begin_file(r.path);
    for (auto& img : r.images) image_ok(img), sink_.image(std::move(img));
    r.images.clear();
    end(std::move(r));
  }
  // The images of the file being delivered: the file begins with its first image.
  // `library`: the kernel library of a file found in a directory walk, or "". An archive member's
  // images go to the library of its directory in the archive.
  void image(const std::string& path, ImageReport&& img, const std::string& library) {
    if (!begun_) sink_.begin_file(path), begun_ = true;
    const std::string& in = in_member_ ? member_library_ : library;
    if (!in.empty() && library::is_library_image(img)) {
      libraries_.add(in, img);
      (in_member_ ? member_in_library_ : in_library_) = true;
    }
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
  // being delivered ("archive!member"; its images come through image()).
  void member(FileEvent&& e) {
    if (auto* path = std::get_if<std::string>(&e)) {
      sink_.begin_file(*path);
      begun_ = in_member_ = true;
      member_library_ = member_library(*path);
      return;
    }
    FileReport& r = std::get<FileReport>(e);
    member_hip_ = member_hip_ || r.hip;
    if (member_in_library_) r.library = libraries_.last_name();
    end(std::move(r));
    begun_ = in_member_ = member_in_library_ = false;
  }

 private:
  void image_ok(const ImageReport& img) {
    if (!img.ok()) result_.ok = false;
  }
  void end(FileReport&& r) {
    for (const auto& d : r.diagnostics) {
      if (d.severity == Severity::Error) result_.ok = false;
      if (d.code == Code::kUnreadable || d.code == Code::kUnreadableArchive) result_.unreadable = true;
    }
    sink_.end_file(std::move(r));
  }

  FileSink& sink_;
  CheckPathsResult& result_;
  library::Tally& libraries_;
  bool begun_ = false;
  bool in_library_ = false;         // the file being delivered has a library image
  bool in_member_ = false;          // an archive member has begun and not ended
  std::string member_library_;      // its library: its directory in the archive (library_name)
  bool member_in_library_ = false;  // it has a library image
  bool member_hip_ = false;         // a member of the file being delivered held GPU code
};

// What check_paths checks: the files below the paths, in order, and what each one is.
struct Plan {
  std::vector<std::string> files;
  std::vector<bool> regular;                       // its stat or directory entry said "regular file"
  std::vector<PathProblem> problems;               // paths that cannot be read (HG101)
  std::unordered_set<std::string> explicit_files;  // named on the command line (a hash set: thousands are looked up)
  std::vector<std::pair<std::string, size_t>> found_below;  // GPU-code files found in each directory argument
  std::vector<DependencyFile> deps;                         // what the named files load (dependencies.h), by file
  std::vector<std::string> library_of;  // the kernel library of a file found in a directory walk, or ""
  const ArchiveReader::SideFiles* side_files = nullptr;  // the kernel-database step's, for archives
  std::vector<const RuntimeInfo*> runtime_of;  // the sysroot's runtime that selects for files[i] (null: options')

  Plan(const std::vector<std::string>& paths, const CheckPathsOptions& options) {
    files = expand(paths, &problems, &regular, options.archives);
    for (const auto& p : paths) {
      std::error_code ec;
      bool image = options.archives && options.archives->is_image_directory(p);  // an OCI layout: one input
      if (std::filesystem::is_directory(p, ec) && !image) found_below.emplace_back(p, 0);
      else explicit_files.insert(p);
    }
    // Each after the file that needs it.
    if (options.dependencies) add_dependencies(&files, &regular, explicit_files, dependency_options(options), &deps);
    if (!options.machine.runtime && !options.sysroot.empty()) take_root_runtimes();
    library_of.resize(files.size());
    for (size_t i = 0; i < files.size(); ++i)
      if (!explicit_files.count(files[i]) && !is_dependency_library(i))
        library_of[i] = library::library_name(files[i]);  // and the kernel files of a dependency
  }

  // The sysroot is the machine the named files run on: each named file and what it loads are selected
  // as the HIP runtime it loads there selects them, said when that is not the newest (HG125); other
  // files (one that loads no runtime, or none with a version in its name, an archive, an image: a
  // machine of its own) as options.machine.
  void take_root_runtimes() {
    runtime_of.assign(files.size(), nullptr);
    const RuntimeInfo* loaded = nullptr;  // by the named file whose dependencies follow
    for (size_t i = 0; i < deps.size(); ++i) {
      DependencyFile& d = deps[i];
      if (d.needed_by.empty()) {  // named (or walked): its dependencies follow it
        std::string version;
        loaded = runtime_for_library(d.hip_runtime, &version);
        if (loaded && loaded != &default_runtime())
          d.diagnostics.push_back(make_diagnostic(Code::kRootHipRuntime, files[i],
                                                  "loads HIP " + version + " in the sysroot (" + d.hip_runtime +
                                                      "): it and what it loads are checked as HIP " + version +
                                                      " selects code objects, not as the newest (" +
                                                      runtime_label(default_runtime()) + ")",
                                                  "nothing to fix; --runtime " + std::string(default_runtime().name) +
                                                      " checks for a machine with the newest ROCm"));
      }
      runtime_of[i] = loaded;
    }
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
    if (i < runtime_of.size() && runtime_of[i]) o.machine.runtime = runtime_of[i];
    o.library_file = !library_of[i].empty();
    o.side_files = side_files;
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
      if (f.size() > dir.size() && f.compare(0, dir.size(), dir) == 0 && (dir.back() == '/' || f[dir.size()] == '/'))
        ++n;
  }
};

}  // namespace

CheckPathsResult check_paths(const std::vector<std::string>& paths, const CheckPathsOptions& options, FileSink& sink) {
  CheckPathsResult result;
  library::Tally libraries(options.targets);
  Delivery out(sink, result, libraries);
  std::unique_ptr<DatabaseStep> databases;  // kernel databases: after the files
  if (options.kernel_databases) databases = options.kernel_databases(paths, options.targets);
  out.databases = databases.get();
  Plan plan(paths, options);
  if (databases) plan.side_files = databases->archive_files();
  for (const auto& p : plan.problems) out.whole(path_problem_report(p));

  OrderedJobs jobs;
  jobs.count = plan.files.size();
  jobs.jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs.jobs = static_cast<unsigned>(std::min<size_t>(jobs.jobs, std::max<size_t>(jobs.count, 1)));
  jobs.check = [&](size_t i, const EventSink& push, FileData::ReadBuffer& buffer) {
    FileEvents events(push);
    auto check = [&](FileSink& to) {
      ImageSink images = [&](ImageReport&& img) { to.image(std::move(img)); };
      return check_file(plan.files[i], options.targets, plan.file_options(i, options, &images, &buffer, &to));
    };
    if (!options.cache) return plan.with_deps(i, check(events));
    CheckFileOptions o = plan.file_options(i, options, nullptr, nullptr, nullptr);
    return plan.with_deps(i, options.cache->check(plan.files[i], options.targets, o, events, check));
  };
  jobs.deliver = [&](size_t i, FileEvent&& e) {
    if (auto* img = std::get_if<ImageReport>(&e)) out.image(plan.files[i], std::move(*img), plan.library_of[i]);
    else out.member(std::move(e));
  };
  jobs.finish = [&](size_t i, FileReport&& r) {
    if (out.finish(std::move(r))) plan.count_hip(plan.files[i]), result.gpu_code = true;
    if (options.progress) options.progress(i + 1, plan.files.size(), plan.files[i]);
  };
  run_in_order(jobs);

  if (databases) databases->finish([&](FileReport&& r) { out.whole(std::move(r)); });
  for (auto& r : libraries.missing_targets()) out.whole(std::move(r));
  for (auto& l : libraries.take()) sink.library(std::move(l));
  if (options.empty_directory_is_error)
    for (const auto& [dir, n] : plan.found_below)
      if (n == 0) out.whole(empty_directory_report(dir));
  return result;
}

}  // namespace hipguard
