// Dependencies: the libraries a program loads (glibc's search, inside a sysroot) and the kernel files
// those libraries open, for `hipguard check`.
#include "hipguard/dependencies.h"

#include "hipguard/runtime_version.h"
#include "hipguard/target.h"
#include "inputs/dynamic_elf.h"
#include "inputs/file_tree.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace hipguard {
namespace {

constexpr size_t kMaxConfDepth = 8;    // ld.so.conf include nesting
constexpr size_t kMaxConfDirs = 1024;  // directories taken from ld.so.conf
// Debian x86-64 glibc's system directories, in order (`ld.so --help`: "system search path").
const std::vector<std::string> kSystemDirs = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};
// Fedora's and RHEL's (AlmaLinux, Rocky; glibc built with slibdir /lib64, libdir /usr/lib64).
const std::vector<std::string> kLib64SystemDirs = {"/lib64", "/usr/lib64"};
constexpr const char* kLib = "lib/x86_64-linux-gnu";  // Debian's $LIB (multiarch slibdir)
constexpr const char* kLib64 = "lib64";               // Fedora's and RHEL's $LIB
constexpr const char* kPlatform = "x86_64";           // $PLATFORM without CPU-specific subplatforms

std::string dirname_of(const std::string& p) {
  size_t s = p.rfind('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : p.substr(0, s);
}

// "gfx942:xnack-" -> "gfx942": the subdirectory name (the GPU's gcnArchName up to its first ':').
std::string processor_of(const std::string& target_id) { return target_id.substr(0, target_id.find(':')); }

std::string basename_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// One object of the resolution.
struct Node {
  std::string at;    // the path as found, inside the root ("/usr/lib/x86_64-linux-gnu/libx.so.1")
  std::string real;  // the same with every symlink followed ("/usr/lib/x86_64-linux-gnu/libx.so.1.2.3")
  std::string host;  // how findings name it (FileTree::Found::label)
  std::string origin;
  ElfInfo elf;
  size_t loader = SIZE_MAX;  // the object whose DT_NEEDED (or dlopen) brought it
  Dependency::Kind kind = Dependency::Kind::Needed;
  std::string name;  // the name it was asked for
};

class Resolver {
 public:
  Resolver(const FileTree& tree, const DependencyOptions& o) : tree_(tree), opt_(o) {}
  // A file of this machine (inside the sysroot, when `root` is not ""), as named on the command line.
  Dependencies run(const std::string& path, const std::string& root);
  // The program at `at` inside the tree.
  Dependencies run_at(const std::string& at);

 private:
  Dependencies resolve();
  bool is_dir(const std::string& at) const {
    auto f = tree_.find(at);
    return f && f->directory;
  }
  // The sorted names in the directory `at` that `keep` accepts.
  template <class F>
  std::vector<std::string> list_dir(const std::string& at, F keep) const {
    std::vector<std::string> out = tree_.list(at);
    out.erase(std::remove_if(out.begin(), out.end(), [&](const std::string& f) { return !keep(f); }), out.end());
    return out;
  }
  std::string expand(const std::string& entry, const Node& n) const;
  std::vector<std::string> entries(const std::string& list, const Node& n) const;
  const std::vector<std::string>& system_dirs() const;
  const std::vector<std::string>& conf_dirs();
  void read_conf(const std::string& at, size_t depth);
  std::optional<size_t> load(const std::string& name, size_t loader, Dependency::Kind kind,
                             std::vector<std::string>* tried);
  std::optional<size_t> try_file(const std::string& at, const std::string& name, size_t loader, Dependency::Kind kind);
  void follow(size_t first);
  void library_loaders();
  void tensile(size_t lib, const std::vector<std::string>& dirs, const char* what, bool subdirectories = true);
  void add_kernel_files(size_t lib, const std::string& dir);
  void warn(Code code, size_t needer, std::string message, std::string fix);

  const FileTree& tree_;
  const DependencyOptions& opt_;
  std::vector<Node> nodes_;
  std::map<std::pair<uint64_t, uint64_t>, size_t> by_file_;
  std::map<std::string, size_t> by_name_;  // names asked for and DT_SONAMEs
  bool conf_read_ = false, capped_ = false;
  std::vector<std::string> conf_;
  std::vector<Dependency> kernels_;
  Dependencies out_;
};

// `host` (a path on this machine) inside `root`, or "" when outside it.
std::string in_root(const std::string& root, const std::string& host) {
  if (root.empty()) return host;
  if (host.size() > root.size() && host.compare(0, root.size(), root) == 0 && host[root.size()] == '/')
    return host.substr(root.size());
  return "";  // outside the root: no $ORIGIN
}

std::string Resolver::expand(const std::string& entry, const Node& n) const {
  std::string out;
  for (size_t i = 0; i < entry.size();) {
    if (entry[i] != '$') {
      out += entry[i++];
      continue;
    }
    auto token = [&](const char* t) {
      size_t l = strlen(t);
      if (entry.compare(i + 1, l, t) == 0 &&
          (i + 1 + l == entry.size() ||
           (!isalnum(static_cast<unsigned char>(entry[i + 1 + l])) && entry[i + 1 + l] != '_')))
        return l + 1;
      if (entry.compare(i + 1, l + 2, std::string("{") + t + "}") == 0) return l + 3;
      return size_t(0);
    };
    if (size_t l = token("ORIGIN")) out += n.origin, i += l;
    else if (size_t l = token("LIB")) out += &system_dirs() == &kLib64SystemDirs ? kLib64 : kLib, i += l;
    else if (size_t l = token("PLATFORM")) out += kPlatform, i += l;
    else out += entry[i++];  // unknown: kept as is, as _dl_dst_substitute does
  }
  return out;
}

// A DT_RPATH / DT_RUNPATH list expanded; empty and relative entries (the working directory) dropped,
// and $ORIGIN entries when the origin is unknown.
std::vector<std::string> Resolver::entries(const std::string& list, const Node& n) const {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(':', i);
    if (j == std::string::npos) j = list.size();
    std::string e = list.substr(i, j - i);
    i = j + 1;
    if (e.find("ORIGIN") != std::string::npos && n.origin.empty()) continue;
    e = expand(e, n);
    if (!e.empty() && e[0] == '/') out.push_back(e);
  }
  return out;
}

