// check_paths' hook: each file named on the command line followed by the files of what it loads
// that carry GPU code (dependencies.h), each once, with who needs it.
#include <sys/stat.h>

#include <map>
#include <set>

#include "hipguard/dependencies.h"

namespace hipguard {

void add_dependencies(std::vector<std::string>* files, std::vector<bool>* regular,
                      const std::unordered_set<std::string>& named, const DependencyOptions& options,
                      std::vector<DependencyFile>* extra) {
  auto identity = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? std::pair<dev_t, ino_t>{st.st_dev, st.st_ino} : std::pair<dev_t, ino_t>{0, 0};
  };
  std::set<std::pair<dev_t, ino_t>> listed;  // a file reached twice is checked once
  for (const auto& f : *files) listed.insert(identity(f));
  std::vector<std::string> out_files;
  std::vector<bool> out_regular;
  std::vector<DependencyFile> out_extra;
  auto add = [&](const std::string& path, bool reg, DependencyFile e) {
    out_files.push_back(path), out_regular.push_back(reg), out_extra.push_back(std::move(e));
  };
  DependencyOptions alone = options;
  alone.follow_needed = false;
  // Walked kernel-file loaders asked once (a file and its links), none that is named (asked with it).
  std::set<std::pair<dev_t, ino_t>> asked;
  for (const auto& f : named) asked.insert(identity(f));
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string& f = (*files)[i];
    add(f, (*regular)[i], {});
    if (!named.count(f)) {
      auto id = identity(f);
      if ((*regular)[i] && opens_kernel_files(f.substr(f.rfind('/') + 1)) && id != std::pair<dev_t, ino_t>{0, 0} &&
          asked.insert(id).second)
        for (auto& d : find_dependencies(f, alone).diagnostics)
          if (d.code == Code::kKernelDirectoryMissing) out_extra.back().diagnostics.push_back(std::move(d));
      continue;
    }
    size_t self = out_extra.size() - 1;
    Dependencies deps = find_dependencies(f, options);
    out_extra[self].hip_runtime = deps.hip_runtime;
    // Findings go to the object that needs what is missing; one without GPU code is listed for them.
    std::map<std::string, std::vector<Diagnostic>> said;
    for (auto& d : deps.diagnostics) said[d.file].push_back(std::move(d));
    if (auto own = said.find(f); own != said.end())
      out_extra[self].diagnostics = std::move(own->second), said.erase(own);
    auto push = [&](const Dependency& d) {
      auto diags = said.find(d.path);
      bool findings = diags != said.end();
      if (!d.gpu_code && !findings) return;
      out_extra[self].dependencies_have_gpu_code |= d.gpu_code;  // also when checked already, for another file
      auto id = identity(d.path);
      if (!listed.insert(id).second && id != std::pair<dev_t, ino_t>{0, 0}) return;
      DependencyFile e;
      e.needed_by = d.needed_by;
      e.shared_library = d.kind != Dependency::Kind::KernelFile;
      if (findings) e.diagnostics = std::move(diags->second), said.erase(diags);
      add(d.path, true, std::move(e));
    };
    // Kernel files right after the library that opens them (the named file itself, for a library).
    for (const auto& k : deps.objects)
      if (k.kind == Dependency::Kind::KernelFile && k.needed_by == f) push(k);
    for (const auto& d : deps.objects) {
      if (d.kind == Dependency::Kind::KernelFile) continue;
      push(d);
      for (const auto& k : deps.objects)
        if (k.kind == Dependency::Kind::KernelFile && k.needed_by == d.path) push(k);
    }
  }
  *files = std::move(out_files);
  *regular = std::move(out_regular);
  *extra = std::move(out_extra);
}

}  // namespace hipguard
