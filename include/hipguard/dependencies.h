// What a program or library loads: its DT_NEEDED libraries, transitively, found as the glibc dynamic
// loader finds them, and the kernel files those libraries open (rocBLAS's and hipBLASLt's Tensile
// directories, ggml's backends), so `hipguard check` checks a program with the code it runs.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_set>
#include <vector>

#include "hipguard/diagnostic.h"

namespace hipguard {

struct DependencyOptions {
  // An unpacked root or image ("" = this machine's /). Every path the search uses (DT_RUNPATH and
  // DT_RPATH entries, ld.so.conf and its includes, the system directories, symlink targets) is
  // resolved inside it as if it were "/": ".." stops at it and absolute symlinks restart at it.
  std::string sysroot;
  // Objects (the file, its libraries, the files their loaders open) resolved at most; the rest is
  // not followed (HG122). docs/limits.md.
  size_t max_objects = 2048;
  // Target IDs checked: a Tensile directory's <processor> subdirectory (which rocBLAS reads instead
  // of the directory when it exists) is listed for each. The directory's own .co / .hsaco files are
  // always listed, for every processor: check_paths judges them as a kernel library (library.h).
  std::vector<std::string> processors;
  // How the program is started, when known (a container image's Env): its LD_LIBRARY_PATH, searched
  // as glibc's step 2 below, and ROCBLAS_TENSILE_LIBPATH / HIPBLASLT_TENSILE_LIBPATH, the library's
  // Tensile directory instead of those it looks for beside itself (tensile_host.cpp of each; hipBLASLt
  // then never takes its <processor> subdirectory). "" when unset (offline: unknown).
  std::string library_path;
  std::string rocblas_tensile_libpath;
  std::string hipblaslt_tensile_libpath;
  // false: the object alone and the files it opens itself, its DT_NEEDED not followed (a rocBLAS met
  // in a directory walk or an image, asked only for its Tensile directory; a libggml's backends are
  // still followed).
  bool follow_needed = true;
};

// One object the program would load, or a kernel file one of its libraries opens.
struct Dependency {
  enum class Kind {
    Needed,      // mapped by the dynamic loader at start-up (DT_NEEDED, transitively)
    Opened,      // dlopen()ed by a library's own loader (ggml's backends) and its DT_NEEDED closure
    KernelFile,  // a code object a library reads itself (rocBLAS / hipBLASLt Tensile directory)
  };
  Kind kind = Kind::Needed;
  std::string path;       // where it is on this machine (inside the sysroot), as found (not canonical)
  std::string name;       // the DT_NEEDED string, or the file name
  std::string needed_by;  // the path of the object whose DT_NEEDED (or loader) asks for it
  bool gpu_code = false;  // a .hip_fatbin section, or a kernel file
};

struct Dependencies {
  // Every object in the dynamic loader's order (breadth first, each once: the order `ldd` lists),
  // then the opened ones; the file itself is not listed.
  std::vector<Dependency> objects;
  // HG120 (not found), HG121 (dynamic section unreadable), HG122 (over max_objects), HG123 (no
  // Tensile directory): each with `file` = the object that needs what is missing.
  std::vector<Diagnostic> diagnostics;
  // The HIP runtime it loads (libamdhip64, at start-up or with a library it opens), named by the real
  // file behind its links as findings name files ("<root>/usr/lib/x86_64-linux-gnu/libamdhip64.so.6.4.43484",
  // whose name says the version: runtime_for_library); "" when it loads none.
  std::string hip_runtime;
};

// The dependencies of `path` (a host path; inside the sysroot when one is given). Never throws; a
// file that is not a dynamic ELF has none. Search order for a name without '/' (glibc elf/dl-load.c
// _dl_map_object; ld.so(8)):
//   1. DT_RPATH of the object that needs it, then of the object that loaded that one, up to the
//      program, then the program's own - only when the needing object has no DT_RUNPATH (and an
//      object's DT_RPATH counts only when it has no DT_RUNPATH: elf/get-dynamic-info.h);
//   2. LD_LIBRARY_PATH: options.library_path ($ORIGIN: the program's), "" offline (the environment
//      of the target machine is unknown);
//   3. DT_RUNPATH of the object that needs it (not inherited);
//   4. /etc/ld.so.cache, read as the directories of /etc/ld.so.conf and its `include` globs in
//      file order (ldconfig builds the cache from them), unless the needer has DF_1_NODEFLIB;
//   5. the system directories of Debian's x86-64 glibc (`ld.so --help`): /lib/x86_64-linux-gnu,
//      /usr/lib/x86_64-linux-gnu, /lib, /usr/lib; in a root without /lib/x86_64-linux-gnu but with
//      /usr/lib64, Fedora's and RHEL's: /lib64, /usr/lib64 (also skipped for DF_1_NODEFLIB).
// $ORIGIN is the directory of the needing object as found (the program's with symlinks resolved,
// as /proc/self/exe), $LIB "lib/x86_64-linux-gnu" ("lib64" with Fedora's system directories),
// $PLATFORM "x86_64"; relative entries (the
// process's working directory) are skipped, and $ORIGIN entries of a named file outside the sysroot.
// A name with '/' is used as is when absolute (relative: the working directory, unknown offline:
// HG120). A candidate that is not
// a 64-bit little-endian ELF for the program's machine is passed over, as open_verify does. A name
// already loaded (by the name asked for or its DT_SONAME) or a file already loaded (same device
// and inode) is not loaded again: a DT_NEEDED cycle ends there.
Dependencies find_dependencies(const std::string& path, const DependencyOptions& options);

// `path` resolved inside `sysroot` (see DependencyOptions::sysroot) as a host path, every symlink
// followed (at most 40, as Linux); "" when a component is missing or a loop. Without a sysroot,
// `path` itself when it exists.
std::string resolve_in_root(const std::string& sysroot, const std::string& path);

// Whether the library named `name` (its DT_SONAME or file name) opens kernel files of its own: rocBLAS
// and hipBLASLt, from their Tensile directories.
bool opens_kernel_files(const std::string& name);

// check_paths' hook: after each file named on the command line (`named`), the dependencies that
// carry GPU code and the kernel files (each once, none already in `files`), with who needs each. A
// rocBLAS or hipBLASLt found in a directory walk gets HG123 when its Tensile directory is missing.
struct DependencyFile {
  std::string needed_by;                    // "" for the files of the command line
  std::vector<Diagnostic> diagnostics;      // HG120-HG123 about this file's own dependencies
  bool dependencies_have_gpu_code = false;  // a named file without GPU code is then no HG107
  bool shared_library = false;              // a library the dynamic loader maps; false for kernel files
  std::string hip_runtime;                  // a named file's Dependencies::hip_runtime
};
void add_dependencies(std::vector<std::string>* files, std::vector<bool>* regular,
                      const std::unordered_set<std::string>& named, const DependencyOptions& options,
                      std::vector<DependencyFile>* extra);

}  // namespace hipguard