void Resolver::read_conf(const std::string& at, size_t depth) {
  auto file = tree_.find(at);
  std::istringstream in(file && !file->directory ? tree_.text(*file) : "");
  std::string line;
  while (depth < kMaxConfDepth && conf_.size() < kMaxConfDirs && std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, e - b + 1);
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern = line.substr(line.find_first_not_of(" \t", 7));
      if (pattern[0] != '/') pattern = dirname_of(at) + "/" + pattern;  // ldconfig: beside the file
      std::string dir = dirname_of(pattern), glob = basename_of(pattern);
      // glob(3) order
      auto found = list_dir(dir, [&](const std::string& f) { return fnmatch(glob.c_str(), f.c_str(), 0) == 0; });
      for (const auto& f : found) read_conf(dir + "/" + f, depth + 1);
    } else if (line.rfind("hwcap", 0) != 0 && line[0] == '/') {
      conf_.push_back(line.substr(0, line.find('=')));  // "dir=TYPE" of old files
    }
  }
}

// The root's glibc's system directories: Debian's multiarch ones, unless the root has no
// /lib/x86_64-linux-gnu but a /usr/lib64 (a Fedora or RHEL root, whose libc is there). $LIB follows.
const std::vector<std::string>& Resolver::system_dirs() const {
  return !is_dir(kSystemDirs[0]) && is_dir(kLib64SystemDirs[1]) ? kLib64SystemDirs : kSystemDirs;
}

const std::vector<std::string>& Resolver::conf_dirs() {
  if (!conf_read_) {
    conf_read_ = true;
    read_conf("/etc/ld.so.conf", 0);
    for (const auto& d : system_dirs()) conf_.push_back(d);  // ldconfig caches the trusted directories too
  }
  return conf_;
}

std::optional<size_t> Resolver::try_file(const std::string& at, const std::string& name, size_t loader,
                                         Dependency::Kind kind) {
  std::optional<FileTree::Found> file = tree_.find(at);
  if (!file || file->directory) return std::nullopt;
  auto same = by_file_.find(file->identity);
  if (same != by_file_.end()) return same->second;
  ElfInfo elf = tree_.elf(*file);
  // open_verify: a file of another class or machine is passed over and the search goes on.
  if (!elf.elf || (!nodes_.empty() && elf.machine != nodes_[0].elf.machine)) return std::nullopt;
  if (nodes_.size() >= opt_.max_objects) {
    if (!capped_)
      warn(Code::kDependencyLimit, loader,
           "more than " + std::to_string(opt_.max_objects) + " objects to load: " + name +
               " and what follows it were not checked",
           "check the libraries that were left out on their own");
    capped_ = true;
    return std::nullopt;
  }
  Node n;
  n.at = at, n.host = file->label, n.loader = loader, n.kind = kind, n.name = name, n.elf = std::move(elf);
  n.origin = dirname_of(at), n.real = file->at;
  size_t i = nodes_.size();
  by_file_[file->identity] = i;
  if (!n.elf.soname.empty()) by_name_.emplace(n.elf.soname, i);
  nodes_.push_back(std::move(n));
  if (!nodes_[i].elf.error.empty())
    warn(Code::kDependencyUnreadable, i, "cannot read the dynamic section: " + nodes_[i].elf.error,
         "the file is damaged; reinstall it (the dynamic loader would refuse it)");
  return i;
}

// _dl_map_object for `name` needed by nodes_[loader].
std::optional<size_t> Resolver::load(const std::string& name, size_t loader, Dependency::Kind kind,
                                     std::vector<std::string>* tried) {
  if (auto known = by_name_.find(name); known != by_name_.end()) return known->second;
  if (name.find('/') != std::string::npos) {  // as is; a relative one is the process's working directory
    if (name[0] != '/') return std::nullopt;
    tried->push_back(name);
    return try_file(name, name, loader, kind);
  }
  std::vector<std::string> dirs;
  const Node& l = nodes_[loader];
  if (!l.elf.has_runpath) {
    bool did_main = false;
    for (size_t p = loader; p != SIZE_MAX; p = nodes_[p].loader) {
      for (auto& d : entries(nodes_[p].elf.rpath, nodes_[p])) dirs.push_back(d);
      did_main |= p == 0;
    }
    if (!did_main)
      for (auto& d : entries(nodes_[0].elf.rpath, nodes_[0])) dirs.push_back(d);
  }
  for (auto& d : entries(opt_.library_path, nodes_[0])) dirs.push_back(d);
  for (auto& d : entries(l.elf.runpath, l)) dirs.push_back(d);
  if (!l.elf.nodeflib)
    for (const auto& d : conf_dirs()) dirs.push_back(d);
  std::set<std::string> seen;
  for (const auto& d : dirs) {
    if (!seen.insert(d).second) continue;
    tried->push_back(d);
    if (auto i = try_file(d + "/" + name, name, loader, kind)) {
      by_name_.emplace(name, *i);
      return i;
    }
  }
  return std::nullopt;
}

void Resolver::warn(Code code, size_t needer, std::string message, std::string fix) {
  std::string file = needer < nodes_.size() ? nodes_[needer].host : "";
  out_.diagnostics.push_back(make_diagnostic(code, file, std::move(message), std::move(fix)));
}

// Breadth first from nodes_[first] on, as _dl_map_object_deps maps them.
void Resolver::follow(size_t first) {
  for (size_t i = first; i < nodes_.size(); ++i) {
    std::vector<std::string> needed = nodes_[i].elf.needed;
    for (const auto& name : needed) {
      std::vector<std::string> tried;
      if (load(name, i, nodes_[i].kind, &tried) || capped_) continue;
      std::string dirs;
      for (const auto& t : tried) dirs += (dirs.empty() ? "" : ", ") + tree_.name_of(t);
      warn(Code::kLibraryNotFound, i,
           name + ", needed by " + basename_of(nodes_[i].at) + ", is not found (searched: " +
               (dirs.empty() ? "no directory" : dirs) + "): the dynamic loader would not start the program",
           "install the package that provides " + name + ", or add its directory to DT_RUNPATH or ld.so.conf");
    }
  }
}

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// "librocblas.so.4" -> "4"
std::string so_major(const std::string& soname, std::string_view stem) {
  if (!starts_with(soname, stem) || soname.size() <= stem.size() || soname[stem.size()] != '.') return "";
  std::string rest = soname.substr(stem.size() + 1);
  return rest.substr(0, rest.find('.'));
}

// Whether `so` (a DT_SONAME or file name) is the library `stem` ("librocblas"): "librocblas.so",
// "librocblas.so.4.4", or as auditwheel vendors it into a wheel, renamed with 8 hex digits of its
// hash ("librocblas-3e1f5c2a.so.4"); not "librocblas.so.4.4.1-1.debug" nor "librocblas-extras.so".
bool is_library(const std::string& so, std::string_view stem) {
  if (!starts_with(so, stem)) return false;
  std::string_view rest = std::string_view(so).substr(stem.size());
  constexpr size_t kHash = 8;
  if (rest.size() > kHash && rest[0] == '-' &&
      rest.substr(1, kHash).find_first_not_of("0123456789abcdef") == std::string_view::npos)
    rest.remove_prefix(1 + kHash);
  if (rest.substr(0, 3) != ".so") return false;
  return rest.substr(3).find_first_not_of(".0123456789") == std::string_view::npos;
}

}  // namespace

bool opens_kernel_files(const std::string& name) {
  return is_library(name, "librocblas") || is_library(name, "libhipblaslt");  // library_loaders
}

bool is_kernel_file_name(const std::string& name) {
  auto ends = [&](std::string_view e) {
    return name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".co") || ends(".hsaco");
}

// The kernel files of a Tensile directory (rocBLAS tensile_host.cpp, hipBLASLt's the same): the
// directory is the first candidate that exists; none, or one without any code object file, is HG123.
// `subdirectories`: whether the library takes <dir>/<processor> instead when it exists (rocBLAS
// always; hipBLASLt unless HIPBLASLT_TENSILE_LIBPATH names the directory).
void Resolver::tensile(size_t lib, const std::vector<std::string>& candidates, const char* what, bool subdirectories) {
  std::string dir;
  for (const auto& c : candidates)
    if (is_dir(c)) {
      dir = c;
      break;
    }
  std::string name = basename_of(nodes_[lib].at);
  const std::string fails = "its kernels cannot be checked, and it fails at its first GEMM";
  if (dir.empty()) {
    std::string looked;
    for (const auto& c : candidates) looked += (looked.empty() ? "" : ", ") + tree_.name_of(c);
    warn(Code::kKernelDirectoryMissing, lib,
         std::string(what) + " directory of " + name + " not found (looked in " + looked + "): " + fails,
         "install the package with " + name + "'s Tensile library (Debian: the same binary package)");
    return;
  }
  // Every code object file of the directory, and of the <processor> subdirectory taken instead when
  // there is one: check_paths groups them as a kernel library (library.h), where the files for other
  // processors and the other xnack mode are counted, not errors, and a target without any file is HG214.
  std::vector<std::string> dirs{dir};
  for (const auto& target : opt_.processors) {
    std::string sub = dir + "/" + processor_of(target);
    if (subdirectories && is_dir(sub) && std::find(dirs.begin(), dirs.end(), sub) == dirs.end()) dirs.push_back(sub);
  }
  const size_t before = kernels_.size();
  for (const auto& d : dirs) add_kernel_files(lib, d);
  // A directory holding only other processors' subdirectories: the library lacks the targets, and
  // what it has (HG214's "built for") is in them, so they are read too.
  if (kernels_.size() == before && dirs.size() == 1 && subdirectories)
    for (const auto& sub :
         list_dir(dir, [&](const std::string& f) { return find_processor(f) && is_dir(dir + "/" + f); }))
      add_kernel_files(lib, dir + "/" + sub);
  if (kernels_.size() == before)
    warn(Code::kKernelDirectoryMissing, lib,
         std::string(what) + " directory of " + name + ", " + tree_.name_of(dir) +
             ", has no code object file (.co, .hsaco)" +
             (subdirectories ? "" : ", and the library does not look into its <processor> subdirectories") + ": " +
             fails,
         subdirectories ? "install the package with " + name + "'s Tensile library"
                        : "name the <processor> subdirectory itself: HIPBLASLT_TENSILE_LIBPATH=" + dir + "/" +
                              (opt_.processors.size() == 1 ? processor_of(opt_.processors[0]) : "<processor>"));
}

// The code object files (.co, .hsaco) of the Tensile directory `dir` (sysroot path) as kernel files of `lib`.
void Resolver::add_kernel_files(size_t lib, const std::string& dir) {
  auto found = tree_.find(dir);
  if (!found) return;
  auto files = list_dir(dir, is_kernel_file_name);
  for (const auto& f : files)
    kernels_.push_back({Dependency::Kind::KernelFile, found->label + "/" + f, f, nodes_[lib].host, true});
}

// What libraries open themselves: ggml's backends (ggml-backend-reg.cpp ggml_backend_load_best:
// GGML_BACKEND_DIR, Debian's <libdir>/ggml/backends<soversion>, then the program's directory), and
// the Tensile directories of rocBLAS and hipBLASLt.
void Resolver::library_loaders() {
  for (size_t i = 0; i < nodes_.size() && !capped_; ++i) {
    const Node& n = nodes_[i];
    std::string so = n.elf.soname.empty() ? basename_of(n.at) : n.elf.soname;
    std::string base = n.origin;
    if (base.empty()) continue;  // a named file outside the sysroot: what lies beside it there is unknown
    if (starts_with(so, "libggml.so")) {
      size_t first = nodes_.size();
      for (const std::string& dir : {base + "/ggml/backends" + so_major(so, "libggml.so"), nodes_[0].origin}) {
        auto files = list_dir(dir, [](const std::string& f) {
          return starts_with(f, "libggml-") && f.size() > 3 && f.compare(f.size() - 3, 3, ".so") == 0;
        });
        for (const auto& f : files) try_file(dir + "/" + f, f, i, Dependency::Kind::Opened);
        if (!files.empty()) break;
      }
      follow(first);
    } else if (is_library(so, "librocblas")) {
      // tensile_host.cpp, as Debian patches it: <dir>/rocblas/<version>/library first, the version
      // being the library's (librocblas.so.4 of ROCm 6.4: rocblas/4.4.1; librocblas.so.5 of ROCm 7.2:
      // rocblas/5, strings in the libraries), then upstream's order.
      std::vector<std::string> c;
      if (!opt_.rocblas_tensile_libpath.empty()) {  // instead of every other place
        tensile(i, {opt_.rocblas_tensile_libpath}, "rocBLAS's Tensile (ROCBLAS_TENSILE_LIBPATH)");
        continue;
      }
      std::string major = so_major(so, "librocblas.so");
      for (const auto& v : list_dir(base + "/rocblas", [&](const std::string& f) {
             return !major.empty() && (f == major || starts_with(f, major + "."));
           }))
        c.push_back(base + "/rocblas/" + v + "/library");
      for (const char* rel : {"/../../Tensile/library", "/library", "/../rocblas/library", "/rocblas/library"})
        c.push_back(base + rel);
      tensile(i, c, "rocBLAS's Tensile");
    } else if (is_library(so, "libhipblaslt")) {
      if (!opt_.hipblaslt_tensile_libpath.empty())  // instead of every other place, and of <processor>/
        tensile(i, {opt_.hipblaslt_tensile_libpath}, "hipBLASLt's Tensile (HIPBLASLT_TENSILE_LIBPATH)", false);
      else if (so_major(so, "libhipblaslt.so") == "0")  // hipBLASLt 0.x of ROCm 6: TensileHost::initialize
        tensile(i, {base + "/../Tensile/library", base + "/hipblaslt/library"}, "hipBLASLt's Tensile");
      else  // rocblaslt_find_library_relative_path (ROCm 7)
        tensile(i, {base + "/hipblaslt/library", base + "/../Tensile/library", base + "/library"},
                "hipBLASLt's Tensile");
    }
  }
}

Dependencies Resolver::run(const std::string& path, const std::string& root) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  Node n;
  n.host = path;
  n.at = ec ? "" : in_root(root, abs);
  // $ORIGIN of the program: its directory with symlinks resolved (/proc/self/exe).
  if (root.empty()) {
    std::string real = std::filesystem::canonical(path, ec).string();
    n.origin = ec ? "" : dirname_of(real);
  } else if (!n.at.empty()) {
    std::string real = in_root(root, resolve_in_root(root, n.at));
    n.origin = real.empty() ? "" : dirname_of(real);
  }
  n.elf = read_elf(path);
  if (!n.elf.elf) return std::move(out_);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) by_file_[{st.st_dev, st.st_ino}] = 0;
  nodes_.push_back(std::move(n));
  return resolve();
}

Dependencies Resolver::run_at(const std::string& at) {
  std::optional<FileTree::Found> file = tree_.find(at);
  if (!file || file->directory) return std::move(out_);
  Node n;
  n.at = at, n.host = file->label, n.origin = dirname_of(file->at), n.elf = tree_.elf(*file);
  if (!n.elf.elf) return std::move(out_);
  by_file_[file->identity] = 0;
  nodes_.push_back(std::move(n));
  return resolve();
}

// From the program (nodes_[0]) on: what the dynamic loader maps, then what its libraries open.
Dependencies Resolver::resolve() {
  if (!nodes_[0].elf.soname.empty()) by_name_.emplace(nodes_[0].elf.soname, 0);
  if (!nodes_[0].elf.error.empty())
    warn(Code::kDependencyUnreadable, 0, "cannot read the dynamic section: " + nodes_[0].elf.error,
         "the file is damaged; rebuild it (the dynamic loader would refuse it)");
  if (opt_.follow_needed) follow(0);
  library_loaders();
  for (size_t i = 1; i < nodes_.size(); ++i) {
    out_.objects.push_back(
        {nodes_[i].kind, nodes_[i].host, nodes_[i].name, nodes_[nodes_[i].loader].host, nodes_[i].elf.hip});
    if (out_.hip_runtime.empty() && (is_hip_runtime_name(nodes_[i].name) || is_hip_runtime_name(nodes_[i].elf.soname)))
      out_.hip_runtime = tree_.name_of(nodes_[i].real);
  }
  for (auto& k : kernels_) out_.objects.push_back(std::move(k));
  return std::move(out_);
}

// bad_alloc on a hostile input: said, never thrown.
template <class F>
Dependencies without_throwing(const std::string& path, F run) {
  try {
    return run();
  } catch (const std::exception& e) {
    Dependencies d;
    d.diagnostics.push_back(make_diagnostic(Code::kDependencyUnreadable, path,
                                            std::string("cannot follow the dependencies: ") + e.what(),
                                            "check the file"));
    return d;
  }
}

Dependencies find_dependencies(const std::string& path, const DependencyOptions& options) {
  return without_throwing(path, [&] {
    HostTree tree(options.sysroot);
    return Resolver(tree, options).run(path, tree.root());
  });
}

Dependencies find_dependencies_in(const FileTree& tree, const std::string& at, const DependencyOptions& options) {
  return without_throwing(tree.name_of(at), [&] { return Resolver(tree, options).run_at(at); });
}

}  // namespace hipguard
